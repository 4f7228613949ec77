"""Invariants every registered policy keeps on randomised workloads (STYLE.md Do 10).

No resource over-allocated at any time, no start before submission, every feasible job ends up
started, every rejection has a reason (and only never-runnable jobs are rejected), same input
same decisions; EASY's head reservation is never delayed by a backfilled job; conservative
reservations never move later.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from engine_run import begins_data, simulate

from mrsched.errors import ConfigError
from mrsched.schedulers.model.decisions import Reject, Start
from mrsched.schedulers.policies.cpugpu import CpuGpuPolicy
from mrsched.schedulers.policies.backfilling import EasyBackfilling
from mrsched.schedulers.model.contract import order_queue
from mrsched.schedulers.policies.conservative import ConservativeBackfilling
from mrsched.schedulers.registry import POLICIES, make_scheduler

GPUS = [0, 0, 2, 2, 0, 4, 0, 0]
CAPS = [100, 60]
EPS = 1e-9


def machine() -> dict:
    props = [{"group": str(k // 4), "chassis": str(k // 2)} for k in range(8)]
    return begins_data(8, gpus=GPUS, node_props=props,
                       storage=[{"bb_capacity": CAPS[0], "group": 0, "chassis": 0},
                                {"bb_capacity": CAPS[1], "group": 1, "chassis": 2}])


def workload(seed: int, n: int = 40) -> tuple[list[dict], set[str]]:
    """Random jobs, a few of which can never run (too many GPU nodes / GPUs / burst buffer)."""
    rng = np.random.default_rng(seed)
    jobs, impossible, t = [], set(), 0.0
    for k in range(n):
        t += float(rng.exponential(4.0))
        res = int(rng.integers(1, 9))
        wall = float(rng.integers(2, 60))
        job = {"id": k, "subtime": round(t, 3), "res": res, "walltime": wall,
               "runtime": float(rng.uniform(0.3, 1.0)) * wall}
        u = rng.random()
        if u < 0.6:
            job["burst_buffer"] = int(rng.integers(0, 20)) * res
        if rng.random() < 0.15:
            job["gpus_per_node"] = int(rng.integers(1, 3))
        if rng.random() < 0.04:
            # more GPU nodes than the machine has (Batsim refuses a workload asking more
            # nodes than the platform's, so that impossibility is test_runtime's, unit level)
            job["res"] = 8
            job["gpus_per_node"] = max(job.get("gpus_per_node", 0), 1)
        if rng.random() < 0.04:
            job["burst_buffer"] = 10 * 100 * job["res"]
        if rng.random() < 0.03:
            job["gpus_per_node"] = 8
        r, g, bb = job["res"], job.get("gpus_per_node", 0), job.get("burst_buffer", 0)
        share = -(-bb // r) if bb else 0
        if r > 8 or sum(x >= g for x in GPUS) < r or (bb and sum(c // share for c in CAPS) < r):
            impossible.add(f"w0!{k}")
        jobs.append(job)
    return jobs, impossible


class Spy:
    """Records every checked decision and per-round reservation facts of one scheduler."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.starts: dict[str, Start] = {}
        self.rejects: dict[str, Reject] = {}
        self.easy_violations: list[str] = []
        self.planned: dict[str, list[float]] = {}
        runtime = scheduler.runtime
        step = runtime.step

        def spy_step(now, **kw):
            out = step(now, **kw)
            for d in out:
                if type(d) is Start:
                    self.starts[d.job_id] = d
                elif type(d) is Reject:
                    self.rejects[d.job_id] = d
            return out

        runtime.step = spy_step
        policy = scheduler.policy
        schedule = policy.schedule

        def spy_schedule(ctx):
            before = ctx.profile.copy()
            decisions = schedule(ctx)
            if isinstance(policy, EasyBackfilling):
                self.check_easy_head(policy, ctx, before, decisions)
            if isinstance(policy, ConservativeBackfilling):
                for job_id, res in policy.planned_.items():
                    self.planned.setdefault(job_id, []).append(res.start)
                for d in decisions:
                    if type(d) is Start:
                        self.planned.setdefault(d.job_id, []).append(ctx.now)
            return decisions

        policy.schedule = spy_schedule

    def check_easy_head(self, policy, ctx, before, decisions):
        started = {d.job_id: d for d in decisions if type(d) is Start}
        ordered = order_queue(ctx.queue, policy.order)
        head = next((j for j in ordered if j.id not in started), None)
        if head is None or not head.request.has_walltime:
            return
        # profile with only the jobs started in order ahead of the head: the reservation it got
        ahead = before
        for job in ordered:
            if job is head:
                break
            d = started[job.id]
            ahead.reserve(ctx.now, ctx.now + job.request.walltime, d.allocation)
        with_bb = policy.reserve == "all"
        promised = ahead.earliest_start(head.request, None, ctx.now, with_bb=with_bb)
        final = ctx.profile.earliest_start(head.request, None, ctx.now, with_bb=with_bb)
        if promised is not None and (final is None or final[0] > promised[0] + EPS):
            self.easy_violations.append(f"{head.id} at {ctx.now}: {promised[0]} -> {final and final[0]}")


def check_no_overallocation(spy: Spy, res: dict) -> None:
    intervals = []
    for job_id, d in spy.starts.items():
        intervals.append((res["start"][job_id], res["finish"][job_id], d))
    times = sorted({t for s, f, _ in intervals for t in (s, f)})
    for t in times:
        active = [d for s, f, d in intervals if s <= t < f]
        nodes = [n for d in active for n in d.nodes]
        assert len(nodes) == len(set(nodes)), f"node shared at t={t}"
        used = {}
        for d in active:
            for shares in d.bb.values():
                for sid, b in shares.items():
                    used[sid] = used.get(sid, 0) + b
        for sid, b in used.items():
            assert b <= CAPS[sid - 8], f"storage {sid} over-allocated at t={t}"


