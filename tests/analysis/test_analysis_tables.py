"""The report's tables: units in headers, one number format per column with thousands
separators, and a width that fits a 1,400-px browser window."""

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
    assert [t for _, t in head] == ["run", "makespan (s)", "nodes used (%)"]
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


def test_report_tables_fit_the_window(report_html):
    found = tables(report_html)
    assert len(found) == 3     # failed runs (a long error, wrapped), summary, per run
    for table in found:
        assert min_width(table) <= BODY_PX, [t for _, t in table[0]]


def test_report_headers_carry_units(report_html):
    summary, per_run = tables(report_html)[1:3]
    head = [t.replace("\u00ad", "") for _, t in summary[0]]
    assert {"mean wait (s)", "makespan (s)", "nodes used (%)", "mean bounded slowdown"} <= set(head)
    assert "mean wait (s)" in [t for _, t in per_run[0]]


def test_one_number_format_per_column_with_thousands_separators(report_html):
    for table in tables(report_html)[1:3]:
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


def test_per_run_table_names_workloads_not_paths(report_html):
    per_run = tables(report_html)[2]
    col = [t for _, t in per_run[0]].index("workload")
    assert {r[col][1] for r in per_run[1:]} == {"synth12", ""}   # "": the failed run has none
