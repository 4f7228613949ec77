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

from mrsched.schedulers.decisions import Decision
from mrsched.schedulers.policies.base import ORDERS, Param, Policy, SchedulingContext, order_queue


class FCFS(Policy):
    """``fcfs``: start jobs in queue order while they fit; no backfilling."""

    name = "fcfs"
    _parameter_constraints = {"order": Param(str, ORDERS, help="queue order")}

    def __init__(self, *, order: str = "fcfs", job_model: str = "alloc-only", period: float = 0.0):
        self.order = order
        self.job_model = job_model
        self.period = period

    def idle_round(self, profile, queue) -> bool:
        return self._still_blocked(profile, next(iter(queue.values()), None))

    def _still_blocked(self, profile, head) -> bool:
        """The head that did not fit is still the head and the profile has not changed since
        (no release, no breakpoint passed): its window only got longer, so it still does not
        fit, and nothing behind it may start (a submission then costs O(1))."""
        blocked = getattr(self, "_blocked", None)
        return (blocked is not None and blocked[0] is profile and blocked[2] == profile.version
                and head is not None and head.id == blocked[1])

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        profile = ctx.profile
        fifo = self.order == "fcfs"
        if fifo and self._still_blocked(profile, next(iter(ctx.queue), None)):
            return ctx.decisions
        self._blocked = None
        for job in order_queue(ctx.queue, self.order):
            alloc = profile.fits_now(job.request)
            if alloc is None:
                if fifo:
                    self._blocked = (profile, job.id, profile.version)
                break
            ctx.start(job, alloc)
        return ctx.decisions
