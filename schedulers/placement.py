"""Burst-buffer placement: each compute node's share on one storage node, nearest first.

Seed 001 (Sect. 4.1 and the artifact): per compute node, the first storage node with enough
free space over the job's whole window, searched in the same chassis, then the same group,
then anywhere (DESIGN.md "Cluster conventions"). Shares are equal, so a greedy pass succeeds
exactly when ``sum(free_s // share) >= nodes``: the distance order never costs feasibility.
A total that does not divide evenly gives some nodes one byte more (``split_shares``).
"""

from __future__ import annotations

from mrsched.schedulers.cluster import Cluster


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
        # Flat machines (no coordinates) share one order: keep it to skip per-node lookups.
        self._flat = len(set(self.order)) <= 1
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

    def capacity_fits(self, share: int, nodes: int, free: list[int] | tuple[int, ...]) -> bool:
        """Whether ``nodes`` shares of ``share`` bytes fit in the free bytes at all (a quick
        necessary test when ``share`` is the smallest share)."""
        if share <= 0:
            return True
        room = 0
        for f in free:
            room += f // share
            if room >= nodes:
                return True
        return False

    def place(self, node_indices: list[int], amounts: list[int],
              free: list[int] | tuple[int, ...]) -> dict[int, tuple[int, int]] | None:
        """``{compute index: (storage index, bytes)}``, or None when the shares do not fit.

        ``amounts[i]`` is the share of ``node_indices[i]``; ``free`` is the minimum free space
        of every storage node over the job's window. Each node, in turn, gets the first storage
        node of its distance order with room for its share; computed a run of consecutive nodes
        with the same order and share at a time (see ``place_split``: the same result).
        """
        groups, order = self.order_groups, self.order
        left = list(free)
        result: dict[int, tuple[int, int]] = {}
        m = len(node_indices)
        p = 0
        while p < m:
            k = node_indices[p]
            share = amounts[p]
            g = groups[k]
            q = p + 1
            while q < m and amounts[q] == share and groups[node_indices[q]] == g:
                q += 1
            if share <= 0:
                p = q
                continue
            count = q - p
            for s in order[k]:
                f = left[s]
                if f >= share:
                    c = f // share
                    if c > count:
                        c = count
                    left[s] = f - c * share
                    result.update(dict.fromkeys(node_indices[p:p + c], (s, share)))
                    p += c
                    count -= c
                    if not count:
                        break
            if count:
                return None
        return result

    def place_split(self, nodes: list[int], total: int, n: int,
                    free: list[int] | tuple[int, ...]) -> dict[int, tuple[int, int]] | None:
        """``place(nodes, split_shares(total, n), free)``, a run of nodes at a time.

        ``place`` gives each node, in turn, the first storage node of its distance order with room
        for its share. Consecutive nodes with the same order and the same share therefore fill the
        first storage node with room as far as it goes, then the next one: a storage node skipped
        once stays too full for that share. Same result, same insertion order, one step per
        storage node used instead of one per compute node (tests/schedulers/test_availability_fit.py).
        """
        groups = self.order_groups
        order = self.order
        base, extra = divmod(total, n)
        left = list(free)
        result: dict[int, tuple[int, int]] = {}
        m = len(nodes)
        p = 0
        while p < m:
            k = nodes[p]
            share = base + 1 if p < extra else base
            end = extra if p < extra else m
            g = groups[k]
            q = p + 1
            while q < end and groups[nodes[q]] == g:
                q += 1
            if share <= 0:
                p = q
                continue
            count = q - p
            for s in order[k]:
                f = left[s]
                if f >= share:
                    c = f // share
                    if c > count:
                        c = count
                    left[s] = f - c * share
                    result.update(dict.fromkeys(nodes[p:p + c], (s, share)))
                    p += c
                    count -= c
                    if not count:
                        break
            if count:
                return None
        return result


def split_shares(total: int, nodes: int) -> list[int]:
    """``total`` bytes split over ``nodes`` as evenly as integers allow (larger shares first)."""
    base, extra = divmod(total, nodes)
    return [base + 1] * extra + [base] * (nodes - extra)
