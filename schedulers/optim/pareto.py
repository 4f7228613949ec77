"""Pareto fronts of window selections: the problem, dominance, the exact front, distances.

The problem is the one of BBSched (seed 000, Sect. 3.2.1) and MultiSched (seed 003,
Sect. 2.2): pick a subset of the ``w`` jobs of a scheduling window, maximising the amount
used of every resource (nodes first, then burst buffer, ...) subject to what is free now.
Everything here works on plain numpy arrays so that the optimisers (``genetic.py``, the
exact enumeration below) and the decision rules can be tested without a simulator.

Conventions: a selection is a boolean row of length ``w`` (``True`` = start the job);
objectives are the summed demands of the selection, one column per resource, all to be
maximised; utilisations are objectives divided by the *total* capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mrsched.errors import ConfigError, SimulationError, WorkloadError

__all__ = [
    "WindowProblem",
    "ParetoSet",
    "dominates",
    "non_dominated",
    "pareto_ranks",
    "frontmost",
    "exact_front",
    "generational_distance",
    "choose_tradeoff",
]


@dataclass(frozen=True, eq=False)
class WindowProblem:
    """Which jobs of a window to start now (seed 000 Sect. 3.2.1; seed 003 Sect. 2.2).

    ``demands[i, r]`` is what job ``i`` (window order, front first) needs of resource
    ``r``; column 0 is nodes. ``free[r]`` is what is available now, ``total[r]`` the
    machine's capacity (utilisations are fractions of it, as in 000 Sect. 3.2.4).
    Build it with :meth:`build`, which validates and converts.
    """

    demands: np.ndarray
    free: np.ndarray
    total: np.ndarray
    resources: tuple[str, ...]

    @classmethod
    def build(cls, demands, free, total, resources: Sequence[str] | None = None,
              *, jobs: Sequence[str] | None = None) -> "WindowProblem":
        """Validate and freeze a problem; errors name the job and resource at fault."""
        d = np.asarray(demands, dtype=float)
        if d.ndim == 1:
            d = d.reshape(-1, 1) if d.size else d.reshape(0, np.size(free))
        f = np.asarray(free, dtype=float).reshape(-1)
        t = np.asarray(total, dtype=float).reshape(-1)
        k = f.size
        if resources is None:
            resources = ("nodes", "burst_buffer", *(f"r{j}" for j in range(2, k)))[:k]
        resources = tuple(resources)
        if d.ndim != 2 or d.shape[1] != k or t.size != k or len(resources) != k or k == 0:
            raise ConfigError(
                f"window problem shapes disagree: demands {d.shape}, free {f.shape}, "
                f"total {t.shape}, resources {resources}")
        if jobs is not None and len(jobs) != d.shape[0]:
            raise ConfigError(f"{len(jobs)} job ids for {d.shape[0]} demand rows")
        bad = ~np.isfinite(d) | (d < 0)
        if bad.any():
            i, r = map(int, np.argwhere(bad)[0])
            raise WorkloadError(f"demand must be a finite number >= 0, got {d[i, r]!r}",
                                job=None if jobs is None else str(jobs[i]),
                                field=resources[r])
        for name, arr in (("free", f), ("total", t)):
            badc = ~np.isfinite(arr) | (arr < 0)
            if badc.any():
                r = int(np.argmax(badc))
                raise ConfigError(f"{name} capacity must be a finite number >= 0, "
                                  f"got {arr[r]!r}", field=resources[r])
        if (t <= 0).any():
            r = int(np.argmax(t <= 0))
            raise ConfigError("total capacity must be > 0 (utilisation is a fraction of it)",
                              field=resources[r])
        for arr in (d, f, t):
            arr.setflags(write=False)
        return cls(demands=d, free=f, total=t, resources=resources)

    @property
    def n_jobs(self) -> int:
        return self.demands.shape[0]

    @property
    def n_resources(self) -> int:
        return self.demands.shape[1]

    def evaluate(self, selections: np.ndarray) -> np.ndarray:
        """Objectives (m, k): the summed demands of each selection row (000 Eq. f1, f2)."""
        x = np.asarray(selections, dtype=bool).reshape(-1, self.n_jobs)
        return x.astype(float) @ self.demands

    def feasible(self, selections: np.ndarray) -> np.ndarray:
        """True where a selection fits in the free capacity of every resource."""
        return np.all(self.evaluate(selections) <= self.free, axis=1)

    def repair(self, selections: np.ndarray) -> np.ndarray:
        """Drop selected jobs from the back of the window until each selection fits.

        Decision (ALGORITHMS.md, 000): repair rather than penalise. Demands are >= 0, so
        dropping from the back keeps the longest prefix of selected jobs whose running
        sums fit: a cumulative sum does it for the whole population at once.
        """
        x = np.asarray(selections, dtype=bool).reshape(-1, self.n_jobs)
        if x.size == 0:
            return x.copy()
        running = np.cumsum(x[:, :, None] * self.demands[None, :, :], axis=1)
        fits = np.all(running <= self.free, axis=2)
        return x & fits

    def utilisation(self, objectives: np.ndarray) -> np.ndarray:
        """Objectives as fractions of the total capacity (000 Sect. 3.2.4)."""
        return np.asarray(objectives, dtype=float) / self.total


@dataclass(frozen=True, eq=False)
class ParetoSet:
    """Non-dominated selections (m, w) and their objectives (m, k), front-most first."""

    selections: np.ndarray
    objectives: np.ndarray

    def __len__(self) -> int:
        return self.selections.shape[0]

    def jobs(self, index: int) -> list[int]:
        """Window positions selected by solution ``index``."""
        return [int(i) for i in np.flatnonzero(self.selections[index])]


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` is at least as good everywhere and strictly better somewhere (maximisation)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return bool(np.all(a >= b) and np.any(a > b))


def _domination_matrix(objectives: np.ndarray) -> np.ndarray:
    """``D[i, j]`` = objective row i dominates row j; O(m^2 k), for small pools."""
    # Column by column: k is small, and 2-D comparisons avoid (m, m, k) temporaries.
    f = objectives
    m, k = f.shape
    ge = np.ones((m, m), dtype=bool)
    gt = np.zeros((m, m), dtype=bool)
    for j in range(k):
        col = f[:, j]
        ge &= col[:, None] >= col[None, :]
        gt |= col[:, None] > col[None, :]
    return ge & gt


def non_dominated(objectives: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows no other row dominates (equal rows are all kept)."""
    f = np.asarray(objectives, dtype=float)
    m = f.shape[0]
    if m == 0:
        return np.zeros(0, dtype=bool)
    if f.shape[1] == 2 and m > 64:
        return _non_dominated_2d(f)
    if m <= 2048:
        return ~_domination_matrix(f).any(axis=0)
    # Large k-dimensional sets: compare block by block against the whole set.
    keep = np.ones(m, dtype=bool)
    for start in range(0, m, 512):
        blk = f[start:start + 512]
        ge = np.all(f[:, None, :] >= blk[None, :, :], axis=2)
        gt = np.any(f[:, None, :] > blk[None, :, :], axis=2)
        keep[start:start + 512] = ~(ge & gt).any(axis=0)
    return keep


