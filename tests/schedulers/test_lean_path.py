"""PolicyScheduler's lean message path answers exactly what the full BatsimScheduler path
answers, takes the common messages, and leaves anything unusual to the full path's checks."""

from __future__ import annotations

import pytest

from mrsched.errors import ProtocolError
from mrsched.platforms.bundled import bundled_path
from mrsched.schedulers.registry import make_scheduler
from mrsched.schedulers.execution.runtime import PolicyScheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.platform_info import read_platform_info
from mrsched.workloads.synthetic import generate_synthetic


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    """Burst-buffer jobs on cluster16, plus jobs that must be rejected (more burst buffer than
    the machine holds) and
    jobs killed at their walltime (a delay longer than the walltime)."""
    platform = bundled_path("cluster16")
    wl = generate_synthetic(jobs=60, platform=read_platform_info(platform), seed=5,
                            mean_interarrival=30.0, model="burst-buffer")
    jobs = wl["jobs"]
    for job in jobs[::7]:
        job["burst_buffer"] = 10 ** 18   # more than the machine holds: rejected at submission
    wl["profiles"]["too_long"] = {"type": "delay", "delay": 500.0}
    for job in jobs[3::11]:
        job["profile"] = "too_long"
        job["walltime"] = 100.0       # killed at its walltime
    path = tmp_path_factory.mktemp("wl") / "workload.json"
    write_workload(path, wl)
    return platform, path


@pytest.mark.parametrize("policy", ["fcfs", "fcfs-easy", "sjf-bb", "filler", "conservative-bb"])
def test_lean_replies_equal_the_full_path(workload, policy, tmp_path):
    platform, path = workload
    sched = make_scheduler(policy, {})
    assert sched._lean
    taken = []
    lean_events = sched._lean_events
    sched._lean_events = lambda msg: taken.append(lean_events(msg)) or taken[-1]
    res = simulate(platform, [path], sched, export_prefix=tmp_path / "out", record_transcript=True)
    states = {r.final_state for r in res.jobs}
    assert {"REJECTED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_SUCCESSFULLY"} <= states
    assert sum(t is not None for t in taken) > len(taken) // 2   # the lean path did the work

    full = make_scheduler(policy, {})
    full._lean = False
    msgs = [e["msg"] for e in res.transcript if e["from"] == "batsim"]
    replies = [e["msg"] for e in res.transcript if e["from"] == "scheduler"]
    assert [full.handle_message(m) for m in msgs] == replies


def _started(policy: str = "fcfs") -> PolicyScheduler:
    """A scheduler that started job w0!1 on resource 0 at t=0."""
    sched = make_scheduler(policy, {})
    begins = {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 2, "nb_compute_resources": 2, "nb_storage_resources": 0,
        "allow_compute_sharing": False, "allow_storage_sharing": True, "config": {},
        "compute_resources": [{"id": k, "name": f"n{k}", "state": "idle", "properties": {}}
                              for k in range(2)],
        "storage_resources": [], "workloads": {}, "profiles": {}}}
    sched.handle_message({"now": 0.0, "events": [begins]})
    reply = sched.handle_message({"now": 0.0, "events": [{"timestamp": 0.0, "type": "JOB_SUBMITTED", "data": {
        "job_id": "w0!1", "job": {"id": "w0!1", "subtime": 0, "res": 1, "walltime": 10, "profile": "p"}}}]})
    assert reply["events"] == [{"timestamp": 0.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}}]
    return sched


def test_a_malformed_completion_still_gets_the_full_paths_error():
    sched = _started()
    with pytest.raises(ProtocolError, match="reversed"):
        sched.handle_message({"now": 5.0, "events": [{"timestamp": 5.0, "type": "JOB_COMPLETED", "data": {
            "job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "7-3"}}]})


def test_a_message_going_back_in_time_still_gets_the_full_paths_error():
    sched = _started()
    sched.handle_message({"now": 5.0, "events": []})
    with pytest.raises(ProtocolError, match="back in time"):
        sched.handle_message({"now": 4.0, "events": [{"timestamp": 4.0, "type": "JOB_COMPLETED", "data": {
            "job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "0"}}]})


def test_a_subclass_with_its_own_callbacks_gets_them_called():
    class Counting(PolicyScheduler):
        def on_job_completion(self, event):
            self.completed = getattr(self, "completed", []) + [(event.job_id, str(event.alloc))]
            super().on_job_completion(event)

    base = make_scheduler("fcfs", {})
    sched = Counting(base.policy)
    assert not sched._lean
    sched.handle_message({"now": 0.0, "events": [{"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 1, "nb_compute_resources": 1, "nb_storage_resources": 0,
        "allow_compute_sharing": False, "allow_storage_sharing": True, "config": {},
        "compute_resources": [{"id": 0, "name": "n0", "state": "idle", "properties": {}}],
        "storage_resources": [], "workloads": {}, "profiles": {}}}]})
    sched.handle_message({"now": 0.0, "events": [{"timestamp": 0.0, "type": "JOB_SUBMITTED", "data": {
        "job_id": "w0!1", "job": {"id": "w0!1", "subtime": 0, "res": 1, "walltime": 10, "profile": "p"}}}]})
    sched.handle_message({"now": 3.0, "events": [{"timestamp": 3.0, "type": "JOB_COMPLETED", "data": {
        "job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "0"}}]})
    assert sched.completed == [("w0!1", "0")]
