"""The policy tests' harness: the engine runs the machine the test describes, at exact times,
and its own checks stop a scheduler that breaks Batsim's rules."""

from __future__ import annotations

import pytest
from engine_run import begins_data, simulate

from mrsched.errors import SimulationError
from mrsched.schedulers.registry import make_scheduler


def test_jobs_run_their_runtime_at_exact_times():
    jobs = [{"id": 1, "subtime": 0, "res": 2, "walltime": 10, "runtime": 5},
            {"id": 2, "subtime": 1, "res": 2, "walltime": 10, "runtime": 5},
            {"id": 3, "subtime": 2, "res": 1, "walltime": 3, "runtime": 7}]   # killed at 3 s
    res = simulate(make_scheduler("fcfs", {}), begins_data(2), jobs)
    assert res["start"] == {"w0!1": 0.0, "w0!2": 5.0, "w0!3": 10.0}
    assert res["finish"] == {"w0!1": 5.0, "w0!2": 10.0, "w0!3": 13.0}
    assert res["alloc"]["w0!1"] == [0, 1] and res["alloc"]["w0!3"] in ([0], [1])


def test_the_engine_announces_the_described_machine():
    """More than 10 nodes (Batsim numbers hosts in name order) and storage properties."""
    seen = {}

    class Probe:
        def handle_message(self, msg):
            for e in msg["events"]:
                if e["type"] == "SIMULATION_BEGINS":
                    seen.update(e["data"])
            return {"now": msg["now"], "events": []}

    machine = begins_data(12, gpus=[k % 3 for k in range(12)],
                          storage=[{"bb_capacity": 7, "name": "bb0"}, {"name": "pfs", "pfs": "true"}],
                          sched_config='{"counters": {"licenses": 3}}')
    simulate(Probe(), machine, [])
    assert [(r["id"], r["properties"].get("gpus")) for r in seen["compute_resources"]] == \
        [(k, str(k % 3)) for k in range(12)]
    assert [(r["id"], r["name"], r["properties"]) for r in seen["storage_resources"]] == \
        [(12, "bb0", {"role": "storage", "bb_capacity": "7"}),
         (13, "pfs", {"role": "storage", "pfs": "true"})]
    assert seen["config"]["sched-config"] == '{"counters": {"licenses": 3}}'


class Greedy:
    """Starts every submitted job on node 0: the engine must refuse the second one."""

    def handle_message(self, msg):
        events = [{"timestamp": msg["now"], "type": "EXECUTE_JOB",
                   "data": {"job_id": e["data"]["job_id"], "alloc": "0"}}
                  for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        return {"now": msg["now"], "events": events}


def test_a_conflicting_decision_fails_the_run():
    jobs = [{"id": k, "subtime": k, "res": 1, "walltime": 10, "runtime": 10} for k in range(2)]
    with pytest.raises(SimulationError, match="resource 0 .* is busy with job w0!0"):
        simulate(Greedy(), begins_data(2), jobs)


def test_a_wakeup_in_the_past_fails_the_run():
    class Bad:
        def handle_message(self, msg):
            return {"now": msg["now"], "events": [{"timestamp": msg["now"], "type": "CALL_ME_LATER",
                                                    "data": {"timestamp": msg["now"]}}]}
    with pytest.raises(SimulationError, match="awaken in the past"):
        simulate(Bad(), begins_data(1), [])
