"""The waiting queue in a policy's order, indexed by what each job asks (nodes, burst buffer, walltime).

Why: a backfilling pass asks "which is the next job, in queue order, that could start now?".
Scanning the queue answers it in O(queue) per round, which made overloaded runs quadratic.
Here the jobs sit in segment trees of minima (nodes, burst-buffer bytes, walltime) over their
queue positions, so a pass skips every subtree whose smallest request already exceeds what the
profile has free (``AvailabilityProfile.room``): only jobs that may fit are visited.

Order: jobs with the same order key (``fcfs``: all of them; ``sjf``: same walltime; ``largest`` /
``smallest``: same node count) form one *run* in submission order, append-only; runs follow
each other by key. Equal keys keep submission order, as the stable sort of ``order_queue``
does, so the iteration order is ``order_queue``'s. Within a run the trees are per *lane* of
node counts (see ``_Run``), so that a subtree's minima mostly belong to one job; across runs,
one tree per lane holds that lane's minima in each run, so that a search enters a run only
where one of its lanes may hold a passing job (``_py_find_in_runs``).

The trees are compiled (``_mintree.c``, the same walk on C arrays: the walk is what grows
faster than the jobs on long queues) where the install could build it, else ``_PyMinTree``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mrsched import native
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.model.contract import WaitingQueue

try:
    from mrsched.schedulers.profile import _mintree     # the compiled tree (optional extension)
except ImportError:                             # not built (no compiler at install)
    _mintree = None
else:   # a profile's room tests burst-buffer packing in C (the same test)
    from mrsched.schedulers.profile.availability import Room as _ProfileRoom
    from mrsched.schedulers.profile.placement import BurstBufferPlacer
    _mintree.native_packing(_ProfileRoom._packs, BurstBufferPlacer.capacity_fits)

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


class _PyMinTree:
    """A segment tree over slots 0..cap-1 (at least ``cap``) of the minimum nodes / bytes /
    walltime of every subtree (INF for empty slots); ``head``: every slot below it is empty
    (the front of a queue is found without a walk from the root). The compiled ``_mintree``
    is this class line for line on C arrays; this one serves where it was not built."""

    __slots__ = ("cap", "mn", "mb", "mw", "head")

    def __init__(self, leaves: list[tuple[float, float, float]], cap: int = 0):
        least, cap = cap, 8
        while cap < 2 * len(leaves) or cap < least:
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

    def leaf(self, s: int) -> tuple[float, float, float]:
        s += self.cap
        return self.mn[s], self.mb[s], self.mw[s]

    def set(self, s: int, n: float, b: float, w: float) -> bool:
        """Put a slot's values; whether the root's minima changed (the tree above needs them)."""
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
                return False    # the minima above are unchanged too
            mn[i], mb[i], mw[i] = n, b, w
            i >>= 1
        return True

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

    def first(self, lo: int, room: Room, hi: int = -1, admits=None) -> int:
        """The first slot in ``lo``..``hi``-1 (``hi`` < 0: to the end) holding a job that passes
        ``room``, or -1: a left-to-right walk over the subtrees right of ``lo`` that enters only
        those whose minima pass, and stops at the first subtree starting at ``hi``.

        A profile's room (``times`` and ``slices``) is read without calling it on a walltime
        it has not seen: the slice that walltime ends in is found here, and only a slice seen
        for the first time costs a call. ``admits(nodes, bytes, walltime)``, when the leaves
        are jobs: a further test of a single job that passed (``Room.admits``); a job it
        refuses is passed over as one that did not pass."""
        mn, mb, mw, cap = self.mn, self.mb, self.mw, self.cap
        if hi < 0 or hi > cap:
            hi = cap
        r = room[mw[1]]
        if lo >= hi or mn[1] > r[0] or mb[1] > r[1]:
            return -1               # nothing in the whole tree passes
        get = room.get
        times = getattr(room, "times", None)
        if times is not None:
            t0, slices = times[0], room.slices
        end = hi + cap              # the first leaf past the range
        depth = cap.bit_length()    # a node's leftmost leaf: i << (depth - i.bit_length())
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
                if i < cap:
                    i *= 2          # descend: left child first (same leftmost leaf)
                    continue
                if admits is None or admits(mn[i], mb[i], w):
                    return i - cap
            while i & 1:            # the next subtree in order: up while a right child
                i >>= 1
            if not i:
                return -1
            i += 1
            if hi < cap and i << (depth - i.bit_length()) >= end:
                return -1           # the next subtree starts past the range

    def first_in_lanes(self, ks: list[int], lanes: dict, after: int, room: Room, earliest: bool) -> int:
        """``_Run.first``, where leaf k of this tree holds the minima of ``lanes[k]`` (a
        ``_Lane``: ``tree`` and ``pos``) and ``ks`` lists the lanes, smallest jobs first: each
        lane whose minima pass is searched before the best answer so far."""
        best = -1
        most = room[0.0][0]                     # the most nodes any walltime gets
        admits = getattr(room, "admits", None)  # a test of single jobs (the leaves)
        mn, mb, mw, cap = self.mn, self.mb, self.mw, self.cap
        for k in ks:
            if k and 1 << (k - 1) > most:
                break                           # this lane and the next ones ask more
            r = room[mw[cap + k]]
            if mn[cap + k] > r[0] or mb[cap + k] > r[1]:
                continue                        # no job of this lane passes
            lane = lanes[k]
            pos = lane.pos
            lo = bisect_right(pos, after) if after >= 0 else 0
            s = lane.tree.first(lo, room, bisect_left(pos, best, lo) if best >= 0 else -1, admits)
            if s >= 0:
                best = pos[s]
                if not earliest:
                    break
        return best


def _py_find_in_runs(r: int, tops: dict, ks: list[int], keys: list, runs: dict, room: Room,
                     earliest: bool) -> tuple | None:
    """``(key, run slot)`` of a job passing ``room`` in the first run from rank ``r`` that holds
    one (the first such job when ``earliest``), or None. ``tops[k]``: a tree whose leaf q holds
    the minima of lane k of run ``runs[keys[q]]``; ``ks``: the lanes, smallest jobs first.

    Lane by lane, so that a run is entered only where one lane's own minima pass: the minima
    of a whole run mix lanes (a 1-node job asking many bytes and a wide one asking none), and
    on long ``sjf`` queues most runs passed on minima that no job had. Each lane searches only
    up to the best run so far (that run included when ``earliest``, for an earlier slot)."""
    best_r = best = -1
    most = room[0.0][0]                     # the most nodes any walltime gets
    admits = getattr(room, "admits", None)  # a test of single jobs (the lanes' leaves)
    for k in ks:
        if k and 1 << (k - 1) > most:
            break                           # this lane and the next ones ask more
        top, lo = tops[k], r
        while True:
            q = top.first(lo, room, -1 if best_r < 0 else best_r + earliest)
            if q < 0:
                break                       # no run before the best holds a passing job here
            lane = runs[keys[q]].lanes[k]
            pos = lane.pos
            s = lane.tree.first(0, room, bisect_left(pos, best) if q == best_r else -1, admits)
            if s >= 0:
                best_r, best = q, pos[s]
                break                       # this lane's later runs come after it
            lo = q + 1
    return None if best_r < 0 else (keys[best_r], best)


def _occupied(tree: type) -> type:
    class Occupied(tree):
        """Which slots 0..cap-1 hold a job (nodes, bytes and walltime 0; INF when empty), so
        that ``live`` finds the next occupied slot in O(log cap) however many were emptied:
        the run's order whatever its lanes."""

        __slots__ = ()

        def __init__(self, used: int, cap: int):
            tree.__init__(self, [(0, 0, 0.0)] * used, cap)

        def mark(self, s: int, used: bool) -> None:
            if used:
                self.set(s, 0, 0, 0.0)
            else:
                self.set(s, INF, INF, INF)

    return Occupied


