"""EASY backfilling: ``fcfs-easy``, ``fcfs-bb``, ``sjf-bb`` (seed 001 Algorithm 1; batsched ``easy_bf``).

In queue order, jobs start while they fit now (nodes *and* burst buffer). The first job that
does not fit gets a reservation at its earliest start — on nodes only (``reserve="nodes"``,
plain EASY, ``fcfs-easy``) or on nodes and burst buffer together (``reserve="all"``, the
bracketed part of Alg. 1 line 14, ``fcfs-bb``/``sjf-bb``). Every later job starts now if it
fits without touching that reservation. ``depth`` > 1 reserves the first ``depth`` blocked jobs.

Decision (where the paper is silent): a job without walltime cannot be reserved for (it would
hold resources forever), so it blocks nothing; queue ties keep submission order; the head's
reservation is computed in every round where a later job could start (batsched keeps it when
nothing ended, which yields the same start as nothing got freed).

Speed lives in the queue and the profile (``OrderedQueue``, ``AvailabilityProfile.room``): the
backfilling pass visits only jobs that the free room does not rule out, so a round costs the
same however long the queue (tests/schedulers/test_ordered_queue.py).

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("sjf-bb").get_params()
{'order': 'sjf', 'reserve': 'all', 'depth': 1}
"""

from __future__ import annotations

from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.model.params import ORDERS, Param
from mrsched.schedulers.model.contract import SchedulingContext
from mrsched.schedulers.policies.ordered import OrderedPolicy

RESERVE = ("nodes", "all")


class EasyBackfilling(OrderedPolicy):
    """``easy-bf``: EASY backfilling; ``reserve`` says what the blocked head job reserves."""

    name = "easy-bf"
    _parameter_constraints = {
        "order": Param(str, ORDERS, help="queue order (sjf: shortest walltime first)"),
        "reserve": Param(str, RESERVE, help="what the blocked head job reserves: nodes only, or all resources"),
        "depth": Param(int, min=1, help="number of blocked jobs at the queue front that get a reservation"),
    }

    def __init__(self, *, order: str = "fcfs", reserve: str = "all", depth: int = 1):
        self.order = order
        self.reserve = reserve
        self.depth = depth

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        ctx, queue = self.begin_round(ctx)
        profile, now = ctx.profile, ctx.now
        with_bb = self.reserve == "all"
        held = []   # reservations of the blocked jobs, released after the round
        # Alg. 1: jobs start in order while they fit; the first `depth` that do not (and have
        # a walltime) get a reservation at their earliest start
        job, at = queue.next_job()
        while job is not None:
            alloc = profile.fits_now(job.request)
            if alloc is not None:
                ctx.start(job, alloc)
                queue.remove(job)
            elif job.request.has_walltime:
                if len(held) == self.depth - 1:
                    # the bounds alone: whether any later job may start at all
                    backfill_from = queue.skip(at, profile.room(packing=False))
                    if backfill_from is None:
                        job = None      # no later job can start even without this last reservation
                        break
                found = profile.earliest_start(job.request, None, now, with_bb=with_bb)
                if found is not None:
                    start, alloc = found
                    held.append(profile.reserve(start, start + job.request.walltime, alloc, tag=job.id))
                    if len(held) == self.depth:
                        break
            job, at = queue.next_job(at)
        # backfilling: every later job that fits now beside the reservations
        if job is not None:
            self.start_all_that_fit(ctx, queue, backfill_from if len(held) == self.depth else at)
        for reservation in held:
            profile.release(reservation)
        return ctx.decisions
