"""The plan-based search's fast evaluation (``earliest_fit`` from each job's ``fit_bound``,
``Fit`` allocations, reserved with ``reserve_fitted``) plans exactly what a plain replay with
``earliest_start`` + ``reserve`` plans, and the policy starts jobs with full allocations."""

from __future__ import annotations

import numpy as np
import pytest
from test_availability_fit import coord_cluster, loaded
from engine_run import begins_data, simulate

from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import AvailabilityProfile, Fit
from mrsched.schedulers.model.job import Job, Request
from mrsched.schedulers.model.contract import SchedulingContext
from mrsched.schedulers.optim.planning import PlanProblem, best_plan
from mrsched.schedulers.registry import make_scheduler

GB = 10**9


def random_jobs(rng: np.random.Generator, k: int, nodes: int) -> list[Job]:
    jobs = []
    for q in range(k):
        n = int(rng.integers(1, nodes // 2 + 1))
        bb = n * int(rng.integers(1, 2 * GB)) + int(rng.integers(0, n)) if rng.random() < 0.7 else 0
        jobs.append(Job(f"j{q}", float(rng.integers(0, 100)),
                        Request(nodes=n, walltime=float(rng.integers(1, 40) * 10), bb_per_node=-(-bb // n), bb_total=bb)))
    return jobs


def replay(profile: AvailabilityProfile, jobs: list[Job], order: list[int], now: float, alpha: float):
    """The plan of ``order`` the plain way: earliest_start then a checked reserve, in turn."""
    prof = profile.copy()
    starts, allocs, score = [], [], 0.0
    for i in order:
        req = jobs[i].request
        found = prof.earliest_start(req, req.walltime, now)
        if found is None:
            starts.append(float("inf"))
            allocs.append(None)
            continue
        t, alloc = found
        starts.append(t)
        allocs.append(alloc)
        wait = t - jobs[i].subtime
        score += wait ** alpha if wait > 0 else 0.0
        prof.reserve(t, t + req.walltime, alloc)
    return starts, allocs, score


@pytest.mark.parametrize("seed", range(6))
def test_fast_plan_evaluation_equals_a_plain_replay(seed):
    base, rng = loaded(seed)
    now = 120.0
    base.advance(now)
    jobs = random_jobs(rng, 12, base.cluster.nb_nodes)
    problem = PlanProblem(base, jobs, now, alpha=2.0, stride=3)
    fits = 0
    current = problem.evaluate(list(range(len(jobs))))
    problem.commit(current)
    for _ in range(25):
        order = list(current.order)
        i, j = sorted(int(x) for x in rng.choice(len(order), size=2, replace=False))
        order[i], order[j] = order[j], order[i]
        plan = problem.evaluate(order, i)
        starts, allocs, score = replay(base, jobs, order, now, 2.0)
        assert plan.starts == starts and plan.score == score
        for got, want in zip(plan.allocs, allocs):
            if want is None:
                assert got is None
                continue
            fits += isinstance(got, Fit)
            assert base.allocation(got) == want     # per-node placement included
        if rng.random() < 0.5:
            problem.commit(plan)
            current = plan
    assert fits


def test_best_plan_allocations_become_full_allocations():
    rng = np.random.default_rng(4)
    cl = coord_cluster(rng, nodes=16, storages=4)
    prof = AvailabilityProfile(cl, 0.0)
    jobs = random_jobs(rng, 9, 16)
    plan = best_plan(prof, jobs, 0.0, alpha=2.0, rng=np.random.default_rng(0))
    now = [p for p, t in enumerate(plan.starts) if t == 0.0]
    assert now
    for p in now:
        alloc = prof.allocation(plan.allocs[p])
        assert isinstance(alloc, Allocation)
        req = jobs[plan.order[p]].request
        if req.bb_total:
            assert sum(b for _, b in alloc.placement.values()) == req.bb_total
            assert len(alloc.placement) == req.nodes


def test_policy_starts_jobs_with_their_per_node_burst_buffer_placement(monkeypatch):
    started = []
    real_start = SchedulingContext.start

    def spy(self, job, allocation):
        decision = real_start(self, job, allocation)
        started.append((job, allocation, decision))
        return decision

    monkeypatch.setattr(SchedulingContext, "start", spy)
    storage = [{"bb_capacity": 6 * GB}, {"bb_capacity": 6 * GB}]
    jobs = [{"id": str(k), "subtime": float(k), "res": 2, "walltime": 100.0, "runtime": 50.0,
             "burst_buffer": 4 * GB} for k in range(8)]
    res = simulate(make_scheduler("plan-2", {}), begins_data(6, storage=storage), jobs)
    assert set(res["start"]) == {f"w0!{k}" for k in range(8)}
    assert len(started) == 8
    for job, allocation, decision in started:
        assert type(allocation) is Allocation
        assert sorted(allocation.placement) == sorted(k for k in range(6) if allocation.nodes >> k & 1)
        assert sum(b for _, b in allocation.placement.values()) == 4 * GB
        assert sum(v for per in decision.bb.values() for v in per.values()) == 4 * GB
