"""``conservative-bb`` decides exactly as batsched's algorithm written plainly
(``conservative_reference.py``: every waiting job re-inserted from now with ``earliest_start``
on every compression) on random overloaded workloads: same starts, same nodes, same
burst-buffer placement, message for message."""

from __future__ import annotations

import numpy as np
import pytest
from conservative_reference import PlainConservative
from engine_run import begins_data, simulate

from mrsched.schedulers.registry import make_scheduler, make_scheduler_of_class

GPUS = [0, 0, 2, 2, 0, 4, 0, 0]


def machine() -> dict:
    props = [{"group": str(k // 4), "chassis": str(k // 2)} for k in range(8)]
    return begins_data(8, gpus=GPUS, node_props=props,
                       storage=[{"bb_capacity": 100, "group": 0, "chassis": 0},
                                {"bb_capacity": 60, "group": 1, "chassis": 2}])


def workload(seed: int, n: int) -> list[dict]:
    """Jobs arriving faster than the machine runs them (the queue grows, so every early end
    moves many reservations); a quarter run to their walltime exactly, the others end early;
    most ask burst buffer, a few GPUs; arrivals on whole seconds, so some coincide."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0
    for k in range(n):
        t += int(rng.integers(0, 6))
        res = int(rng.integers(1, 9))
        wall = int(rng.integers(2, 60))
        runtime = wall if rng.random() < 0.25 else round(float(rng.uniform(0.1, 0.95)) * wall, 3)
        job = {"id": k, "subtime": t, "res": res, "walltime": wall, "runtime": runtime}
        if rng.random() < 0.7:
            job["burst_buffer"] = int(rng.integers(0, 12)) * res
        if rng.random() < 0.1 and res <= 3:
            job["gpus_per_node"] = 2
        jobs.append(job)
    return jobs


def runs(policy_options: dict, jobs: list[dict]) -> tuple[dict, dict]:
    live = simulate(make_scheduler("conservative-bb", dict(policy_options)), machine(), jobs)
    reference = simulate(make_scheduler_of_class(PlainConservative, dict(policy_options)), machine(), jobs)
    return live, reference


@pytest.mark.parametrize("options", [{}, {"order": "sjf"}, {"order": "largest"}, {"compression": "rebuild"},
                                     {"knowledge": "perfect"}],
                         ids=["fcfs", "sjf", "largest", "rebuild", "estimates"])
@pytest.mark.parametrize("seed", range(4))
def test_same_decisions_as_the_reference(seed, options):
    live, reference = runs(options, workload(seed, 80))
    assert live["replies"] == reference["replies"]
    assert live["start"] == reference["start"] and live["alloc"] == reference["alloc"]


def test_the_workloads_move_reservations():
    """The comparison above means something: on these workloads the queue grows and early ends
    move planned jobs earlier, burst-buffer ones included."""
    scheduler = make_scheduler("conservative-bb", {})
    policy, first_planned, longest = scheduler.policy, {}, [0]
    schedule = policy.schedule

    def spy(ctx):
        out = schedule(ctx)
        longest[0] = max(longest[0], len(policy.planned_))
        for job_id, reservation in policy.planned_.items():
            first_planned.setdefault(job_id, reservation.start)
        return out

    policy.schedule = spy
    jobs = workload(0, 80)
    live = simulate(scheduler, machine(), jobs)
    moved = {j for j, t in first_planned.items() if live["start"][j] < t}
    with_bb = {f"w0!{j['id']}" for j in jobs if j.get("burst_buffer")}
    assert longest[0] >= 20 and len(moved) >= 20 and moved & with_bb
