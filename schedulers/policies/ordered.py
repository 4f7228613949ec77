"""What the policies that walk their queue in a fixed order share (``fcfs``, ``filler``, the
EASY family): the ordered queue kept across rounds, and the pass that starts every job that
fits now."""

from __future__ import annotations

from mrsched.schedulers.model.contract import Policy, SchedulingContext
from mrsched.schedulers.model.params import IO_SERVICES
from mrsched.schedulers.profile.ordered_queue import OrderedQueue


class OrderedPolicy(Policy):
    """A policy with an ``order`` knob, walking ``queue_`` (an OrderedQueue); correct on an
    I/O-aware profile and on estimated requests (the runtime's ``io`` service)."""

    services = IO_SERVICES

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.queue_ = OrderedQueue(self.order)

    def begin_round(self, ctx: SchedulingContext) -> tuple[SchedulingContext, OrderedQueue]:
        """This round's context and its queue, the new submissions placed in order."""
        return ctx, self.queue_.update(ctx.queue)

    @staticmethod
    def start_all_that_fit(ctx: SchedulingContext, queue: OrderedQueue, after=None) -> None:
        """Start, in queue order after ``after``, every job that fits now; the queue visits only
        the jobs that the free room does not rule out (nothing free: nothing visited)."""
        profile = ctx.profile
        room = profile.room()
        job, at = queue.next_job(after, room)
        while job is not None:
            alloc = profile.fits_now(job.request)
            if alloc is not None:
                ctx.start(job, alloc)
                queue.remove(job)
                room = profile.room()
            job, at = queue.next_job(at, room)
