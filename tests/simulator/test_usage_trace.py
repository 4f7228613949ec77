"""usage_trace profiles: Batsim's checks on the trace files, one line each (the semantics are
checked against Batsim's own run in test_fidelity, case usagetrace)."""

from __future__ import annotations

import json

import pytest

from mrsched.errors import WorkloadError
from mrsched.simulator.workload import load_workload


def _workload(tmp_path, rank_lines: list[str], trace_lines=None):
    (tmp_path / "ut").mkdir()
    (tmp_path / "ut" / "r0.txt").write_text("\n".join(rank_lines) + "\n")
    (tmp_path / "ut" / "traces.txt").write_text("\n".join(trace_lines or ["r0.txt"]) + "\n")
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "u"}],
                                "profiles": {"u": {"type": "usage_trace",
                                                   "trace": "ut/traces.txt"}}}))
    return path


def test_phases_are_read_per_rank(tmp_path):
    wl = load_workload(_workload(tmp_path, ["0 m_usage 0.5 1000", "0 m_usage 1 20"]), "w0")
    assert wl.traces["u"] == [[(0.5, 1000.0), (1.0, 20.0)]]


@pytest.mark.parametrize("lines, trace, expect", [
    (["0 m_usage 1.5 1000"], None, "invalid usage read: 1.5 not in [0,1]"),
    (["0 m_usage 0.5 -3"], None, "invalid flops read: -3"),
    (["0 compute 1000"], None, "expected '<rank> m_usage <usage> <flops>'"),
    (["0 m_usage 0.5 10"], ["absent.txt"], "rank file"),
])
def test_bad_traces_are_one_line(tmp_path, lines, trace, expect):
    with pytest.raises(WorkloadError) as err:
        load_workload(_workload(tmp_path, lines, trace), "w0")
    assert expect in str(err.value) and "\n" not in str(err.value)
    assert err.value.element == "profile u" and err.value.field == "trace"
