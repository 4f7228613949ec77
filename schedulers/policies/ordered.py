"""What the policies that walk their queue in a fixed order share (``fcfs``, ``filler``, the
EASY family): the ordered queue kept across rounds, the I/O-aware view of a round, and the
pass that starts every job that fits now."""

from __future__ import annotations

from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.schedulers.execution.ioaware import io_context
from mrsched.schedulers.execution.knowledge import knowledge_round
from mrsched.schedulers.profile.ordered_queue import OrderedQueue
from mrsched.schedulers.model.contract import Policy, SchedulingContext


class OrderedPolicy(Policy):
    """A policy with an ``order`` and ``io_aware`` knob, walking ``queue_`` (an OrderedQueue)."""

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.queue_ = OrderedQueue(self.order)
        self.tree_ = BandwidthTree.from_cluster(cluster) if self.io_aware else None

    def begin_round(self, ctx: SchedulingContext) -> tuple[SchedulingContext, OrderedQueue]:
        """This round's context (with bandwidth when ``io_aware``) and its queue, the new
        submissions placed in order."""
        if self.__dict__.get("queue_") is None:   # a policy driven without setup()
            self.queue_ = OrderedQueue(self.order)
        knowledge_round(self, ctx)                # the estimates the queue indexes (knowledge.py)
        queue = self.queue_.update(ctx.queue)
        if self.io_aware:
            ctx = io_context(self, ctx, queue)
        return ctx, queue

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