_PyOccupied = _occupied(_PyMinTree)
if _mintree is not None:
    _CMinTree = _mintree.MinTree
    _COccupied = _occupied(_CMinTree)


def use(compiled: bool) -> bool:
    """Use the compiled tree (when built) or the pure-Python one in the queues made from now
    on; whether the compiled one is now in use. A queue keeps the kind it was made with.
    ``MRSCHED_PURE_PYTHON=1`` in the environment starts with the pure-Python one."""
    global _MinTree, _Occupied, _find_in_runs
    compiled = compiled and _mintree is not None
    _MinTree, _Occupied, _find_in_runs = ((_CMinTree, _COccupied, _mintree.find_in_runs) if compiled
                                          else (_PyMinTree, _PyOccupied, _py_find_in_runs))
    return compiled


use(native.wanted())


def _lane(job: Job) -> int:
    """A job's lane: its node count's power of two (1, 2-3, 4-7, 8-15, ...)."""
    return job.request.nodes.bit_length()


_LANES = 64     # lanes 0..63: node counts below 2**63
# first capacities of a run and of a lane (slots; doubled when half full at a rebuild): a run
# or lane that starts small is rebuilt every few appends (sjf-bb, 20k jobs: 2,568 run and
# 12,941 lane rebuilds with 8)
_RUN_CAP, _LANE_CAP = 64, 32


