"""The waiting queue in a policy's order, indexed by what each job asks (nodes, burst buffer, walltime).

Why: a backfilling pass asks "which is the next job, in queue order, that could start now?".
Scanning the queue answers it in O(queue) per round, which made overloaded runs quadratic.
Here the jobs sit in segment trees of minima (nodes, burst-buffer bytes, walltime) over their
queue positions, so a pass skips every subtree whose smallest request already exceeds what the
profile has free (``AvailabilityProfile.room_test``): only jobs that may fit are visited.

Order: jobs with the same order key (``fcfs``: all of them; ``sjf``: same walltime; ``largest`` /
``smallest``: same node count) form one *run* in submission order, an append-only tree; runs
follow each other by key. Equal keys keep submission order, as the stable sort of
``order_queue`` does, so the iteration order is ``order_queue``'s.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mrsched.schedulers.job import Job
from mrsched.schedulers.policies.base import WaitingQueue

INF = math.inf

#: a room test: ``test(nodes, bytes, walltime)`` is False only when no request asking at least
#: that much of each can start now (monotone: a larger request fails whenever a smaller fails)
RoomTest = Callable[[float, float, float], bool]

_KEYS: dict[str, Callable[[Job], Any]] = {
    "fcfs": lambda j: 0,
    "sjf": lambda j: j.request.walltime,
    "largest": lambda j: -j.request.nodes,
    "smallest": lambda j: j.request.nodes,
}


def _alive(n: float, b: float, w: float) -> bool:
    return n != INF


class _Run:
    """Jobs of one order key in arrival order: slots that only grow, and a segment tree of
    the minimum nodes / bytes / walltime of every subtree (INF for empty slots)."""

    __slots__ = ("cap", "mn", "mb", "mw", "items", "end", "slot")

    def __init__(self, jobs: Iterable[Job] = ()):
        jobs = list(jobs)
        cap = 8
        while cap < 2 * len(jobs):
            cap *= 2
        self.cap = cap
        self.items: list[Job | None] = jobs + [None] * (cap - len(jobs))
        self.end = len(jobs)
        self.slot = {j.id: s for s, j in enumerate(jobs)}
        mn, mb, mw = [INF] * (2 * cap), [INF] * (2 * cap), [INF] * (2 * cap)
        for s, j in enumerate(jobs):
            r = j.request
            mn[cap + s], mb[cap + s], mw[cap + s] = r.nodes, r.bb_total, r.walltime
        for i in range(cap - 1, 0, -1):
            a, b = 2 * i, 2 * i + 1
            mn[i] = mn[a] if mn[a] < mn[b] else mn[b]
            mb[i] = mb[a] if mb[a] < mb[b] else mb[b]
            mw[i] = mw[a] if mw[a] < mw[b] else mw[b]
        self.mn, self.mb, self.mw = mn, mb, mw

    def __len__(self) -> int:
        return len(self.slot)

    def live(self) -> list[Job]:
        return [j for j in self.items[:self.end] if j is not None]

    def _set(self, s: int, n: float, b: float, w: float) -> None:
        mn, mb, mw = self.mn, self.mb, self.mw
        i = s + self.cap
        mn[i], mb[i], mw[i] = n, b, w
        i >>= 1
        while i:
            l, r = 2 * i, 2 * i + 1
            n = mn[l] if mn[l] < mn[r] else mn[r]
            b = mb[l] if mb[l] < mb[r] else mb[r]
            w = mw[l] if mw[l] < mw[r] else mw[r]
            if n == mn[i] and b == mb[i] and w == mw[i]:
                return          # the minima above are unchanged too
            mn[i], mb[i], mw[i] = n, b, w
            i >>= 1

    def append(self, job: Job) -> None:
        s = self.end
        self.end = s + 1
        self.items[s] = job
        self.slot[job.id] = s
        r = job.request
        self._set(s, r.nodes, r.bb_total, r.walltime)

    def full(self) -> bool:
        return self.end == self.cap

    def remove(self, job_id: str) -> None:
        s = self.slot.pop(job_id)
        self.items[s] = None
        self._set(s, INF, INF, INF)

    def first(self, lo: int, test: RoomTest) -> int:
        """The first slot >= ``lo`` holding a job that passes ``test``, or -1: a left-to-right
        walk over the subtrees right of ``lo`` that enters only those whose minima pass."""
        if lo >= self.end:
            return -1
        mn, mb, mw, cap = self.mn, self.mb, self.mw, self.cap
        i = lo + cap
        while True:
            if test(mn[i], mb[i], mw[i]):
                if i >= cap:
                    return i - cap
                i *= 2              # descend: left child first
                continue
            while i & 1:            # the next subtree in order: up while a right child
                i >>= 1
            if not i:
                return -1
            i += 1


class OrderedQueue:
    """The waiting jobs in policy order (``fcfs``, ``sjf``, ``largest``, ``smallest``), kept
    across rounds and mirrored from the runtime's waiting queue by ``update``.

    A position is ``(order key, slot)``; ``next_job(after, test)`` is the first job after a
    position that passes a room test. Jobs a policy starts or rejects leave with ``remove``.
    """

    def __init__(self, order: str = "fcfs"):
        self.order = order
        self._key = _KEYS[order]
        self._runs: dict[Any, _Run] = {}
        self._keys: list = []           # the runs' keys, ascending
        self._key_of: dict[str, Any] = {}
        self._mirror: Mapping[str, Job] | None = None

    def __len__(self) -> int:
        return len(self._key_of)

    def __iter__(self):
        for k in list(self._keys):
            yield from self._runs[k].live()

    def __contains__(self, job_id: str) -> bool:
        return job_id in self._key_of

    # -- mirroring the runtime's queue ---------------------------------------------------------
    def update(self, queue) -> "OrderedQueue":
        """Catch up with ``queue`` (waiting jobs in submission order): the runtime appends
        submissions at its tail and removes only the jobs this queue was told about, so only
        the new tail is read; anything else (another queue, a plain list) is re-read whole."""
        jobs = queue._jobs if type(queue) is WaitingQueue else None
        if jobs is None or jobs is not self._mirror:
            self._rebuild(queue)
            self._mirror = jobs
            return self
        key_of = self._key_of
        if len(key_of) != len(jobs):
            new = []
            for jid in reversed(jobs):          # new jobs are the dict's tail (insertion order)
                if jid in key_of:
                    break
                new.append(jid)
            for jid in reversed(new):
                self._add(jobs[jid])
            if len(key_of) != len(jobs):        # not a tail: someone else changed the queue
                self._rebuild(queue)
        return self

    def _rebuild(self, queue: Iterable[Job]) -> None:
        key = self._key
        groups: dict[Any, list[Job]] = {}
        for job in queue:
            groups.setdefault(key(job), []).append(job)
        self._runs = {k: _Run(js) for k, js in groups.items()}
        self._keys = sorted(groups)
        self._key_of = {j.id: k for k, js in groups.items() for j in js}

    def _add(self, job: Job) -> None:
        k = self._key(job)
        run = self._runs.get(k)
        if run is None:
            run = self._runs[k] = _Run()
            insort(self._keys, k)
        elif run.full():
            run = self._runs[k] = _Run(run.live())   # compact, or double when half full
        run.append(job)
        self._key_of[job.id] = k

    def remove(self, job: Job) -> None:
        k = self._key_of.pop(job.id)
        run = self._runs[k]
        run.remove(job.id)
        if not run.slot:
            del self._runs[k]
            del self._keys[bisect_left(self._keys, k)]

    # -- queries -------------------------------------------------------------------------------
    def next_job(self, after: tuple | None = None, test: RoomTest = _alive) -> tuple[Job | None, tuple | None]:
        """The first job after position ``after`` (None: from the front) passing ``test``, and
        its position; ``(None, None)`` when there is none."""
        keys, runs = self._keys, self._runs
        if after is None:
            i, lo = 0, 0
        else:
            k, s = after
            i = bisect_left(keys, k)
            lo = s + 1 if i < len(keys) and keys[i] == k else 0
        while i < len(keys):
            k = keys[i]
            run = runs[k]
            s = run.first(lo, test)
            if s >= 0:
                return run.items[s], (k, s)
            i += 1
            lo = 0
        return None, None
