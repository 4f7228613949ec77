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

from mrsched.schedulers.decisions import Decision
from mrsched.schedulers.policies.base import ORDERS, Param, Policy, SchedulingContext, order_queue


class Filler(Policy):
    """``filler``: start every queued job that fits now, in queue order; no reservation."""

    name = "filler"
    _parameter_constraints = {"order": Param(str, ORDERS, help="queue order")}

    def __init__(self, *, order: str = "fcfs", job_model: str = "alloc-only", period: float = 0.0):
        self.order = order
        self.job_model = job_model
        self.period = period

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        profile = ctx.profile
        for job in order_queue(ctx.queue, self.order):
            if profile.nodes[0].bit_count() == 0:
                break  # nothing free: no later job can fit (batsched stops here too)
            alloc = profile.fits_now(job.request)
            if alloc is not None:
                ctx.start(job, alloc)
        return ctx.decisions
