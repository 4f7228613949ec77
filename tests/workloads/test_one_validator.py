"""Issue 43 item 2, workloads: one validator for Batsim JSON workloads. ``workload check``,
``run``, ``simulate`` and campaigns call the same function (``simulator/workload.py``
``validate_workload``), so the same bad file gets the same one-line verdict from each, and
what ``check`` calls valid they take."""

from __future__ import annotations

import json

import pytest

from mrsched.cli import main
from mrsched.limits import MAX_TIME
from mrsched.platforms.cluster import generate_cluster
from mrsched.simulator.workload import read_json_file, validate_workload, workload_problems

PROFILES = {"p": {"type": "delay", "delay": 10}}


def _wl(jobs=None, profiles=None, **top):
    jobs = jobs if jobs is not None else [{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "p"}]
    return {"nb_res": 4, **top, "jobs": jobs, "profiles": profiles if profiles is not None else PROFILES}


def _job(**fields):
    return [{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "p", **fields}]


# name -> (file bytes, what the one line must say)
BAD = {
    "id-list": (json.dumps(_wl(_job(id=[1]))), "job #0, field 'id': job id must be a string or an integer"),
    "id-other-workload": (json.dumps(_wl(_job(id="w5!1"))), "job w5!1, field 'id': job id 'w5!1' names workload 'w5'"),
    "delay-zero": (json.dumps(_wl(profiles={"p": {"type": "delay", "delay": 0}})),
                   "element <profile p>, field 'delay': 'delay' must be a strictly positive"),
    "subtime-1e308": (json.dumps(_wl(_job(subtime=1e308))), "job 1, field 'subtime': 1e+308 s is beyond 1e+09 s"),
    "subtime-1e999": (json.dumps(_wl(_job())).replace('"subtime": 0', '"subtime": 1e999'),
                      "job 1, field 'subtime': inf is not a finite number"),
    "walltime-huge": (json.dumps(_wl(_job(walltime=2e9))), "job 1, field 'walltime': 2000000000.0 s is beyond"),
    "delay-huge": (json.dumps(_wl(profiles={"p": {"type": "delay", "delay": 1e10}})),
                   "element <profile p>, field 'delay': 10000000000.0 s is beyond"),
    "res-above-nb_res": (json.dumps(_wl(_job(res=9))), "job 1, field 'res': requests 9 machines, the workload's 'nb_res' is 4"),
    "bb-negative": (json.dumps(_wl(_job(burst_buffer=-1))), "job 1, field 'burst_buffer': must be a finite number >= 0"),
    "extra-infinite": (json.dumps(_wl(_job(extra=1))).replace('"extra": 1', '"extra": -1e999'),
                       "job 1, field 'extra': -inf is not a finite number"),
    "extra-deep": (json.dumps(_wl(_job(extra=1))).replace('"extra": 1', '"extra": ' + "[" * 200 + "]" * 200),
                   "job 1, field 'extra': nested more than 64 levels deep"),
    "nested-10000": ("[" * 10000 + "]" * 10000, "nested too deeply to be a JSON workload"),
    "nan": (json.dumps(_wl(_job())).replace('"subtime": 0', '"subtime": NaN'), "'NaN' is not a JSON number"),
    "binary": (b"\x7fELF\x02\x01\x01\x00\x00\x00garbage", "a binary file, not a JSON workload"),
    "latin-1": ('{"nb_res": 4, "jobs": [], "profiles": {}, "name": "caf\xe9"}'.encode("latin-1"),
                "not UTF-8 text (byte 0xe9 at offset"),
    "not-an-object": ("[1, 2]", "a workload must be a JSON object"),
}


def _write(tmp_path, name, content):
    path = tmp_path / f"{name}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = tmp_path_factory.mktemp("plat") / "p.xml"
    path.write_text(generate_cluster(nodes=4, storage=1, bb_capacity="10GB").xml)
    return path


