"""EASY backfilling: ``fcfs-easy``, ``fcfs-bb``, ``sjf-bb`` (seed 001 Algorithm 1; batsched ``easy_bf``).

In queue order, jobs start while they fit now (nodes *and* burst buffer). The first job that
does not fit gets a reservation at its earliest start — on nodes only (``reserve="nodes"``,
plain EASY, ``fcfs-easy``) or on nodes and burst buffer together (``reserve="all"``, the
bracketed part of Alg. 1 line 14, ``fcfs-bb``/``sjf-bb``). Every later job starts now if it
fits without touching that reservation. ``depth`` > 1 reserves the first ``depth`` blocked jobs.

Decision (where the paper is silent): a job without walltime cannot be reserved for (it would
hold resources forever), so it blocks nothing; queue ties keep submission order; the head's
reservation is recomputed every round (batsched keeps it when nothing ended, which yields the
same start as nothing got freed).

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("sjf-bb").get_params()
{'order': 'sjf', 'reserve': 'all', 'depth': 1, 'job_model': 'alloc-only', 'period': 0.0}
"""

from __future__ import annotations

from mrsched.schedulers.decisions import Decision
from mrsched.schedulers.policies.base import ORDERS, Param, Policy, SchedulingContext, order_queue

RESERVE = ("nodes", "all")


class EasyBackfilling(Policy):
    """``easy-bf``: EASY backfilling; ``reserve`` says what the blocked head job reserves."""

    name = "easy-bf"
    _parameter_constraints = {
        "order": Param(str, ORDERS, help="queue order (sjf: shortest walltime first)"),
        "reserve": Param(str, RESERVE, help="what the blocked head job reserves: nodes only, or all resources"),
        "depth": Param(int, min=1, help="number of blocked jobs at the queue front that get a reservation"),
    }

    def __init__(self, *, order: str = "fcfs", reserve: str = "all", depth: int = 1,
                 job_model: str = "alloc-only", period: float = 0.0):
        self.order = order
        self.reserve = reserve
        self.depth = depth
        self.job_model = job_model
        self.period = period

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        profile = ctx.profile
        now = ctx.now
        nodes_only = self.reserve == "nodes"
        held = []   # temporary reservations of blocked jobs, released after the round
        free_now = profile.nodes[0]
        nb_free, bb_free = free_now.bit_count(), sum(profile.bb[0])
        for job in order_queue(ctx.queue, self.order):
            req = job.request
            # hot path: a quick necessary test on what is free now before the window check
            if req.nodes <= nb_free and req.bb_total <= bb_free:
                alloc = profile.fits_now(req)
                if alloc is not None:
                    ctx.start(job, alloc)
                    free_now = profile.nodes[0]
                    nb_free, bb_free = free_now.bit_count(), sum(profile.bb[0])
                    continue
            if len(held) < self.depth and job.request.has_walltime:
                found = profile.earliest_start(job.request, None, now, with_bb=not nodes_only)
                if found is not None:
                    start, alloc = found
                    held.append(profile.reserve(start, start + job.request.walltime, alloc, tag=job.id))
            elif len(held) >= self.depth and free_now == 0:
                break  # nothing can be backfilled any more this round
        for reservation in held:
            profile.release(reservation)
        return ctx.decisions


class FcfsEasy(EasyBackfilling):
    """``fcfs-easy``: EASY whose head reservation covers nodes only (seed 001, Fig. 2 left)."""

    name = "fcfs-easy"

    def __init__(self, *, order: str = "fcfs", reserve: str = "nodes", depth: int = 1,
                 job_model: str = "alloc-only", period: float = 0.0):
        super().__init__(order=order, reserve=reserve, depth=depth, job_model=job_model, period=period)


class FcfsBB(EasyBackfilling):
    """``fcfs-bb``: EASY whose head reservation covers nodes and burst buffer (seed 001 Alg. 1)."""

    name = "fcfs-bb"


class SjfBB(EasyBackfilling):
    """``sjf-bb``: ``fcfs-bb`` with the queue sorted by walltime (seed 001 Sect. 4.2)."""

    name = "sjf-bb"

    def __init__(self, *, order: str = "sjf", reserve: str = "all", depth: int = 1,
                 job_model: str = "alloc-only", period: float = 0.0):
        super().__init__(order=order, reserve=reserve, depth=depth, job_model=job_model, period=period)
