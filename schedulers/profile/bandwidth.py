"""I/O bandwidth as a schedulable resource on seed 004's tree (Sect. 3.2.3-3.2.4): nodes ->
edge switch -> core pool -> PFS, with the free bandwidth of every tree node over future time.

Why a module of its own: the availability profile keeps nodes, burst buffer and counters;
bandwidth is composed with it (:class:`IoAwareProfile`), so that ``io_aware`` policies run
the unchanged EASY / FCFS / filler code on a profile that also checks "every level from the
job's nodes up to the PFS has the bandwidth it asks for, all along its window".

A job asking ``r`` bytes/s per node on nodes ``N`` uses ``r x |N ∩ unit e|`` on edge switch
``e`` and ``r x |N|`` on each global level (core pool, PFS). Levels come from the platform
(``mrsched platform iotree``): compute hosts' ``edge``, ``edge_bw``, ``node_bw`` properties,
the PFS host's ``core_bw`` and ``pfs_bw``. A level without a property is unlimited.

Node selection (Fig. 3.3): when the profile's lowest free nodes would over-allocate an edge
switch, nodes are taken unit by unit, in unit order, at most as many per unit as its free
edge bandwidth allows (the spreading that lets the job start elsewhere); when no choice fits,
the job waits (or, if it cannot fit even on the empty tree, is rejected with the reason).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Mapping

from mrsched.errors import ConfigError
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import AvailabilityProfile, Reservation, lowest_bits
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Request

INF = math.inf
#: relative slack of bandwidth comparisons (sums of float rates)
EPS = 1e-9


def _fits(want: float, free: float, cap: float) -> bool:
    return want <= free + EPS * cap


def _prop(props: Mapping[str, Any], key: str, where: str) -> float | None:
    value = props.get(key)
    if value in (None, ""):
        return None
    try:
        bw = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"host property '{key}' of {where} must be a bandwidth in bytes/s, got {value!r}",
                          field=key) from None
    if not bw > 0:
        raise ConfigError(f"host property '{key}' of {where} must be positive, got {value!r}", field=key)
    return bw


@dataclass(frozen=True)
class BandwidthTree:
    """The static tree: each compute index's edge switch and every level's capacity (bytes/s)."""

    edge_of: tuple[int, ...]            # per compute index
    edge_masks: tuple[int, ...]         # node bitmask per edge switch
    edge_bw: tuple[float, ...]          # capacity per edge switch (INF: unlimited)
    node_bw: float                      # each node's own link (smallest over nodes)
    top_names: tuple[str, ...]          # global levels: ("core", "pfs")
    top_bw: tuple[float, ...]

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> "BandwidthTree":
        """Read the tree from SIMULATION_BEGINS host properties; ConfigError when there is none."""
        edges: dict[int, int] = {}
        edge_of, edge_bw, node_bw = [], {}, INF
        for k, rid in enumerate(cluster.compute_ids):
            props = cluster.properties.get(rid, {})
            where = cluster.compute_names[k]
            raw = props.get("edge")
            try:
                e = int(raw) if raw not in (None, "") else -1
            except (TypeError, ValueError):
                raise ConfigError(f"host property 'edge' of {where} must be an integer, got {raw!r}",
                                  field="edge") from None
            e = edges.setdefault(e, len(edges))
            edge_of.append(e)
            bw = _prop(props, "edge_bw", where)
            if bw is not None:
                edge_bw[e] = min(edge_bw.get(e, INF), bw)
            nb = _prop(props, "node_bw", where)
            if nb is not None:
                node_bw = min(node_bw, nb)
        masks = [0] * len(edges)
        for k, e in enumerate(edge_of):
            masks[e] |= 1 << k
        pfs_props = cluster.properties.get(cluster.pfs_id, {}) if cluster.pfs_id is not None else {}
        core = _prop(pfs_props, "core_bw", "the PFS host")
        pfs = _prop(pfs_props, "pfs_bw", "the PFS host")
        tree = cls(tuple(edge_of), tuple(masks), tuple(edge_bw.get(e, INF) for e in range(len(edges))), node_bw,
                   ("core", "pfs"), (core if core is not None else INF, pfs if pfs is not None else INF))
        if all(b == INF for b in tree.edge_bw) and all(b == INF for b in tree.top_bw) and node_bw == INF:
            raise ConfigError("io_aware needs a bandwidth tree: no host has edge_bw, node_bw, core_bw or pfs_bw",
                              field="io_aware", hint="generate the platform with `mrsched platform iotree`")
        return tree

    @property
    def nb_edges(self) -> int:
        return len(self.edge_masks)

    def edge_use(self, nodes: int, rate: float) -> tuple[tuple[int, float], ...]:
        """(edge, bytes/s) on every edge switch the node mask touches."""
        out = []
        for e, m in enumerate(self.edge_masks):
            c = (nodes & m).bit_count()
            if c:
                out.append((e, c * rate))
        return tuple(out)

    def infeasible_reason(self, request: Request) -> str | None:
        """Why the job's bandwidth can never be given, even on the empty tree (None: it can)."""
        r, n = request.io_bandwidth_per_node, request.nodes
        if not r:
            return None
        if r > self.node_bw * (1 + EPS):
            return f"asks {r:g} B/s per node, a node's link carries {self.node_bw:g} B/s"
        for name, cap in zip(self.top_names, self.top_bw):
            if r * n > cap * (1 + EPS):
                return f"asks {r * n:g} B/s in all ({n} nodes x {r:g}), the {name} level carries {cap:g} B/s"
        room = sum(min(m.bit_count(), math.floor(cap / r * (1 + EPS)) if cap != INF else m.bit_count())
                   for m, cap in zip(self.edge_masks, self.edge_bw))
        if room < n:
            return (f"asks {r:g} B/s on each of {n} nodes, the edge switches can serve only {room} such nodes")
        return None

    def fits(self, nodes: int, rate: float, edge_free: tuple[float, ...], top_free: tuple[float, ...]) -> bool:
        """Whether ``nodes`` at ``rate`` each fit within the free bandwidth of every level."""
        if not rate:
            return True
        if rate > self.node_bw * (1 + EPS):
            return False
        total = nodes.bit_count() * rate
        for free, cap in zip(top_free, self.top_bw):
            if not _fits(total, free, cap):
                return False
        for e, use in self.edge_use(nodes, rate):
            if not _fits(use, edge_free[e], self.edge_bw[e]):
                return False
        return True

    def select(self, mask: int, n: int, rate: float, edge_free: tuple[float, ...],
               top_free: tuple[float, ...]) -> int | None:
        """``n`` nodes of ``mask`` whose bandwidth fits: unit by unit, each unit giving at most
        what its free edge bandwidth allows (its lowest free nodes); None when none fit."""
        if mask.bit_count() < n:
            return None
        if not rate:
            return lowest_bits(mask, n)
        if rate > self.node_bw * (1 + EPS):
            return None
        for free, cap in zip(top_free, self.top_bw):
            if not _fits(n * rate, free, cap):
                return None
        chosen, left = 0, n
        for e, m in enumerate(self.edge_masks):
            avail = mask & m
            c = avail.bit_count()
            if not c:
                continue
            cap = self.edge_bw[e]
            if cap != INF:
                c = min(c, math.floor((edge_free[e] + EPS * cap) / rate))
            if c <= 0:
                continue
            take = min(c, left)
            chosen |= lowest_bits(avail, take)
            left -= take
            if not left:
                return chosen
        return None


