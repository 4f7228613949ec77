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

from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.model.params import ORDERS, Param
from mrsched.schedulers.model.contract import SchedulingContext
from mrsched.schedulers.policies.ordered import OrderedPolicy


class Filler(OrderedPolicy):
    """``filler``: start every queued job that fits now, in queue order; no reservation."""

    name = "filler"
    _parameter_constraints = {"order": Param(str, ORDERS, help="queue order")}

    def __init__(self, *, order: str = "fcfs"):
        self.order = order

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        ctx, queue = self.begin_round(ctx)
        self.start_all_that_fit(ctx, queue)   # in queue order, every job that fits now
        return ctx.decisions