def _non_dominated_2d(f: np.ndarray) -> np.ndarray:
    """Staircase sweep in O(m log m): sort by f0 then f1 descending, keep new f1 records."""
    order = np.lexsort((-f[:, 1], -f[:, 0]))
    s = f[order]
    # Unique vectors: a row equal to its predecessor shares its fate.
    new = np.ones(len(s), dtype=bool)
    new[1:] = np.any(s[1:] != s[:-1], axis=1)
    group = np.cumsum(new) - 1
    u = s[new]
    best_before = np.maximum.accumulate(np.concatenate(([-np.inf], u[:-1, 1])))
    keep_u = u[:, 1] > best_before
    mask = np.empty(len(f), dtype=bool)
    mask[order] = keep_u[group]
    return mask


def pareto_ranks(objectives: np.ndarray, *, limit: int | None = None) -> np.ndarray:
    """Non-dominated sorting rank of each row: 0 for the front, 1 once it is removed, ...

    With ``limit``, peeling may stop once at least ``limit`` rows are ranked: the rest get
    the next rank (a selection of ``limit`` survivors never needs to tell them apart).
    Two objectives take an exact O(m log m + m x fronts) sweep instead (the GA's case).
    """
    f = np.asarray(objectives, dtype=float)
    m = f.shape[0]
    ranks = np.full(m, -1, dtype=np.int64)
    if m == 0:
        return ranks
    if f.shape[1] == 2:
        return _ranks_2d(f)
    dom = _domination_matrix(f)
    dominators = dom.sum(axis=0)
    remaining = np.ones(m, dtype=bool)
    ranked = 0
    rank = 0
    while ranked < m:
        if limit is not None and ranked >= limit:
            ranks[remaining] = rank
            break
        # A remaining row is on the current front when no remaining row dominates it.
        front = remaining & (dominators == 0)
        ranks[front] = rank
        remaining &= ~front
        ranked += int(front.sum())
        dominators -= dom[front].sum(axis=0)
        rank += 1
    return ranks


