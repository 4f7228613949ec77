"""Issue 43 item 4: ``mrsched report`` checks each run's outputs against its manifest (rows,
bytes, sha256, as ``campaign status`` does) before using them; a broken run (out_jobs.csv cut
short, a corrupt manifest) is listed as broken with the reason and the report goes on."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from mrsched.analysis import load_run
from mrsched.cli import main
from mrsched.platforms.cluster import generate_cluster


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """Three real runs of 50 jobs (`mrsched run`) in a campaign layout."""
    root = tmp_path_factory.mktemp("camp")
    (root / "p.xml").write_text(generate_cluster(nodes=4, storage=1, bb_capacity="10GB").xml)
    assert main(["workload", "synthetic", "--platform", str(root / "p.xml"), "--model", "compute",
                 "--jobs", "50", "-o", str(root / "w.json")]) == 0
    for policy in ("fcfs", "filler", "fcfs-easy"):
        assert main(["run", "-p", str(root / "p.xml"), "-w", str(root / "w.json"), "--policy", policy,
                     "-o", str(root / "runs" / policy)]) == 0
    return root


@pytest.fixture()
def damaged(campaign, tmp_path):
    """The campaign with fcfs's out_jobs.csv cut to 4 of its 50 rows and filler's manifest
    corrupt."""
    root = tmp_path / "c"
    shutil.copytree(campaign, root)
    jobs = root / "runs" / "fcfs" / "out_jobs.csv"
    jobs.write_text("".join(jobs.read_text().splitlines(keepends=True)[:5]))
    (root / "runs" / "filler" / "manifest.json").write_text('{"status": "ok", "run_id": ')
    return root


def test_intact_runs_verify(campaign):
    run = load_run(campaign / "runs" / "fcfs")
    assert run.status == "ok" and len(run.jobs) == 50
    manifest = json.loads((campaign / "runs" / "fcfs" / "manifest.json").read_text())
    assert manifest["outputs"]["out_jobs.csv"]["rows"] == 50


def test_a_cut_jobs_file_is_broken_not_four_jobs(damaged):
    run = load_run(damaged / "runs" / "fcfs")
    assert run.status == "broken" and run.jobs is None
    assert run.error == "out_jobs.csv has 4 rows, the manifest records 50"


def test_an_edited_file_is_broken(campaign, tmp_path):
    root = tmp_path / "e"
    shutil.copytree(campaign / "runs" / "fcfs", root)
    path = root / "out_schedule.csv"
    text = path.read_text()
    path.write_text(text.replace(",", ";", 1) if "," in text else text + " ")
    run = load_run(root)
    assert run.status == "broken" and "out_schedule.csv" in run.error


def test_a_corrupt_manifest_is_broken(damaged):
    run = load_run(damaged / "runs" / "filler")
    assert run.status == "broken" and "manifest.json is not readable JSON" in run.error


def test_the_report_lists_broken_runs_and_goes_on(damaged, capsys):
    assert main(["report", str(damaged), "--max-gantt", "0"]) == 0
    out, err = capsys.readouterr()
    metrics = pd.read_csv(damaged / "report" / "metrics.csv").set_index("run_id")
    assert metrics.loc["fcfs", "status"] == "broken" and metrics.loc["filler", "status"] == "broken"
    assert metrics.loc["fcfs-easy", "status"] == "ok" and metrics.loc["fcfs-easy", "n_jobs"] == 50
    assert pd.isna(metrics.loc["fcfs", "mean_waiting_time"])   # no metrics from 4 jobs
    html = (damaged / "report" / "index.html").read_text()
    assert "Failed or broken runs" in html and "out_jobs.csv has 4 rows, the manifest records 50" in html
    assert "run fcfs is broken, left out: out_jobs.csv has 4 rows" in err
    assert "run filler is broken" in err and err.count("\n") == 2
