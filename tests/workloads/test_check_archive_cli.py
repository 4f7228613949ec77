"""Workload checker (one line per problem), trace archive (cache + sha256), CLI round trips."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from mrsched.cli import main
from mrsched.errors import WorkloadError
from mrsched.platforms.bundled import bundled_path
from mrsched.workloads import archive
from mrsched.workloads.check import UNIT_EVIDENCE_JOBS, check_file, check_workload, unit_warnings
from mrsched.workloads.platform_info import read_platform_info
from workload_fixtures import (small_swf, kth_swf, df96_info, atlas_swf, thunder_swf,  # noqa: F401 (fixtures)
                               write_platform)


def _wl(**changes):
    wl = {"nb_res": 4,
          "jobs": [{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "p"},
                   {"id": 2, "subtime": 5, "res": 4, "profile": "p"}],
          "profiles": {"p": {"type": "delay", "delay": 10}}}
    wl.update(changes)
    return wl


def test_valid_workload_has_no_problem():
    assert check_workload(_wl()) == []


@pytest.mark.parametrize("jobs,profiles,expected", [
    ([{"id": 1, "subtime": 0, "res": 2}], None, "job 1, field 'profile': job has no 'profile'"),
    ([{"id": 1, "subtime": 0, "res": 2, "profile": "q"}], None, "job 1, field 'profile': unknown profile 'q'"),
    ([{"id": 1, "subtime": 0, "res": 1, "profile": "p"}, {"id": 1, "subtime": 0, "res": 1, "profile": "p"}], None,
     "job 1, field 'id': duplicate job id"),
    ([{"id": 3, "subtime": 0, "res": 9, "profile": "p"}], None,
     "job 3, field 'res': requests 9 machines, the workload's 'nb_res' is 4"),
    ([{"id": 3, "subtime": -1, "res": 1, "profile": "p"}], None, "field 'subtime'"),
    ([{"id": 3, "subtime": 0, "walltime": 0, "res": 1, "profile": "p"}], None, "field 'walltime'"),
    ([{"id": 3, "subtime": 0, "res": 0, "profile": "p"}], None, "'res' must be at least 1"),
    (None, {"p": {"type": "sleep", "delay": 1}}, "element <profile p>, field 'type': unknown profile type 'sleep'"),
    (None, {"p": {"type": "parallel_homogeneous", "cpu": 1}}, "element <profile p>, field 'com': 'parallel_homogeneous' profile has no 'com'"),
    (None, {"p": {"type": "composed", "seq": ["x"]}}, "'seq' names unknown profile 'x'"),
    (None, {"p": {"type": "parallel", "cpu": [1, 1], "com": [0, 0, 0]}}, "must hold 2x2 values, got 3"),
])
def test_each_problem_is_one_clear_line(jobs, profiles, expected):
    changes = {}
    if jobs is not None:
        changes["jobs"] = jobs
    if profiles is not None:
        changes["profiles"] = profiles
    problems = check_workload(_wl(**changes), file="w.json")
    assert any(expected in str(p) for p in problems), [str(p) for p in problems]
    assert all(str(p).startswith("w.json") and "\n" not in str(p) for p in problems)


def test_top_level_problems():
    lines = [str(p) for p in check_workload({"jobs": "x"}, engine="batsim")]
    assert "field 'nb_res': missing 'nb_res' (the number of machines): real Batsim refuses the workload" in lines
    assert "field 'jobs': 'jobs' must be a list" in lines
    assert any("field 'profiles'" in str(p) for p in check_workload({"nb_res": 1, "profiles": [], "jobs": []}))


def test_platform_requests(df96_info):
    wl = _wl(nb_res=200, jobs=[
        {"id": 1, "subtime": 0, "res": 100, "profile": "p"},
        {"id": 2, "subtime": 0, "res": 2, "profile": "p", "burst_buffer": 6e11, "bb_per_node": 3e11},
        {"id": 3, "subtime": 0, "res": 2, "profile": "p", "gpus_per_node": 2},
    ])
    lines = [str(p) for p in check_workload(wl, platform=df96_info)]
    assert "job 1, field 'res': requests 100 nodes, the platform has 96" in lines
    assert any("job 2, field 'burst_buffer'" in line and "4.8e+11" in line for line in lines)
    assert any("job 2, field 'bb_per_node'" in line and "4e+10" in line for line in lines)
    assert any("job 3, field 'gpus_per_node': requests 2 GPUs per node" in line for line in lines)


def test_unreadable_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nb_res": 4,\n "jobs": [}')
    problems = check_file(bad)
    assert len(problems) == 1 and f"{bad}:2" in str(problems[0])
    assert "no such file" in str(check_file(tmp_path / "missing.json")[0])


def test_artifact_workload_passes(shared_dir, df96_info):
    path = shared_dir / "data" / "europar2021" / "KTH-SP2-1996-2.1-cln-io-aware-1000.json"
    assert check_file(path, df96_info) == []


# --- archive -------------------------------------------------------------------------

def test_fetch_from_local_copy_verifies_checksum(tmp_path, kth_swf):
    path = archive.fetch("KTH-SP2-1996-2.1-cln", cache=tmp_path / "cache", source=kth_swf)
    assert path == tmp_path / "cache" / "KTH-SP2-1996-2.1-cln.swf"
    assert archive.sha256_of(path) == archive.TRACES["KTH-SP2-1996-2.1-cln"].sha256
    # second call: served from the cache, no source needed
    assert archive.fetch("KTH-SP2-1996-2.1-cln.swf.gz", cache=tmp_path / "cache") == path


def test_fetch_decompresses_gz_file_url(tmp_path, kth_swf):
    gz = tmp_path / "KTH.swf.gz"
    with open(kth_swf, "rb") as src, gzip.open(gz, "wb") as out:
        shutil.copyfileobj(src, out)
    path = archive.fetch("KTH-SP2-1996-2.1-cln", cache=tmp_path / "c", source=f"file://{gz}")
    assert path.read_bytes() == kth_swf.read_bytes()


def test_fetch_refuses_a_wrong_file(tmp_path, small_swf):
    with pytest.raises(WorkloadError, match="checksum mismatch"):
        archive.fetch("KTH-SP2-1996-2.1-cln", cache=tmp_path / "c", source=small_swf)
    assert not (tmp_path / "c" / "KTH-SP2-1996-2.1-cln.swf").exists()  # set aside, not cached
    with pytest.raises(WorkloadError, match="unknown archive trace"):
        archive.fetch("CTC-SP2", cache=tmp_path)
    with pytest.raises(WorkloadError, match="not found"):
        archive.fetch("KTH-SP2-1996-2.1-cln", cache=tmp_path / "d", source=tmp_path / "none.swf")


@pytest.mark.parametrize("name,fixture", [("LLNL-Atlas-2006-2.1-cln", "atlas_swf"),
                                          ("LLNL-Thunder-2007-1.1-cln", "thunder_swf")])
def test_fetch_knows_the_llnl_traces(request, tmp_path, capsys, name, fixture):
    local = request.getfixturevalue(fixture)  # the archive's .swf.gz, read in place (no network)
    info = archive.TRACES[name]
    assert info.url == f"{archive.PWA}/l_llnl_{name.split('-')[1].lower()}/{name}.swf.gz"
    assert main(["workload", "fetch", name, "--cache", str(tmp_path / "c"), "--source", str(local)]) == 0
    path = tmp_path / "c" / f"{name}.swf"
    assert capsys.readouterr().out.strip() == str(path)
    assert archive.sha256_of(path) == info.sha256  # checked against ../shared/README.md's checksum
    with gzip.open(local, "rb") as src:
        assert path.read_bytes() == src.read()


def test_fetch_of_a_damaged_gz_is_one_error_and_caches_nothing(tmp_path, atlas_swf):
    bad = tmp_path / "Atlas.swf.gz"
    bad.write_bytes(atlas_swf.read_bytes()[:100_000])
    with pytest.raises(WorkloadError, match="corrupt or truncated gzip data: the compressed stream ends early"):
        archive.fetch("LLNL-Atlas-2006-2.1-cln", cache=tmp_path / "c", source=bad)
    assert list((tmp_path / "c").iterdir()) == []
    bad.write_bytes(b"<html>not found</html>")
    with pytest.raises(WorkloadError, match="corrupt or truncated gzip data: Not a gzipped file"):
        archive.fetch("LLNL-Atlas-2006-2.1-cln", cache=tmp_path / "c", source=bad)
    assert list((tmp_path / "c").iterdir()) == []


# --- unit warnings: processors read as nodes ----------------------------------------------

def _sized(sizes, nb_res, **extra):
    return {"nb_res": nb_res, "jobs": [{"id": k, "subtime": k, "walltime": 10, "res": r, "profile": "p"}
                                       for k, r in enumerate(sizes)],
            "profiles": {"p": {"type": "delay", "delay": 5}}, **extra}


def test_requests_that_look_like_processors_are_warned_about(tmp_path):
    procs = [8, 16, 64, 8, 32, 128, 8, 24, 40, 8, 16, 256]
    [warning] = unit_warnings(_sized(procs, 1152), file="w.json")
    assert str(warning) == ("w.json, field 'res': warning: all 12 requests are multiples of 8: they look like "
                            "processors of 8-core nodes, not nodes (convert the trace with mrsched workload swf, "
                            "which divides processors by the cores per node)")
    above = unit_warnings(_sized(procs, 100))
    assert len(above) == 2 and "2 of 12 requests exceed the machine's 100 nodes (largest 256)" in str(above[1])
    assert unit_warnings(_sized([1, 2, 3, 8] * 3, 1152)) == []  # common divisor 1: nodes
    assert unit_warnings(_sized([8, 16, 24], 1152)) == []  # too few jobs to tell
    assert len(unit_warnings(_sized([8, 24] * (UNIT_EVIDENCE_JOBS // 2), 1152))) == 1
    # power-of-two node counts share a divisor by design: not a sign of processors...
    assert unit_warnings(_sized([4, 8, 16, 32, 64, 128] * 2, 128)) == []
    # ...unless the platform's nodes have that many cores
    # a node platform declaring 4-core nodes: multiples of 4 are suspicious, of 2 only not
    four = read_platform_info(write_platform(tmp_path / "n4.xml", nodes=300, cores=4, per_core=False))
    assert "multiples of 4" in str(unit_warnings(_sized([4, 8, 16] * 4, 300), platform=four)[0])
    assert unit_warnings(_sized([2, 6, 10] * 4, 300), platform=four) == []
    # on a per-core platform requests in processors are right
    cores = read_platform_info(write_platform(tmp_path / "c.xml", nodes=2, cores=8, per_core=True))
    assert unit_warnings(_sized(procs[:10], 16), platform=cores) == []


def test_a_workload_converted_for_the_other_unit_is_warned_about(tmp_path):
    cores = read_platform_info(write_platform(tmp_path / "c.xml", nodes=2, cores=8, per_core=True))
    nodes = read_platform_info(write_platform(tmp_path / "n.xml", nodes=16, cores=8, per_core=False))
    in_nodes = _sized([1, 2], 16, generator={"command": "swf", "unit": "node", "cores_per_node": 8})
    in_cores = _sized([8, 16], 16, generator={"command": "swf", "unit": "core", "cores_per_node": 8})
    assert "requests are in nodes" in str(unit_warnings(in_nodes, platform=cores)[0])
    assert "this platform's resources are cores" in str(unit_warnings(in_nodes, platform=cores)[0])
    assert "requests are in cores" in str(unit_warnings(in_cores, platform=nodes)[0])
    assert unit_warnings(in_nodes, platform=nodes) == unit_warnings(in_cores, platform=cores) == []


def test_batsims_example_workloads_raise_no_unit_warning(shared_dir, capsys):
    examples = sorted((shared_dir / "data" / "batsim-workloads").glob("*.json"))
    assert len(examples) == 5
    assert main(["workload", "check", *map(str, examples)]) == 0
    assert capsys.readouterr().err == ""  # power-of-two sizes 4..128 on 128 nodes


def test_check_cli_warns_on_atlas_processors_and_not_on_its_conversion(tmp_path, atlas_swf, capsys):
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.convert import convert_swf

    converted = tmp_path / "atlas.json"
    assert main(["workload", "swf", str(atlas_swf), "--jobs", "2000", "-o", str(converted)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("unit: node, 1152 nodes of 8 cores") and "above the platform" not in out
    assert main(["workload", "check", str(converted)]) == 0
    assert capsys.readouterr().err == ""
    # the same jobs read as processors (what conversion did before units): warned, still valid
    wl = convert_swf(atlas_swf, jobs=2000, cores_per_node=1, nodes=9216).workload
    wl.pop("generator")
    wl["nb_res"] = 1152
    wl["jobs"] = [j for j in wl["jobs"] if j["res"] <= 1152]
    raw = write_workload(tmp_path / "procs.json", wl)
    assert main(["workload", "check", str(raw)]) == 0
    err = capsys.readouterr().err
    assert f"{raw}, field 'res': warning: all {len(wl['jobs'])} requests are multiples of 8" in err


# --- command line ---------------------------------------------------------------------

def test_cli_swf_check_round_trip(tmp_path, small_swf, capsys):
    out = tmp_path / "w.json"
    plat = str(bundled_path("cluster16"))
    assert main(["workload", "swf", str(small_swf), "--platform", plat, "--model", "burst-buffer",
                 "--seed", "1", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "dropped 1: run time unknown or zero" in text and "wrote" in text
    first = out.read_bytes()
    assert main(["workload", "swf", str(small_swf), "--platform", plat, "--model", "burst-buffer",
                 "--seed", "1", "-o", str(out)]) == 0
    assert out.read_bytes() == first  # same seed, same bytes
    assert main(["workload", "check", str(out), "--platform", plat]) == 0
    wl = json.loads(first)
    wl["jobs"][0]["profile"] = "nope"
    out.write_text(json.dumps(wl))
    assert main(["workload", "check", str(out)]) == 1
    assert "unknown profile 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["synthetic", "--platform", "cluster16", "--jobs", "30"],
    ["esp2", "--nodes", "32", "--cores-per-node", "4"],
    ["esp2", "--nodes", "32", "--gpu-copies", "--model", "compute"],
])
def test_cli_generators_round_trip_through_check(tmp_path, args, capsys):
    args = [str(bundled_path(a)) if a == "cluster16" else a for a in args]
    out = tmp_path / "g.json"
    assert main(["workload", *args, "-o", str(out)]) == 0
    assert main(["workload", "check", str(out)]) == 0
    again = tmp_path / "g2.json"
    assert main(["workload", *args, "-o", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_cli_bbsched(tmp_path, capsys):
    plat = str(bundled_path("dragonfly96"))
    base, out = tmp_path / "b.json", tmp_path / "s2.json"
    assert main(["workload", "synthetic", "--nodes", "96", "--model", "compute", "--jobs", "40",
                 "-o", str(base)]) == 0
    assert main(["workload", "bbsched", str(base), "--platform", plat, "--scenario", "S2", "-o", str(out)]) == 0
    assert "30 of 40 jobs" in capsys.readouterr().out
    assert main(["workload", "check", str(out), "--platform", plat]) == 0


def test_cli_errors_are_one_line(tmp_path, small_swf, capsys):
    assert main(["workload", "swf", str(small_swf), "--part", "0/16", "-o", str(tmp_path / "x.json")]) == 2
    assert "part 0/16 does not exist" in capsys.readouterr().err
    assert main(["workload", "swf", str(tmp_path / "none.swf"), "-o", str(tmp_path / "x.json")]) == 2
    assert "cannot read SWF trace" in capsys.readouterr().err


def test_a_per_core_platform_counts_cores_in_size_problems(tmp_path):
    cores = read_platform_info(write_platform(tmp_path / "c.xml", nodes=2, cores=8, per_core=True))
    lines = [str(p) for p in check_workload(_sized([8, 17], 16), platform=cores)]
    assert "job 1, field 'res': requests 17 cores, the platform has 16" in lines


def test_generators_from_a_multicore_trace_size_in_nodes(tmp_path, atlas_swf, capsys):
    out = tmp_path / "mr.json"
    assert main(["workload", "multires", "--trace", str(atlas_swf), "--jobs", "300", "--nodes", "1152",
                 "-o", str(out)]) == 0
    assert "unit: node, 1152 nodes of 8 cores" in capsys.readouterr().out
    wl = json.loads(out.read_text())
    assert wl["nb_res"] == 1152 and max(j["res"] for j in wl["jobs"]) <= 1152
    assert main(["workload", "multires", "--trace", str(atlas_swf), "--jobs", "300", "--cores-per-node", "4",
                 "-o", str(out)]) == 0
    assert "nodes of 4 cores (no platform: resources are nodes; cores per node from --cores-per-node)" \
        in capsys.readouterr().out
    assert main(["workload", "multires", str(out), "--cores-per-node", "4", "-o", str(tmp_path / "x.json")]) == 2
    assert "--cores-per-node apply to an SWF trace" in capsys.readouterr().err


def test_cli_synthetic_streams_the_bytes_of_the_workload_dict(tmp_path, capsys):
    """`workload synthetic` writes job by job (a million jobs never exist as dicts at once):
    the same bytes as writing generate_synthetic's dict."""
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.synthetic import generate_synthetic

    plat = bundled_path("dragonfly96")
    out = tmp_path / "cli.json"
    assert main(["workload", "synthetic", "--platform", str(plat), "--jobs", "500", "--seed", "4",
                 "--variant", "io-phased", "-o", str(out)]) == 0
    assert f"wrote {out}: 500 jobs" in capsys.readouterr().out
    ref = write_workload(tmp_path / "dict.json", generate_synthetic(
        jobs=500, platform=read_platform_info(plat), seed=4, variant="io-phased"))
    assert out.read_bytes() == ref.read_bytes()
