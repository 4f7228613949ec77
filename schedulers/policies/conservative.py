"""``conservative-bb``: conservative backfilling over every resource (batsched ``conservative_bf``).

    every queued job holds a reservation (nodes, burst buffer, GPUs, counters) at its
    earliest start given the running jobs and the reservations of the jobs before it;
    on a new job:   insert it at its earliest start, without moving anyone
    on an early end (or a reservation reached):
        for each queued job in queue order: take its reservation out and re-insert it at
        its earliest start from now; start the jobs whose start is now

No reservation is ever delayed. ``compression="rebuild"`` drops every reservation and plans
the queue again from scratch instead (a job can then move later, the classic anomaly).
A job whose reservation is due but that cannot start now (the job before it ended past its
reservation) keeps its turn: the reservations behind it are made again after its own. When a
reservation leaves the plan, the first one left may start where no running job ends: the
policy then asks to be called at its start.

Decisions: a job without walltime is planned with an endless window (it blocks its
resources for every later reservation). With estimated requests (``knowledge``) jobs outlive
their reservations, so kept ones go stale and re-inserting only the earlier jobs can leave a
plan no event ever starts: the plan is then rebuilt in queue order.

The re-insertion is the profile's primitive (``profile/reinsert.py``), where the speed
lives; ``tests/schedulers/conservative_reference.py`` is the same loop written plainly. Every
early end re-examines the queue, so a run costs at least O(jobs x queue).

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("conservative-bb").compression
'batsched'
"""

from __future__ import annotations

import math
from itertools import islice

from mrsched.schedulers.profile.availability import Reservation
from mrsched.schedulers.profile.reinsert import reinsert
from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.model.params import IO_SERVICES, ORDERS, Param
from mrsched.schedulers.model.contract import Policy, SchedulingContext, order_queue

COMPRESSIONS = ("batsched", "rebuild")


class ConservativeBackfilling(Policy):
    """``conservative-bb``: every queued job holds a reservation on all resources; none is delayed."""

    name = "conservative-bb"
    release_log = True   # the runtime's profile logs releases: reinsert reads released_span
    services = IO_SERVICES
    _parameter_constraints = {
        "order": Param(str, ORDERS, help="queue order used to insert and compress reservations"),
        "compression": Param(str, COMPRESSIONS, help="how reservations move when a job ends early"),
    }

    def __init__(self, *, order: str = "fcfs", compression: str = "batsched"):
        self.order = order
        self.compression = compression

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.planned_: dict[str, Reservation] = {}

    def kept_reservations(self):
        return self.planned_.values()

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        queue = order_queue(ctx.queue, self.order)
        profile = ctx.profile
        waiting = {j.id for j in queue}
        for job_id in [j for j in self.planned_ if j not in waiting]:   # rejected or gone
            profile.release(self.planned_.pop(job_id))
        compress = ctx.ended or any(r.start <= ctx.now for r in self.planned_.values())
        if compress and (self.compression == "rebuild" or ctx.estimates):
            for reservation in self.planned_.values():
                profile.release(reservation)
            self.planned_.clear()
        dropped = False           # a reservation gone from the plan (not moved) in this pass
        for k, job in enumerate(queue):
            if not compress and job.id in self.planned_:
                continue
            old = self.planned_.pop(job.id, None)
            slot = reinsert(profile, old, job.request, ctx.now, job.id)
            if old is not None and old.start <= ctx.now and (slot is None or slot.reservation is not None):
                slot = self._keep_rank(profile, slot, job, islice(queue, k + 1, None), ctx.now)
                dropped = True
            if slot is None:
                dropped = dropped or old is not None
                continue          # cannot be planned while some endless job holds resources
            if slot.reservation is None:
                ctx.start(job, slot.allocation)
            else:
                self.planned_[job.id] = slot.reservation
        if self.planned_:         # the oldest reservation bounds the release log reinsert reads
            profile.trim_log(min(r.log_pos for r in self.planned_.values()))
            if dropped:
                self._wake_at_first_start(ctx)
        return ctx.decisions

    def _wake_at_first_start(self, ctx: SchedulingContext) -> None:
        """After a reservation left the plan (a job without walltime left it no room, or the
        jobs behind a late one were planned again), the first reservation may start where
        no running job is expected to end, and nothing would call the scheduler then."""
        first = min(r.start for r in self.planned_.values())
        if first > ctx.now and all(r.reservation.end > first for r in ctx.running.values()):
            # Batsim's clock has microseconds: a call at ``first`` rounded down would come
            # before the reservation is due
            ctx.wake_up(math.ceil(first * 1e6) / 1e6)

    def _keep_rank(self, profile, slot, job, behind, now: float):
        """A job whose reservation is due but that cannot start now keeps its place in the
        queue: the jobs behind it lose their reservations, to be made again after its own.
        It happens when the job before it ends past its reservation (Batsim reports a kill at
        the walltime 1e-4 s late, an overrun is held): re-inserted behind the later
        reservations, it would lose its turn to them (batsched aborts there, schedule.cpp 52)."""
        if slot is not None and slot.reservation is not None:
            profile.release(slot.reservation)
        for other in behind:
            reservation = self.planned_.pop(other.id, None)
            if reservation is not None:
                profile.release(reservation)
        return reinsert(profile, None, job.request, now, job.id)
