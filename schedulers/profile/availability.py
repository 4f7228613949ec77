"""Free capacity of every resource over future time, as sorted breakpoints (no time grid).

Slice ``k`` covers ``[times[k], times[k+1])`` (the last one extends forever) and records the
free compute nodes (an int bitmask over compute indices: set algebra is one machine word per
64 nodes), free burst-buffer bytes per storage node and free amount of each named counter.
Running jobs and reservations are subtracted over their window; ``earliest_start`` finds the
first start where a request fits for its whole duration.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from mrsched.errors import SimulationError
from mrsched import native
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.model.job import Request
from mrsched.schedulers.profile.placement import BurstBufferPlacer, Placement, split_shares
from mrsched.schedulers.profile.rows import (_py_first_short, _py_fit_window, _py_least, _py_lowest_bits,
                                             _py_shift_nodes, _py_shift_rows)

try:
    from mrsched.schedulers.profile import _profile     # the row and mask operations in C (optional extension)
except ImportError:                             # built without a C compiler
    _profile = None
try:
    from mrsched.schedulers.profile import _mintree     # the queue's compiled walk, which reads rooms
except ImportError:
    _mintree = None

INF = math.inf


class Fit(NamedTuple):
    """What the plan-based search keeps of an allocation ``earliest_fit`` found: the nodes and
    burst-buffer bytes per storage index (all that ``reserve_fitted`` needs), without the
    per-node placement, which ``AvailabilityProfile.allocation(fit)`` builds for the jobs that
    really start (the placement is a pure function of ``key``)."""

    nodes: int
    bb: tuple[int, ...]
    counters: tuple[float, ...]
    key: tuple                          # (chosen nodes, total bytes, nodes, window's free bytes)


_tuple_new = tuple.__new__  # builds a Fit or a Reservation without NamedTuple's Python-level __new__
_PLACE_MEMO_SIZE = 20_000   # entries of the burst-buffer placement memo (cleared when full)
_PLACE_MEMO_NODES = 2_000_000   # nodes placed by the memo's entries, at most (memory)
_WEIGHT = ("nodes placed",)     # the placement memo's entry holding that count
_LOG_MAX = 100_000          # releases kept in the log when nobody trims it
_NO_ROOM = object()         # earliest_fit's memo: not enough burst buffer in the window
_ROOM_MEMO: dict = {}       # _room: (id(row), share, nodes) -> (row, capacity_fits)
_SPEC_MEMO: dict = {}       # fit_spec: id(request) -> (request, cluster, counter names, spec)


class Reservation(NamedTuple):
    """A window ``[start, end)`` holding an allocation in one profile; pass it to ``release``.
    A named tuple (immutable, compared by value): conservative backfilling makes one for every
    queued job at every compression, and a frozen dataclass's constructor sets each field
    through ``object.__setattr__``."""

    start: float
    end: float
    allocation: Allocation
    tag: str | None = None
    log_pos: int = 0          # the profile's release-log length when this was made (-1: none kept)


class Room(dict):
    """``AvailabilityProfile.room()``: walltime -> (free nodes, free bytes) from the present,
    computed on first use (a dict, so the queue's hot loop reads it with one subscript).

    ``slices[j]`` is the room of every walltime ending in slice ``j`` (computed once for
    them all, from running AND / minimum of the slices, extended as far as asked); ``times``
    the profile's slice starts, so a reader may find ``j`` itself. The queue's compiled walk
    does ``__missing__``'s work itself on a miss (``_mintree.native_room``, registered by
    ``use``): ~11 misses a job on 96 nodes, each a Python call before."""

    __slots__ = ("times", "nodes", "bbsum", "slices", "_and", "_least", "_prefix", "_fits")

    def __init__(self, times: list[float], nodes: list[int], bbsum: list[int], prefix=None, fits=None):
        super().__init__()
        self.times, self.nodes, self.bbsum = times, nodes, bbsum
        self.slices: dict[int, tuple[int, int]] = {}
        self._and, self._least = [nodes[0]], [bbsum[0]]
        self._prefix, self._fits = prefix, fits

    @property
    def admits(self):
        """``admits(nodes, bytes, walltime)``: the packing test of one job (None: bounds only).
        Bound on each read, not kept: a room holding its own bound method would be a reference
        cycle, freed only by the garbage collector."""
        return self._packs if self._prefix is not None else None

    def _packs(self, n: int, total: int, w: float) -> bool:
        """Whether one job of ``n`` nodes, ``total`` bytes and walltime ``w``, which passes
        ``self[w]``, also passes ``fits_now``'s capacity test: its shares on each storage
        node's fewest free bytes over the window (the same prefix and test, so still a
        necessary condition). The queue asks it of a single job that a subtree's bounds let
        through; a job it refuses is passed over inside the walk, a leaf, instead of coming
        back as a candidate that costs a query of every lane and a ``fits_now``."""
        if not total or not n:
            return True
        times = self.times
        j = bisect_left(times, times[0] + w) - 1
        return self._fits(total // n, n, self._prefix(j if j > 0 else 0)[1])

    def __missing__(self, w: float) -> tuple[int, int]:
        times = self.times
        j = bisect_left(times, times[0] + w) - 1
        if j < 0:
            j = 0
        room = self.slices.get(j)
        if room is None:
            ands, least = self._and, self._least
            k = len(ands)
            if k <= j:
                nodes, bbsum = self.nodes, self.bbsum
                m, b = ands[-1], least[-1]
                for k in range(k, j + 1):
                    m &= nodes[k]
                    if bbsum[k] < b:
                        b = bbsum[k]
                    ands.append(m)
                    least.append(b)
            room = self.slices[j] = (_bit_count(ands[j]), least[j])
        self[w] = room
        return room


def lowest_bits(mask: int, n: int) -> int:
    """The ``n`` lowest set bits of ``mask`` (batsched's 'basic' selector: first free ids):
    in C (``_profile.c``) when built, else ``_py_lowest_bits``."""
    return _lowest_bits(mask, n)


class AvailabilityProfile:
    """Free nodes / burst buffer / counters over time for one cluster."""

    def __init__(self, cluster: Cluster, now: float = 0.0, *, placer: BurstBufferPlacer | None = None,
                 release_log: bool = False):
        self.cluster = cluster
        self.placer = placer or BurstBufferPlacer(cluster)
        self.counter_names = tuple(cluster.counters)
        self.times: list[float] = [now]
        self.nodes: list[int] = [cluster.all_nodes]
        self.bb: list[tuple[int, ...]] = [tuple(s.capacity for s in cluster.storage)]
        self.cnt: list[tuple[float, ...]] = [tuple(cluster.counters[c] for c in self.counter_names)]
        self.bbsum: list[int] = [sum(self.bb[0])]     # total free burst buffer per slice (skips)
        self._gpu_masks: dict[int, int] = {}
        self._version = 0          # bumped on every change
        # every release [start, end) in order; ``_log_base`` = absolute index of _log[0]. Kept
        # only for a reader of ``released_since`` / ``released_span`` (conservative
        # backfilling): ``release_log`` off, a reservation's history is unknown (log_pos -1)
        self.release_log = release_log
        self._log: list[tuple[float, float]] = []
        self._log_base = 0
        # monotonic stacks over the log for released_span's suffix queries: absolute positions
        # with start times increasing (suffix minimum of starts) and end times decreasing
        # (suffix maximum of ends) from bottom to top
        self._lo_pos: list[int] = []
        self._lo_val: list[float] = []
        self._hi_pos: list[int] = []
        self._hi_val: list[float] = []
        # prefix aggregates of slices 0..k (see _prefix); every change truncates it at the
        # first slice it touches, so a reservation late in the profile keeps the early part
        self._pre: list = []

    _place_memo: dict | None = None    # see _placed; shared by copies
    _last_fit: tuple = (None,)         # see fits_now: (request, version, now, duration, answer)
    _alloc_memo: dict | None = None    # see earliest_fit; shared by copies

    # -- structure ---------------------------------------------------------------------------
    def copy(self) -> "AvailabilityProfile":
        other = AvailabilityProfile.__new__(AvailabilityProfile)
        other.cluster, other.placer, other.counter_names = self.cluster, self.placer, self.counter_names
        other.times, other.nodes = list(self.times), list(self.nodes)
        other.bb, other.cnt, other.bbsum = list(self.bb), list(self.cnt), list(self.bbsum)
        other._gpu_masks = self._gpu_masks
        memo = self._place_memo
        if memo is None:
            memo = self._place_memo = {}
        other._place_memo = memo               # placements are pure: shared by every copy
        amemo = self._alloc_memo
        if amemo is None:
            amemo = self._alloc_memo = {}
        other._alloc_memo = amemo
        other._version, other._pre = 0, self._pre[:]   # same slices: the prefix cache holds
        other.release_log = self.release_log
        other._log, other._log_base = [], self._log_base + len(self._log)   # older history unknown there
        other._lo_pos, other._lo_val, other._hi_pos, other._hi_val = [], [], [], []
        return other

    @property
    def now(self) -> float:
        return self.times[0]

    @property
    def version(self) -> int:
        """Changes whenever a slice changes (reserve, release, split, merge, or the present
        passing a breakpoint); equal versions of one profile mean equal slices."""
        return self._version

    def __len__(self) -> int:
        return len(self.times)

    def advance(self, now: float) -> None:
        """Forget the past: the first slice starts at ``now``."""
        if now < self.times[0]:
            raise SimulationError(f"time went backwards: {now} < {self.times[0]}")
        k = bisect_right(self.times, now) - 1
        if k > 0:
            # slice indices shift: the prefix cache is stale (moving times[0] alone keeps it)
            self._version += 1
            self._pre = []
            del self.times[:k], self.nodes[:k], self.bb[:k], self.cnt[:k], self.bbsum[:k]
        self.times[0] = now

    def _split(self, t: float) -> int:
        """Index of the slice starting exactly at ``t`` (created if needed); len() for INF."""
        if t == INF:
            return len(self.times)
        k = bisect_right(self.times, t) - 1
        if k < 0:
            raise SimulationError(f"time {t} is before the profile's present {self.times[0]}")
        if self.times[k] == t:
            return k
        self._version += 1
        del self._pre[k + 1:]
        self.times.insert(k + 1, t)
        self.nodes.insert(k + 1, self.nodes[k])
        self.bb.insert(k + 1, self.bb[k])
        self.cnt.insert(k + 1, self.cnt[k])
        self.bbsum.insert(k + 1, self.bbsum[k])
        return k + 1

    def _merge_at(self, k: int) -> None:
        """Drop breakpoint ``k`` when it separates two identical slices."""
        if 0 < k < len(self.times) and self.nodes[k] == self.nodes[k - 1] and self.bb[k] == self.bb[k - 1] \
                and self.cnt[k] == self.cnt[k - 1]:
            self._version += 1
            del self._pre[k:]
            del self.times[k], self.nodes[k], self.bb[k], self.cnt[k], self.bbsum[k]

    # -- updates -----------------------------------------------------------------------------
    def reserve(self, start: float, end: float, allocation: Allocation, tag: str | None = None) -> Reservation:
        """Take ``allocation`` over ``[start, end)``; SimulationError if anything is over-allocated."""
        start = max(start, self.times[0])
        log_pos = self._log_base + len(self._log) if self.release_log else -1
        if end <= start:
            return _tuple_new(Reservation, (start, end, allocation, tag, log_pos))
        i = self._split(start)
        j = self._split(end)
        mask, bb, cn = allocation.nodes, allocation.bb, allocation.counters
        if bb or cn:
            short = _first_short(self.bb, i, j, bb) if bb else -1
            if short >= 0 or cn or _shift_nodes(self.nodes, i, j, mask, -1, True) >= 0:
                self._check_window(i, j, allocation, short, start, end, tag)    # raises, or all fit
            _shift_nodes(self.nodes, i, j, mask, -1, False)
        elif _shift_nodes(self.nodes, i, j, mask, -1, True) >= 0:   # checked before any change
            self._check_window(i, j, allocation, -1, start, end, tag)
        self._version += 1
        del self._pre[i:]
        if bb:
            _shift_rows(self.bb, self.bbsum, i, j, bb, -1)
        if cn:
            for k in range(i, j):
                self.cnt[k] = tuple(a - b for a, b in zip(self.cnt[k], cn))
        return _tuple_new(Reservation, (start, end, allocation, tag, log_pos))

    def _check_window(self, i: int, j: int, allocation: Allocation, short: int, start: float, end: float,
                tag: str | None) -> None:
        """``reserve``'s checks, slice by slice from ``i`` to ``j``: the first slice where the
        nodes are not free, the bytes short (``short``, ``first_short``'s) or a counter
        over-allocated raises, after the split at ``i`` and ``j`` is undone, so a refused
        reservation leaves no trace; returns when every slice passes."""
        mask, cn = allocation.nodes, allocation.counters
        for k in range(i, j):
            free = self.nodes[k]
            if free & mask != mask:
                self._merge_at(j)
                self._merge_at(i)
                raise SimulationError(f"nodes {self.cluster.ids_of(mask & ~free)} are not free at "
                                      f"t={self.times[k]} (reservation [{start}, {end}))", job=tag)
            if k == short:
                self._merge_at(j)
                self._merge_at(i)
                raise SimulationError(f"burst buffer over-allocated at t={self.times[k]}", job=tag)
            if cn and any(a < b - 1e-9 for a, b in zip(self.cnt[k], cn)):
                self._merge_at(j)
                self._merge_at(i)
                raise SimulationError(f"counter over-allocated at t={self.times[k]}", job=tag)

    def reserve_fitted(self, start: float, end: float, allocation: Allocation) -> None:
        """``reserve`` without its over-allocation checks nor a ``Reservation`` record, for an
        allocation that ``earliest_start`` has just found on this very profile (the plan-based
        search replays thousands per round). Leaves the profile exactly as ``reserve`` does
        (tests/schedulers/test_plan.py compares every attribute)."""
        start = max(start, self.times[0])
        if end <= start:
            return
        i = self._split(start)
        j = self._split(end)
        self._version += 1
        del self._pre[i:]
        _shift_nodes(self.nodes, i, j, allocation.nodes, -1, False)
        take_bytes(self.bb, self.bbsum, i, j, allocation)
        cn = allocation.counters
        if cn:
            cnt_l = self.cnt
            for k in range(i, j):
                cnt_l[k] = tuple(a - b for a, b in zip(cnt_l[k], cn))

    def release(self, reservation: Reservation, from_time: float | None = None) -> None:
        """Give back what ``reservation`` still holds from ``from_time`` (default: its start)."""
        start = max(reservation.start, self.times[0], from_time if from_time is not None else -INF)
        end = reservation.end
        if end <= start:
            return
        a = reservation.allocation
        i = self._split(start)
        j = self._split(end)
        bad = _shift_nodes(self.nodes, i, j, a.nodes, 1, True)     # checked before any change
        if bad >= 0:
            raise SimulationError(f"releasing nodes that are already free at t={self.times[bad]} "
                                  "(released twice?)", job=reservation.tag)
        self._version += 1
        del self._pre[i:]
        if a.bb:
            _shift_rows(self.bb, self.bbsum, i, j, a.bb, 1)
        if a.counters:
            for k in range(i, j):
                self.cnt[k] = tuple(x + y for x, y in zip(self.cnt[k], a.counters))
        if self.release_log:
            self._log_release(start, end)
        self._merge_at(j)
        self._merge_at(i)

    # -- release log: what became free since a reservation was made ---------------------------
    def _log_release(self, start: float, end: float) -> None:
        """Append the window ``[start, end)`` to the release log and its monotonic stacks."""
        log = self._log
        pos = self._log_base + len(log)
        log.append((start, end))
        lo_val, lo_pos, hi_val, hi_pos = self._lo_val, self._lo_pos, self._hi_val, self._hi_pos
        while lo_val and lo_val[-1] >= start:
            lo_val.pop()
            lo_pos.pop()
        lo_val.append(start)
        lo_pos.append(pos)
        while hi_val and hi_val[-1] <= end:
            hi_val.pop()
            hi_pos.pop()
        hi_val.append(end)
        hi_pos.append(pos)
        if len(log) > _LOG_MAX:
            # nobody trimmed it (only conservative reads it): keep it bounded; a reservation
            # older than what is kept gets "history unknown" from released_since
            self.trim_log(self._log_base + len(log) // 2)

    def released_since(self, log_pos: int) -> list[tuple[float, float]] | None:
        """Windows released after position ``log_pos`` (None when that history was trimmed or
        not kept: ``release_log`` off)."""
        if log_pos < self._log_base:
            return None
        return self._log[log_pos - self._log_base:]

    def released_span(self, log_pos: int) -> tuple[float, float] | None:
        """(earliest start, latest end) of the windows released after position ``log_pos``
        (``(inf, -inf)`` when none; None when that history was trimmed or not kept), in
        O(log releases): the first entry at or after ``log_pos`` of each monotonic stack holds
        the suffix's extreme. Conservative backfilling asks it for every queued job of a
        compression pass."""
        if log_pos < self._log_base:
            return None
        k = bisect_left(self._lo_pos, log_pos)
        if k == len(self._lo_pos):
            return INF, -INF
        return self._lo_val[k], self._hi_val[bisect_left(self._hi_pos, log_pos)]

    def trim_log(self, log_pos: int) -> None:
        """Forget releases before ``log_pos`` (no live reservation needs them any more)."""
        drop = log_pos - self._log_base
        if drop > 0:
            del self._log[:drop]
            self._log_base = log_pos
            k = bisect_left(self._lo_pos, log_pos)
            del self._lo_pos[:k], self._lo_val[:k]
            k = bisect_left(self._hi_pos, log_pos)
            del self._hi_pos[:k], self._hi_val[:k]

    # -- queries -----------------------------------------------------------------------------
    def free_at(self, t: float) -> tuple[int, tuple[int, ...], tuple[float, ...]]:
        """(free node mask, free bytes per storage, free counters) at time ``t``."""
        k = max(bisect_right(self.times, t) - 1, 0)
        return self.nodes[k], self.bb[k], self.cnt[k]

    def _eligible(self, gpus: int) -> int:
        mask = self._gpu_masks.get(gpus)
        if mask is None:
            mask = self._gpu_masks[gpus] = self.cluster.gpu_mask(gpus)
        return mask

    def counter_vector(self, request: Request) -> tuple[float, ...]:
        if not self.counter_names:
            return ()
        wanted = dict(request.counters)
        return tuple(float(wanted.get(c, 0.0)) for c in self.counter_names)

    def _prefix(self, j: int) -> tuple[int, tuple[int, ...], tuple[float, ...]]:
        """AND of free nodes and min of free burst buffer / counters over slices ``0..j``.

        Cached and extended lazily (changes truncate it): EASY and filler ask "does it fit from
        now until its walltime?" for every queued job, always from slice 0 (hot path).
        """
        pre = self._pre
        if not pre:
            pre.append((self.nodes[0], self.bb[0], self.cnt[0]))
        if j >= len(pre):
            nodes_l, bb_l, cnt_l = self.nodes, self.bb, self.cnt
            m, b, c = pre[-1]
            for k in range(len(pre), j + 1):
                m &= nodes_l[k]
                bk = bb_l[k]
                if bk is not b and bk != b:
                    b = _least(b, bk)
                ck = cnt_l[k]
                if ck is not c and ck != c:
                    c = tuple(map(min, c, ck))
                pre.append((m, b, c))
        return pre[j]

    def room(self, packing: bool = True) -> "Room":
        """What any request can use from now on, by walltime: ``room[w]`` is ``(free nodes,
        free burst-buffer bytes in total)`` all along ``[now, now + w)`` (nodes free in every
        slice; the fewest bytes free in total in any slice).

        A request asking more of either cannot start now: a necessary condition of
        ``fits_now``, non-increasing in ``w``. ``OrderedQueue`` compares it with the minima of
        whole subtrees of the queue to skip jobs that provably cannot start. Valid until the
        profile changes (after a change it is still necessary, only weaker).

        Bytes: the per-slice totals, not ``fits_now``'s per-storage minima (whose sum is at
        most this): those cost a row operation per slice, and visiting the few more jobs this
        lets through is cheaper.

        ``packing``: the queue also tests each job the bounds let through with ``fits_now``'s
        burst-buffer capacity test (``Room.admits``, compiled with the queue's walk), so that
        the jobs it returns are nearly all the ones that fit. Without: the bounds alone, for a
        quick "may any job start?" (a walk that would stop at the first job through the
        bounds, not at the first that packs)."""
        if not packing or not self.bb[0]:
            return Room(self.times, self.nodes, self.bbsum)
        return Room(self.times, self.nodes, self.bbsum, self._prefix, self.placer.capacity_fits)

    def earliest_start(self, request: Request, duration: float | None = None, not_before: float | None = None,
                       *, not_after: float = INF, with_bb: bool = True,
                       with_counters: bool = True) -> tuple[float, Allocation] | None:
        """First time >= ``not_before`` (and <= ``not_after``) where ``request`` fits for ``duration``.

        Returns ``(start, allocation)`` or None. Nodes are the lowest free indices over the
        window; burst buffer is placed per node (nearest first) over the whole window.
        ``with_bb=False`` ignores burst buffer (EASY reserving nodes only, seed 001 Alg. 1).
        """
        if duration is None:
            duration = request.walltime
        times, nodes_l, bb_l, cnt_l = self.times, self.nodes, self.bb, self.cnt
        t0 = times[0] if not_before is None else max(not_before, times[0])
        n = request.nodes
        all_nodes = self._eligible(0)
        gpus = request.gpus_per_node
        elig = self._eligible(gpus) if gpus else all_nodes
        if with_bb and request.bb_total and not bb_l[0]:
            return None  # burst buffer asked on a machine without any
        total = request.bb_total if with_bb else 0
        share = total // n if total else 0          # smallest share: the quick capacity test
        cvec = self.counter_vector(request) if with_counters else ()
        use_c = bool(cvec) and any(cvec)
        placer = self.placer
        last = len(times)
        i = bisect_right(times, t0) - 1
        while i < last:
            t = t0 if times[i] < t0 else times[i]
            if t > not_after:
                return None
            if _bit_count(nodes_l[i] if elig is all_nodes else nodes_l[i] & elig) < n:
                # skip the run of slices too small on their own in one tight loop (conservative
                # re-inserts every queued job: this scan is its hot path); the loop top then
                # re-checks not_after at the next candidate
                i += 1
                if elig == all_nodes:
                    if not_after == INF:
                        while i < last and _bit_count(nodes_l[i]) < n:
                            i += 1
                    else:
                        while i < last and _bit_count(nodes_l[i]) < n and times[i] <= not_after:
                            i += 1
                else:
                    while i < last and _bit_count(nodes_l[i] & elig) < n and times[i] <= not_after:
                        i += 1
                continue
            end = t + duration
            if i == 0:
                # window from the present: cached prefix aggregates, O(log slices)
                j = bisect_left(times, end) - 1
                mask, bbmin, cmin = self._prefix(j)
                mask &= elig
                ok = _bit_count(mask) >= n
                fail_at = None
            else:
                mask = nodes_l[i] & elig
                bbsum = self.bbsum
                ok = not (total and bbsum[i] < total)
                fail_at = None if ok else i
                j = i + 1
                while ok and j < last and times[j] < end:
                    # hot loop: plain ints, early exit on the first shortage; a slice too small
                    # on its own is skipped past (every later candidate window contains it)
                    nj = nodes_l[j]
                    mask &= nj
                    if _bit_count(mask) < n:
                        ok = False
                        if _bit_count(nj & elig) < n:
                            fail_at = j
                        break
                    if total and bbsum[j] < total:
                        ok = False
                        fail_at = j
                        break
                    j += 1
                j -= 1
                bbmin, cmin = bb_l[i], cnt_l[i]
                if ok and total:
                    for k in range(i + 1, j + 1):
                        b = bb_l[k]
                        if b != bbmin:
                            bbmin = _least(bbmin, b)
                if ok and use_c:
                    for k in range(i + 1, j + 1):
                        c = cnt_l[k]
                        if c != cmin:
                            cmin = tuple(map(min, cmin, c))
            if ok and use_c and any(have < want - 1e-9 for have, want in zip(cmin, cvec)):
                ok = False
                fail_at = None if not_after <= t else next((k for k in range(i, j + 1)
                                if any(h < w - 1e-9 for h, w in zip(cnt_l[k], cvec))), None)
            if ok and total and not placer.capacity_fits(share, n, bbmin):
                ok = False
                fail_at = None if not_after <= t else next((k for k in range(i, j + 1) if not placer.capacity_fits(share, n, bb_l[k])), None)
            if not ok:
                if not_after <= t:
                    return None     # fits_now: no later candidate allowed, skip the diagnosis
                i = i + 1 if fail_at is None or fail_at < i else fail_at + 1
                continue
            chosen = mask if _bit_count(mask) == n else _lowest_bits(mask, n)
            if total:
                placed = self._placed(chosen, total, n, bbmin)
                if placed is None:   # shares one byte apart did not pack: try later
                    i += 1
                    continue
                alloc = Allocation(chosen, placed[0], placed[1], cvec if use_c else ())
            else:
                alloc = Allocation(chosen, (), {}, cvec if use_c else ())
            return t, alloc
        return None

    def fit_spec(self, request: Request, duration: float | None = None) -> tuple | None:
        """The arguments of ``earliest_fit`` for ``request`` over ``duration`` (default: its
        walltime), or None when ``earliest_fit`` does not serve it (named counters asked, or burst
        buffer on a machine without any): call ``earliest_start`` then. Memoised per request
        object over its walltime (a pure function of the request on one machine; conservative
        backfilling asks it for every queued job at every compression)."""
        if duration is None:
            memo = _SPEC_MEMO.get(id(request))
            if memo is not None and memo[0] is request and memo[1] is self.cluster \
                    and memo[2] is self.counter_names:
                return memo[3]
            spec = self._fit_spec(request, request.walltime)
            if len(_SPEC_MEMO) >= _PLACE_MEMO_SIZE:
                _SPEC_MEMO.clear()
            # the request is held: its id names no other while the entry exists
            _SPEC_MEMO[id(request)] = (request, self.cluster, self.counter_names, spec)
            return spec
        return self._fit_spec(request, duration)

    def _fit_spec(self, request: Request, duration: float) -> tuple | None:
        total = request.bb_total
        if total and not self.bb[0]:
            return None
        if self.counter_names and any(self.counter_vector(request)):
            return None
        n = request.nodes
        elig = self._eligible(request.gpus_per_node)
        return (n, elig, total, total // n if total else 0, duration)

    def fit_bound(self, spec: tuple, not_before: float) -> float:
        """A start no later than ``earliest_fit(spec, not_before)`` finds on this profile or on
        any profile made from it by ``reserve_fitted``, so that ``earliest_fit(spec, bound)``
        finds the same answer there: the first candidate (``not_before`` or a breakpoint) where
        the request's necessary conditions hold all along its window — enough eligible nodes
        free throughout, enough burst buffer in total in every slice. Reservations only take
        resources away and keep every breakpoint, so every candidate before the bound fails
        there too, and the bound is itself a candidate there. ``not_before`` when none holds
        (the request never fits: ``earliest_fit`` says so from anywhere)."""
        n, elig, total, _, duration = spec
        times, nodes_l, bbsum = self.times, self.nodes, self.bbsum
        t0 = not_before if not_before > times[0] else times[0]
        last = len(times)
        i = bisect_right(times, t0) - 1
        while i < last:
            mask = nodes_l[i] & elig
            if _bit_count(mask) >= n and not (total and bbsum[i] < total):
                ti = times[i]
                t = t0 if ti < t0 else ti
                end = t + duration
                j = i + 1
                while j < last and times[j] < end:
                    mask &= nodes_l[j]
                    if _bit_count(mask) < n or (total and bbsum[j] < total):
                        break
                    j += 1
                else:
                    return t
            i += 1
        return not_before

    def earliest_fit(self, spec: tuple, not_before: float) -> tuple[float, Allocation | Fit] | None:
        """``earliest_start(request, duration, not_before)`` for ``spec = fit_spec(request,
        duration)``: the same start, and the same allocation as ``allocation(fit)``, for the
        plan-based search's hot loop (a request with burst buffer gets a ``Fit``: nodes and
        bytes per storage node, without the per-node placement).

        Both return the first candidate start (``not_before``, then the next breakpoints) whose
        window passes the same tests (nodes free all along, burst buffer placed on the minimum
        free space of the window); only candidates that cannot pass are skipped, so the answer
        does not depend on how the scan skips. Answers are memoised: equal windows give one
        shared (immutable) allocation.
        """
        memo = self._alloc_memo
        if memo is None:
            memo = self._alloc_memo = {}
        return fit_in_slices(self.times, self.nodes, self.bb, self.bbsum, spec, not_before, memo,
                             self.placer.capacity_fits, self._fit)

    def fit_released_nodes(self, spec: tuple, not_before: float,
                           reservation: Reservation) -> tuple[float, Allocation] | None:
        """``earliest_fit(spec, not_before)`` as it answers once ``reservation`` is released,
        without releasing it (its nodes counted free over its window), for ``reinsert``'s
        nodes-only case: ``spec`` without bytes, ``reservation`` of nodes only, after now (not
        checked). The breakpoints that ``release`` would merge away (between two equal
        slices) change no such answer; the profile gets breakpoints at the reservation's
        start and end, as ``release`` then ``reserve`` leave it."""
        times, start, end = self.times, reservation.start, reservation.end
        i = bisect_right(times, start) - 1          # the breakpoints, made when missing
        if times[i] != start:
            i = self._split(start)
        if end == INF:
            j = len(times)
        else:
            j = bisect_right(times, end) - 1
            if times[j] != end:
                j = self._split(end)
        n, elig, total, _, duration = spec
        t0 = not_before if not_before > times[0] else times[0]
        own = reservation.allocation.nodes
        k = bisect_right(times, t0) - 1
        found = _fit_window(times, self.nodes, self.bbsum, n, elig, total, duration, t0, k, own, i, j)
        if found is NotImplemented:
            found = _py_fit_window(times, self.nodes, self.bbsum, n, elig, total, duration, t0, k, own, i, j)
        if found is None:
            return None
        mask = found[3]
        memo = self._alloc_memo
        if memo is None:
            memo = self._alloc_memo = {}
        key = (mask, n)
        alloc = memo.get(key)
        if alloc is None:      # as fit_in_slices makes and keeps it
            alloc = Allocation(mask if _bit_count(mask) == n else _lowest_bits(mask, n), (), {}, ())
            if len(memo) >= _PLACE_MEMO_SIZE:
                memo.clear()
            memo[key] = alloc
        return found[2], alloc

    def renew_in_place(self, old: Reservation, allocation: Allocation, tag: str | None = None) -> Reservation:
        """``renew(old, old.start, old.end, allocation, tag)`` for ``allocation`` on ``old``'s
        nodes, right after ``fit_released_nodes`` asked about ``old`` (which made its
        breakpoints)."""
        self._version += 1
        return _tuple_new(Reservation, (old.start, old.end, allocation, tag,
                                        self._log_base + len(self._log) if self.release_log else -1))

    def renew(self, old: Reservation, start: float, end: float, allocation: Allocation,
              tag: str | None = None) -> Reservation:
        """``release(old)`` then ``reserve(start, end, allocation, tag)`` of the same window on
        the same nodes (nodes only, after now): a job re-inserted where it was. The same
        slices and breakpoints at ``start`` and ``end`` as the two calls, the slices untouched;
        any other pair is released and reserved. Nothing goes to the release log: no capacity
        was freed, so what ``reinsert`` reads there (where capacity grew since a reservation
        was made) stays true; the new reservation's log position is the present one."""
        a = old.allocation
        if (start != old.start or end != old.end or allocation.nodes != a.nodes or a.bb or a.counters
                or allocation.bb or allocation.counters or not start > self.times[0] or not end > start):
            self.release(old)
            return self.reserve(start, end, allocation, tag=tag)
        times = self.times
        if times[bisect_right(times, start) - 1] != start:     # breakpoints as release + reserve leave them
            self._split(start)
        if end != INF and times[bisect_right(times, end) - 1] != end:
            self._split(end)
        self._version += 1
        log_pos = self._log_base + len(self._log) if self.release_log else -1
        return _tuple_new(Reservation, (start, end, allocation, tag, log_pos))

    def _fit(self, chosen: int, total: int, n: int, bbmin: tuple[int, ...]) -> "Fit | Allocation | None":
        """The ``Fit`` of ``total`` bytes on the ``n`` nodes of ``chosen`` given the window's free
        bytes ``bbmin`` (None when the shares do not pack): the bytes per storage node of
        ``_placed``, counted run by run (see ``BurstBufferPlacer.place_split``) without building the per-node
        placement. A placer other than ``BurstBufferPlacer`` gets a full ``Allocation``."""
        placer = self.placer
        if type(placer) is not BurstBufferPlacer:
            placed = self._placed(chosen, total, n, bbmin)
            return None if placed is None else Allocation(chosen, placed[0], placed[1], ())
        ranges = placer.order_ranges
        base, extra = divmod(total, n)
        left = list(bbmin)
        p = 0                                   # nodes placed so far (in index order)
        for lo, width, order in ranges:
            cnt = ((chosen >> lo) & width).bit_count()
            while cnt:
                if p < extra:
                    share, run = base + 1, min(cnt, extra - p)
                else:
                    share, run = base, cnt
                p += run
                cnt -= run
                if share <= 0:
                    continue
                for st in order:
                    f = left[st]
                    if f >= share:
                        c = f // share
                        if c >= run:
                            left[st] = f - run * share
                            run = 0
                            break
                        left[st] = f - c * share
                        run -= c
                if run:
                    return None
            if p >= n:
                break                           # every chosen node placed: later runs are empty
        per_storage = tuple(map(int.__sub__, bbmin, left))
        return _tuple_new(Fit, (chosen, per_storage, (), (chosen, total, n, bbmin)))

    def allocation(self, alloc: "Allocation | Fit") -> Allocation:
        """The full ``Allocation`` (per-node burst-buffer placement included) of an allocation
        ``earliest_fit`` returned: what ``earliest_start`` returns for the same question."""
        if type(alloc) is not Fit:
            return alloc
        chosen, total, n, bbmin = alloc.key
        placed = self._placed(chosen, total, n, bbmin)
        if placed is None or placed[0] != alloc.bb:    # unreachable: both follow place()
            raise SimulationError("burst-buffer placement differs from the plan's "
                                  f"(nodes {self.cluster.ids_of(chosen)}, {total} bytes)")
        return Allocation(chosen, placed[0], placed[1], alloc.counters)

    def _placed(self, chosen: int, total: int, n: int, bbmin: tuple[int, ...]):
        """``(bytes per storage index, placement)`` of ``total`` bytes over the ``n`` nodes of
        ``chosen`` given the free bytes ``bbmin``, or None when the shares do not pack.

        Memoised (the placer is a pure function of these arguments): the plan-based search places
        the same job on the same nodes and free space many times per round. The memo is shared by
        a profile's copies and bounded in size.
        """
        memo = self._place_memo
        if memo is None:
            memo = self._place_memo = {}
        key = (chosen, total, bbmin)
        hit = memo.get(key, memo)
        if hit is not memo:
            return hit
        result = _place(self.placer, chosen, total, n, bbmin)
        # bounded in entries and in nodes placed (a wide job's placement is large)
        weight = memo.get(_WEIGHT, 0) + n
        if len(memo) >= _PLACE_MEMO_SIZE or weight > _PLACE_MEMO_NODES:
            memo.clear()
            weight = n
        memo[key] = result
        memo[_WEIGHT] = weight
        return result

    def fits_now(self, request: Request, duration: float | None = None, **kw) -> Allocation | None:
        """The allocation if ``request`` can start at the profile's present, else None.

        The last answer is kept until the profile changes (its ``version`` or present): a
        round of ``fcfs`` asks it of the queue's head twice, once to know whether the round
        can start anything, then to start it."""
        times = self.times
        now = times[0]
        last = self._last_fit
        if last[0] is request and last[1] == self._version and last[2] == now and last[3] == duration and not kw:
            return last[4]
        alloc = self._fits_now(request, duration, kw)
        if not kw:
            self._last_fit = (request, self._version, now, duration, alloc)
        return alloc

    def _fits_now(self, request: Request, duration: float | None, kw: dict) -> Allocation | None:
        times = self.times
        now = times[0]
        n = request.nodes
        # cheap necessary tests first: most queued jobs of a busy machine fail here
        if n > _bit_count(self.nodes[0]):
            return None
        with_bb = kw.get("with_bb", True)
        total = request.bb_total if with_bb else 0
        if total and total > self.bbsum[0]:     # the row's sum, kept (100 entries on 10,000 nodes)
            return None
        end = now + (request.walltime if duration is None else duration)
        if not end > now or len(kw) > (("with_bb" in kw) + ("with_counters" in kw)):
            found = self.earliest_start(request, duration, now, not_after=now, **kw)
            return None if found is None else found[1]
        # earliest_start's first candidate (the window from the present, cached prefix
        # aggregates) evaluated inline: the same checks in the same order, without the scan's
        # set-up (EASY asks every round for every queued job that passes the tests above)
        mask, bbmin, cmin = self._prefix(bisect_left(times, end) - 1)
        mask &= self._eligible(request.gpus_per_node)
        if _bit_count(mask) < n:
            return None
        if total and not self.bb[0]:
            return None  # burst buffer asked on a machine without any
        cvec = self.counter_vector(request) if kw.get("with_counters", True) else ()
        use_c = bool(cvec) and any(cvec)
        if use_c and any(have < want - 1e-9 for have, want in zip(cmin, cvec)):
            return None
        placer = self.placer
        if total and not placer.capacity_fits(total // n, n, bbmin):
            return None
        chosen = _lowest_bits(mask, n)
        if not total:
            return Allocation(chosen, (), {}, cvec if use_c else ())
        placed = _place(placer, chosen, total, n, bbmin)
        if placed is None:
            return None
        return Allocation(chosen, placed[0], placed[1], cvec if use_c else ())


# -- rows of free bytes and node masks: C in ``_profile.c`` when built, else the twins of rows.py
def shift_rows(rows: list[tuple[int, ...]], sums: list[int] | None, i: int, j: int,
               bb: tuple[int, ...], sign: int) -> None:
    """``_py_shift_rows`` in C when built: for rows of free bytes outside a profile too (the
    runtime's free bytes per storage node, one row)."""
    _shift_rows(rows, sums, i, j, bb, sign)


def first_short(rows: list[tuple[int, ...]], i: int, j: int, bb: tuple[int, ...]) -> int:
    """``_py_first_short`` in C when built (see ``shift_rows``)."""
    return _first_short(rows, i, j, bb)


def use(compiled: bool) -> bool:
    """Run the profiles' row and mask operations in C (``_profile.c``, when built) or in Python
    from now on; whether C is now in use. ``MRSCHED_PURE_PYTHON=1`` starts with Python.
    ``_bit_count``, a mask's node count, is ``int.bit_count`` in Python: the C one reads the
    digits in place with the CPU's popcount (CPython's counts each digit in software)."""
    global _least, _shift_rows, _first_short, _lowest_bits, _bit_count, _fit_window, _shift_nodes
    compiled = compiled and _profile is not None
    kernels = _profile if compiled else None
    _bit_count = kernels.bit_count if kernels else int.bit_count
    _least = kernels.least if kernels else _py_least
    _shift_rows = kernels.shift_rows if kernels else _py_shift_rows
    _first_short = kernels.first_short if kernels else _py_first_short
    _lowest_bits = kernels.lowest_bits if kernels else _py_lowest_bits
    _fit_window = kernels.fit_window if kernels else _py_fit_window
    _shift_nodes = kernels.shift_nodes if kernels else _py_shift_nodes
    if _mintree is not None:   # the queue's compiled walk fills a room's slices as __missing__
        _mintree.native_room(Room.__missing__, _bit_count)
    return compiled


use(native.wanted())


def _room(row: tuple[int, ...], share: int, n: int, cap) -> bool:
    """``cap(share, n, row)``, memoised per row object: the rows are the same tuples in many
    profiles of one round. The memo keeps the row alive with its answer, so its ``id`` names
    no other row while the entry exists."""
    key = (id(row), share, n)
    got = _ROOM_MEMO.get(key)
    if got is not None and got[0] is row:
        return got[1]
    if len(_ROOM_MEMO) >= _PLACE_MEMO_SIZE:
        _ROOM_MEMO.clear()
    room = cap(share, n, row)
    _ROOM_MEMO[key] = (row, room)
    return room


def take_bytes(bb_l: list[tuple[int, ...]], bbsum: list[int], i: int, j: int,
               allocation: "Allocation | Fit") -> None:
    """Take ``allocation``'s burst-buffer bytes from the slice rows ``i..j-1`` (free bytes per
    storage node, ``bb_l``, and their sums, ``bbsum``): the burst-buffer part of
    ``reserve_fitted``, shared with the plan search's slice lists."""
    if allocation.bb:
        _shift_rows(bb_l, bbsum, i, j, allocation.bb, -1)


def fit_in_slices(times: list[float], nodes_l: list[int], bb_l: list[tuple[int, ...]], bbsum: list[int],
                  spec: tuple, not_before: float, memo: dict, cap, fit,
                  packfail: list | None = None, own: tuple[int, int, int] = (0, 0, 0)
                  ) -> tuple[float, Allocation | Fit] | None:
    """``AvailabilityProfile.earliest_fit`` on a profile's slice lists (``times``, ``nodes``,
    ``bb``, ``bbsum``), with its answer memo ``memo``, ``cap = placer.capacity_fits`` and
    ``fit = profile._fit``: the plan-based search runs it on plan-local copies of the lists.
    ``packfail``: a one-item list that gets the first candidate start where the shares passed
    every other test but did not pack (the only failure that more free resources do not
    imply; left as is when none). ``own = (mask, i, j)``: nodes counted free in slices
    ``i..j-1`` (a reservation of nodes only, searched as if released)."""
    n, elig, total, share, duration = spec
    t0 = not_before if not_before > times[0] else times[0]
    i = bisect_right(times, t0) - 1
    while True:
        # the next window whose nodes and byte totals pass (C when built: the scan's hot loop)
        found = _fit_window(times, nodes_l, bbsum, n, elig, total, duration, t0, i, *own)
        if found is NotImplemented:
            found = _py_fit_window(times, nodes_l, bbsum, n, elig, total, duration, t0, i, *own)
        if found is None:
            return None
        i, j, t, mask = found
        if total:
            # the window's minimum free bytes per storage: one pass over its distinct rows
            # (split slices share their row object)
            prev = bbmin = bb_l[i]
            rows = None
            for k in range(i + 1, j):
                b = bb_l[k]
                if b is not prev:
                    if rows is None:
                        rows = [bbmin]
                    rows.append(b)
                    prev = b
            if rows is not None:
                bbmin = tuple(map(min, *rows))
            key = (mask, n, total, bbmin)
        else:
            key = (mask, n)
        # memo: the window's free nodes and space -> allocation, None (the shares did not
        # pack) or _NO_ROOM (not enough space in total)
        alloc = memo.get(key, memo)
        if alloc is memo:
            if total and not cap(share, n, bbmin):
                alloc = _NO_ROOM
            else:
                chosen = mask if _bit_count(mask) == n else _lowest_bits(mask, n)
                if total:
                    alloc = fit(chosen, total, n, bbmin)
                else:
                    alloc = Allocation(chosen, (), {}, ())
            if len(memo) >= _PLACE_MEMO_SIZE:
                memo.clear()
            memo[key] = alloc
        if alloc is None:    # shares one byte apart did not pack: try later
            if packfail is not None and t < packfail[0]:
                packfail[0] = t
            i += 1
            continue
        if alloc is _NO_ROOM:
            # skip to past the first slice whose free space alone is too small (memoised per
            # row: the rows are the same tuples in many profiles of one round)
            k = i
            while k < j and _room(bb_l[k], share, n, cap):
                k += 1
            i = (k if k < j else i) + 1
            continue
        return t, alloc


def _place(placer, chosen: int, total: int, n: int, free: tuple[int, ...]):
    """``(bytes per storage index, placement)`` of ``total`` bytes split over the ``n`` nodes of
    ``chosen`` (``BurstBufferPlacer.place_mask``), or None when the shares do not pack."""
    if type(placer) is BurstBufferPlacer:
        return placer.place_mask(chosen, total, n, free)
    placement = placer.place(_indices(chosen), split_shares(total, n), free)
    if placement is None:
        return None
    per_storage = [0] * len(free)
    for s, b in placement.values():
        per_storage[s] += b
    # read-only, as place_mask's (the memo shares it)
    return tuple(per_storage), Placement(list(placement), [(p, 1, s, b) for p, (s, b) in enumerate(placement.values())])


def _indices(mask: int) -> list[int]:
    """Set bit positions, ascending (the binary text read backwards: one C-level pass)."""
    return [k for k, c in enumerate(bin(mask)[:1:-1]) if c == "1"]
