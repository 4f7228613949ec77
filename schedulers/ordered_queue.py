"""The waiting queue in a policy's order, indexed by what each job asks (nodes, burst buffer, walltime).

Why: a backfilling pass asks "which is the next job, in queue order, that could start now?".
Scanning the queue answers it in O(queue) per round, which made overloaded runs quadratic.
Here the jobs sit in segment trees of minima (nodes, burst-buffer bytes, walltime) over their
queue positions, so a pass skips every subtree whose smallest request already exceeds what the
profile has free (``AvailabilityProfile.room``): only jobs that may fit are visited.

Order: jobs with the same order key (``fcfs``: all of them; ``sjf``: same walltime; ``largest`` /
``smallest``: same node count) form one *run* in submission order, an append-only tree; runs
follow each other by key. Equal keys keep submission order, as the stable sort of
``order_queue`` does, so the iteration order is ``order_queue``'s.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mrsched.schedulers.job import Job
from mrsched.schedulers.policies.base import WaitingQueue

INF = math.inf

#: a room: ``room[walltime] -> (nodes, bytes)``, the most a request running that long may ask
#: (non-increasing in walltime; see ``AvailabilityProfile.room``). A job passes when it asks no
#: more than that; a subtree may hold one when its minima do.
Room = Mapping[float, tuple[float, float]]

_KEYS: dict[str, Callable[[Job], Any]] = {
    "fcfs": lambda j: 0,
    "sjf": lambda j: j.request.walltime,
    "largest": lambda j: -j.request.nodes,
    "smallest": lambda j: j.request.nodes,
}


class _Anything(dict):
    """The room that lets every job pass (empty slots, INF, never do)."""

    def __missing__(self, w: float) -> tuple[float, float]:
        return _HUGE


_HUGE = (1e300, 1e300)
_ANY = _Anything()


class _MinTree:
    """A segment tree over slots 0..cap-1 of the minimum nodes / bytes / walltime of every
    subtree (INF for empty slots); ``head``: every slot below it is empty (the front of a
    queue is found without a walk from the root)."""

    __slots__ = ("cap", "mn", "mb", "mw", "head")

    def __init__(self, leaves: list[tuple[float, float, float]]):
        cap = 8
        while cap < 2 * len(leaves):
            cap *= 2
        self.cap = cap
        mn, mb, mw = [INF] * (2 * cap), [INF] * (2 * cap), [INF] * (2 * cap)
        for s, (n, b, w) in enumerate(leaves):
            mn[cap + s], mb[cap + s], mw[cap + s] = n, b, w
        for i in range(cap - 1, 0, -1):
            a, b = 2 * i, 2 * i + 1
            mn[i] = mn[a] if mn[a] < mn[b] else mn[b]
            mb[i] = mb[a] if mb[a] < mb[b] else mb[b]
            mw[i] = mw[a] if mw[a] < mw[b] else mw[b]
        self.mn, self.mb, self.mw = mn, mb, mw
        self.head = 0

    def root(self) -> tuple[float, float, float]:
        return self.mn[1], self.mb[1], self.mw[1]

    def set(self, s: int, n: float, b: float, w: float) -> None:
        mn, mb, mw = self.mn, self.mb, self.mw
        if s < self.head and n != INF:
            self.head = s
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

    def live(self, lo: int) -> int:
        """The first occupied slot >= ``lo``, or -1: ``first`` without a room, so one
        comparison a subtree and no room lookup (the head of the queue, the next job)."""
        mn, cap = self.mn, self.cap
        head = self.head
        from_head = lo <= head
        if from_head:
            lo = head
        if lo >= cap or mn[1] == INF:
            return -1
        if mn[lo + cap] != INF:     # the next job in line (fcfs: nearly always)
            return lo
        i = lo + cap if lo else 1
        while True:
            if mn[i] != INF:
                if i >= cap:
                    if from_head:
                        self.head = i - cap
                    return i - cap
                i *= 2
                continue
            while i & 1:
                i >>= 1
            if not i:
                return -1
            i += 1

    def first(self, lo: int, room: Room) -> int:
        """The first slot >= ``lo`` holding a job that passes ``room``, or -1: a left-to-right
        walk over the subtrees right of ``lo`` that enters only those whose minima pass.

        A profile's room (``times`` and ``slices``) is read without calling it on a walltime
        it has not seen: the slice that walltime ends in is found here, and only a slice seen
        for the first time costs a call."""
        mn, mb, mw, cap = self.mn, self.mb, self.mw, self.cap
        r = room[mw[1]]
        if lo >= cap or mn[1] > r[0] or mb[1] > r[1]:
            return -1               # nothing in the whole tree passes
        get = room.get
        times = getattr(room, "times", None)
        if times is not None:
            t0, slices = times[0], room.slices
        i = lo + cap if lo else 1
        while True:
            w = mw[i]               # hot loop: one lookup and two comparisons a subtree
            r = get(w)
            if r is None:
                if times is not None:
                    r = slices.get(bisect_left(times, t0 + w) - 1)
                    if r is None:
                        r = room[w]
                    else:
                        room[w] = r
                else:
                    r = room[w]
            if mn[i] <= r[0] and mb[i] <= r[1]:
                if i >= cap:
                    return i - cap
                i *= 2              # descend: left child first
                continue
            while i & 1:            # the next subtree in order: up while a right child
                i >>= 1
            if not i:
                return -1
            i += 1


class _Run:
    """Jobs of one order key in arrival order: slots that only grow (compacted when full)."""

    __slots__ = ("tree", "items", "end", "slot")

    def __init__(self, jobs: Iterable[Job] = ()):
        jobs = list(jobs)
        self.tree = _MinTree([(j.request.nodes, j.request.bb_total, j.request.walltime) for j in jobs])
        self.items: list[Job | None] = jobs + [None] * (self.tree.cap - len(jobs))
        self.end = len(jobs)
        self.slot = {j.id: s for s, j in enumerate(jobs)}

    def live(self) -> list[Job]:
        return [j for j in self.items[:self.end] if j is not None]

    def full(self) -> bool:
        return self.end == self.tree.cap

    def append(self, job: Job) -> None:
        s = self.end
        self.end = s + 1
        self.items[s] = job
        self.slot[job.id] = s
        r = job.request
        self.tree.set(s, r.nodes, r.bb_total, r.walltime)

    def remove(self, job_id: str) -> None:
        s = self.slot.pop(job_id)
        self.items[s] = None
        self.tree.set(s, INF, INF, INF)


class OrderedQueue:
    """The waiting jobs in policy order (``fcfs``, ``sjf``, ``largest``, ``smallest``), kept
    across rounds and mirrored from the runtime's waiting queue by ``update``.

    A position is ``(order key, slot)``; ``next_job(after, room)`` is the first job after a
    position that asks no more than a room. Jobs a policy starts or rejects leave with ``remove``.
    """

    def __init__(self, order: str = "fcfs"):
        self.order = order
        self._key = _KEYS[order]
        self._runs: dict[Any, _Run] = {}
        self._keys: list = []           # the runs' keys, ascending (empty runs are kept)
        self._rank: dict[Any, int] = {}  # key -> index in _keys
        self._top = _MinTree([])        # over the runs, in key order: each run's minima
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
        new = []
        for jid in reversed(jobs):              # new jobs are the dict's tail (insertion order)
            if jid in key_of:
                break
            new.append(jid)
        for jid in reversed(new):
            self._add(jobs[jid])
        if len(key_of) != len(jobs):            # not just a tail: someone else changed the queue
            self._rebuild(queue)
        return self

    def _rebuild(self, queue: Iterable[Job]) -> None:
        key = self._key
        groups: dict[Any, list[Job]] = {}
        for job in queue:
            groups.setdefault(key(job), []).append(job)
        self._runs = {k: _Run(js) for k, js in groups.items()}
        self._key_of = {j.id: k for k, js in groups.items() for j in js}
        self._rerank()

    def _rerank(self) -> None:
        """Rebuild the tree over the runs (a new order key appeared)."""
        self._keys = sorted(self._runs)
        self._rank = {k: i for i, k in enumerate(self._keys)}
        self._top = _MinTree([self._runs[k].tree.root() for k in self._keys])

    def _add(self, job: Job) -> None:
        k = self._key(job)
        run = self._runs.get(k)
        if run is None:
            run = self._runs[k] = _Run()
            self._rerank()
        elif run.full():
            run = self._runs[k] = _Run(run.live())   # compact, or double when half full
        run.append(job)
        self._key_of[job.id] = k
        self._top.set(self._rank[k], *run.tree.root())

    def remove(self, job: Job) -> None:
        k = self._key_of.pop(job.id)
        run = self._runs[k]
        run.remove(job.id)
        self._top.set(self._rank[k], *run.tree.root())

    # -- queries -------------------------------------------------------------------------------
    @staticmethod
    def before(position: tuple) -> tuple:
        """The position just before ``position``: ``next_job(before(p), room)`` may return
        the job at ``p`` itself."""
        k, s = position
        return k, s - 1

    def next_job(self, after: tuple | None = None, room: Room = _ANY) -> tuple[Job | None, tuple | None]:
        """The first job after position ``after`` (None: from the front) asking no more than
        ``room`` (default: any job), and its position; ``(None, None)`` when there is none."""
        runs, keys, top = self._runs, self._keys, self._top
        if room is _ANY:
            return self._next_live(after)
        if after is not None:
            k, s = after
            r = self._rank[k]
            s = runs[k].tree.first(s + 1, room)
            if s >= 0:
                return runs[k].items[s], (k, s)
            r += 1
        else:
            r = 0
        while True:
            r = top.first(r, room)      # the next run whose minima pass
            if r < 0:
                return None, None
            k = keys[r]
            s = runs[k].tree.first(0, room)
            if s >= 0:
                return runs[k].items[s], (k, s)
            r += 1

    def _next_live(self, after: tuple | None) -> tuple[Job | None, tuple | None]:
        """``next_job`` without a room: the next job in order, whatever it asks."""
        runs, keys, top = self._runs, self._keys, self._top
        if after is not None:
            k, s = after
            s = runs[k].tree.live(s + 1)
            if s >= 0:
                return runs[k].items[s], (k, s)
            r = self._rank[k] + 1
        else:
            r = 0
        while True:
            r = top.live(r)
            if r < 0:
                return None, None
            k = keys[r]
            s = runs[k].tree.live(0)
            if s >= 0:
                return runs[k].items[s], (k, s)
            r += 1
