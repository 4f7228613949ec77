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
    for k in range(cluster.nb_nodes):
        g, c = cluster.group[k], cluster.chassis[k]

        def distance(s: int, g=g, c=c) -> tuple[int, int]:
            st = cluster.storage[s]
            if g is not None and st.group == g:
                return (0 if (c is not None and st.chassis == c) else 1, s)
            return (2, s)

        orders.append(tuple(sorted(range(len(cluster.storage)), key=distance)))
    return orders


class BurstBufferPlacer:
    """Places per-node burst-buffer shares on storage nodes given free bytes per storage node."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.order = storage_order(cluster)
        # Flat machines (no coordinates) share one order: keep it to skip per-node lookups.
        self._flat = len(set(self.order)) <= 1

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
        of every storage node over the job's window.
        """
        left = list(free)
        result: dict[int, tuple[int, int]] = {}
        order = self.order
        for k, share in zip(node_indices, amounts):
            if share <= 0:
                continue
            for s in order[k]:
                if left[s] >= share:
                    left[s] -= share
                    result[k] = (s, share)
                    break
            else:
                return None
        return result


def split_shares(total: int, nodes: int) -> list[int]:
    """``total`` bytes split over ``nodes`` as evenly as integers allow (larger shares first)."""
    base, extra = divmod(total, nodes)
    return [base + 1] * extra + [base] * (nodes - extra)
