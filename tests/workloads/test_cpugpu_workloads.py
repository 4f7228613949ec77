"""Seed 002 workloads for per-core platforms: ``workload requests`` (CSV) and ``workload
cpugpu`` (ESP-2 x 2, mixes I-V), each output passing ``mrsched workload check``."""

from __future__ import annotations

import json

import pytest

from mrsched.cli import main
from mrsched.errors import WorkloadError
from mrsched.platforms.cluster import generate_cluster
from mrsched.schedulers.model.cores import core_request
from mrsched.workloads.check import check_workload
from mrsched.workloads.cpugpu import MIXES, generate_esp2_cpugpu, generate_mix, read_machine
from mrsched.workloads.platform_info import read_platform_info

HEADER = "id,subtime,walltime,runtime,cores,nodes,cores_per_node,gpus_per_node\n"


@pytest.fixture(scope="module")
def machine_l(tmp_path_factory):
    path = tmp_path_factory.mktemp("ml") / "ml.xml"
    path.write_text(generate_cluster(nodes=1024, cores=8, gpus=2, pfs=False).xml)
    return path


def test_read_machine_of_machine_l(machine_l):
    m = read_machine(machine_l)
    assert m.per_core and len(m.names) == 1024 and m.total_cores == 8192
    assert m.hosts[:2] == [("node_0_core_0", "node_0"), ("node_0_core_1", "node_0")]
    assert m.hosts[8] == ("node_1000_core_0", "node_1000")     # Batsim ids: host-name order


def test_requests_csv_to_workload(tmp_path, machine_l, capsys):
    csv = tmp_path / "jobs.csv"
    csv.write_text(HEADER + "1,0,2000,1000,4096,,,\n2,0,2000,1000,2048,512,,2\n3,5,,100,64,16,4,1\n")
    out = tmp_path / "w.json"
    assert main(["workload", "requests", str(csv), "--platform", str(machine_l), "-o", str(out)]) == 0
    wl = json.loads(out.read_text())
    assert wl["nb_res"] == 8192
    jobs = {j["id"]: j for j in wl["jobs"]}
    assert jobs["1"] == {"id": "1", "subtime": 0, "walltime": 2000, "res": 4096, "profile": "delay1000",
                         "run_time": 1000, "cores": 4096}
    assert jobs["2"]["nodes"] == 512 and jobs["2"]["gpus_per_node"] == 2 and jobs["2"]["res"] == 2048
    assert jobs["3"]["walltime"] == -1 and core_request("3", jobs["3"]).kind == 3
    assert wl["profiles"]["delay100"] == {"type": "delay", "delay": 100}
    assert not check_workload(wl, platform=read_platform_info(machine_l))


def test_requests_derive_cores_from_nodes_and_cores_per_node(tmp_path, machine_l):
    """"4 nodes of 8 cores" is a whole request: cores = nodes x cores_per_node, with or without
    a cores column; a row with neither says what it needs."""
    out = tmp_path / "w.json"
    for header, row in ((HEADER, "1,0,100,50,,4,8,2"), ("id,subtime,walltime,runtime,nodes,cores_per_node\n",
                                                         "1,0,100,50,4,8")):
        csv = tmp_path / "jobs.csv"
        csv.write_text(header + row + "\n")
        assert main(["workload", "requests", str(csv), "--platform", str(machine_l), "-o", str(out)]) == 0
        [job] = json.loads(out.read_text())["jobs"]
        assert job["cores"] == job["res"] == 32 and job["nodes"] == 4 and job["cores_per_node"] == 8
        assert core_request("1", job).kind == 3


