"""A minimal discrete-event driver speaking Batsim v4 dicts to a scheduler (tests only).

Jobs run exactly their ``runtime`` (capped by walltime); events at the same time go in one
message (completions, then submissions, then requested calls), as Batsim bundles them. The
embedded simulator replaces this outside tests.
"""

from __future__ import annotations

import heapq
import itertools

import pytest

from mrsched.errors import SimulationError
from mrsched.schedulers.registry import make_scheduler

COMPLETE, SUBMIT, CALL = 0, 1, 2


def begins_data(nb_nodes: int, *, storage: list[dict] | None = None, gpus: list[int] | None = None,
                node_props: list[dict] | None = None, sched_config: str = "") -> dict:
    """SIMULATION_BEGINS data for a flat machine (ids 0..n-1, storage ids after)."""
    compute = []
    for k in range(nb_nodes):
        props = {"role": ""}
        if gpus is not None:
            props["gpus"] = str(gpus[k])
        if node_props is not None:
            props.update(node_props[k])
        compute.append({"id": k, "name": f"node_{k}", "state": "idle", "properties": props, "zone_properties": {}})
    stor = []
    for s, props in enumerate(storage or []):
        stor.append({"id": nb_nodes + s, "name": props.get("name", f"bb_{s}"), "state": "idle",
                     "properties": {"role": "storage", **{k: str(v) for k, v in props.items() if k != "name"}},
                     "zone_properties": {}})
    return {"nb_resources": nb_nodes + len(stor), "nb_compute_resources": nb_nodes,
            "nb_storage_resources": len(stor), "allow_compute_sharing": False, "allow_storage_sharing": True,
            "config": {"sched-config": sched_config, "profiles-forwarded-on-submission": False,
                       "dynamic-jobs-enabled": False},
            "compute_resources": compute, "storage_resources": stor, "workloads": {"w0": "w.json"},
            "profiles": {"w0": {}}}


def simulate(scheduler, begins: dict, jobs: list[dict], *, max_messages: int = 200_000) -> dict:
    """Drive ``scheduler`` (anything with handle_message) over ``jobs``.

    Each job dict: id, subtime, res, walltime, runtime, plus request fields. Returns
    ``{"start": {id: t}, "finish": {id: t}, "alloc": {id: [ids]}, "rejected": set, "replies": [...]}``.
    """
    seq = itertools.count()
    heap: list = []
    for j in jobs:
        heapq.heappush(heap, (float(j["subtime"]), SUBMIT, next(seq), j))
    out = {"start": {}, "finish": {}, "alloc": {}, "rejected": set(), "replies": []}
    by_id = {f"w0!{j['id']}": j for j in jobs}
    now = 0.0
    reply = scheduler.handle_message({"now": 0.0, "events": [
        {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": begins}]})
    pending_calls: set[float] = set()

    def apply(reply: dict) -> None:
        out["replies"].append(reply)
        for e in reply["events"]:
            d = e["data"]
            if e["type"] == "EXECUTE_JOB":
                j = by_id[d["job_id"]]
                out["start"][d["job_id"]] = now
                ids = []
                for part in d["alloc"].split():
                    a, _, b = part.partition("-")
                    ids.extend(range(int(a), int(b or a) + 1))
                out["alloc"][d["job_id"]] = ids
                run = min(float(j["runtime"]), float(j.get("walltime", -1)) if j.get("walltime", -1) > 0 else 1e300)
                heapq.heappush(heap, (now + run, COMPLETE, next(seq), (d["job_id"], d["alloc"])))
            elif e["type"] == "REJECT_JOB":
                out["rejected"].add(d["job_id"])
            elif e["type"] == "CALL_ME_LATER":
                t = float(d["timestamp"])
                if t <= now:
                    raise SimulationError("CALL_ME_LATER in the past")
                if t not in pending_calls:
                    pending_calls.add(t)
                    heapq.heappush(heap, (t, CALL, next(seq), t))

    apply(reply)
    for _ in range(max_messages):
        if not heap:
            break
        now = heap[0][0]
        batch = []
        while heap and heap[0][0] == now:
            batch.append(heapq.heappop(heap))
        batch.sort(key=lambda x: (x[1], x[2]))
        events = []
        for t, kind, _, item in batch:
            if kind == COMPLETE:
                job_id, alloc = item
                out["finish"][job_id] = t
                events.append({"timestamp": t, "type": "JOB_COMPLETED", "data": {
                    "job_id": job_id, "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": alloc}})
            elif kind == SUBMIT:
                j = item
                job = {k: v for k, v in j.items() if k != "runtime"}
                job.update(id=f"w0!{j['id']}", profile=j.get("profile", "p"))
                events.append({"timestamp": t, "type": "JOB_SUBMITTED", "data": {"job_id": f"w0!{j['id']}", "job": job}})
            else:
                pending_calls.discard(item)
                events.append({"timestamp": t, "type": "REQUESTED_CALL", "data": {}})
        apply(scheduler.handle_message({"now": now, "events": events}))
    else:
        raise AssertionError("driver did not finish")
    return out


def test_driver_runs_jobs_in_sequence_under_fcfs():
    jobs = [{"id": 1, "subtime": 0, "res": 2, "walltime": 10, "runtime": 5},
            {"id": 2, "subtime": 1, "res": 2, "walltime": 10, "runtime": 5}]
    res = simulate(make_scheduler("fcfs", {}), begins_data(2), jobs)
    assert res["start"] == {"w0!1": 0.0, "w0!2": 5.0}
    assert res["finish"] == {"w0!1": 5.0, "w0!2": 10.0}


def test_driver_refuses_wakeup_in_the_past():
    class Bad:
        def handle_message(self, msg):
            return {"now": msg["now"], "events": [{"timestamp": msg["now"], "type": "CALL_ME_LATER",
                                                    "data": {"timestamp": msg["now"]}}]}
    with pytest.raises(SimulationError):
        simulate(Bad(), begins_data(1), [])