@pytest.mark.parametrize("name", sorted(BAD))
def test_the_validator_names_the_problem(tmp_path, name):
    content, expected = BAD[name]
    path = _write(tmp_path, name, content)
    with pytest.raises(Exception) as err:
        validate_workload(path)
    from mrsched.errors import WorkloadError

    assert isinstance(err.value, WorkloadError), repr(err.value)
    line = str(err.value)
    assert expected in line and line.startswith(str(path)) and "\n" not in line


@pytest.mark.parametrize("name", sorted(BAD))
def test_check_run_simulate_and_campaigns_agree(tmp_path, platform, capsys, name):
    """The same file through the four doors: one line each, the same problem line."""
    content, expected = BAD[name]
    path = _write(tmp_path, name, content)
    assert main(["workload", "check", str(path)]) == 1
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ": warning: " not in ln]
    assert len(lines) == 1, lines   # (warnings, e.g. "requests exceed the machine", aside)
    verdict = lines[0]
    assert expected in verdict and "Traceback" not in verdict, verdict
    doors = {
        "run": ["run", "-p", str(platform), "-w", str(path), "--policy", "fcfs", "-o", str(tmp_path / "r")],
        "simulate": ["simulate", "-p", str(platform), "-w", str(path), "-e", str(tmp_path / "s" / "out"),
                     "-s", "tcp://127.0.0.1:1", "--timeout", "1"],
    }
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"name: one\nplatforms: [{platform}]\nworkloads: [{path}]\npolicies: [fcfs]\n"
                        f"output: {tmp_path / 'campaign'}\n")
    doors["campaign"] = ["campaign", "run", str(campaign), "--no-progress", "--no-report"]
    for door, argv in doors.items():
        assert main(argv) == 2, door
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "Traceback" not in err, (door, err)
        assert verdict in err, (door, err, verdict)
    assert not (tmp_path / "r").exists() and not (tmp_path / "campaign").exists()


def test_what_check_calls_valid_runs(tmp_path, platform, capsys):
    path = _write(tmp_path, "good", json.dumps(_wl(_job(subtime=MAX_TIME, walltime=MAX_TIME, extra=[[1]]))))
    assert main(["workload", "check", str(path)]) == 0
    assert main(["run", "-p", str(platform), "-w", str(path), "--policy", "fcfs", "-o", str(tmp_path / "r")]) == 0
    assert "run ok" in capsys.readouterr().out


def test_every_problem_is_listed_by_check():
    data = _wl([{"id": 1, "subtime": -1, "res": 2, "profile": "p"},
                {"id": 2, "subtime": 0, "res": 9, "profile": "p"},
                {"id": 2, "subtime": 0, "res": 1, "profile": "q"}])
    lines = [str(p) for p in workload_problems(data, "w.json")]
    assert [line.split(":")[0] for line in lines] == ["w.json, job 1, field 'subtime'",
                                                      "w.json, job 2, field 'res'",
                                                      "w.json, job 2, field 'profile'"]
    assert len(workload_problems(data, "w.json", limit=1)) == 1


def test_smpi_and_missing_nb_res_depend_on_the_engine(tmp_path):
    smpi = _wl(profiles={"p": {"type": "smpi", "trace": "t.txt"}})
    assert [p.field for p in workload_problems(smpi, "w.json")] == ["type"]
    assert workload_problems(smpi, "w.json", engine="batsim") == []
    data = _wl()
    del data["nb_res"]
    assert workload_problems(data, "w.json") == []   # the embedded engine does not need it
    [problem] = workload_problems(data, "w.json", engine="batsim")
    assert problem.field == "nb_res" and "real Batsim refuses" in str(problem)


def test_missing_file_is_one_line(tmp_path):
    from mrsched.errors import WorkloadError

    with pytest.raises(WorkloadError, match="no such file"):
        read_json_file(tmp_path / "none.json")


@pytest.mark.parametrize("name", ["binary", "latin-1", "nested-10000"])
def test_generators_read_workloads_with_the_same_reader(tmp_path, platform, capsys, name):
    """A generator that transforms a workload (bbsched, multires) reads it as `run` does."""
    content, expected = BAD[name]
    path = _write(tmp_path, name, content)
    assert main(["workload", "bbsched", str(path), "--platform", str(platform), "--scenario", "S2",
                 "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and str(path) in err, err
