"""``filler``: start any job that fits now, in queue order, with no reservation (batsched ``filler``).

Seed 001 lists it as "backfilling without reservations": good on average, it can starve large
jobs. A job fits when its nodes, burst buffer, GPUs and counters are free *now* and for its
walltime given the running jobs (walltime-bounded windows: a running job holds its resources
until its walltime at the latest).

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("filler", order="sjf").order
'sjf'
"""

from __future__ import annotations

from mrsched.schedulers.bandwidth import IO_PARAMS, BandwidthTree, io_context
from mrsched.schedulers.decisions import Decision
from mrsched.schedulers.ordered_queue import OrderedQueue
from mrsched.schedulers.policies.base import ORDERS, Param, Policy, SchedulingContext


class Filler(Policy):
    """``filler``: start every queued job that fits now, in queue order; no reservation."""

    name = "filler"
    _parameter_constraints = {"order": Param(str, ORDERS, help="queue order"), **IO_PARAMS}

    def __init__(self, *, order: str = "fcfs", job_model: str = "alloc-only", period: float = 0.0,
                 io_aware: bool = False, io_model: str = "none"):
        self.order = order
        self.job_model = job_model
        self.period = period
        self.io_aware = io_aware
        self.io_model = io_model

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.queue_ = OrderedQueue(self.order)
        self.tree_ = BandwidthTree.from_cluster(cluster) if self.io_aware else None

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        if self.__dict__.get("queue_") is None:   # a policy driven without setup()
            self.queue_ = OrderedQueue(self.order)
        queue = self.queue_.update(ctx.queue)
        if self.io_aware:
            ctx = io_context(self, ctx, queue)
        profile = ctx.profile
        # in queue order, every job that fits now; the queue visits only the jobs that the
        # free room does not rule out (nothing free: nothing visited, as batsched stops)
        room = profile.room()
        job, at = queue.next_job(None, room)
        while job is not None:
            alloc = profile.fits_now(job.request)
            if alloc is not None:
                ctx.start(job, alloc)
                queue.remove(job)
                room = profile.room()
            job, at = queue.next_job(at, room)
        return ctx.decisions
