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
from mrsched.workloads.check import check_file, check_workload
from workload_fixtures import small_swf, kth_swf, df96_info  # noqa: F401 (fixtures)


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
    ([{"id": 1, "subtime": 0, "res": 2}], None, "job 1, field 'profile': missing required field"),
    ([{"id": 1, "subtime": 0, "res": 2, "profile": "q"}], None, "job 1, field 'profile': refers to unknown profile 'q'"),
    ([{"id": 1, "subtime": 0, "res": 1, "profile": "p"}, {"id": 1, "subtime": 0, "res": 1, "profile": "p"}], None,
     "job 1, field 'id': duplicate job id"),
    ([{"id": 3, "subtime": 0, "res": 9, "profile": "p"}], None,
     "job 3, field 'res': requests 9 nodes, the workload (nb_res) has 4"),
    ([{"id": 3, "subtime": -1, "res": 1, "profile": "p"}], None, "field 'subtime'"),
    ([{"id": 3, "subtime": 0, "walltime": 0, "res": 1, "profile": "p"}], None, "field 'walltime'"),
    ([{"id": 3, "subtime": 0, "res": 0, "profile": "p"}], None, "res must be an integer >= 1"),
    (None, {"p": {"type": "sleep", "delay": 1}}, "element <profile p>, field 'type': unknown profile type 'sleep'"),
    (None, {"p": {"type": "parallel_homogeneous", "cpu": 1}}, "element <profile p>, field 'com': missing field"),
    (None, {"p": {"type": "composed", "seq": ["x"]}}, "sequence refers to unknown profile 'x'"),
    (None, {"p": {"type": "parallel", "cpu": [1, 1], "com": [0, 0, 0]}}, "expected 4"),
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
    lines = [str(p) for p in check_workload({"jobs": "x"})]
    assert "field 'nb_res': missing 'nb_res' (number of compute resources)" in lines
    assert any("non-list 'jobs'" in line for line in lines)
    assert any("'profiles'" in line for line in lines)


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
    assert "cannot read" in str(check_file(tmp_path / "missing.json")[0])


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
    assert "refers to unknown profile 'nope'" in capsys.readouterr().err


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
