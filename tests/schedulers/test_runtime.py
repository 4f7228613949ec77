"""PolicyScheduler / PolicyRuntime: checked decisions, rejections, protocol actions.

Whole runs go through the embedded engine (engine_run.simulate); the tests that feed
``handle_message`` by hand script one exact message sequence, or one Batsim never sends."""

from __future__ import annotations

import logging

import pytest
from engine_run import begins_data, simulate

from mrsched.errors import SimulationError
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Reject, Start, WakeUp
from mrsched.schedulers.model.contract import Policy
from mrsched.schedulers.registry import make_scheduler
from mrsched.schedulers.execution.runtime import PolicyRuntime, PolicyScheduler


def msg(now, *events):
    return {"now": now, "events": [{"timestamp": now, "type": t, "data": d} for t, d in events]}


def submitted(job_id, **job):
    job.setdefault("subtime", 0.0)
    job.setdefault("profile", "p")
    return ("JOB_SUBMITTED", {"job_id": job_id, "job": {"id": job_id, **job}})


class Scripted(Policy):
    """A test policy returning whatever decisions the test put in ``script``."""

    name = "scripted"

    def __init__(self, *, job_model: str = "alloc-only", period: float = 0.0):
        self.job_model = job_model
        self.period = period

    def setup(self, cluster):
        super().setup(cluster)
        self.script_ = []

    def schedule(self, ctx):
        out, self.script_ = self.script_, []
        return out


def scripted_runtime(nodes=4, caps=(10,)):
    rt = PolicyRuntime(Scripted())
    rt.begin(Cluster.simple(nodes, bb_capacity=list(caps)), 0.0)
    return rt


def test_start_on_busy_nodes_is_refused():
    rt = scripted_runtime()
    rt.submit(0, "w0!1", {"subtime": 0, "res": 2, "walltime": 10})
    rt.submit(0, "w0!2", {"subtime": 0, "res": 2, "walltime": 10})
    rt.policy.script_ = [Start("w0!1", (0, 1))]
    rt.step(0)
    rt.policy.script_ = [Start("w0!2", (1, 2))]
    with pytest.raises(SimulationError, match="busy nodes"):
        rt.step(1)


def test_a_job_submitted_a_hair_before_its_subtime_may_start_then():
    """Batsim's submitter sleeps until a job's subtime on a clock that is a sum of steps: it
    can wake a hair early, and the JOB_SUBMITTED then reads a printed microsecond before the
    subtime (seen on part 4 of the Euro-Par study: 1489105.999999 for 1489106).
    The job is waiting: a policy may start it in that round."""
    rt = scripted_runtime()
    rt.submit(1489105.999999, "w0!1", {"subtime": 1489106.0, "res": 1, "walltime": 10})
    rt.policy.script_ = [Start("w0!1", (0,))]
    assert [type(d) for d in rt.step(1489105.999999)] == [Start]
    rt.policy.script_ = [Start("w0!1", (1,))]
    with pytest.raises(SimulationError, match="not waiting"):
        rt.step(1489106.5)


def test_start_of_wrong_size_and_overfull_burst_buffer_are_refused():
    rt = scripted_runtime()
    rt.submit(0, "w0!1", {"subtime": 0, "res": 2, "walltime": 10})
    rt.policy.script_ = [Start("w0!1", (0,))]
    with pytest.raises(SimulationError, match="gives 1 nodes"):
        rt.step(0)
    rt = scripted_runtime()
    rt.submit(0, "w0!1", {"subtime": 0, "res": 1, "walltime": 10, "burst_buffer": 8})
    rt.submit(0, "w0!2", {"subtime": 0, "res": 1, "walltime": 10, "burst_buffer": 8})
    rt.policy.script_ = [Start("w0!1", (0,), {0: {4: 8}}), Start("w0!2", (1,), {1: {4: 8}})]
    with pytest.raises(SimulationError, match="over-allocates burst buffer on storage"):
        rt.step(0)


