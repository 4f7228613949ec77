"""What the report writes besides the page: the summary as LaTeX and CSV, metrics.csv
without float noise, one kind of interval per table named in its caption, rejected jobs by
kind, and the same files for the same runs (issue 41 items 5 and 7)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from analysis_csv import make_campaign
from html_tables import tables

from mrsched.analysis import write_report


@pytest.mark.parametrize("seeds, kind", [((1, 2), "the range (lowest - highest) of the runs"),
                                         ((1, 2, 3, 4), "its 95% Student-t interval"),
                                         ((1,), "a 95% percentile bootstrap interval")])
def test_one_kind_of_interval_per_table_named_in_its_caption(tmp_path, seeds, kind):
    root = make_campaign(tmp_path, ["fcfs", "sjf-bb"], seeds=seeds)
    index = write_report(root, max_gantt=0)
    html = index.read_text()
    assert f"Each cell: the mean over the runs, and below it {kind}" in html
    summary = pd.read_csv(index.parent / "summary.csv")
    assert summary["interval"].str.startswith(kind).all()
    metrics = pd.read_csv(index.parent / "metrics.csv")
    fcfs = metrics[metrics["variant"] == "fcfs"]["mean_waiting_time"]
    row = summary.set_index("variant").loc["fcfs"]
    assert row["mean_waiting_time"] == pytest.approx(fcfs.mean())
    if len(seeds) == 2:        # the range of the runs, in the table and in the chart alike
        assert (row["mean_waiting_time_low"], row["mean_waiting_time_high"]) == pytest.approx(
            (fcfs.min(), fcfs.max()))
        assert "whiskers: the range of the runs" in html
    elif len(seeds) == 4:
        assert row["mean_waiting_time_low"] < fcfs.mean() < row["mean_waiting_time_high"]
        assert "whiskers: the 95% t-interval" in html
    else:
        assert "no whiskers: one run per policy" in html
        assert pd.isna(row["makespan_low"]) and not pd.isna(row["mean_waiting_time_low"])


def test_summary_as_latex_matches_the_html_table(tmp_path):
    root = make_campaign(tmp_path, ["fcfs", "sjf_bb"], seeds=(1, 2, 3, 4))
    index = write_report(root, max_gantt=0)
    tex = (index.parent / "summary.tex").read_text()
    assert tex.count("\\begin{table}") == tex.count("\\end{table}") >= 1
    assert "\\toprule" in tex and "\\bottomrule" in tex and "\\caption{Each cell: the mean" in tex
    assert "sjf\\_bb" in tex and "sjf_bb" not in tex.replace("sjf\\_bb", "")
    html_rows = tables(index.read_text())[1]
    mean = html_rows[1][2][1].split("\n")
    assert f"{mean[0]}\\\\\\scriptsize {mean[1].replace(chr(0x2009) + '–' + chr(0x2009), '--')}" in tex
    # every row has as many cells as its column spec; braces balance; at most 6 metric columns
    # a table (a paper's text width); no character LaTeX would print wrong
    for spec, body in re.findall(r"\\begin\{tabular\}\{(\w+)\}\n\\toprule\n(.*?)\\bottomrule", tex, re.S):
        assert spec.count("r") <= 6
        for line in body.replace("\\midrule\n", "").strip().splitlines():
            assert line.endswith("\\\\") and line.count("&") == len(spec) - 1, line
    assert tex.count("{") - tex.count("\\{") == tex.count("}") - tex.count("\\}")
    body = tex.split("\n", 1)[1]                  # after the leading comment line
    assert not re.search(r"(?<!\\)[_%#]|>=|\u2009|\u00ad", body.replace("\\_", "").replace("\\%", ""))


def test_metrics_csv_has_no_float_noise(tmp_path):
    root = make_campaign(tmp_path, ["fcfs"], seeds=(1,))
    run = root / "runs" / "fcfs-cluster8-synth12-s1"
    text = (run / "out_jobs.csv").read_text().replace("1000.000000,", "1000.490832,", 1)
    (run / "out_jobs.csv").write_text(text)
    csv = (write_report(root, max_gantt=0).parent / "metrics.csv").read_text()
    numbers = re.findall(r"\d+\.\d+", csv)
    assert numbers and max(len(n.split(".")[1]) for n in numbers) <= 12
    assert not re.search(r"\d{6}(9{5,}|0{5,})\d\b", csv)


def test_rejected_jobs_are_grouped_by_kind_in_the_report(tmp_path):
    root = make_campaign(tmp_path, ["fcfs", "sjf-bb"], seeds=(1,))
    kinds = [{"kind": "asks N nodes, the machine has M", "count": 3,
              "example": "asks 12 nodes, the machine has 8", "job": "4"},
             {"kind": "asks N bytes of burst buffer per node, the largest storage node holds M",
              "count": 1, "example": "asks 9e12 bytes of burst buffer per node, the largest "
                                     "storage node holds 4e10", "job": "2"}]
    for d in (root / "runs").iterdir():
        m = json.loads((d / "manifest.json").read_text())
        m["rejected"] = {"count": 4, "jobs": 12, "kinds": kinds}
        (d / "manifest.json").write_text(json.dumps(m))
    html = write_report(root, max_gantt=0).read_text()
    assert '<a href="#rejected">Rejected jobs</a>' in html
    table = next(t for t in tables(html) if t[0][0][1] == "Kind of reason")
    assert [[c for _, c in r] for r in table[1:]] == [
        ["asks N nodes, the machine has M", "6", "2", "fcfs (3), sjf-bb (3)",
         "job 4 of fcfs-cluster8-synth12-s1: asks 12 nodes, the machine has 8"],
        ["asks N bytes of burst buffer per node, the largest storage node holds M", "2", "2",
         "fcfs (1), sjf-bb (1)", "job 2 of fcfs-cluster8-synth12-s1: asks 9e12 bytes of burst "
                                  "buffer per node, the largest storage node holds 4e10"]]


def test_same_runs_same_files(tmp_path):
    root = make_campaign(tmp_path, ["fcfs", "sjf-bb"], seeds=(1, 2))
    a = write_report(root, out=tmp_path / "a", max_gantt=2).parent
    b = write_report(root, out=tmp_path / "b", max_gantt=2).parent
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert {p.suffix for p in files} == {".html", ".csv", ".tex", ".png", ".svg", ".pdf"}
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_the_report_leaves_no_figure_open(tmp_path):
    """Every figure the report draws is closed once written (a campaign of many policies
    would otherwise hold them all)."""
    import matplotlib.pyplot as plt

    plt.close("all")
    root = make_campaign(tmp_path, ["fcfs", "sjf-bb"], seeds=(1, 2))
    write_report(root, out=tmp_path / "r", max_gantt=2)
    assert plt.get_fignums() == []
