"""Conservative backfilling as batsched's ``conservative_bf`` states it, written plainly: the
reference of ``conservative-bb``'s decisions.

    on a new job:       reserve it at its earliest start (start it if that is now)
    on a job's end or a reservation reached (compression):
        for each waiting job in queue order:
            take its reservation out, re-insert it at its earliest start from now
            (start it if that is now); if it was due and cannot start now, first take
            out the reservations of the jobs behind it (they are re-inserted after it)
        then, if a reservation left the plan and no running job ends by the first
        reservation's start: a call then

Every re-insertion searches the whole profile from now with ``earliest_start``. The policy
skips the jobs the freed windows cannot move and searches the others with the profile's
memoised fits; both must give the same starts on the same nodes with the same burst-buffer
placement. Written apart from the policy: no shortcut of it is used here.
"""

from __future__ import annotations

import math

from mrsched.schedulers.model.contract import Policy, SchedulingContext, order_queue
from mrsched.schedulers.model.params import IO_SERVICES


class PlainConservative(Policy):
    """Every queued job holds a reservation; on an end, all are re-inserted in queue order."""

    name = "plain-conservative"
    services = IO_SERVICES

    def __init__(self, *, order: str = "fcfs", compression: str = "batsched"):
        self.order = order
        self.compression = compression

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.planned_ = {}

    def kept_reservations(self):
        return self.planned_.values()

    def _insert(self, ctx: SchedulingContext, job) -> bool:
        """Start or plan ``job``; False when no start can be planned (an endless job holds
        what it needs)."""
        found = ctx.profile.earliest_start(job.request, None, ctx.now)
        if found is None:
            return False
        start, alloc = found
        if start <= ctx.now:
            ctx.start(job, alloc)
        else:
            self.planned_[job.id] = ctx.profile.reserve(start, start + job.request.walltime, alloc, tag=job.id)
        return True

    def schedule(self, ctx: SchedulingContext):
        queue = order_queue(ctx.queue, self.order)
        waiting = {j.id for j in queue}
        for job_id in [j for j in self.planned_ if j not in waiting]:
            ctx.profile.release(self.planned_.pop(job_id))
        compress = ctx.ended or any(r.start <= ctx.now for r in self.planned_.values())
        if compress and (self.compression == "rebuild" or ctx.estimates):
            for reservation in self.planned_.values():     # rebuilt from scratch, in queue order
                ctx.profile.release(reservation)
            self.planned_.clear()
        jobs = list(queue)
        dropped = False
        for k, job in enumerate(jobs):
            old = self.planned_.get(job.id)
            if old is not None and not compress:
                continue
            if old is not None:
                ctx.profile.release(self.planned_.pop(job.id))
                found = ctx.profile.earliest_start(job.request, None, ctx.now)
                if old.start <= ctx.now and (found is None or found[0] > ctx.now):
                    # due, yet it cannot start now: the jobs behind it are planned after it
                    for later in jobs[k + 1:]:
                        if later.id in self.planned_:
                            ctx.profile.release(self.planned_.pop(later.id))
                    dropped = True
            if not self._insert(ctx, job) and old is not None:
                dropped = True
        if dropped and self.planned_:
            # a first reservation no running job's end reaches (the one before it was dropped)
            first = min(r.start for r in self.planned_.values())
            if first > ctx.now and not any(r.reservation.end <= first for r in ctx.running.values()):
                ctx.wake_up(math.ceil(first * 1e6) / 1e6)    # not before it, at Batsim's microseconds
        return ctx.decisions
