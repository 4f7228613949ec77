"""expe/quickstart.yaml: valid, the runs the README promises; the full run is marked slow."""

from __future__ import annotations

import pytest

from mrsched.expe.campaign import load_campaign, plan_runs
from mrsched.expe.launch import run_campaign


def test_quickstart_plans_five_policies_two_seeds(repo_dir):
    campaign = load_campaign(repo_dir / "expe" / "quickstart.yaml")
    assert campaign.output == repo_dir / "expe" / "results" / "quickstart"
    runs = plan_runs(campaign)
    assert len(runs) == 10
    assert {r.spec.policy for r in runs} == {"fcfs", "fcfs-easy", "fcfs-bb", "sjf-bb", "filler"}
    assert {r.seed for r in runs} == {1, 2}
    assert runs[0].platform.command[:2] == ("platform", "dragonfly")
    assert runs[0].workload.command[:2] == ("workload", "synthetic")
    assert runs[0].workload.seeded and runs[0].workload.needs_platform


@pytest.mark.slow
def test_quickstart_runs_and_reports(repo_dir, tmp_path):
    summary = run_campaign(repo_dir / "expe" / "quickstart.yaml", output=tmp_path / "qs",
                           progress=False)
    assert summary.all_ok and summary.ok == 10
    assert summary.report is not None and summary.report.is_file()
    html = summary.report.read_text()
    assert "gantt" in html.lower() and "<table" in html
    figures = list((tmp_path / "qs" / "report").rglob("*.png"))
    assert any("gantt" in f.name for f in figures)
    assert (tmp_path / "qs" / "report" / "metrics.csv").is_file()