def _ranks_2d(f: np.ndarray) -> np.ndarray:
    """Non-dominated sorting of two maximised objectives by one sweep.

    Visit points by f0 then f1 descending; a front dominates the visited point iff its
    last member does (members of a front have rising f1 in this order), so the point goes
    to the first front whose last member does not dominate it. Hot path of the GA: plain
    Python lists, faster than peeling a domination matrix at the GA's sizes.
    """
    order = np.lexsort((-f[:, 1], -f[:, 0])).tolist()
    f0 = f[:, 0].tolist()
    f1 = f[:, 1].tolist()
    last: list[tuple[float, float]] = []
    ranks = [0] * len(f0)
    for j in order:
        a, b = f0[j], f1[j]
        k = 0
        for la, lb in last:
            if lb > b or (lb == b and la > a):
                k += 1
            else:
                break
        if k == len(last):
            last.append((a, b))
        else:
            last[k] = (a, b)
        ranks[j] = k
    return np.array(ranks, dtype=np.int64)


def frontmost(selections: np.ndarray, candidates=None) -> int:
    """Index of the selection holding the jobs nearest the window front.

    Decision: "nearest the front" (000 Sect. 3.2.4 tie rule) is lexicographic on the
    window order: a selection containing job 0 beats one without it, then job 1, etc.
    """
    x = np.asarray(selections, dtype=bool)
    idx = np.arange(x.shape[0]) if candidates is None else np.asarray(candidates).reshape(-1)
    if idx.size == 0:
        raise ValueError("frontmost() needs at least one candidate")
    if idx.size == 1 or x.shape[1] == 0:
        return int(idx[0])
    sub = x[idx]
    # lexsort: the last key is the primary one, so column 0 goes last.
    order = np.lexsort(tuple(~sub[:, j] for j in range(sub.shape[1] - 1, -1, -1)))
    return int(idx[order[0]])


def _sort_frontmost(selections: np.ndarray) -> np.ndarray:
    """Permutation putting the front-most selections first (see :func:`frontmost`)."""
    x = np.asarray(selections, dtype=bool)
    if x.shape[0] <= 1 or x.shape[1] == 0:
        return np.arange(x.shape[0])
    return np.lexsort(tuple(~x[:, j] for j in range(x.shape[1] - 1, -1, -1)))


def _bits(w: int) -> np.ndarray:
    """Mask bit of each window position: job 0 is the highest bit (front-most = largest)."""
    return (np.int64(1) << np.arange(w - 1, -1, -1, dtype=np.int64)).astype(np.int64)


def exact_front(problem: WindowProblem, *, max_states: int = 2_000_000) -> ParetoSet:
    """The true Pareto set, by enumeration with pruning (beyond the paper; ALGORITHMS.md).

    Subsets are grown one job at a time (largest normalised demand first, so that
    infeasible branches die early); a partial sum that exceeds a free capacity is dropped
    (demands are >= 0); equal sums are merged keeping the front-most selection; with two
    resources a partial sum whose best completion (capped by the free capacity) is
    strictly dominated by an already feasible sum is dropped too. ``max_states`` bounds
    the work: beyond it a :class:`SimulationError` asks for the genetic solver instead
    (never at w <= 20: there are at most 2^w states; at w = 50 it is often reached).
    Every objective vector on the returned front carries its front-most selection.
    """
    w, k = problem.n_jobs, problem.n_resources
    if w > 62:
        raise ConfigError(f"exact Pareto front limited to 62 jobs, window has {w}",
                          hint="use solver='ga'")
    d = problem.demands
    free = problem.free
    bit = _bits(w)
    alone = np.all(d <= free, axis=1)
    norm = (d / problem.total).sum(axis=1)
    order = [int(i) for i in np.argsort(-norm, kind="stable") if alone[i]]
    # Remaining demand after each step (for the completion bound of the 2-D pruning).
    rest = np.zeros((len(order) + 1, k))
    for step in range(len(order) - 1, -1, -1):
        rest[step] = rest[step + 1] + d[order[step]]
    sums = np.zeros((1, k))
    masks = np.zeros(1, dtype=np.int64)
    for step, i in enumerate(order):
        grown = sums + d[i]
        ok = np.all(grown <= free, axis=1)
        if ok.any():
            sums = np.concatenate((sums, grown[ok]))
            masks = np.concatenate((masks, masks[ok] | bit[i]))
            sums, masks = _merge_equal(sums, masks)
            if k == 2 and step + 1 < len(order):
                sums, masks = _prune_2d(sums, masks, np.minimum(sums + rest[step + 1], free))
        if len(sums) > max_states:
            raise SimulationError(
                f"exact Pareto front of a {w}-job window exceeds {max_states} states",
                hint="use solver='ga' or a smaller window")
    keep = non_dominated(sums)
    sums, masks = sums[keep], masks[keep]
    selections = (masks[:, None] & bit[None, :]) != 0
    order_out = np.argsort(-masks, kind="stable")  # front-most first
    return ParetoSet(selections=selections[order_out], objectives=sums[order_out])