def test_burst_buffer_bytes_come_back_when_a_job_ends_and_must_name_every_storage_node():
    """The runtime's own count of free bytes per storage node: a job's bytes are taken at its
    start and given back at its end (another job may then take them), and an allocation that
    does not list every storage node is refused by name."""
    rt = scripted_runtime(caps=(10, 6))
    for k in (1, 2, 3):
        rt.submit(0, f"w0!{k}", {"subtime": 0, "res": 1, "walltime": 10, "burst_buffer": 8})
    rt.policy.script_ = [Start("w0!1", (0,), {0: {4: 8}})]
    rt.step(0)
    assert rt.machine.bb_free == (2, 6)
    rt.complete(3, "w0!1")
    assert rt.machine.bb_free == (10, 6)
    rt.policy.script_ = [Start("w0!2", (1,), {1: {4: 8}})]
    rt.step(3)
    assert rt.machine.bb_free == (2, 6)
    rt.policy.script_ = [Start("w0!3", (2,), allocation=Allocation(1 << 2, (8,)))]
    with pytest.raises(SimulationError, match="w0!3.*bytes for 1 storage nodes; the machine has 2"):
        rt.step(3)


def test_reject_needs_a_reason_and_a_waiting_job():
    rt = scripted_runtime()
    rt.submit(0, "w0!1", {"subtime": 0, "res": 1, "walltime": 10})
    rt.policy.script_ = [Reject("w0!1", "")]
    with pytest.raises(SimulationError, match="without a reason"):
        rt.step(0)
    rt.policy.script_ = [Reject("w0!7", "no")]
    with pytest.raises(SimulationError, match="not waiting"):
        rt.step(0)


@pytest.mark.parametrize("job,why", [
    ({"res": 5}, "compute nodes"),
    ({"res": 2, "burst_buffer": 32}, "burst buffer per node"),
    ({"res": 4, "burst_buffer": 40}, "such shares"),
    ({"res": 1, "gpus_per_node": 1}, "GPUs"),
    ({"res": 1, "burst_buffer": "lots"}, "invalid request"),  # res "many": a protocol error now
])
def test_never_runnable_jobs_are_rejected_with_a_logged_reason(job, why, caplog):
    # Messages fed by hand, not through the engine: Batsim refuses a workload whose job asks
    # more nodes than the platform has (res 5 on 4) or a non-integer res, so it never sends these.
    sched = make_scheduler("sjf-bb", {})
    data = begins_data(4, storage=[{"bb_capacity": 15}, {"bb_capacity": 15}])
    sched.handle_message(msg(0, ("SIMULATION_BEGINS", data)))
    with caplog.at_level(logging.INFO, logger="mrsched.schedulers.execution.runtime"):
        reply = sched.handle_message(msg(1, submitted("w0!1", walltime=10, **job)))
    assert [e["type"] for e in reply["events"]] == ["SET_JOB_METADATA", "REJECT_JOB"]
    assert why in caplog.text and "w0!1" in caplog.text
    meta = reply["events"][0]["data"]  # the reason is recorded in Batsim's _jobs.csv too
    assert meta["job_id"] == "w0!1" and meta["metadata"].startswith("rejected: ") and why in meta["metadata"]


def test_execute_job_uses_batsim_ids_and_storage_mapping_only_for_pfs_profiles():
    data = begins_data(2, storage=[{"bb_capacity": 100, "name": "bb0"}, {"name": "pfs", "pfs": "true"}])
    # never assume node_k has id k: here the compute ids come after the storage ids
    for k, host in enumerate(data["compute_resources"]):
        host["id"] = 2 + k
    for k, host in enumerate(data["storage_resources"]):
        host["id"] = k
    data["profiles"] = {"w0": {"io": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1,
                                      "bytes_to_write": 1, "storage": "pfs"},
                               "d": {"type": "delay", "delay": 1}}}
    sched = make_scheduler("fcfs-bb", {})
    sched.handle_message(msg(0, ("SIMULATION_BEGINS", data)))
    reply = sched.handle_message(msg(1, submitted("w0!1", res=1, walltime=5, profile="io", burst_buffer=10),
                                     submitted("w0!2", res=1, walltime=5, profile="d")))
    ex = {e["data"]["job_id"]: e["data"] for e in reply["events"] if e["type"] == "EXECUTE_JOB"}
    assert ex["w0!1"] == {"job_id": "w0!1", "alloc": "2", "storage_mapping": {"pfs": 1}}
    assert ex["w0!2"] == {"job_id": "w0!2", "alloc": "3"}
    assert sched.runtime.running["w0!1"].allocation.bb == (10,)