class BandwidthProfile:
    """Free bandwidth of every edge switch and global level over future time (breakpoints,
    as ``AvailabilityProfile``): slice ``k`` covers ``[times[k], times[k+1])``."""

    def __init__(self, tree: BandwidthTree, now: float = 0.0):
        self.tree = tree
        self.times: list[float] = [now]
        self.edges: list[tuple[float, ...]] = [tree.edge_bw]
        self.top: list[tuple[float, ...]] = [tree.top_bw]
        self._pre: list[tuple[tuple[float, ...], tuple[float, ...]]] = []

    @classmethod
    def of_running(cls, tree: BandwidthTree, now: float, running) -> "BandwidthProfile":
        """The profile of jobs already running: ``running`` yields ``(nodes, rate, end)``; each
        holds its bandwidth from ``now`` until ``end``. Built in one sweep over the ends."""
        prof = cls(tree, now)
        ends: dict[float, list] = {}
        edge = list(tree.edge_bw)
        top = list(tree.top_bw)
        for nodes, rate, end in running:
            if not rate or end <= now:
                continue
            use = tree.edge_use(nodes, rate)
            total = nodes.bit_count() * rate
            for e, u in use:
                edge[e] -= u
            for i in range(len(top)):
                top[i] -= total
            if end != INF:
                ends.setdefault(end, []).append((use, total))
        prof.edges[0], prof.top[0] = tuple(edge), tuple(top)
        for end in sorted(ends):
            for use, total in ends[end]:
                for e, u in use:
                    edge[e] += u
                for i in range(len(top)):
                    top[i] += total
            prof.times.append(end)
            prof.edges.append(tuple(edge))
            prof.top.append(tuple(top))
        return prof

    def _split(self, t: float) -> int:
        if t == INF:
            return len(self.times)
        k = bisect_right(self.times, t) - 1
        if k < 0:
            k = 0
            t = self.times[0]
        if self.times[k] == t:
            return k
        del self._pre[k + 1:]
        self.times.insert(k + 1, t)
        self.edges.insert(k + 1, self.edges[k])
        self.top.insert(k + 1, self.top[k])
        return k + 1

    def add(self, start: float, end: float, nodes: int, rate: float, sign: int = -1) -> None:
        """Take (``sign=-1``) or give back (``+1``) ``rate`` per node of ``nodes`` over ``[start, end)``."""
        start = max(start, self.times[0])
        if not rate or end <= start:
            return
        use = self.tree.edge_use(nodes, rate)
        total = nodes.bit_count() * rate * sign
        i, j = self._split(start), self._split(end)
        del self._pre[i:]
        for k in range(i, j):
            row = list(self.edges[k])
            for e, u in use:
                row[e] += sign * u
            self.edges[k] = tuple(row)
            self.top[k] = tuple(x + total for x in self.top[k])

    def next_change(self, t: float) -> float:
        """The first breakpoint after ``t`` (INF when none)."""
        k = bisect_right(self.times, t)
        return self.times[k] if k < len(self.times) else INF

    def window(self, t: float, end: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Least free bandwidth of each edge switch and each global level over ``[t, end)``."""
        times = self.times
        i = max(bisect_right(times, t) - 1, 0)
        j = max(bisect_left(times, end) - 1, i)
        if i == 0:
            return self._prefix(j)
        e, p = self.edges[i], self.top[i]
        for k in range(i + 1, j + 1):
            if self.edges[k] is not e:
                e = tuple(map(min, e, self.edges[k]))
            if self.top[k] is not p:
                p = tuple(map(min, p, self.top[k]))
        return e, p

    def _prefix(self, j: int):
        pre = self._pre
        if not pre:
            pre.append((self.edges[0], self.top[0]))
        while len(pre) <= j:
            k = len(pre)
            e, p = pre[-1]
            pre.append((tuple(map(min, e, self.edges[k])), tuple(map(min, p, self.top[k]))))
        return pre[j]

    def first_short(self, t: float, end: float, total: float) -> float | None:
        """None when every global level has ``total`` free all along ``[t, end)``; else the end
        of the first slice of that window where one has not (INF when it never ends)."""
        times, top, caps = self.times, self.top, self.tree.top_bw
        k = max(bisect_right(times, t) - 1, 0)
        while k < len(times) and times[k] < end:
            for free, cap in zip(top[k], caps):
                if not _fits(total, free, cap):
                    return times[k + 1] if k + 1 < len(times) else INF
            k += 1
        return None

    def least_free(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Least free bandwidth per level over the whole future (the never-exceed check: >= 0)."""
        return self.window(self.times[0], INF)


def window_nodes(profile: AvailabilityProfile, t: float, end: float) -> int:
    """Node mask free all along ``[t, end)`` in ``profile``."""
    times, nodes = profile.times, profile.nodes
    i = max(bisect_right(times, t) - 1, 0)
    j = max(bisect_left(times, end) - 1, i)
    mask = nodes[i]
    for k in range(i + 1, j + 1):
        mask &= nodes[k]
    return mask


class IoAwareProfile:
    """An availability profile whose answers also respect bandwidth (seed 004 Sect. 3.2.4):
    the same calls the policies make (``fits_now``, ``earliest_start``, ``reserve``,
    ``release``, ``room``), each checking or taking bandwidth on every level as well.

    Decision: a job with burst buffer keeps the availability profile's nodes (its placement
    is made for them); if those over-allocate bandwidth it waits for a start where they fit.
    """

    def __init__(self, profile: AvailabilityProfile, tree: BandwidthTree, bandwidth: BandwidthProfile,
                 jobs: Mapping[str, Any]):
        self.profile = profile
        self.tree = tree
        self.bandwidth = bandwidth
        self.jobs = jobs                     # job id -> Job (the rate of a reservation's tag)
        self._held: dict[int, tuple[Reservation, float]] = {}

    def __getattr__(self, name: str):
        return getattr(self.profile, name)   # anything else: the availability profile's

    @property
    def now(self) -> float:
        return self.profile.times[0]

    def room(self, packing: bool = True):
        return self.profile.room(packing)    # a necessary condition still (bandwidth only restricts)

    def _rate(self, tag: str | None) -> float:
        job = self.jobs.get(tag) if tag is not None else None
        return job.request.io_bandwidth_per_node if job is not None else 0.0

    def _with_bandwidth(self, request: Request, alloc: Allocation, t: float, duration: float | None):
        rate = request.io_bandwidth_per_node
        end = t + (request.walltime if duration is None else duration)
        edge_free, top_free = self.bandwidth.window(t, end)
        if self.tree.fits(alloc.nodes, rate, edge_free, top_free):
            return alloc
        if alloc.bb:
            return None
        mask = window_nodes(self.profile, t, end) & self.profile._eligible(request.gpus_per_node)
        chosen = self.tree.select(mask, request.nodes, rate, edge_free, top_free)
        if chosen is None:
            return None
        return Allocation(chosen, (), {}, alloc.counters)

    def fits_now(self, request: Request, duration: float | None = None, **kw) -> Allocation | None:
        rate = request.io_bandwidth_per_node
        if rate:
            # the cheap necessary test first: the job's total against the global levels (the
            # PFS is what binds on an underprovisioned machine: most queued jobs fail here)
            now = self.now
            _, top_free = self.bandwidth.window(now, now + (request.walltime if duration is None else duration))
            total = rate * request.nodes
            for free, cap in zip(top_free, self.tree.top_bw):
                if not _fits(total, free, cap):
                    return None
        alloc = self.profile.fits_now(request, duration, **kw)
        if alloc is None or not rate:
            return alloc
        return self._with_bandwidth(request, alloc, self.now, duration)

    def earliest_start(self, request: Request, duration: float | None = None, not_before: float | None = None,
                       *, not_after: float = INF, **kw) -> tuple[float, Allocation] | None:
        if not request.io_bandwidth_per_node:
            return self.profile.earliest_start(request, duration, not_before, not_after=not_after, **kw)
        if self.tree.infeasible_reason(request) is not None:
            return None
        t = self.now if not_before is None else max(not_before, self.now)
        length = request.walltime if duration is None else duration
        while t <= not_after:
            skip = self.bandwidth.first_short(t, t + length, request.io_bandwidth_per_node * request.nodes)
            if skip is not None:
                if skip == INF:
                    return None
                t = skip        # every window holding that slice lacks global bandwidth
                continue
            found = self.profile.earliest_start(request, duration, t, not_after=not_after, **kw)
            if found is None:
                return None
            t, alloc = found
            got = self._with_bandwidth(request, alloc, t, duration)
            if got is not None:
                return t, got
            k = bisect_right(self.profile.times, t)
            t = min(self.profile.times[k] if k < len(self.profile.times) else INF, self.bandwidth.next_change(t))
            if t == INF:
                return None
        return None

    def reserve(self, start: float, end: float, allocation: Allocation, tag: str | None = None) -> Reservation:
        reservation = self.profile.reserve(start, end, allocation, tag)
        rate = self._rate(tag)
        if rate:
            self.bandwidth.add(reservation.start, end, allocation.nodes, rate)
            self._held[id(reservation)] = (reservation, rate)
        return reservation

    def hold(self, reservation: Reservation) -> None:
        """Take the bandwidth of a reservation already in the availability profile (one kept
        across rounds); ``release`` gives it back with the reservation."""
        rate = self._rate(reservation.tag)
        if rate:
            self.bandwidth.add(reservation.start, reservation.end, reservation.allocation.nodes, rate)
            self._held[id(reservation)] = (reservation, rate)

    def fit_spec(self, request: Request, duration: float | None = None) -> None:
        """None: the availability profile's precomputed fits know nothing of bandwidth, so a
        policy asking for one falls back to ``earliest_start``, which does."""
        return None

    def release(self, reservation: Reservation, from_time: float | None = None) -> None:
        self.profile.release(reservation, from_time)
        held = self._held.pop(id(reservation), None)
        if held is not None:
            start = reservation.start if from_time is None else max(reservation.start, from_time)
            self.bandwidth.add(start, reservation.end, reservation.allocation.nodes, held[1], sign=+1)