class _Lane:
    """The jobs of one lane of a run, in run order: ``pos[s]`` is the run slot of lane slot
    ``s`` (increasing), ``tree`` their minima."""

    __slots__ = ("tree", "pos")

    def __init__(self, entries: list[tuple[int, Job]], tree: type):
        self.tree = tree([(j.request.nodes, j.request.bb_total, j.request.walltime) for _, j in entries],
                         _LANE_CAP)
        self.pos = [p for p, _ in entries]

    def live(self) -> list[int]:
        """Run slots of the jobs still here."""
        leaf = self.tree.leaf
        return [p for s, p in enumerate(self.pos) if leaf(s)[0] != INF]


class _Run:
    """Jobs of one order key in arrival order: run slots that only grow (compacted when full),
    split in lanes by node count.

    Why lanes: a subtree's minima (nodes, bytes, walltime) may come from different jobs. In one
    tree over every job of a long queue, a small job asking long and a short job asking many
    nodes make most subtrees pass a room that none of their jobs passes, and the walk visited
    ~sqrt(queue) subtrees. Within a lane node counts differ by less than 2x, so minima that
    pass nearly always belong to a job that nearly passes; the answer is the earliest of the
    lanes' first jobs, each lane searched only before the best answer so far. Runs of one
    walltime (``sjf``) are split too, their node counts and bytes still disagreeing."""

    __slots__ = ("items", "occupied", "end", "slot", "lanes", "ks", "roots", "trees")

    #: ``append`` / ``remove``: the lane whose minima changed, or this (none did)
    UNCHANGED = -1

    def __init__(self, jobs: Iterable[Job], trees: tuple):
        self.trees = trees      # (tree, occupancy tree, ...): the kind its queue was built with
        jobs = list(jobs)
        cap = _RUN_CAP
        while cap < 2 * len(jobs):
            cap *= 2
        self.items: list[Job | None] = jobs + [None] * (cap - len(jobs))
        self.occupied = trees[1](len(jobs), cap)
        self.end = len(jobs)
        self.slot = {j.id: s for s, j in enumerate(jobs)}
        by_lane: dict[int, list[tuple[int, Job]]] = {}
        for s, j in enumerate(jobs):
            by_lane.setdefault(_lane(j), []).append((s, j))
        self.lanes = {k: _Lane(entries, trees[0]) for k, entries in by_lane.items()}
        self.ks = sorted(self.lanes)            # the lanes, smallest jobs first
        self.roots = trees[0]([self.lanes[k].tree.root() if k in self.lanes else (INF, INF, INF)
                               for k in range(_LANES)])

    def live(self) -> list[Job]:
        return [j for j in self.items[:self.end] if j is not None]

    def full(self) -> bool:
        return self.end == self.occupied.cap

    def append(self, job: Job) -> int:
        """Add ``job`` at the end; the lane whose minima changed (its own), or ``UNCHANGED``."""
        s = self.end
        self.end = s + 1
        self.items[s] = job
        self.slot[job.id] = s
        self.occupied.mark(s, True)
        k = _lane(job)
        lane = self.lanes.get(k)
        if lane is None or len(lane.pos) == lane.tree.cap:
            # a new lane, or a full one compacted (or doubled when half full)
            keep = [] if lane is None else [(p, self.items[p]) for p in lane.live()]
            lane = self.lanes[k] = _Lane(keep, self.trees[0])
            self.ks = sorted(self.lanes)
        lane.pos.append(s)
        r = job.request
        if not lane.tree.set(len(lane.pos) - 1, r.nodes, r.bb_total, r.walltime):
            return self.UNCHANGED
        self.roots.set(k, *lane.tree.root())
        return k

    def remove(self, job_id: str) -> int:
        """Take ``job_id`` out; the lane whose minima changed (its own), or ``UNCHANGED``."""
        s = self.slot.pop(job_id)
        job = self.items[s]
        self.items[s] = None
        self.occupied.mark(s, False)
        k = _lane(job)
        lane = self.lanes[k]
        if not lane.tree.set(bisect_left(lane.pos, s), INF, INF, INF):
            return self.UNCHANGED
        self.roots.set(k, *lane.tree.root())
        return k

    def first(self, after: int, room: Room, earliest: bool = True) -> int:
        """The first run slot > ``after`` holding a job that passes ``room``, or -1;
        ``earliest=False``: the first found in any lane (whether there is one)."""
        return self.roots.first_in_lanes(self.ks, self.lanes, after, room, earliest)


