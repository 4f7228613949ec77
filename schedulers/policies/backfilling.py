"""EASY backfilling: ``fcfs-easy``, ``fcfs-bb``, ``sjf-bb`` (seed 001 Algorithm 1; batsched ``easy_bf``).

In queue order, jobs start while they fit now (nodes *and* burst buffer). The first job that
does not fit gets a reservation at its earliest start — on nodes only (``reserve="nodes"``,
plain EASY, ``fcfs-easy``) or on nodes and burst buffer together (``reserve="all"``, the
bracketed part of Alg. 1 line 14, ``fcfs-bb``/``sjf-bb``). Every later job starts now if it
fits without touching that reservation. ``depth`` > 1 reserves the first ``depth`` blocked jobs.

Decision (where the paper is silent): a job without walltime cannot be reserved for (it would
hold resources forever), so it blocks nothing; queue ties keep submission order; the head's
reservation is computed every round (batsched keeps it when nothing ended, which yields the
same start as nothing got freed), reused only when the profile after the present is unchanged.

Examples
--------
>>> from mrsched.schedulers.registry import make_policy
>>> make_policy("sjf-bb").get_params()
{'order': 'sjf', 'reserve': 'all', 'depth': 1, 'job_model': 'alloc-only', 'period': 0.0}
"""

from __future__ import annotations

from bisect import bisect_left, insort

from mrsched.schedulers.decisions import Decision
from mrsched.schedulers.policies.base import ORDERS, Param, Policy, SchedulingContext, WaitingQueue, _walltime, order_queue

RESERVE = ("nodes", "all")


