"""studies/quickstart.yaml: valid, the runs the README promises; the full run is marked slow."""

from __future__ import annotations

import pytest

from mrsched.expe.campaign import load_campaign, plan_runs
from mrsched.expe.launch import run_campaign


def test_quickstart_plans_five_policies_four_seeds(repo_dir):
    """Four seeds: enough runs per policy for t-intervals (plots.MIN_RUNS_FOR_T), and still
    quick (the README's step 2)."""
    from mrsched.analysis.plots import MIN_RUNS_FOR_T

    campaign = load_campaign(repo_dir / "studies" / "quickstart.yaml")
    assert campaign.output == repo_dir / "studies" / "results" / "quickstart"
    runs = plan_runs(campaign)
    assert len(runs) == 20
    assert [r.spec.policy for r in runs[::4]] == ["fcfs", "fcfs-easy", "fcfs-bb", "sjf-bb", "filler"]
    assert {r.seed for r in runs} == {1, 2, 3, 4} and len(campaign.seeds) >= MIN_RUNS_FOR_T
    assert runs[0].platform.command[:2] == ("platform", "dragonfly")
    assert runs[0].workload.command[:2] == ("workload", "synthetic")
    assert runs[0].workload.seeded and runs[0].workload.needs_platform


@pytest.mark.slow
def test_quickstart_runs_and_reports(repo_dir, tmp_path):
    summary = run_campaign(repo_dir / "studies" / "quickstart.yaml", output=tmp_path / "qs",
                           progress=False)
    assert summary.all_ok and summary.ok == 20
    assert summary.report is not None and summary.report.is_file()
    html = summary.report.read_text()
    report = tmp_path / "qs" / "report"
    assert "Gantt chart" in html and "<table" in html
    # the figure set of a paper: Setup first, every figure as PNG, SVG and PDF, the summary
    # table as LaTeX and CSV, t-intervals (4 seeds), policies in the campaign's order
    assert html.index('<h2 id="setup">') < html.index('<h2 id="summary">')
    for text in ("96 compute nodes", "12 storage nodes x 40 GB = 480 GB", "PFS 5 GB/s",
                 "mrsched workload synthetic", "jobs 300", "1-4 (4 seeds", "embedded",
                 "commit ", "runs made "):
        assert text in html, text
    assert "95% Student-t interval" in html
    schedules = sorted(report.glob("figures/schedule_*.png"))
    assert len(schedules) >= 5
    for png in report.glob("figures/*.png"):
        assert png.with_suffix(".svg").is_file() and png.with_suffix(".pdf").is_file()
    assert (report / "summary.tex").read_text().count("\\begin{tabular}") >= 1
    policies = [line.split(",")[0] for line in (report / "summary.csv").read_text().splitlines()[1:]]
    assert policies == ["fcfs", "fcfs-easy", "fcfs-bb", "sjf-bb", "filler"]
    assert (report / "metrics.csv").is_file()