class OrderedQueue:
    """The waiting jobs in policy order (``fcfs``, ``sjf``, ``largest``, ``smallest``), kept
    across rounds and mirrored from the runtime's waiting queue by ``update``.

    A position is ``(order key, slot)``; ``next_job(after, room)`` is the first job after a
    position that asks no more than a room; ``skip(after, room)`` only whether there is one
    (and where to look from). Jobs a policy starts or rejects leave with ``remove``.
    """

    def __init__(self, order: str = "fcfs"):
        self.order = order
        self._key = _KEYS[order]
        self._runs: dict[Any, _Run] = {}
        self._keys: list = []           # the runs' keys, ascending (empty runs are kept)
        self._rank: dict[Any, int] = {}  # key -> index in _keys
        # (tree, occupancy tree, search over runs): compiled or not, as ``use`` says now, for good
        self._trees = (_MinTree, _Occupied, _find_in_runs)
        self._tops: dict[int, Any] = {}  # lane -> tree over the runs (key order): its minima in each
        self._top_ks: list[int] = []     # the lanes of _tops, smallest jobs first
        self._top = self._trees[1](0, 0)  # which runs hold a job (key order)
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
        self._runs = {k: _Run(js, self._trees) for k, js in groups.items()}
        self._key_of = {j.id: k for k, js in groups.items() for j in js}
        self._rerank()

    def _rerank(self) -> None:
        """Rebuild the trees over the runs (a new order key appeared)."""
        self._keys = sorted(self._runs)
        self._rank = {k: i for i, k in enumerate(self._keys)}
        runs = [self._runs[k] for k in self._keys]
        tree, occupied = self._trees[:2]
        self._top = occupied(0, len(runs))
        for r, run in enumerate(runs):
            if run.slot:
                self._top.mark(r, True)
        empty = (INF, INF, INF)
        self._top_ks = sorted({k for run in runs for k in run.lanes})
        self._tops = {k: tree([run.lanes[k].tree.root() if k in run.lanes else empty for run in runs])
                      for k in self._top_ks}

    def _add(self, job: Job) -> None:
        key = self._key(job)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = _Run((), self._trees)
            self._rerank()
        elif run.full():
            run = self._runs[key] = _Run(run.live(), self._trees)   # compact, or double when half full
        self._key_of[job.id] = key
        r = self._rank[key]
        k = run.append(job)
        if k != _Run.UNCHANGED:
            top = self._tops.get(k)
            if top is None:     # the first job of this lane in any run
                top = self._tops[k] = self._trees[0]([(INF, INF, INF)] * len(self._keys))
                self._top_ks = sorted(self._tops)
            top.set(r, *run.lanes[k].tree.root())
        if len(run.slot) == 1:
            self._top.mark(r, True)

    def remove(self, job: Job) -> None:
        key = self._key_of.pop(job.id)
        run = self._runs[key]
        r = self._rank[key]
        k = run.remove(job.id)
        if k != _Run.UNCHANGED:
            self._tops[k].set(r, *run.lanes[k].tree.root())
        if not run.slot:
            self._top.mark(r, False)

    # -- queries -------------------------------------------------------------------------------
    def next_job(self, after: tuple | None = None, room: Room = _ANY) -> tuple[Job | None, tuple | None]:
        """The first job after position ``after`` (None: from the front) asking no more than
        ``room`` (default: any job), and its position; ``(None, None)`` when there is none."""
        if room is _ANY:
            return self._next_live(after)
        found = self._find(after, room, True)
        if found is None:
            return None, None
        k, s = found
        return self._runs[k].items[s], found

    def skip(self, after: tuple | None, room: Room) -> tuple | None:
        """A position from which to look for the first job after ``after`` that asks no more
        than ``room`` (no job in between does), or None when no later job does: ``next_job``
        without finding the earliest, so the first node-count lane of the first run that
        holds one ends the search (EASY's "may any later job start?", asked every round:
        finding the earliest cost a walk of every lane to its own first job)."""
        found = self._find(after, room, False)
        if found is None:
            return None
        k = found[0]
        return after if after is not None and after[0] == k else (k, -1)

    def _find(self, after: tuple | None, room: Room, earliest: bool) -> tuple | None:
        """``(key, slot)`` of a job after ``after`` passing ``room`` in the first run that
        holds one: the first such job (``earliest``), or the first any lane finds; or None."""
        runs = self._runs
        if after is not None:
            k, s = after
            s = runs[k].first(s, room, earliest)
            if s >= 0:
                return k, s
            r = self._rank[k] + 1
        else:
            r = 0
        return self._trees[2](r, self._tops, self._top_ks, self._keys, runs, room, earliest)

    def _next_live(self, after: tuple | None) -> tuple[Job | None, tuple | None]:
        """``next_job`` without a room: the next job in order, whatever it asks."""
        runs, keys, top = self._runs, self._keys, self._top
        if after is not None:
            k, s = after
            s = runs[k].occupied.live(s + 1)
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
            s = runs[k].occupied.live(0)
            if s >= 0:
                return runs[k].items[s], (k, s)
            r += 1