class EasyBackfilling(Policy):
    """``easy-bf``: EASY backfilling; ``reserve`` says what the blocked head job reserves."""

    name = "easy-bf"
    _parameter_constraints = {
        "order": Param(str, ORDERS, help="queue order (sjf: shortest walltime first)"),
        "reserve": Param(str, RESERVE, help="what the blocked head job reserves: nodes only, or all resources"),
        "depth": Param(int, min=1, help="number of blocked jobs at the queue front that get a reservation"),
    }

    def __init__(self, *, order: str = "fcfs", reserve: str = "all", depth: int = 1,
                 job_model: str = "alloc-only", period: float = 0.0):
        self.order = order
        self.reserve = reserve
        self.depth = depth
        self.job_model = job_model
        self.period = period

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        profile = ctx.profile
        now = ctx.now
        nodes_only = self.reserve == "nodes"
        held = []   # temporary reservations of blocked jobs, released after the round
        free_now = profile.nodes[0]
        nb_free, bb_free = free_now.bit_count(), sum(profile.bb[0])
        heads = self.__dict__.get("heads_") or {}   # blocked job id -> cached earliest start
        next_heads: dict = {}
        queue = ctx.queue
        ordered = (self._sjf_order(queue._jobs) if self.order == "sjf" and type(queue) is WaitingQueue
                   else order_queue(queue, self.order))
        # A blocked job's reservation is made only when a later job's window check could see it
        # (the window reaches its start): many rounds end before, with no reserve/release pair
        # and the profile's caches intact; every check that could see it still does, so the
        # decisions are the same.
        pending = []
        for job in ordered:
            req = job.request
            # hot path: a quick necessary test on what is free now before the window check
            if req.nodes <= nb_free and req.bb_total <= bb_free:
                # a window ending by the reservations' starts cannot touch them (fits_now reads
                # only the slices starting before the window's end): no need to make them yet
                if pending and any(p[0] < now + req.walltime for p in pending):
                    held.extend(profile.reserve(*p) for p in pending)
                    pending = []
                alloc = profile.fits_now(req)
                if alloc is not None:
                    ctx.start(job, alloc)
                    free_now = profile.nodes[0]
                    nb_free, bb_free = free_now.bit_count(), sum(profile.bb[0])
                    continue
            if len(held) + len(pending) < self.depth and req.has_walltime:
                if pending:
                    held.extend(profile.reserve(*p) for p in pending)
                    pending = []
                found = self._blocked_start(profile, job, now, not nodes_only, heads, next_heads)
                if found is not None:
                    start, alloc = found
                    pending.append((start, start + job.request.walltime, alloc, job.id))
            elif len(held) + len(pending) >= self.depth and free_now == 0:
                break  # nothing can be backfilled any more this round
        for reservation in held:
            profile.release(reservation)
        self.heads_ = next_heads
        return ctx.decisions

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.__dict__.pop("sjf_", None)    # a new simulation: its jobs reuse the ids
        self.__dict__.pop("heads_", None)

    def _sjf_order(self, jobs: dict) -> list:
        """``order_queue(queue, "sjf")`` kept sorted across rounds instead of re-sorted: the
        same (walltime, submission position) order, updated by the ids that left the runtime's
        waiting dict and the ones appended to it since the previous round."""
        state = self.__dict__.get("sjf_")
        if state is None:
            state = self.sjf_ = ([], {}, [0])   # sorted (walltime, seq, job), id -> key, next seq
        entries, keys, counter = state
        gone = keys.keys() - jobs.keys()
        for jid in gone:
            key = keys.pop(jid)
            del entries[bisect_left(entries, key)]   # keys are unique: seq breaks ties
        if len(keys) != len(jobs):
            new = []
            for jid in reversed(jobs):   # new jobs are the dict's tail (insertion order)
                if jid in keys:
                    break
                new.append(jid)
            for jid in reversed(new):
                job = jobs[jid]
                key = (job.request.walltime, counter[0])
                counter[0] += 1
                keys[jid] = key
                insort(entries, (*key, job))
        if len(keys) != len(jobs):   # not a tail (a caller reordered the dict): rebuild
            del self.sjf_
            return self._sjf_order(jobs) if keys else sorted(jobs.values(), key=_walltime)
        return [e[2] for e in entries]

    @staticmethod
    def _blocked_start(profile, job, now: float, with_bb: bool, heads: dict, next_heads: dict):
        """``profile.earliest_start`` for a job that cannot start now, reused from the previous
        round when the profile after the present slice is unchanged.

        Why it is exact: the job did not fit now (``fits_now`` or a necessary test failed, the
        same checks as the scan's first candidate whenever burst buffer counts or is not
        asked), so the scan's answer is its first fitting candidate among slices 1.., which
        reads only those slices (their times, nodes, burst buffer, counters) and the request.
        """
        req = job.request
        if not with_bb and req.bb_total:   # fits_now checked burst buffer, this scan does not
            return profile.earliest_start(req, None, now, with_bb=False)
        times, nodes, bb, cnt = profile.times, profile.nodes, profile.bb, profile.cnt
        hit = heads.get(job.id)
        if (hit is not None and hit[0] is req and hit[1] == with_bb and hit[2] == times[1:]
                and hit[3] == nodes[1:] and hit[4] == bb[1:] and hit[5] == cnt[1:]):
            next_heads[job.id] = hit
            return hit[6]
        found = profile.earliest_start(req, None, now, with_bb=with_bb)
        next_heads[job.id] = (req, with_bb, times[1:], nodes[1:], bb[1:], cnt[1:], found)
        return found


class FcfsEasy(EasyBackfilling):
    """``fcfs-easy``: EASY whose head reservation covers nodes only (seed 001, Fig. 2 left)."""

    name = "fcfs-easy"

    def __init__(self, *, order: str = "fcfs", reserve: str = "nodes", depth: int = 1,
                 job_model: str = "alloc-only", period: float = 0.0):
        super().__init__(order=order, reserve=reserve, depth=depth, job_model=job_model, period=period)


class FcfsBB(EasyBackfilling):
    """``fcfs-bb``: EASY whose head reservation covers nodes and burst buffer (seed 001 Alg. 1)."""

    name = "fcfs-bb"


class SjfBB(EasyBackfilling):
    """``sjf-bb``: ``fcfs-bb`` with the queue sorted by walltime (seed 001 Sect. 4.2)."""

    name = "sjf-bb"

    def __init__(self, *, order: str = "sjf", reserve: str = "all", depth: int = 1,
                 job_model: str = "alloc-only", period: float = 0.0):
        super().__init__(order=order, reserve=reserve, depth=depth, job_model=job_model, period=period)
