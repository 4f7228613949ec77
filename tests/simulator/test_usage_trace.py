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


def test_walltime_stops_every_rank(shared_dir, tmp_path):
    """A usage_trace job longer than its walltime ends at the walltime, its ranks stopped (the
    machines freed for the next job, which then runs at full speed)."""
    from mrsched.simulator.engine import simulate
    from test_engine_support import FCFS

    case = shared_dir / "batsim-reference" / "usagetrace"
    (tmp_path / "usage-trace").symlink_to(case / "usage-trace")
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 0, "res": 4, "profile": "u", "walltime": 5},
        {"id": 2, "subtime": 1, "res": 4, "profile": "u", "walltime": 100}],
        "profiles": {"u": {"type": "usage_trace",
                           "trace": "usage-trace/homo-onephase-100/traces.txt"}}}))
    result = simulate(case / "platform.xml", [wl], FCFS(), export_prefix=None)
    by_id = {r.local_id: r for r in result.jobs}
    assert by_id["1"].final_state == "COMPLETED_WALLTIME_REACHED"
    assert by_id["1"].finish_time - by_id["1"].starting_time == pytest.approx(5.0, abs=1e-3)
    assert by_id["2"].final_state == "COMPLETED_SUCCESSFULLY"
    # job 2 waited for job 1's machines, then ran its 10 s phases and its ranks' messages
    assert by_id["2"].starting_time == pytest.approx(5.0, abs=1e-2)
    assert 10.0 < by_id["2"].finish_time - by_id["2"].starting_time < 10.01
