"""``fcfs``: first come, first served without backfilling (seed 001 Sect. 4.2; batsched ``fcfs``).

Jobs start in queue order while they fit now (nodes, burst buffer, GPUs, counters); the first
that does not fit blocks every job behind it.

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("fcfs").get_params()["order"]
'fcfs'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.profile.ordered_queue import OrderedQueue
from mrsched.schedulers.model.params import ORDERS, Param
from mrsched.schedulers.model.contract import SchedulingContext
from mrsched.schedulers.policies.ordered import OrderedPolicy


class FCFS(OrderedPolicy):
    """``fcfs``: start jobs in queue order while they fit; no backfilling."""

    name = "fcfs"
    _parameter_constraints = {"order": Param(str, ORDERS, help="queue order")}

    def __init__(self, *, order: str = "fcfs"):
        self.order = order

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        ctx, queue = self.begin_round(ctx)
        for job in queue:       # queue order
            alloc = ctx.profile.fits_now(job.request)
            if alloc is None:
                break       # the first job that does not fit blocks every job behind it
            ctx.start(job, alloc)
        return ctx.decisions

    def begin_round(self, ctx: SchedulingContext) -> tuple[SchedulingContext, Iterable[Job]]:
        """This round's context and its queue in order. Plain ``fcfs`` order is the runtime's
        own submission order, which this policy only walks from the front (it never asks
        which job fits a room): no index to keep. Other orders, estimated requests and the
        I/O view walk the ordered queue, each job taken out of it once started."""
        if self._plain():
            return ctx, ctx.queue
        ctx, queue = super().begin_round(ctx)
        return ctx, _started_in_order(queue)

    def _plain(self) -> bool:
        """Submission order on the stated requests, without an I/O view."""
        return self.order == "fcfs"

    def idle_round(self, profile, queue) -> bool:
        """The first job in submission order blocks every job behind it: a round in which it
        does not fit now starts nothing (plain ``fcfs`` order and stated requests only)."""
        return self._plain() and (not queue or
                                  profile.fits_now(next(iter(queue.values())).request) is None)


def _started_in_order(queue: OrderedQueue) -> Iterator[Job]:
    """The ordered queue front to back for a walk that starts every job it goes past (fcfs
    stops at the first job that does not fit): a job is taken out when the next is asked."""
    job, _ = queue.next_job()
    while job is not None:
        yield job
        queue.remove(job)
        job, _ = queue.next_job()
