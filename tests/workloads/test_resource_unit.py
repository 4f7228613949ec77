"""Processors -> nodes or cores: the unit is chosen once, said in the report, never mixed.

Real traces of multi-core machines (LLNL Atlas 1,152 x 8, Thunder 1,002 x 4) are read in
place from ../shared/data; KTH-SP2 (one processor per node) must convert exactly as before
units existed (checksums of the outputs written before this module).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from mrsched.errors import WorkloadError
from mrsched.platforms.bundled import bundled_path
from mrsched.workloads.batsim_json import dumps_workload
from mrsched.workloads.convert import convert_swf
from mrsched.workloads.platform_info import read_platform_info
from mrsched.workloads.resource_unit import choose_unit
from mrsched.workloads.swf import read_swf
from workload_fixtures import atlas_swf, kth_swf, thunder_swf, write_platform  # noqa: F401 (fixtures)

# job submit wait run procs cpu mem req_procs req_time req_mem status user group exe queue part prec think
MULTICORE = """; MaxNodes: 4
; MaxProcs: 32
 1    0  0  50  8 -1 -1  8  60 -1 1 1 1 -1 -1 -1 -1 -1
 2   10  0  50 12 -1 -1 12  60 -1 1 1 1 -1 -1 -1 -1 -1
 3   20  0  50 32 -1 -1 32  60 -1 1 1 1 -1 -1 -1 -1 -1
 4   30  0  50 40 -1 -1 40  60 -1 1 1 1 -1 -1 -1 -1 -1
 5   40  0  50  1 -1 -1  1  60 -1 1 1 1 -1 -1 -1 -1 -1
