"""The scheduler's hot-path shortcuts give exactly what the general code gives.

fits_now's inline first candidate vs earliest_start(not_after=now), the incrementally truncated
prefix cache vs a recomputation, policies keeping their ordered queue vs a fresh policy each round,
procset_of_ids vs ProcSet.
"""

from __future__ import annotations

import numpy as np
import pytest
from procset import ProcSet

from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.batsim.intervals import format_intervals, procset_of_ids
from mrsched.schedulers.model.cluster import Cluster, StorageNode
from mrsched.schedulers.model.job import Request



def set_up(policy, cluster):
    """A policy ready for its first round (its run-time state made, as the runtime does)."""
    policy.setup(cluster)
    return policy

def dragonfly(nb_nodes: int = 12) -> Cluster:
    """Nodes in 3 groups / 6 chassis, one storage node per group: placement depends on nodes."""
    storage = tuple(StorageNode(id=nb_nodes + s, name=f"bb{s}", capacity=1000, group=s, chassis=2 * s)
                    for s in range(3))
    return Cluster(compute_ids=tuple(range(nb_nodes)), compute_names=tuple(f"n{k}" for k in range(nb_nodes)),
                   storage=storage, group=tuple(k * 3 // nb_nodes for k in range(nb_nodes)),
                   chassis=tuple(k * 6 // nb_nodes for k in range(nb_nodes)),
                   storage_ids=tuple(s.id for s in storage))


def random_request(rng) -> Request:
    n = int(rng.integers(1, 7))
    bb = int(rng.choice([0, 0, 100, 333, 1001, 2500]))
    return Request(nodes=n, walltime=float(rng.integers(1, 40)), bb_total=bb, bb_per_node=-(-bb // n))


def next_instant(rng, profile: AvailabilityProfile, running: dict, now: float, *, early: float) -> float:
    """Move a driven round 0-2 s on: jobs whose window is over end, others end early with
    probability ``early``; their reservations are released from the new present."""
    now += float(rng.integers(0, 3))
    ends = [jid for jid, r in running.items() if r.end <= now or rng.random() < early]
    profile.advance(now)
    for jid in ends:
        profile.release(running.pop(jid), from_time=now)
    return now


def submit_feasible(rng, cluster: Cluster, queue: dict, now: float, seq: int, *, most: int) -> int:
    """Submit 0..``most`` random jobs at ``now`` (those the runtime would not reject at once);
    returns the last job number used."""
    from mrsched.schedulers.model.job import Job
    from mrsched.schedulers.profile.feasibility import infeasible_reason

    for _ in range(int(rng.integers(0, most + 1))):
        req = random_request(rng)
        if infeasible_reason(cluster, req) is None:
            seq += 1
            queue[f"w!{seq}"] = Job(f"w!{seq}", now, req)
    return seq


def brute_prefix(p: AvailabilityProfile, j: int):
    mask, bb = p.nodes[0], p.bb[0]
    for k in range(1, j + 1):
        mask &= p.nodes[k]
        bb = tuple(map(min, bb, p.bb[k]))
    return mask, bb


def test_fits_now_and_prefix_cache_agree_with_the_general_scan():
    rng = np.random.default_rng(7)
    for trial in range(40):
        p = AvailabilityProfile(dragonfly(), 0.0)
        held = []
        now = 0.0
        for step in range(60):
            req = random_request(rng)
            action = rng.integers(0, 4)
            if action == 0 and held:                       # a job ends, maybe early
                r = held.pop(int(rng.integers(0, len(held))))
                now = max(now, min(r.end, now + float(rng.integers(0, 5))))
                p.advance(now)
                p.release(r, from_time=now)
            elif action == 1:
                now += float(rng.integers(0, 3))
                p.advance(now)
            found = p.earliest_start(req, None, now, with_bb=bool(rng.integers(0, 2)))
            if found is not None and rng.integers(0, 2):
                held.append(p.reserve(found[0], found[0] + req.walltime, found[1]))
            for with_bb in (True, False):
                fast = p.fits_now(req, with_bb=with_bb)
                slow = p.earliest_start(req, None, now, not_after=now, with_bb=with_bb)
                assert fast == (None if slow is None else slow[1]), (trial, step, req)
            j = int(rng.integers(0, len(p)))
            assert p._prefix(j)[:2] == brute_prefix(p, j), (trial, step, j)


def test_easy_kept_queue_takes_the_decisions_of_a_fresh_policy():
    """sjf-bb driven round by round twice: one policy kept across rounds (its ordered queue
    updated from the runtime's tail), one fresh policy per round on a plain list (the queue
    re-read whole); every round's starts must be the same."""
    from mrsched.schedulers.model.contract import SchedulingContext, WaitingQueue
    from mrsched.schedulers.registry import make_policy

    rng = np.random.default_rng(3)
    cluster = dragonfly()
    warm = make_policy("sjf-bb")
    warm.setup(cluster)
    profile = AvailabilityProfile(cluster, 0.0)
    queue, running, now, seq, started = {}, {}, 0.0, 0, 0
    for _ in range(400):
        now = next_instant(rng, profile, running, now, early=0.05)
        for _ in range(int(rng.integers(0, 3))):
            from mrsched.schedulers.model.job import Job
            seq += 1
            queue[f"w!{seq}"] = Job(f"w!{seq}", now, random_request(rng))
        outs = []
        for policy in (set_up(make_policy("sjf-bb"), cluster), warm):
            p = profile.copy() if policy is not warm else profile
            # the fresh one gets a plain list: order_queue's full sort, no incremental order
            waiting = WaitingQueue(queue) if policy is warm else list(queue.values())
            ctx = SchedulingContext(now, cluster, p, waiting, running, [], [])
            decisions = policy.schedule(ctx)
            outs.append([(d.job_id, d.allocation) for d in decisions])
            if policy is warm:
                for d in decisions:
                    running[d.job_id] = ctx.reservations[d.job_id]
                    del queue[d.job_id]
                    started += 1
        assert outs[0] == outs[1]
    assert started > 100   # the queue moved


def textbook_easy(ctx, order: str, with_bb: bool) -> list:
    """EASY as written in seed 001 Algorithm 1, without any shortcut: jobs in order start while
    they fit now; the first blocked job with a walltime is reserved at once at its earliest
    start; later jobs start when they fit beside that reservation."""
    profile, now = ctx.profile, ctx.now
    jobs = list(ctx.queue)
    if order == "sjf":
        jobs.sort(key=lambda j: j.request.walltime)   # stable: ties in submission order
    held = None
    for job in jobs:
        alloc = profile.fits_now(job.request)
        if alloc is not None:
            ctx.start(job, alloc)
        elif held is None and job.request.has_walltime:
            found = profile.earliest_start(job.request, None, now, with_bb=with_bb)
            if found is not None:
                held = profile.reserve(found[0], found[0] + job.request.walltime, found[1], tag=job.id)
    if held is not None:
        profile.release(held)
    return ctx.decisions


def test_easy_takes_the_decisions_of_the_textbook_algorithm():
    """fcfs-easy, fcfs-bb and sjf-bb (quick tests, lazy head reservation, cached earliest
    start, incremental order) driven round by round beside the textbook EASY on a copy of the
    same profile: every round's starts must be the same."""
    from mrsched.schedulers.model.contract import SchedulingContext, WaitingQueue
    from mrsched.schedulers.registry import make_policy

    for name, seed in (("fcfs-easy", 11), ("fcfs-bb", 12), ("sjf-bb", 13)):
        rng = np.random.default_rng(seed)
        cluster = dragonfly()
        warm = make_policy(name)
        warm.setup(cluster)
        profile = AvailabilityProfile(cluster, 0.0)
        queue, running, now, seq, started = {}, {}, 0.0, 0, 0
        for _ in range(500):
            now = next_instant(rng, profile, running, now, early=0.05)
            seq = submit_feasible(rng, cluster, queue, now, seq, most=3)
            ref_ctx = SchedulingContext(now, cluster, profile.copy(), list(queue.values()), running, [], [])
            ref = [(d.job_id, d.allocation) for d in
                   textbook_easy(ref_ctx, warm.order, with_bb=warm.reserve == "all")]
            ctx = SchedulingContext(now, cluster, profile, WaitingQueue(queue), running, [], [])
            got = [(d.job_id, d.allocation) for d in warm.schedule(ctx)]
            assert got == ref, (name, now)
            for jid, _ in got:
                running[jid] = ctx.reservations[jid]
                del queue[jid]
                started += 1
        assert started > 150, name   # the queue moved


@pytest.mark.parametrize("order", ["fcfs", "sjf"])
def test_fcfs_kept_across_rounds_takes_the_decisions_of_the_textbook_algorithm(order):
    """fcfs kept across rounds (plain order: the runtime's queue walked as is; sjf: its ordered
    queue updated from the runtime's tail, started jobs taken out), driven round by round
    beside the textbook algorithm (the queue sorted, jobs started in order until one does not
    fit): every round's starts must be the same, and ``idle_round`` says so exactly when a
    round starts nothing (plain order; never for sjf)."""
    from mrsched.schedulers.model.contract import SchedulingContext, WaitingQueue, order_queue
    from mrsched.schedulers.registry import make_policy

    def textbook(ctx):
        for job in order_queue(list(ctx.queue), order):
            alloc = ctx.profile.fits_now(job.request)
            if alloc is None:
                break
            ctx.start(job, alloc)
        return ctx.decisions

    rng = np.random.default_rng(5)
    cluster = dragonfly()
    warm = set_up(make_policy("fcfs", order=order), cluster)
    profile = AvailabilityProfile(cluster, 0.0)
    queue, running, now, seq, started = {}, {}, 0.0, 0, 0
    for _ in range(600):
        now = next_instant(rng, profile, running, now, early=0.03)
        seq = submit_feasible(rng, cluster, queue, now, seq, most=2)
        idle = warm.idle_round(profile, queue)
        outs = []
        for decide in (textbook, warm.schedule):
            p = profile.copy() if decide is textbook else profile
            ctx = SchedulingContext(now, cluster, p, WaitingQueue(queue), running, [], [])
            decisions = decide(ctx)
            outs.append([(d.job_id, d.allocation) for d in decisions])
            if decide is not textbook:
                for d in decisions:
                    running[d.job_id] = ctx.reservations[d.job_id]
                    del queue[d.job_id]
                    started += 1
        assert outs[0] == outs[1]
        # the runtime skips exactly the rounds that start nothing
        assert idle == (not outs[1] if order == "fcfs" else False)
    assert started > 100   # the queue moved


def test_procset_of_ids_equals_procset():
    rng = np.random.default_rng(1)
    for _ in range(500):
        ids = sorted(int(x) for x in rng.choice(60, size=int(rng.integers(1, 20)), replace=False))
        if rng.random() < 0.2:
            ids = ids[::-1]
        ps = procset_of_ids(ids)
        assert ps == ProcSet(*ids) and format_intervals(ps) == format_intervals(ProcSet(*ids))
    assert format_intervals(procset_of_ids((0, 1, 2, 5, 7, 8))) == "0-2 5 7-8"
