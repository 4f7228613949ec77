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

from mrsched.schedulers.model.params import IO_PARAMS
from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.model.params import ORDERS, Param
from mrsched.schedulers.model.contract import SchedulingContext
from mrsched.schedulers.policies.ordered import OrderedPolicy


class Filler(OrderedPolicy):
    """``filler``: start every queued job that fits now, in queue order; no reservation."""

    name = "filler"
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
        self.start_all_that_fit(ctx, queue)   # in queue order, every job that fits now
        return ctx.decisions