def test_early_completion_frees_the_rest_of_the_window():
    sched = make_scheduler("conservative-bb", {})
    sched.handle_message(msg(0, ("SIMULATION_BEGINS", begins_data(2))))
    r = sched.handle_message(msg(0, submitted("w0!1", res=2, walltime=100), submitted("w0!2", res=2, walltime=10)))
    assert [e["data"]["job_id"] for e in r["events"]] == ["w0!1"]
    r = sched.handle_message(msg(7, ("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY",
                                                       "return_code": 0, "alloc": "0-1"})))
    assert [(e["type"], e["data"]["job_id"], e["timestamp"]) for e in r["events"]] == [("EXECUTE_JOB", "w0!2", 7)]
    assert sched.runtime.profile.times == [7, 17]


@pytest.mark.parametrize("called", [60, 60.0015])
def test_periodic_policy_asks_wakeups_only_while_jobs_wait(called):
    """The tick's round runs at the REQUESTED_CALL, also one that comes 1.5 ms late
    (Batsim's messages over 500 us links): before, that round was skipped and the scheduler
    asked for the next tick, then the next, for ever."""
    sched = make_scheduler("fcfs", {"period": "60"})
    sched.handle_message(msg(0, ("SIMULATION_BEGINS", begins_data(1))))
    r = sched.handle_message(msg(30, submitted("w0!1", res=1, walltime=10, subtime=30)))
    assert [(e["type"], e["data"]) for e in r["events"]] == [("CALL_ME_LATER", {"timestamp": 60.0})]
    r = sched.handle_message(msg(called, ("REQUESTED_CALL", {})))
    assert [e["type"] for e in r["events"]] == ["EXECUTE_JOB"]


def test_job_without_walltime_runs_and_blocks_reservations():
    jobs = [{"id": 1, "subtime": 0, "res": 2, "walltime": -1, "runtime": 50},
            {"id": 2, "subtime": 1, "res": 2, "walltime": 10, "runtime": 10},
            {"id": 3, "subtime": 2, "res": 1, "walltime": 10, "runtime": 10}]
    for policy in ("fcfs-bb", "conservative-bb"):
        res = simulate(make_scheduler(policy, {}), begins_data(3), jobs)
        assert res["start"] == {"w0!1": 0, "w0!2": 50, "w0!3": 2}


def test_a_policy_returning_garbage_is_a_simulation_error():
    rt = scripted_runtime()
    rt.policy.script_ = ["start everything"]
    with pytest.raises(SimulationError, match="not a decision"):
        rt.step(0)


def test_wakeup_decisions_become_call_me_later():
    class Sleeper(Scripted):
        def schedule(self, ctx):
            return [WakeUp(ctx.now)]   # at now: moved just after Batsim's clock
    sched = PolicyScheduler(Sleeper())
    sched.handle_message(msg(0, ("SIMULATION_BEGINS", begins_data(1))))
    r = sched.handle_message(msg(5, ("NOTIFY", {"type": "no_more_static_job_to_submit"})))
    assert r["events"][0]["type"] == "CALL_ME_LATER" and r["events"][0]["data"]["timestamp"] > 5


@pytest.mark.parametrize("depth,expected", [
    (1, {"w0!0": 0, "w0!1": 10, "w0!2": 30, "w0!3": 0}),    # J3 backfilled, delays J2
    (2, {"w0!0": 0, "w0!1": 10, "w0!2": 20, "w0!3": 30}),   # J2 reserved too: J3 waits
])
def test_easy_depth_reserves_the_first_blocked_jobs(depth, expected):
    jobs = [{"id": 0, "subtime": 0, "res": 2, "walltime": 10, "runtime": 10},
            {"id": 1, "subtime": 0, "res": 3, "walltime": 10, "runtime": 10},
            {"id": 2, "subtime": 0, "res": 4, "walltime": 10, "runtime": 10},
            {"id": 3, "subtime": 0, "res": 1, "walltime": 30, "runtime": 30}]
    res = simulate(make_scheduler("fcfs-bb", {"depth": depth}), begins_data(4), jobs)
    assert res["start"] == expected


