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
        # runs of one order 3 nodes long or less on average (a large machine's nodes in Batsim's
        # name order interleave chassis): place node by node, runs would only add overhead
        self._fragmented = len(self.order_ranges) * 3 > len(self.order)

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

    @staticmethod
    def surely_fits(largest: int, nodes: int, free: list[int] | tuple[int, ...]) -> bool:
        """Whether ``place`` surely succeeds for ``nodes`` shares of at most ``largest`` bytes:
        when it fails a node, every storage node has less than ``largest`` free, so each holds
        at least ``free_s // largest`` shares already, hence ``sum(free_s // largest)`` were
        placed: fewer than ``nodes`` (a sufficient test; False says nothing)."""
        if largest <= 0:
            return True
        room = 0
        for f in free:
            room += f // largest
            if room >= nodes:
                return True
        return False

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
        groups, order = self.order_groups, self.order
        runs = not self._fragmented
        left = list(free)
        result: dict[int, tuple[int, int]] = {}
        resume: dict[int, tuple[int, int]] = {}   # order group -> (share, first index with room)
        m = len(node_indices)
        p = 0
        while p < m:
            k = node_indices[p]
            share = amounts[p]
            g = groups[k]
            q = p + 1
            if runs:
                while q < m and amounts[q] == share and groups[node_indices[q]] == g:
                    q += 1
            if share <= 0:
                p = q
                continue
            count = q - p
            got = resume.get(g)
            i = got[1] if got is not None and got[0] == share else 0
            o = order[k]
            last = len(o)
            while i < last:
                s = o[i]
                f = left[s]
                if f >= share:
                    c = f // share
                    if c > count:
                        c = count
                    left[s] = f - c * share
                    if c == 1:
                        result[node_indices[p]] = (s, share)
                    else:
                        result.update(dict.fromkeys(node_indices[p:p + c], (s, share)))
                    p += c
                    count -= c
                    if not count:
                        break
                i += 1
            resume[g] = (share, i)
            if count:
                return None
        return result

    def place_split(self, nodes: list[int], total: int, n: int,
                    free: list[int] | tuple[int, ...]) -> dict[int, tuple[int, int]] | None:
        """``place(nodes, split_shares(total, n), free)``."""
        return self.place(nodes, split_shares(total, n), free)


def split_shares(total: int, nodes: int) -> list[int]:
    """``total`` bytes split over ``nodes`` as evenly as integers allow (larger shares first)."""
    base, extra = divmod(total, nodes)
    return [base + 1] * extra + [base] * (nodes - extra)