"""


@pytest.fixture
def multicore(tmp_path):
    path = tmp_path / "mc.swf"
    path.write_text(MULTICORE)
    return path


def _headerless(tmp_path, text=MULTICORE):
    path = tmp_path / "bare.swf"
    path.write_text("\n".join(line for line in text.splitlines() if not line.startswith(";")) + "\n")
    return path


# --- small traces: each rule ---------------------------------------------------------------

def test_header_cores_per_node_sizes_in_whole_nodes_rounded_up(multicore):
    conv = convert_swf(multicore)
    wl = conv.workload
    assert wl["nb_res"] == 4
    assert [j["id"] for j in wl["jobs"]] == [1, 2, 3, 5]
    assert [j["res"] for j in wl["jobs"]] == [1, 2, 4, 1]  # 8, 12, 32, 1 processors on 8-core nodes
    assert conv.report.dropped["requested processors above the platform"] == 1  # 40 processors = 5 nodes
    assert conv.report.rounded_up == 2  # 12 and 1 processors
    lines = conv.summary_lines()
    assert lines[0] == ("unit: node, 4 nodes of 8 cores (no platform: resources are nodes; cores per node from "
                        "the trace header, MaxProcs 32 / MaxNodes 4): res = processors / 8, rounded up")
    assert "rounded up 2: processors not a multiple of 8 (the cores of a node), sized to the next whole node" in lines
    assert wl["generator"]["unit"] == "node" and wl["generator"]["cores_per_node"] == 8
    assert wl["description"].endswith("sizes in nodes of 8 cores")


def test_cap_uses_nodes_too(multicore):
    wl = convert_swf(multicore, oversize="cap").workload
    assert [j["res"] for j in wl["jobs"]] == [1, 2, 4, 4, 1]


def test_cores_per_node_override_when_the_header_lacks_them(tmp_path):
    bare = _headerless(tmp_path)
    with pytest.raises(WorkloadError, match="machine size is unknown"):
        convert_swf(bare)
    conv = convert_swf(bare, nodes=4, cores_per_node=8)
    assert [j["res"] for j in conv.workload["jobs"]] == [1, 2, 4, 1]
    assert "cores per node from --cores-per-node" in conv.summary_lines()[0]
    # without the override: one processor per node, said so, and the wide jobs do not fit
    conv = convert_swf(bare, nodes=40)
    assert [j["res"] for j in conv.workload["jobs"]] == [8, 12, 32, 40, 1]
    assert "one processor per node assumed: the trace header lacks MaxProcs or MaxNodes" in conv.summary_lines()[0]
    assert "unit" not in conv.workload["generator"]  # processors are nodes: nothing to record
    with pytest.raises(WorkloadError, match="--cores-per-node must be >= 1"):
        convert_swf(bare, nodes=4, cores_per_node=0)


def test_override_beats_the_header(multicore):
    conv = convert_swf(multicore, nodes=8, cores_per_node=4)
    assert [j["res"] for j in conv.workload["jobs"]] == [2, 3, 8, 1]
    assert conv.workload["nb_res"] == 8


def test_header_without_a_whole_number_of_cores_asks_for_the_override(tmp_path):
    path = tmp_path / "odd.swf"
    path.write_text(MULTICORE.replace("MaxProcs: 32", "MaxProcs: 30"))
    with pytest.raises(WorkloadError, match="MaxProcs 30 is not a multiple of MaxNodes 4") as info:
        convert_swf(path)
    assert "--cores-per-node" in str(info.value) and str(path) in str(info.value)
    assert [j["res"] for j in convert_swf(path, cores_per_node=8).workload["jobs"]] == [1, 2, 4, 1]


def test_per_core_platform_keeps_requests_in_cores(tmp_path, multicore):
    plat = read_platform_info(write_platform(tmp_path / "pc.xml", nodes=4, cores=8, per_core=True))
    assert plat.per_core and plat.unit == "core" and plat.compute_nodes == 32 and plat.nodes == 4
    conv = convert_swf(multicore, platform=plat)
    wl = conv.workload
    assert wl["nb_res"] == 32
    assert [j["res"] for j in wl["jobs"]] == [8, 12, 32, 1]  # cores; 40 is more than the 32 cores
    assert conv.report.rounded_up == 0
    assert conv.summary_lines()[0].startswith("unit: core, 32 cores (the platform's compute hosts are cores")
    assert wl["generator"]["unit"] == "core"


def test_node_platform_cores_property_decides(tmp_path, multicore):
    plat = read_platform_info(write_platform(tmp_path / "n4.xml", nodes=16, cores=4, per_core=False))
    assert not plat.per_core and plat.cores == 4 and plat.cores_declared
    conv = convert_swf(multicore, platform=plat)
    assert [j["res"] for j in conv.workload["jobs"]] == [2, 3, 8, 10, 1]  # 40 processors: 10 of 16 nodes
    assert "from its 'cores' property (the trace's machine had 8)" in conv.summary_lines()[0]
    # a node platform that says nothing of cores: the trace's header decides
    bare = read_platform_info(write_platform(tmp_path / "n.xml", nodes=16, cores=4, per_core=False,
                                             declare_cores=False))
    assert not bare.cores_declared
    assert [j["res"] for j in convert_swf(multicore, platform=bare).workload["jobs"]] == [1, 2, 4, 5, 1]


def test_a_platform_mixing_nodes_and_cores_is_refused(tmp_path):
    path = write_platform(tmp_path / "mix.xml", nodes=2, cores=2, per_core=True)
    path.write_text(path.read_text().replace("</zone>", '<host id="extra" speed="1Gf"/></zone>'))
    with pytest.raises(WorkloadError, match="mix resource kinds") as info:
        read_platform_info(path)
    assert str(path) in str(info.value)


def test_choose_unit_on_the_bundled_platforms(kth_swf):
    trace = read_swf(kth_swf)
    unit = choose_unit(trace, platform=read_platform_info(bundled_path("dragonfly96.xml")))
    assert (unit.unit, unit.resources, unit.cores_per_node, unit.trivial) == ("node", 96, 1, True)
    assert unit.size(np.array([1, 7, 96])).tolist() == [1, 7, 96]


# --- the real traces ---------------------------------------------------------------------------

def _usable(trace):
    """Records every cleaning rule but size keeps (submit, processors, times known)."""
    return int(((trace.column("submit_time") >= 0) & (trace.column("requested_processors") > 0)
                & (trace.column("requested_time") > 0) & (trace.column("run_time") > 0)).sum())


@pytest.mark.parametrize("fixture,nodes,cores", [("atlas_swf", 1152, 8), ("thunder_swf", 1002, 4)])
def test_llnl_traces_convert_in_nodes_dropping_no_job_for_size(request, fixture, nodes, cores):
    trace = read_swf(request.getfixturevalue(fixture))
    conv = convert_swf(trace)
    wl = conv.workload
    assert wl["nb_res"] == nodes and conv.unit.cores_per_node == cores
    assert conv.report.dropped["requested processors above the platform"] == 0
    assert len(wl["jobs"]) == conv.report.kept == _usable(trace)  # every usable job fits in nodes
    procs = {int(r[0]): int(r[7]) for r in trace.data}
    res = np.array([j["res"] for j in wl["jobs"]])
    asked = np.array([procs[j["id"]] for j in wl["jobs"]])
    assert np.array_equal(res, -(-asked // cores)) and res.max() <= nodes
    assert conv.report.rounded_up == int((asked % cores != 0).sum())
    assert conv.summary_lines()[0].startswith(f"unit: node, {nodes} nodes of {cores} cores")


def test_atlas_keeps_the_1565_jobs_read_as_processors_before(atlas_swf):
    """Before units: 29,683 jobs kept, 1,565 dropped as wider than 1,152 'nodes' (processors)."""
    conv = convert_swf(atlas_swf)
    assert conv.report.kept == 29683 + 1565
    by_id = {j["id"]: j for j in conv.workload["jobs"]}
    wide = [j for j in by_id.values() if j["res"] == 128]  # 1,024 processors: 128 nodes, not 1,024
    assert wide and conv.report.rounded_up == 0  # every Atlas request is a multiple of 8


def test_atlas_on_a_per_core_platform_stays_in_cores(tmp_path, atlas_swf):
    plat = read_platform_info(write_platform(tmp_path / "atlas-cores.xml", nodes=16, cores=8, per_core=True))
    trace = read_swf(atlas_swf)
    conv = convert_swf(trace, platform=plat, jobs=500)
    procs = {int(r[0]): int(r[7]) for r in trace.data}
    assert all(j["res"] == procs[j["id"]] <= 128 for j in conv.workload["jobs"])
    assert conv.workload["nb_res"] == 128


# KTH-SP2 has one processor per node: its conversions are the bytes written before units
# existed (sha256 of `mrsched workload swf` outputs generated from the code before this change).
KTH_SHA256 = {
    "delay": "9251ad3bdcf1bfd02ac0c0b2e5ef770cff75d3665a87c6d29039a1f149ce9e4d",
    "bb": "1a44f22b18e4e8040e83297157c834e89f08b0f7d0be36c5d8a1c540d00307a5",
    "compute_p3": "50052e4770057688312bfbe654f66107c2a96cb602e899b3de9336004e954f23",
    "cap": "305409974a9160a7bd9eef57dad8d142710791664ceab57a7464e71a409bb2fc",
}


def test_kth_conversions_are_byte_for_byte_unchanged(kth_swf):
    trace = read_swf(kth_swf)
    df96 = read_platform_info(bundled_path("dragonfly96.xml"))
    c16 = read_platform_info(bundled_path("cluster16.xml"))
    runs = {
        "delay": convert_swf(trace),
        "bb": convert_swf(trace, platform=df96, model="burst-buffer", variant="io-phased", seed=1),
        "compute_p3": convert_swf(trace, platform=df96, model="compute", part="3/16"),
        "cap": convert_swf(trace, platform=c16, oversize="cap", jobs=500),
    }
    digests = {k: hashlib.sha256(dumps_workload(c.workload).encode()).hexdigest() for k, c in runs.items()}
    assert digests == KTH_SHA256
    assert runs["delay"].summary_lines()[0] == (
        "unit: node, 100 nodes of one processor (no platform: resources are nodes; cores per node from the "
        "trace header, MaxProcs 100 / MaxNodes 100): res = processors")