def _merge_equal(sums: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep one row per distinct sum vector: the one with the largest (front-most) mask."""
    keys = (-masks,) + tuple(sums[:, j] for j in range(sums.shape[1] - 1, -1, -1))
    order = np.lexsort(keys)
    s = sums[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = np.any(s[1:] != s[:-1], axis=1)
    keep = order[first]
    return sums[keep], masks[keep]


def _prune_2d(sums: np.ndarray, masks: np.ndarray, bound: np.ndarray):
    """Drop partial sums whose completion bound is strictly dominated by a feasible sum.

    Every partial sum is itself feasible (the remaining jobs left out), so the current
    front is a set of known solutions; ``bound`` caps what any completion can reach.
    """
    front = sums[_non_dominated_2d(sums)] if len(sums) > 1 else sums
    fo = np.argsort(front[:, 0], kind="stable")
    fn, fb = front[fo, 0], front[fo, 1]
    # suffix maximum of b over front points with n >= threshold
    sufmax = np.maximum.accumulate(fb[::-1])[::-1]
    sufmax = np.concatenate((sufmax, [-np.inf]))
    ge = np.searchsorted(fn, bound[:, 0], side="left")
    gt = np.searchsorted(fn, bound[:, 0], side="right")
    strictly = (sufmax[ge] > bound[:, 1]) | (sufmax[gt] >= bound[:, 1])
    if not strictly.any():
        return sums, masks
    return sums[~strictly], masks[~strictly]


def generational_distance(approx: np.ndarray, reference: np.ndarray) -> float:
    """GD(S) = mean over u in S of the distance to the nearest v in S* (000 Sect. 3.2.3).

    Pass utilisations (fractions of capacity) so that resources weigh alike. An exact
    front has GD 0 against itself.
    """
    a = np.asarray(approx, dtype=float)
    r = np.asarray(reference, dtype=float)
    if a.ndim != 2 or r.ndim != 2 or a.shape[1] != r.shape[1] or len(r) == 0:
        raise ValueError(f"generational_distance needs (m, k) and (r, k) arrays, got "
                         f"{a.shape} and {r.shape}")
    if len(a) == 0:
        return 0.0
    dist = np.sqrt(((a[:, None, :] - r[None, :, :]) ** 2).sum(axis=2))
    return float(dist.min(axis=1).mean())


def choose_tradeoff(front: ParetoSet, total: np.ndarray, *,
                    factor: float | None = None) -> int:
    """BBSched's decision rule (000 Sect. 3.2.4), generalised for MultiSched (003).

    Start from the solution with the highest node utilisation (ties: front-most jobs).
    Another solution replaces it when the sum of its utilisation gains on the other
    resources exceeds ``factor`` times its node utilisation loss; among several, the one
    with the largest gain - factor x loss wins (ties: front-most). Utilisations are
    fractions of ``total``. Decision: ``factor`` defaults to the number of resources,
    which gives 000's 2x with burst buffer only and its 4x with three extra objectives
    (000 Sect. 5).
    """
    if len(front) == 0:
        raise ValueError("choose_tradeoff() on an empty Pareto set")
    u = np.asarray(front.objectives, dtype=float) / np.asarray(total, dtype=float)
    k = u.shape[1]
    factor = float(k if factor is None else factor)
    top = np.flatnonzero(u[:, 0] == u[:, 0].max())
    best = frontmost(front.selections, top)
    if k == 1:
        return best
    gain = (u[:, 1:] - u[best, 1:]).sum(axis=1)
    loss = u[best, 0] - u[:, 0]
    score = gain - factor * loss
    better = gain > factor * loss
    better[best] = False
    if not better.any():
        return best
    cand = np.flatnonzero(better)
    cand = cand[score[cand] == score[cand].max()]
    return frontmost(front.selections, cand)
