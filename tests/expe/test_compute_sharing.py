"""`--enable-compute-sharing` reaches the engine from `mrsched run` and from campaigns: jobs
placed on the same hosts run as real Batsim 4.2.1 ran them (reference case `sharing`)."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from mrsched.cli import main

COLUMNS = ("job_id", "final_state", "starting_time", "finish_time", "allocated_resources")


def rows(path):
    with open(path) as fh:
        return sorted(tuple(r[c] for c in COLUMNS) for r in csv.DictReader(fh))


@pytest.fixture()
def case(shared_dir):
    return shared_dir / "batsim-reference" / "sharing"


def test_run_with_compute_sharing_matches_batsim(case, tmp_path, helper_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--platform", str(case / "platform.xml"), "--workload",
                 str(case / "workload.json"), "--policy", "sharing_scheduler:RoundRobinOnTwo",
                 "--enable-compute-sharing", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert rows(out / "out_jobs.csv") == rows(case / "out_jobs.csv")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["compute_sharing"] is True
    assert "--enable-compute-sharing" in manifest["command"]


def test_run_without_compute_sharing_refuses_shared_hosts(case, tmp_path, helper_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--platform", str(case / "platform.xml"), "--workload",
                 str(case / "workload.json"), "--policy", "sharing_scheduler:RoundRobinOnTwo",
                 "--out", str(out)])
    assert code != 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["error"].endswith(
        "resource 0 (node_0) is busy with job w0!0 (no compute sharing)")


def test_campaign_platform_entry_takes_compute_sharing(case, tmp_path, helper_path):
    spec = {"name": "share", "output": str(tmp_path / "out"), "report": False,
            "platforms": [{"path": str(case / "platform.xml"), "compute_sharing": True}],
            "workloads": [str(case / "workload.json")],
            "policies": ["sharing_scheduler:RoundRobinOnTwo"]}
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump(spec))
    assert main(["campaign", "run", str(file)]) == 0
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    assert rows(run_dir / "out_jobs.csv") == rows(case / "out_jobs.csv")


def test_campaign_compute_sharing_must_be_a_boolean(case, tmp_path, capsys):
    spec = {"name": "share", "platforms": [{"path": str(case / "platform.xml"),
                                            "compute_sharing": "yes"}],
            "workloads": [str(case / "workload.json")], "policies": ["fcfs"]}
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump(spec))
    assert main(["campaign", "run", str(file)]) == 2
    err = capsys.readouterr().err
    assert "compute_sharing must be true or false" in err and err.count("\n") == 1
