"""The report's tables: plain names with units in headers, one number format per column with
thousands separators, and widths that fit a 1,366-px browser window (a table too wide is cut
into several, each repeating the row's identifying columns)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from analysis_csv import make_campaign
from html_tables import min_width, tables

from mrsched.analysis import write_report
from mrsched.analysis.tables import decimals_for, format_number, frame_html

#: the report's body is at most 1,200 px wide (its CSS): inside a 1,400-px window with margins
BODY_PX = 1200


def test_number_format_per_column():
    assert decimals_for([27379.4, 5303.0, 41.0]) == 0
    assert decimals_for([35.0, 6.2]) == 1 and decimals_for([3.3, 1.0]) == 2
    assert decimals_for([0.5, np.nan]) == 3 and decimals_for([np.nan]) == 0
    assert format_number(1234567.891, 0) == "1,234,568"
    assert format_number(-0.2, 0) == "0" and format_number(np.nan, 1) == ""
    html = frame_html(pd.DataFrame({"run_id": ["a", "b"], "makespan": [95577.2, 812.0],
                                    "utilisation_nodes": [0.6355, 0.9]}))
    (head, *rows), = tables(html)
    assert [t for _, t in head] == ["Run", "Makespan (s)", "Nodes used (%)"]
    assert [[t for _, t in r] for r in rows] == [["a", "95,577", "63.5"], ["b", "812", "90.0"]]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory):
    root = make_campaign(tmp_path_factory.mktemp("tables"),
                         ["fcfs", "fcfs-easy", "fcfs-bb", "sjf-bb", "filler"])
    failed = root / "runs" / "zz-failed-s1"
    failed.mkdir()
    (failed / "manifest.json").write_text(json.dumps({
        "run_id": "zz-failed-s1", "policy": "plan-2", "status": "failed", "seed": 1,
        "error": "scheduler exited with code 1: " + "a long traceback-free message " * 12}))
    return write_report(root, max_gantt=0).read_text()


def _numeric(text: str) -> bool:
    return bool(re.fullmatch(r"-?[\d,]+(\.\d+)?", text))


def _data_tables(html: str):
    """Every table but the Setup one, the first (two columns of wrapped text, the page's width)."""
    return tables(html)[1:]


def test_report_tables_fit_the_window(report_html):
    found = _data_tables(report_html)
    heads = [[t for _, t in table[0]] for table in found]
    assert heads[0][:2] == ["Run", "Policy"]        # failed runs (a long error, wrapped)
    assert len(found) >= 4     # failed runs, summary, per run (schedule, resources)
    for table in found:
        assert min_width(table) <= BODY_PX, [t for _, t in table[0]]
    # nothing hidden: every metric column of the summary is in one of its tables
    summary = [h for h in heads if h[:2] == ["Policy", "Runs"]]
    shown = {c for h in summary for c in h[2:]}
    assert {"Mean waiting time (s)", "Makespan (s)", "Nodes used (%)", "Rejected jobs"} <= shown


def test_a_wide_frame_is_cut_into_tables_that_repeat_its_keys():
    from mrsched.analysis.tables import TABLE_PX

    wide = pd.DataFrame({"run_id": [f"policy-with-a-long-name-{i}" for i in range(3)],
                         **{f"metric_number_{k}": [123456.0 * k, 2.5, 3.0] for k in range(20)}})
    found = tables(frame_html(wide, keys=["run_id"]))
    assert len(found) > 1
    for table in found:
        assert table[0][0][1] == "Run" and min_width(table) <= TABLE_PX
    assert sum(len(t[0]) - 1 for t in found) == 20


def test_report_headers_carry_units(report_html):
    found = _data_tables(report_html)
    head = {t.replace("\u00ad", "") for table in found[1:] for _, t in table[0]}
    assert {"Mean waiting time (s)", "Mean turnaround time (s)", "Makespan (s)", "Nodes used (%)",
            "Mean bounded slowdown", "Median waiting time (s)"} <= head
    assert not any("_" in h for h in head), head


def test_one_number_format_per_column_with_thousands_separators(report_html):
    for table in _data_tables(report_html)[1:]:
        head, *rows = table
        for i, (_, name) in enumerate(head):
            lines = [line for r in rows for line in re.split(r"\n|\u2009–\u2009", r[i][1].rstrip("‡*"))]
            values = [v for v in lines if _numeric(v)]
            if not values:
                continue
            decimals = {len(v.partition(".")[2]) for v in values}
            assert len(decimals) == 1, (name, values)
            for v in values:
                if abs(float(v.replace(",", ""))) >= 1000:
                    assert "," in v, (name, v)


def test_per_run_tables_name_workloads_not_paths(report_html):
    cells = [text for table in _data_tables(report_html) for row in table for _, text in row]
    assert not any("inputs/" in c or ".json" in c for c in cells)
    setup = tables(report_html)[0]
    workload = next(text for row in setup for (_, head), (_, text) in [row] if head == "Workload")
    assert workload.startswith("synth12")