CORE = {"fcfs", "filler", "fcfs-easy", "fcfs-bb", "sjf-bb", "easy-bf", "conservative-bb", "conservative"}
#: seed 002's policies place cores and GPUs on a per-core platform and refuse this machine of
#: whole nodes (below); tests/schedulers/test_cpugpu_invariants.py sweeps them on their own
PER_CORE = sorted(n for n in POLICIES if isinstance(make_scheduler(n, {}).policy, CpuGpuPolicy))


def cases():
    """Every registered policy; the search-based ones (other areas) on a short workload by
    default and on the full one under ``-m slow`` (their GA / annealing cost seconds a run)."""
    out = []
    for name in sorted(set(POLICIES) - set(PER_CORE)):
        for seed in (1, 2, 3):
            if name in CORE:
                out.append(pytest.param(name, seed, 40, id=f"{name}-{seed}"))
            else:
                out.append(pytest.param(name, seed, 40, id=f"{name}-{seed}-full", marks=pytest.mark.slow))
                if seed == 1:
                    out.append(pytest.param(name, seed, 12, id=f"{name}-{seed}-short"))
    return out


@pytest.mark.parametrize("policy,seed,n", cases())
def test_invariants_on_random_workloads(policy, seed, n):
    jobs, impossible = workload(seed, n)
    sched = make_scheduler(policy, {})
    spy = Spy(sched)
    res = simulate(sched, machine(), jobs)
    subtime = {f"w0!{j['id']}": j["subtime"] for j in jobs}
    by_id = {f"w0!{j['id']}": j for j in jobs}
    # exactly the impossible jobs are rejected, each with a reason; all others ran
    assert set(spy.rejects) == impossible == res["rejected"]
    assert all(r.reason for r in spy.rejects.values())
    assert set(res["start"]) == set(subtime) - impossible
    for job_id, t in res["start"].items():
        assert t >= subtime[job_id] - EPS
        d = spy.starts[job_id]
        assert len(d.nodes) == by_id[job_id]["res"]
        g = by_id[job_id].get("gpus_per_node", 0)
        assert all(GPUS[n] >= g for n in d.nodes)
        assert sum(b for s in d.bb.values() for b in s.values()) == by_id[job_id].get("burst_buffer", 0)
    check_no_overallocation(spy, res)
    assert not spy.easy_violations
    if isinstance(sched.policy, ConservativeBackfilling):
        for job_id, plans in spy.planned.items():
            assert all(b <= a + EPS for a, b in zip(plans, plans[1:])), f"{job_id} moved later: {plans}"
            assert res["start"][job_id] <= plans[0] + EPS
    # determinism: same input, same decisions
    again = simulate(make_scheduler(policy, {}), machine(), jobs)
    assert again["start"] == res["start"] and again["alloc"] == res["alloc"]


@pytest.mark.parametrize("policy", PER_CORE)
def test_per_core_policies_refuse_a_machine_of_whole_nodes_at_start(policy):
    """Seen as nodes of one core, a run of theirs would mean nothing: refused at
    SIMULATION_BEGINS with the reason and the command that makes the right platform."""
    assert {"ipsched", "aucsched", "slurm-bf"} <= set(PER_CORE)
    jobs, _ = workload(1, n=4)
    with pytest.raises(ConfigError) as info:
        simulate(make_scheduler(policy, {}), machine(), jobs)
    text = str(info.value)
    assert f"policy '{policy}' needs a per-core CPU+GPU platform" in text
    assert "`mrsched platform cluster --nodes N --cores C --gpus G`" in text


@pytest.mark.parametrize("seed", [4, 5])
def test_fcfs_bb_head_starts_no_later_than_its_first_reservation(seed):
    """FCFS order + reservation on every resource: the head's promise holds until it starts."""
    jobs, _ = workload(seed)
    sched = make_scheduler("fcfs-bb", {})
    promised: dict[str, float] = {}
    policy = sched.policy
    schedule = policy.schedule

    def spy(ctx):
        decisions = schedule(ctx)
        started = {d.job_id for d in decisions if type(d) is Start}
        head = next((j for j in ctx.queue if j.id not in started), None)
        if head is not None:
            found = ctx.profile.earliest_start(head.request, None, ctx.now)
            if found is not None:
                promised[head.id] = min(promised.get(head.id, math.inf), found[0])
        return decisions

    policy.schedule = spy
    res = simulate(sched, machine(), jobs)
    assert promised
    for job_id, t in promised.items():
        assert res["start"][job_id] <= t + EPS


@pytest.mark.parametrize("policy", ["fcfs-bb", "conservative-bb", "filler"])
def test_periodic_rounds_start_jobs_only_on_ticks(policy):
    jobs, _ = workload(7, n=20)
    res = simulate(make_scheduler(policy, {"period": "10"}), machine(), jobs)
    assert res["start"]
    for t in res["start"].values():
        assert abs(t / 10 - round(t / 10)) < 1e-6


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_conservative_release_log_shortcut_is_exact(seed):
    """Skipping jobs whose window met no freed capacity gives batsched's full re-insertion."""
    from mrsched.schedulers.execution.runtime import PolicyScheduler

    class FullReinsertion(ConservativeBackfilling):
        @staticmethod
        def _horizon(profile, old, walltime):
            return None

    jobs, _ = workload(seed, n=60)
    fast = simulate(make_scheduler("conservative-bb", {}), machine(), jobs)
    full = simulate(PolicyScheduler(FullReinsertion()), machine(), jobs)
    assert fast["start"] == full["start"] and fast["alloc"] == full["alloc"]
