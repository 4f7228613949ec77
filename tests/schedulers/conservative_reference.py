"""``conservative-bb`` as it was at 3072e9d, frozen as the reference of its decisions.

``test_conservative_reference.py`` runs it beside the live policy on random workloads: the live
one may find its answers faster, never differently. Do not optimise this copy.
"""

from __future__ import annotations

import math

from mrsched.schedulers.profile.availability import Reservation
from mrsched.schedulers.model.params import IO_PARAMS
from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.schedulers.execution.ioaware import io_context
from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.execution.knowledge import knowledge_round
from mrsched.schedulers.model.params import ORDERS, Param
from mrsched.schedulers.model.contract import Policy, SchedulingContext, order_queue

COMPRESSIONS = ("batsched", "rebuild")


class ReferenceConservative(Policy):
    """``conservative-bb`` as of 3072e9d (``earliest_start`` for every re-insertion)."""

    name = "conservative-bb"
    release_log = True   # the runtime's profile logs releases: _horizon reads released_span
    _parameter_constraints = {
        "order": Param(str, ORDERS, help="queue order used to insert and compress reservations"),
        "compression": Param(str, COMPRESSIONS, help="how reservations move when a job ends early"),
        **IO_PARAMS,
    }

    def __init__(self, *, order: str = "fcfs", compression: str = "batsched",
                 job_model: str = "alloc-only", period: float = 0.0, io_aware: bool = False, io_model: str = "none",
                 knowledge: str = "requested", knowledge_noise: float = 0.3, knowledge_seed: int = 0):
        self.order = order
        self.compression = compression
        self.io_aware = io_aware
        self.io_model = io_model
        self.knowledge, self.knowledge_noise, self.knowledge_seed = knowledge, knowledge_noise, knowledge_seed
        self.job_model = job_model
        self.period = period

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.planned_: dict[str, Reservation] = {}
        self.tree_ = BandwidthTree.from_cluster(cluster) if self.io_aware else None

    def _place(self, ctx: SchedulingContext, job: Job, old: Reservation | None = None,
               span: tuple[float, float] | None = None) -> None:
        profile = ctx.profile
        if old is not None and span is not None:
            # only starts inside the freed span (and no later than the old slot) can be new
            horizon = span[1]
            found = profile.earliest_start(job.request, None, max(ctx.now, span[0]),
                                           not_after=min(old.start, horizon))
            if found is None or found[0] >= old.start and horizon <= old.start:
                if found is None or found[1] == old.allocation:
                    self.planned_[job.id] = profile.reserve(old.start, old.end, old.allocation, tag=job.id)
                    return
        else:
            found = profile.earliest_start(job.request, None, ctx.now)
        if found is None:
            return  # cannot be planned while some endless job holds resources
        start, alloc = found
        if start <= ctx.now:
            ctx.start(job, alloc)
        else:
            self.planned_[job.id] = profile.reserve(start, start + job.request.walltime, alloc, tag=job.id)

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        knowledge_round(self, ctx)                # runtime / I/O-rate estimates (knowledge.py)
        queue = order_queue(ctx.queue, self.order)
        if self.io_aware:   # the planned reservations hold their bandwidth too
            ctx = io_context(self, ctx, queue, self.__dict__.setdefault("planned_", {}).values())
        profile = ctx.profile
        waiting = {j.id for j in queue}
        for job_id in [j for j in self.planned_ if j not in waiting]:   # rejected or gone
            profile.release(self.planned_.pop(job_id))
        due = any(r.start <= ctx.now for r in self.planned_.values())
        if not ctx.ended and not due:
            for job in queue:
                if job.id not in self.planned_:
                    self._place(ctx, job)
            return ctx.decisions
        # Decision: with estimates (knowledge) jobs outlive their reservations, so kept ones go
        # stale and re-inserting only the earlier jobs can leave a plan no event ever starts:
        # the plan is then rebuilt in queue order (schedulers/execution/knowledge.py)
        if self.compression == "rebuild" or self.__dict__.get("knowledge", "requested") != "requested":
            for reservation in self.planned_.values():
                profile.release(reservation)
            self.planned_.clear()
        for job in queue:
            old = self.planned_.pop(job.id, None)
            if old is None:
                self._place(ctx, job)
                continue
            # a due reservation (start <= now) must be started: always re-examined
            span = self._horizon(profile, old, job.request.walltime) if old.start > ctx.now else None
            if span is not None and span[1] <= ctx.now:
                self.planned_[job.id] = old      # nothing it overlaps was freed: same slot
                continue
            profile.release(old)
            self._place(ctx, job, old, span)
        if self.planned_:
            profile.trim_log(min(r.log_pos for r in self.planned_.values()))
        return ctx.decisions

    @staticmethod
    def _horizon(profile, old: Reservation, walltime: float) -> tuple[float, float] | None:
        """Range of starts that the windows freed since ``old`` was made could make feasible.

        Exact shortcut of batsched's re-insertion: ``old`` was the earliest fit when made, and
        since then capacity only grew inside released windows [a, b), so a start t < old.start
        can only have become feasible if [t, t + walltime) meets one of them: a - walltime < t < b.
        Returns (lowest a - walltime, highest b) over the windows released since (an upper
        bound of b: a wider range only re-examines more); ``(inf, -inf)`` when none starts
        before ``old``'s end; None when the history is unknown (then the job is re-examined
        from now, as batsched does).
        """
        span = profile.released_span(old.log_pos)
        if span is None:
            return None
        lo, hi = span
        if lo >= old.start + walltime:
            return math.inf, -math.inf
        return lo - walltime, hi
