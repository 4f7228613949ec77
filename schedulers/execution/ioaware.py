"""I/O-awareness applied to a round (seed 004 Sect. 3.2.4): the new jobs whose bandwidth can
never be given are rejected, and the round's context gets a bandwidth-aware profile holding the
running jobs' bandwidth (and the reservations a policy keeps across rounds)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from mrsched.schedulers.model.contract import OVERRUN_HOLD
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import Reservation
from mrsched.schedulers.profile.bandwidth import BandwidthProfile, BandwidthTree, IoAwareProfile
from mrsched.schedulers.profile.ordered_queue import OrderedQueue



def running_bandwidth(tree: BandwidthTree, now: float, running: Mapping[str, Any], hold: float = 1.0):
    """``(nodes, rate, end)`` of the runtime's running jobs; a job at or past its reservation's
    end (walltime reached, not reported ended yet) is held ``hold`` seconds more, as the runtime does."""
    for run in running.values():
        rate = run.job.request.io_bandwidth_per_node
        if rate:
            yield run.allocation.nodes, rate, max(run.reservation.end, now + hold)


class IoContext:
    """A scheduling round's context whose profile is bandwidth-aware (same decisions list,
    same reservations dict as the runtime's context, so its checks see every start)."""

    def __init__(self, ctx, tree: BandwidthTree):
        self._ctx = ctx
        jobs = getattr(ctx.queue, "_jobs", None)
        if jobs is None:
            jobs = {j.id: j for j in ctx.queue}
        bw = BandwidthProfile.of_running(tree, ctx.now, running_bandwidth(tree, ctx.now, ctx.running, OVERRUN_HOLD))
        self.profile = IoAwareProfile(ctx.profile, tree, bw, jobs)

    def __getattr__(self, name: str):
        return getattr(self._ctx, name)

    def start(self, job, allocation: Allocation):
        # the runtime's bookkeeping, with the bandwidth taken too (the profile's reserve)
        ctx = self._ctx
        inner = ctx.profile
        ctx.profile = self.profile
        try:
            return ctx.start(job, allocation)
        finally:
            ctx.profile = inner


def reject_infeasible(ctx, queue, tree: BandwidthTree, submitted) -> None:
    """Reject (with the reason) the newly submitted jobs whose bandwidth can never be given."""
    jobs = getattr(ctx.queue, "_jobs", None)
    for jid in submitted:
        job = jobs.get(jid) if jobs is not None else next((j for j in ctx.queue if j.id == jid), None)
        if job is None or not job.request.io_bandwidth_per_node:
            continue
        reason = tree.infeasible_reason(job.request)
        if reason is not None:
            ctx.reject(job, reason)
            if isinstance(queue, OrderedQueue) and jid in queue:
                queue.remove(job)


def io_context(policy, ctx, queue, planned: Iterable[Reservation] = ()) -> IoContext:
    """The ``io_aware`` hook of a policy's round: reject the new jobs whose bandwidth never
    fits, then hand back a context whose profile is bandwidth-aware. ``queue`` is the
    policy's ``OrderedQueue`` (rejected jobs leave it) or its ordered list; ``planned``: the
    reservations a policy keeps across rounds in the runtime's profile (conservative), whose
    bandwidth is taken as well (and given back when the policy releases them)."""
    tree = policy.__dict__.get("tree_")
    if tree is None:
        tree = policy.tree_ = BandwidthTree.from_cluster(ctx.cluster)
    reject_infeasible(ctx, queue, tree, ctx.submitted)
    io = IoContext(ctx, tree)
    prof = io.profile
    for r in planned:
        rate = prof._rate(r.tag)
        if rate:
            prof.bandwidth.add(r.start, r.end, r.allocation.nodes, rate)
            prof._held[id(r)] = (r, rate)
    return io
