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

from mrsched.schedulers.bandwidth import IO_PARAMS
from mrsched.schedulers.decisions import Decision
from mrsched.schedulers.policies.base import ORDERS, Param, SchedulingContext
from mrsched.schedulers.policies.ordered import OrderedPolicy


class FCFS(OrderedPolicy):
    """``fcfs``: start jobs in queue order while they fit; no backfilling."""

    name = "fcfs"
    _parameter_constraints = {"order": Param(str, ORDERS, help="queue order"), **IO_PARAMS}

    def __init__(self, *, order: str = "fcfs", job_model: str = "alloc-only", period: float = 0.0,
                 io_aware: bool = False, io_model: str = "none",
                 knowledge: str = "requested", knowledge_noise: float = 0.3, knowledge_seed: int = 0):
        self.order = order
        self.job_model = job_model
        self.period = period
        self.io_aware = io_aware
        self.io_model = io_model
        self.knowledge, self.knowledge_noise, self.knowledge_seed = knowledge, knowledge_noise, knowledge_seed

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        ctx, queue = self.begin_round(ctx)
        job, _ = queue.next_job()
        while job is not None:
            alloc = ctx.profile.fits_now(job.request)
            if alloc is None:
                break       # the first job that does not fit blocks every job behind it
            ctx.start(job, alloc)
            queue.remove(job)
            job, _ = queue.next_job()
        return ctx.decisions

    def idle_round(self, profile, queue) -> bool:
        """The first job in submission order blocks every job behind it: a round in which it
        does not fit now starts nothing (plain ``fcfs`` order and stated requests only)."""
        if self.order != "fcfs" or self.io_aware or self.knowledge != "requested":
            return False
        return not queue or profile.fits_now(next(iter(queue.values())).request) is None