@pytest.mark.parametrize("order,first", [("sjf", "w0!2"), ("largest", "w0!3"), ("smallest", "w0!2"),
                                         ("fcfs", "w0!1")])
def test_queue_orders(order, first):
    jobs = [{"id": 0, "subtime": 0, "res": 4, "walltime": 10, "runtime": 10},
            {"id": 1, "subtime": 1, "res": 3, "walltime": 30, "runtime": 30},
            {"id": 2, "subtime": 2, "res": 2, "walltime": 20, "runtime": 20},
            {"id": 3, "subtime": 3, "res": 4, "walltime": 40, "runtime": 40}]
    res = simulate(make_scheduler("fcfs", {"order": order}), begins_data(4), jobs)
    # no two waiting jobs fit together: the order alone decides who goes at t=10
    assert [j for j, t in res["start"].items() if t == 10] == [first]


def test_named_counters_from_sched_config_limit_concurrency():
    jobs = [{"id": k, "subtime": 0, "res": 1, "walltime": 10, "runtime": 10, "licenses": 2} for k in range(3)]
    data = begins_data(4, sched_config='{"counters": {"licenses": 3}}')
    res = simulate(make_scheduler("conservative-bb", {}), data, jobs)
    assert sorted(res["start"].values()) == [0, 10, 20]
    too_many = [{"id": 9, "subtime": 0, "res": 1, "walltime": 10, "runtime": 10, "licenses": 4}]
    assert simulate(make_scheduler("fcfs", {}), data, too_many)["rejected"] == {"w0!9"}


@pytest.mark.parametrize("policy", ["fcfs", "sjf-bb", "filler", "plan-2", "conservative-bb"])
def test_a_job_past_its_walltime_not_yet_reported_ended_keeps_its_nodes(policy):
    """At its walltime a job's reservation ends, but its end (Batsim's kill, or the last I/O
    phase) may come in a later message at the same time: a round in between must not start a
    job on its nodes (seen on seed 001 part 9: 'starts the job on busy nodes')."""
    sched = make_scheduler(policy, {})
    sched.handle_message(msg(0, ("SIMULATION_BEGINS", begins_data(2))))
    r = sched.handle_message(msg(0, submitted("w0!1", res=2, walltime=10)))
    assert [e["data"]["job_id"] for e in r["events"] if e["type"] == "EXECUTE_JOB"] == ["w0!1"]
    r = sched.handle_message(msg(5, submitted("w0!2", res=1, walltime=10, subtime=5)))
    assert not [e for e in r["events"] if e["type"] == "EXECUTE_JOB"]
    # t = 10: w0!1's window is over, its completion is not in this message
    r = sched.handle_message(msg(10, ("NOTIFY", {"type": "no_more_static_job_to_submit"})))
    assert not [e for e in r["events"] if e["type"] == "EXECUTE_JOB"]
    r = sched.handle_message(msg(10, ("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "COMPLETED_WALLTIME_REACHED",
                                                        "return_code": -1, "alloc": "0-1"})))
    assert [e["data"]["job_id"] for e in r["events"] if e["type"] == "EXECUTE_JOB"] == ["w0!2"]


def test_feasibility_memo_is_bounded_and_still_rejects(monkeypatch):
    """Every job may ask its own bytes of burst buffer: the memo of feasibility by request
    shape stays bounded, and a job the storage cannot hold is still rejected after a clear."""
    import mrsched.schedulers.execution.runtime as runtime_mod
    monkeypatch.setattr(runtime_mod, "_INFEASIBLE_MEMO", 8)
    rt = scripted_runtime(nodes=4, caps=(10, 10))
    for k in range(40):
        assert rt.submit(0, f"w0!{k}", {"subtime": 0, "res": 2, "walltime": 10, "burst_buffer": k % 20 + 1})
        assert len(rt._infeasible) <= 8
    assert rt.submit(0, "w0!big", {"subtime": 0, "res": 4, "walltime": 10, "burst_buffer": 24}) is None
    assert "such shares" in rt.pending[-1].reason
