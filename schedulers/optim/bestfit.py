"""SLURM's one-job-at-a-time best fit of cores and GPUs onto the 1-D array of nodes (seed 002
Sect. 1, SLURM ``select/cons_res``): the smallest block of consecutive eligible nodes that can
hold the job, filled from its start; when no block can, the largest blocks first.

Decisions (SLURM's plug-in has many more rules): a node is eligible when it has the job's
cores per node (at least one core) and GPUs per node free; kind 1 (cores only) takes whole
free nodes first (fewest nodes), kind 2 (nodes + cores) spreads the cores evenly over the
consecutive window of its node count with the most free cores, kind 3 takes its cores per node
on the first nodes. ``contiguous`` jobs use one block only.
"""

from __future__ import annotations

import numpy as np

from mrsched.schedulers.model.nodes import Layout
from mrsched.schedulers.model.cores import CoreRequest


def block_bounds(free, free_gpus, min_cores: int, gpus: int) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Half-open ``(first, end)`` runs of consecutive nodes with ``min_cores`` free cores and
    ``gpus`` free GPUs, and the prefix sums of free cores (a run's cores: cs[end] - cs[first])."""
    f = np.asarray(free)
    mask = (f >= max(min_cores, 1)) & (np.asarray(free_gpus) >= gpus)
    edges = np.diff(np.concatenate(([False], mask, [False])).astype(np.int8))
    starts = np.flatnonzero(edges == 1).tolist()
    ends = np.flatnonzero(edges == -1).tolist()
    return list(zip(starts, ends)), np.concatenate(([0], np.cumsum(f)))


def eligible_blocks(free, free_gpus, min_cores: int, gpus: int) -> list[list[int]]:
    """Maximal runs of consecutive nodes with ``min_cores`` free cores and ``gpus`` free GPUs."""
    return [list(range(a, b)) for a, b in block_bounds(free, free_gpus, min_cores, gpus)[0]]


def spread(caps: list[int], cores: int) -> list[int] | None:
    """``cores`` over nodes of free ``caps``: one each, then round-robin up to each cap."""
    n = len(caps)
    if n > cores or sum(caps) < cores or min(caps, default=1) < 1:
        return None
    out = [1] * n
    rem = cores - n
    while rem:
        moved = False
        for i in range(n):
            if rem and out[i] < caps[i]:
                out[i] += 1
                rem -= 1
                moved = True
        if not moved:
            return None
    return out


def fit_in(nodes: list[int], free: list[int], req: CoreRequest) -> list[tuple[int, int]] | None:
    """The job's (node, cores) on ``nodes`` (ascending, all eligible), or None."""
    if req.kind == 3:
        if len(nodes) < req.nodes_min:
            return None
        return [(n, req.cores_per_node) for n in nodes[:req.nodes_min]]
    if req.kind == 2:
        k = req.nodes_min
        if len(nodes) < k:
            return None
        best, best_cap, cap = -1, -1, sum(free[n] for n in nodes[:k])
        for i in range(len(nodes) - k + 1):
            if i:
                cap += free[nodes[i + k - 1]] - free[nodes[i - 1]]
            if cap > best_cap:
                best, best_cap = i, cap
        if best_cap < req.cores:
            return None
        window = nodes[best:best + k]
        split = spread([free[n] for n in window], req.cores)
        return None if split is None else list(zip(window, split))
    # kind 1: fill whole nodes in order (fewest nodes), within [nodes_min, nodes_max]
    out, rem = [], req.cores
    for n in nodes:
        if not rem:
            break
        take = min(free[n], rem)
        out.append((n, take))
        rem -= take
    if rem:
        return None
    if len(out) > req.nodes_max:   # too many nodes: the emptiest nodes of the set
        chosen = sorted(sorted(nodes, key=lambda n: -free[n])[:req.nodes_max])
        split = spread([free[n] for n in chosen], req.cores)
        return None if split is None else list(zip(chosen, split))
    if len(out) < req.nodes_min:   # too few: spread over the first nodes_min nodes
        if len(nodes) < req.nodes_min:
            return None
        chosen = nodes[:req.nodes_min]
        split = spread([free[n] for n in chosen], req.cores)
        return None if split is None else list(zip(chosen, split))
    return out


def best_fit_counts(free: list[int], free_gpus: list[int], req: CoreRequest) -> Layout | None:
    """SLURM's best fit of ``req`` on ``free`` cores and ``free_gpus`` per node, or None."""
    bounds, cs = block_bounds(free, free_gpus, req.min_per_node, req.gpus_per_node)
    if not bounds:
        return None

    def size(a: int, b: int) -> int:
        return b - a if req.kind == 3 else int(cs[b] - cs[a])

    need = req.nodes_min if req.kind == 3 else req.cores
    best = None
    for a, b in sorted(bounds, key=lambda ab: (size(*ab), ab[0])):
        if size(a, b) < need:
            continue
        got = fit_in(list(range(a, b)), free, req)
        if got is not None:
            best = got
            break
    if best is None and not req.contiguous and len(bounds) > 1:
        # no single block: the largest blocks first, then the job's rule on their union
        chosen: list[int] = []
        total = 0
        for a, b in sorted(bounds, key=lambda ab: (-size(*ab), ab[0])):
            chosen = sorted(chosen + list(range(a, b)))
            total += size(a, b)
            if total >= need:
                best = fit_in(chosen, free, req)
                if best is not None:
                    break
    if best is None:
        return None
    return Layout(tuple(sorted(best)), req.gpus_per_node)


def never_fits(req: CoreRequest, cores: list[int], gpus: list[int]) -> str | None:
    """Why ``req`` cannot run even on the empty machine (per-node ``cores`` and ``gpus``), or None."""
    total = sum(cores)
    if req.cores > total:
        return f"asks {req.cores} cores, the machine has {total}"
    ok = [n for n in range(len(cores)) if cores[n] >= req.min_per_node and gpus[n] >= req.gpus_per_node]
    if req.gpus_per_node and not ok:
        return f"asks {req.gpus_per_node} GPUs per node, the most GPUs on a node is {max(gpus, default=0)}"
    if len(ok) < req.nodes_min:
        what = f"{req.cores_per_node} free cores and " if req.cores_per_node else ""
        return (f"asks {req.nodes_min} nodes with {what}{req.gpus_per_node} GPUs each, "
                f"only {len(ok)} nodes have that")
    if best_fit_counts(list(cores), list(gpus), req) is None:
        return (f"asks {req.cores} cores on {req.nodes_min}-{req.nodes_max} nodes with {req.gpus_per_node} GPUs "
                f"each{' contiguous' if req.contiguous else ''}: no placement on the empty machine")
    return None
