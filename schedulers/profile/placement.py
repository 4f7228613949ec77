"""Burst-buffer placement: each compute node's share on one storage node, nearest first.

Seed 001 (Sect. 4.1 and the artifact): per compute node, the first storage node with enough
free space over the job's whole window, searched in the same chassis, then the same group,
then anywhere (DESIGN.md "Cluster conventions"). Shares are equal, so a greedy pass succeeds
exactly when ``sum(free_s // share) >= nodes``: the distance order never costs feasibility.
A total that does not divide evenly gives some nodes one byte more (``split_shares``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping
from operator import floordiv
from typing import TYPE_CHECKING

from mrsched import native
from mrsched.schedulers.model.cluster import Cluster

if TYPE_CHECKING:
    import numpy as np

try:
    from mrsched.schedulers.profile import _shares     # the compiled count of shares (optional extension)
except ImportError:                             # built without a C compiler
    _shares = None

#: jobs of fewer nodes are placed without numpy (its per-call cost is larger than theirs)
_NUMPY_MIN = 48
#: placers made from now on count shares in C (``_shares.c``) when it was built; see ``use``
_COMPILED = _shares is not None and native.wanted()


def use(compiled: bool) -> bool:
    """Count burst-buffer shares in C (when built) or in Python: in the placers made from now
    on, and in every capacity test from now on; whether C is now in use.
    ``MRSCHED_PURE_PYTHON=1`` starts with Python."""
    global _COMPILED
    _COMPILED = compiled and _shares is not None
    return _COMPILED


def storage_order(cluster: Cluster) -> list[tuple[int, ...]]:
    """For each compute index, storage indices nearest first (chassis, group, any; then index)."""
    orders = []
    by_place: dict[tuple, tuple[int, ...]] = {}   # nodes of one chassis share their order
    for k in range(cluster.nb_nodes):
        g, c = cluster.group[k], cluster.chassis[k]
        order = by_place.get((g, c))
        if order is None:
            def distance(s: int, g=g, c=c) -> tuple[int, int]:
                st = cluster.storage[s]
                if g is not None and st.group == g:
                    return (0 if (c is not None and st.chassis == c) else 1, s)
                return (2, s)

            order = by_place[(g, c)] = tuple(sorted(range(len(cluster.storage)), key=distance))
        orders.append(order)
    return orders


class BurstBufferPlacer:
    """Places per-node burst-buffer shares on storage nodes given free bytes per storage node."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.order = storage_order(cluster)
        ids: dict[tuple[int, ...], int] = {}
        #: per compute index, a number naming its storage order (equal orders, equal numbers)
        self.order_groups = [ids.setdefault(o, len(ids)) for o in self.order]
        #: maximal runs of consecutive compute indices with the same storage order, as
        #: ``(first index, mask of the run's width, order)`` in index order
        self.order_ranges: list[tuple[int, int, tuple[int, ...]]] = []
        lo = 0
        for k in range(1, len(self.order) + 1):
            if k == len(self.order) or self.order[k] != self.order[lo]:
                self.order_ranges.append((lo, (1 << (k - lo)) - 1, self.order[lo]))
                lo = k
        # runs of one order 3 nodes long or less on average (a large machine's nodes in Batsim's
        # name order interleave chassis): place node by node, runs would only add overhead
        self._fragmented = len(self.order_ranges) * 3 > len(self.order)
        self._groups_np = None   # order_groups as a numpy array, made for the first wide job
        #: per order group, its storage order and the first storage node of it
        self._group_orders = list(ids)
        self._first_storage = [o[0] if o else -1 for o in ids]
        #: the compiled count of ``place_mask`` (None: Python, ``_take``)
        self._taker = (_shares.ShareTaker(self.order_groups, self._group_orders, len(cluster.storage))
                       if _COMPILED else None)

    def capacity_fits(self, share: int, nodes: int, free: list[int] | tuple[int, ...]) -> bool:
        """Whether ``nodes`` shares of ``share`` bytes fit in the free bytes at all (a quick
        necessary test when ``share`` is the smallest share)."""
        return _holds(share, nodes, free)

    @staticmethod
    def surely_fits(largest: int, nodes: int, free: list[int] | tuple[int, ...]) -> bool:
        """Whether ``place`` surely succeeds for ``nodes`` shares of at most ``largest`` bytes:
        when it fails a node, every storage node has less than ``largest`` free, so each holds
        at least ``free_s // largest`` shares already, hence ``sum(free_s // largest)`` were
        placed: fewer than ``nodes`` (a sufficient test; False says nothing)."""
        return _holds(largest, nodes, free)

    def place(self, node_indices: list[int], amounts: list[int],
              free: list[int] | tuple[int, ...]) -> dict[int, tuple[int, int]] | None:
        """``{compute index: (storage index, bytes)}``, or None when the shares do not fit.

        ``amounts[i]`` is the share of ``node_indices[i]``; ``free`` is the minimum free space
        of every storage node over the job's window. Each node, in turn, gets the first storage
        node of its distance order with room for its share.

        Computed without re-reading what cannot change: consecutive nodes with the same order
        and share fill the first storage node with room as far as it goes, then the next (a run
        at a time, when the machine's orders come in runs); and a storage node once found too
        full for a share stays so (free space only shrinks), so each order resumes its search
        where it stopped while the share is the same. Same result and insertion order as the
        node-by-node greedy (tests/schedulers/test_placement_runs.py).
        """
        if self._fragmented:
            runs = ((p, p + 1, amounts[p]) for p in range(len(node_indices)))
        else:
            runs = _runs(node_indices, amounts, self.order_groups)
        chunks = self._greedy(node_indices, runs, free)
        return None if chunks is None else dict(Placement(node_indices, chunks).items())

    def place_mask(self, chosen: int, total: int, n: int,
                   free: list[int] | tuple[int, ...]) -> tuple[tuple[int, ...], "Placement"] | None:
        """``place_split`` of the ``n`` nodes of the bitmask ``chosen`` (compute indices), with
        the bytes it puts on each storage node: ``(bytes per storage index, placement)``, or
        None when the shares do not fit.

        The bytes per storage node are all a profile needs, so only they are computed here
        (the greedy over runs of nodes with one storage order, keeping just the free bytes);
        the per-node placement is built on first read (alloc-only runs never read it). On a
        10,000-node machine, whose chassis Batsim's name order interleaves, a wide job has
        hundreds of runs: building its placement was most of a start."""
        base, extra = divmod(total, n)
        given = self._given(chosen, n, base, extra, free)
        if given is None:
            return None
        free = tuple(free)
        size = n if base > 0 else extra         # nodes given a share (a zero share is no entry)
        return given, Placement.deferred(size, lambda: self._chunks(chosen, total, n, free))

    def _given(self, chosen: int, n: int, base: int, extra: int,
               free: list[int] | tuple[int, ...]) -> tuple[int, ...] | None:
        """The bytes each storage node gives when the first ``extra`` nodes of ``chosen`` get
        ``base + 1`` bytes and the others ``base``, or None when they do not fit: in C node by
        node (``_shares.c``) when built and the values fit in int64, else run by run."""
        if self._taker is not None:
            try:
                return self._taker.take(chosen.to_bytes((chosen.bit_length() + 7) // 8, "little"),
                                        base, extra, free)
            except OverflowError:
                pass
        _, values, starts = self._order_runs(chosen, n)
        # the first ``extra`` nodes get one byte more: the runs are cut there
        k = bisect.bisect_left(starts, extra)   # runs 0..k-1 start before the cut
        j = k if k < len(starts) and starts[k] == extra else k - 1   # the first run after it
        left = list(free)
        if not (self._take(values[:k], starts[:k] + [extra], base + 1, left)
                and self._take(values[j:], [extra] + starts[j + 1:] + [n], base, left)):
            return None
        return tuple(map(int.__sub__, free, left))

    def _take(self, groups: list[int], bounds: list[int], share: int, left: list[int]) -> bool:
        """Take ``share`` bytes for each node of the runs of order group ``groups[r]`` over
        positions ``bounds[r]..bounds[r + 1] - 1`` from ``left`` as ``_greedy`` places them,
        without recording where; whether all fit."""
        if share <= 0 or not groups:
            return True
        if not left:
            return False                        # no storage node at all
        orders = self._group_orders
        at = [0] * len(orders)                  # per order group: where its search resumes
        target = self._first_storage[:]         # per order group: the storage at ``at``
        for g, a, b in zip(groups, bounds, bounds[1:]):
            count = b - a
            st = target[g]
            need = count * share
            f = left[st]
            if f >= need:                       # most runs: the storage the last one used
                left[st] = f - need
                continue
            # the storage fills up; walk on along the order (a storage passed over stays
            # too full for this share)
            if f >= share:
                c = f // share
                left[st] = f - c * share
                count -= c
            o = orders[g]
            for i in range(at[g] + 1, len(o)):
                st = o[i]
                f = left[st]
                if f >= share:
                    c = f // share
                    if c >= count:
                        left[st] = f - count * share
                        break
                    left[st] = f - c * share
                    count -= c
            else:
                return False
            at[g], target[g] = i, st
        return True

    def _chunks(self, chosen: int, total: int, n: int,
                free: tuple[int, ...]) -> tuple[list[int], list[tuple[int, int, int, int]]]:
        """The nodes of ``chosen`` (ascending) and ``_greedy``'s chunks of their placement
        (``place_mask`` checked that it succeeds)."""
        base, extra = divmod(total, n)
        nodes, _, starts = self._order_runs(chosen, n)
        if type(nodes) is not list:
            nodes = nodes.tolist()
        cuts = starts[1:]
        if 0 < extra < n:
            bisect.insort(cuts, extra)          # the share drops by one byte there
        cuts.append(n)
        runs = [(p, q, base + 1 if p < extra else base) for p, q in zip([0] + cuts, cuts) if q > p]
        return nodes, self._greedy(nodes, runs, free)

    def _order_runs(self, chosen: int, n: int) -> tuple[list[int] | np.ndarray, list[int], list[int]]:
        """The ``n`` nodes of ``chosen`` (ascending; a numpy array for wide jobs, a list
        otherwise) and their maximal runs of one storage order: each run's order group and
        first position."""
        if n < _NUMPY_MIN:
            nodes = _indices(chosen)
            groups = self.order_groups
            values, starts = [groups[nodes[0]]], [0]
            for p in range(1, n):
                g = groups[nodes[p]]
                if g != values[-1]:
                    values.append(g)
                    starts.append(p)
            return nodes, values, starts
        import numpy as np   # only for wide jobs: a small run's start-up does without it

        if self._groups_np is None:
            self._groups_np = np.asarray(self.order_groups, dtype=np.int64)
        raw = np.frombuffer(chosen.to_bytes((chosen.bit_length() + 7) // 8, "little"), dtype=np.uint8)
        nodes = np.flatnonzero(np.unpackbits(raw, bitorder="little"))
        groups = self._groups_np[nodes]
        cuts = np.flatnonzero(groups[1:] != groups[:-1]) + 1
        return nodes, [int(groups[0])] + groups[cuts].tolist(), [0] + cuts.tolist()

    def _greedy(self, nodes: list[int], runs,
                free: list[int] | tuple[int, ...]) -> list[tuple[int, int, int, int]] | None:
        """The placement of ``nodes`` given as ``runs`` ``(first position, end position, share)``
        of consecutive nodes with one storage order and one share (``place``'s docstring), as
        chunks ``(first position, nodes, storage index, share)`` in node order."""
        order, groups = self.order, self.order_groups
        left = list(free)
        out: list[tuple[int, int, int, int]] = []
        resume: dict[int, tuple[int, int]] = {}   # order group -> (share, first index with room)
        chunks: list[tuple[int, int]] = []
        for p, q, share in runs:
            if share <= 0:
                continue
            k = nodes[p]
            g = groups[k]
            o = order[k]
            got = resume.get(g)
            i = got[1] if got is not None and got[0] == share else 0
            count = q - p
            if i < len(o) and left[o[i]] >= share * count:   # (most runs: where the last one stopped)
                st = o[i]
                left[st] -= share * count
                out.append((p, count, st, share))
                if got is None or got[0] != share:
                    resume[g] = (share, i)
                continue
            i, count = _fill(o, i, share, count, left, chunks)
            resume[g] = (share, i)
            if count:
                return None
            for st, c in chunks:
                out.append((p, c, st, share))
                p += c
            chunks.clear()
        return out

    def place_split(self, nodes: list[int], total: int, n: int,
                    free: list[int] | tuple[int, ...]) -> dict[int, tuple[int, int]] | None:
        """``place(nodes, split_shares(total, n), free)``."""
        return self.place(nodes, split_shares(total, n), free)


class Placement(Mapping):
    """A placement ``{compute index: (storage index, bytes)}`` held as chunks ``(first position,
    nodes, storage index, share)`` of consecutive entries of ``nodes`` (the greedy gives a
    whole chunk of nodes the same storage node): read-only, entries in node order. A
    ``deferred`` one computes its chunks on first read."""

    __slots__ = ("_nodes", "_chunks", "_make", "_size", "_dict")

    def __init__(self, nodes: list[int], chunks: list[tuple[int, int, int, int]]):
        self._nodes, self._chunks, self._make, self._dict = nodes, chunks, None, None
        self._size = sum(c for _, c, _, _ in chunks)

    @classmethod
    def deferred(cls, size: int, make) -> "Placement":
        """A placement of ``size`` entries whose ``(nodes, chunks)`` ``make()`` returns when read."""
        p = cls.__new__(cls)
        p._nodes = p._chunks = p._dict = None
        p._make, p._size = make, size
        return p

    @property
    def nodes(self) -> list[int]:
        return self._parts()[0]

    @property
    def chunks(self) -> list[tuple[int, int, int, int]]:
        return self._parts()[1]

    def _parts(self) -> tuple[list[int], list[tuple[int, int, int, int]]]:
        if self._make is not None:
            self._nodes, self._chunks = self._make()
            self._make = None
        return self._nodes, self._chunks

    def items(self):
        nodes, chunks = self._parts()
        for p, c, st, share in chunks:
            value = (st, share)
            for k in nodes[p:p + c]:
                yield k, value

    def values(self):
        for p, c, st, share in self.chunks:
            yield from itertools.repeat((st, share), c)

    def __getitem__(self, k: int) -> tuple[int, int]:
        if self._dict is None:
            self._dict = dict(self.items())
        return self._dict[k]

    def __iter__(self):
        nodes, chunks = self._parts()
        for p, c, _, _ in chunks:
            yield from nodes[p:p + c]

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"Placement({dict(self.items())!r})"


def _fill(order: tuple[int, ...], i: int, share: int, count: int, left: list[int],
          chunks: list[tuple[int, int]]) -> tuple[int, int]:
    """``count`` nodes of one storage order and one share, from position ``i`` of ``order``:
    each storage node with room takes as many shares as it holds (``left`` updated, ``(storage,
    nodes)`` appended to ``chunks``). Returns where the walk stopped (a storage node passed over
    has no room for this share, then or later) and the nodes left unplaced."""
    last = len(order)
    while i < last:
        s = order[i]
        f = left[s]
        if f >= share:
            c = f // share
            if c > count:
                c = count
            left[s] = f - c * share
            chunks.append((s, c))
            count -= c
            if not count:
                break
        i += 1
    return i, count


def _holds(share: int, nodes: int, free: list[int] | tuple[int, ...]) -> bool:
    """Whether ``sum(f // share for f in free) >= nodes``: one C loop (``_shares.holds``) when
    built and the values fit in int64, else in Python. Many storage nodes (100 on a
    10,000-node machine, where most calls fail): the total bounds it from both sides
    (``(f - share + 1) / share <= f // share <= f / share``), else one pass of ``map``; a few:
    a loop that stops as soon as it holds."""
    if share <= 0 or nodes <= 0:
        return True
    if _COMPILED:
        try:
            return _shares.holds(share, nodes, free)
        except OverflowError:
            pass                # beyond int64: counted below
    if len(free) > 16:
        total = sum(free)
        need = nodes * share
        if total < need:
            return False
        if total - len(free) * (share - 1) >= need:
            return True
        return sum(map(floordiv, free, itertools.repeat(share, len(free)))) >= nodes
    room = 0
    for f in free:
        room += f // share
        if room >= nodes:
            return True
    return False


def _runs(nodes: list[int], amounts: list[int], groups: list[int]):
    """``(first, end, share)`` of the maximal runs of ``nodes`` with one share and one order group."""
    m = len(nodes)
    p = 0
    while p < m:
        share = amounts[p]
        g = groups[nodes[p]]
        q = p + 1
        while q < m and amounts[q] == share and groups[nodes[q]] == g:
            q += 1
        yield p, q, share
        p = q


def _indices(mask: int) -> list[int]:
    """Set bit positions of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def split_shares(total: int, nodes: int) -> list[int]:
    """``total`` bytes split over ``nodes`` as evenly as integers allow (larger shares first)."""
    base, extra = divmod(total, nodes)
    return [base + 1] * extra + [base] * (nodes - extra)
