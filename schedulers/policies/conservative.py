"""``conservative-bb``: conservative backfilling over every resource (batsched ``conservative_bf``).

Every queued job holds a reservation (nodes, burst buffer, GPUs, counters) at its earliest
start given the running jobs and the reservations of the jobs before it; a newcomer is
inserted at its earliest start without moving anyone, so no reservation is ever delayed.

When a job ends before its walltime, reservations move earlier ("compression"):
- ``compression="batsched"`` (default, batsched 1.4.0): in queue order, each job's reservation
  is removed and re-inserted at its earliest start while the later jobs keep theirs; a job
  whose new start is now is started. A job never moves later.
- ``compression="rebuild"``: all reservations are dropped and re-made from scratch in queue
  order (a job can then move later than before, the classic anomaly of rebuilding).

Decision: a job without walltime is planned with an endless window (it blocks its resources
for every later reservation).

Cost: a compression pass skips a job when nothing released since its reservation was made
meets its window (the profile answers "earliest start, latest end released since" in
O(log releases)), and otherwise searches only the starts those releases can have opened, with
the profile's memoised ``earliest_fit``. When jobs end before their walltime this skips almost
nothing: the ended job's release starts at now, before every reservation, so each end
re-examines the whole queue (``bench_scale.py``'s 2,000 jobs: 1,999 passes, 230,474
re-examinations for a mean queue of 115; 93,000 moved earlier, 857 kept their start on other
resources). That is the algorithm's own work, and no part of the plan can be left for later:
the plan depends on its history (re-made in queue order it differs: ``compression="rebuild"``
gives another ``_jobs.csv`` there), and moves are not local (a job re-inserted on other nodes
frees its whole old window: 344 re-insertions there moved a job over 50,000 s earlier). A pass
costs O(queue) re-insertions, each a search of the plan: a run costs at least O(jobs x queue),
quadratic when the queue grows with the run.

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("conservative-bb").compression
'batsched'
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


class ConservativeBackfilling(Policy):
    """``conservative-bb``: every queued job holds a reservation on all resources; none is delayed."""

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
            found = self._earliest(profile, job, max(ctx.now, span[0]), min(old.start, horizon))
            if found is None or found[0] >= old.start and horizon <= old.start:
                if found is None or self._same(profile, found[1], old.allocation):
                    self.planned_[job.id] = profile.reserve(old.start, old.end, old.allocation, tag=job.id)
                    return
        else:
            found = self._earliest(profile, job, ctx.now)
        if found is None:
            return  # cannot be planned while some endless job holds resources
        start, alloc = found
        if start <= ctx.now:
            ctx.start(job, profile.allocation(alloc))
        else:
            self.planned_[job.id] = profile.reserve(start, start + job.request.walltime, alloc, tag=job.id)

    def _earliest(self, profile, job: Job, not_before: float, not_after: float = math.inf):
        """``profile.earliest_start(job.request, None, not_before, not_after=not_after)``: the
        same start and allocation, from the profile's memoised ``earliest_fit`` when it serves
        the request (a burst-buffer allocation then comes as a ``Fit``, placed in full by
        ``profile.allocation`` when the job starts). Every queued job is re-inserted on every
        early end: this is the pass's hot call."""
        spec = None if self.io_aware else profile.fit_spec(job.request)
        if spec is None:   # named counters, or bandwidth (io_aware): earliest_start knows them
            return profile.earliest_start(job.request, None, not_before, not_after=not_after)
        found = profile.earliest_fit(spec, not_before)
        return None if found is None or found[0] > not_after else found

    @staticmethod
    def _same(profile, a, b) -> bool:
        """Whether two allocations ``_earliest`` returned are equal in full (nodes, bytes per
        storage node and per-node placement): two ``Fit`` of one placement may differ in the
        free space they were placed on."""
        if a == b:
            return True
        return a.nodes == b.nodes and a.bb == b.bb and profile.allocation(a) == profile.allocation(b)

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