@pytest.mark.parametrize("row, message", [
    ("1,0,10,10,,4,,", "field 'cores': required, unless nodes and cores_per_node give it"),
    ("1,0,10,10,16,,,3", "job 1: can never run on this platform: asks 3 GPUs per node"),
    ("1,0,10,10,40,3,4,", "field 'cores_per_node': nodes x cores_per_node must equal cores"),
    ("1,0,10,ten,4,,,", "field 'runtime': expected a number, got 'ten'"),
    ("1,0,10,10,9000,,,", "asks 9000 cores, the machine has 8192"),
])
def test_requests_errors_are_one_line(tmp_path, machine_l, capsys, row, message):
    csv = tmp_path / "bad.csv"
    csv.write_text(HEADER + row + "\n")
    assert main(["workload", "requests", str(csv), "--platform", str(machine_l), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.csv:2" in err and message in err


def test_esp2_cpugpu_is_458_jobs(machine_l):
    wl = generate_esp2_cpugpu(read_machine(machine_l), seed=3)
    jobs = wl["jobs"]
    assert len(jobs) == 458 and sum(1 for j in jobs if j["subtime"] == 0) == 50
    assert sum(1 for j in jobs if j.get("gpus_per_node") == 2) == 228
    z = [j for j in jobs if j["esp_type"] == "Z"]
    assert [j["res"] for j in z] == [8192, 8192] and z[1]["subtime"] == 480 * 60
    # the first Z job: minute 160, but never before the last other job (esp2's decision)
    assert z[0]["subtime"] == max(160 * 60, max(j["subtime"] for j in jobs if j["esp_type"] != "Z") + 1)
    assert all(j["res"] == j["cores"] for j in jobs)
    assert sum(j["run_time"] * j["cores"] for j in jobs) / 8192 == pytest.approx(21822, rel=0.01)
    assert not check_workload(wl, platform=read_platform_info(machine_l))


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_mixes_follow_table_12(machine_l, mix):
    wl = generate_mix(read_machine(machine_l), mix, jobs=400, seed=2)
    kinds = {0: 0, 1: 0, 2: 0, 3: 0}
    for j in wl["jobs"]:
        req = core_request(str(j["id"]), j)
        assert j["cores"] % 8 == 0 and 60 <= j["run_time"] <= 600
        if req.kind == 1:
            kinds[0] += 1
        elif not req.gpus_per_node:
            kinds[1] += 1
            assert req.cores_per_node in (4, 8)
        else:
            kinds[1 + req.gpus_per_node] += 1
            assert req.cores_per_node in (req.gpus_per_node, 2 * req.gpus_per_node)   # 1 or 2 cores per GPU
    for k, share in enumerate(MIXES[mix]):
        assert kinds[k] / 400 == pytest.approx(share, abs=0.07)
    assert not check_workload(wl, platform=read_platform_info(machine_l))
    assert generate_mix(read_machine(machine_l), mix, jobs=400, seed=2) == wl   # seeded


def test_cpugpu_cli_writes_checked_workloads(tmp_path, machine_l):
    out = tmp_path / "v.json"
    assert main(["workload", "cpugpu", "--platform", str(machine_l), "--mix", "V", "--jobs", "50", "-o", str(out)]) == 0
    assert main(["workload", "check", str(out), "--platform", str(machine_l)]) == 0


@pytest.mark.parametrize("nodes,cores,gpus", [(1, 1, 2), (2, 4, 2), (2, 8, 1), (3, 2, 2),
                                              (5, 6, 2), (2, 3, 1), (4, 1, 0)])
def test_mixes_on_small_machines_are_whole_and_checked(tmp_path, nodes, cores, gpus):
    """On a few small nodes a GPU job's cores can be fewer than a node's: every mix the
    machine's GPUs allow is written (no traceback), each job on whole nodes of its cores per
    node, within the machine, and passes the workload checker."""
    path = tmp_path / "m.xml"
    path.write_text(generate_cluster(nodes=nodes, cores=cores, gpus=gpus, pfs=False).xml)
    machine = read_machine(path)
    written = 0
    for mix in sorted(MIXES):
        try:
            wl = generate_mix(machine, mix, jobs=60, seed=3)
        except WorkloadError as exc:
            assert "asks GPUs the machine's nodes lack" in str(exc)
            continue
        written += 1
        for j in wl["jobs"]:
            if "cores_per_node" in j:
                assert j["nodes"] * j["cores_per_node"] == j["cores"] and 1 <= j["nodes"] <= nodes
                assert j["cores_per_node"] <= cores and j.get("gpus_per_node", 0) <= gpus
            assert 1 <= j["cores"] <= nodes * cores
        assert not check_workload(wl, platform=read_platform_info(path))
    assert written >= 3      # mixes I-III ask no GPU


def test_max_cores_zero_is_refused_not_the_default(machine_l):
    with pytest.raises(WorkloadError, match="max_cores"):
        generate_mix(read_machine(machine_l), "I", jobs=5, max_cores=0)
