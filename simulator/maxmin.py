"""SimGrid's max-min sharing for the ptask_L07 model: the *fair bottleneck* solver
(``kernel/lmm/fair_bottleneck.cpp``, SimGrid 3.32) and the split of a system into the parts
that share no resource. Three solvers give the same rates: ``fair_bottleneck_small`` in plain
floats, ``fair_bottleneck`` in numpy and ``fair_bottleneck_compiled`` in C (``_maxmin.c``, which
the engine uses for every system when it is built).

A system is a set of variables (the tasks' rates) and constraints (CPUs and links, each of a
capacity), an element per (variable, constraint) with the variable's weight on it (its flops
or bytes there); ``ptask.py`` builds it from its tasks. The solvers give the same floats from
the same operations in the same order as SimGrid's loop (``tests/simulator/maxmin_reference.py``
writes it out: their tests' reference).
"""

from __future__ import annotations

import operator

import numpy as np

from mrsched import native
from mrsched.errors import SimulationError

try:  # the C function behind np.count_nonzero, without its Python wrapper (hot path)
    from numpy._core.multiarray import count_nonzero as _count
except ImportError:  # pragma: no cover - other numpy layouts
    _count = np.count_nonzero

try:  # the compiled solver (``_maxmin.c``, in the ``_steps`` extension)
    from mrsched.simulator._steps import fair_bottleneck as _c_fair_bottleneck
except ImportError:  # built without a C compiler: the twins below
    _c_fair_bottleneck = None

#: SimGrid's ``maxmin/precision``: constraint capacity left below it is none.
MAXMIN_PRECISION = 1e-5
#: solver rounds before giving up (a FATPIPE system may crawl)
_MAX_ROUNDS = 1_000_000
#: whether ``fair_bottleneck_compiled`` may solve (``use_compiled``)
_COMPILED = _c_fair_bottleneck is not None and native.wanted()


def use_compiled(compiled: bool) -> bool:
    """Solve in C (``_maxmin.c``, when built) or with the Python twins from now on; whether C
    is now in use. ``MRSCHED_PURE_PYTHON=1`` starts with Python."""
    global _COMPILED
    _COMPILED = compiled and _c_fair_bottleneck is not None
    return _COMPILED


def compiled() -> bool:
    """Whether ``fair_bottleneck_compiled`` solves (``use_compiled``)."""
    return _COMPILED


def _not_converged() -> SimulationError:
    return SimulationError("the ptask share solver did not converge",
                           hint="FATPIPE links shared by tasks bottlenecked elsewhere can make "
                                "SimGrid's fair-bottleneck solver crawl")


def components(tasks) -> list[list[int]]:
    """The connected components of tasks linked by the resources (constraints) they share, as
    lists of positions in ``tasks`` (increasing), ordered by their first task."""
    n = len(tasks)
    parent = list(range(n))  # union-find; a root is the smallest position of its component
    first_user: dict[int, int] = {}
    for i, task in enumerate(tasks):
        for c in task._cnsts:
            j = first_user.setdefault(c, i)
            if j != i:
                while parent[j] != j:
                    j = parent[j]
                k = i
                while parent[k] != k:
                    k = parent[k]
                if j < k:
                    parent[k] = j
                elif k < j:
                    parent[j] = k
    groups: dict[int, list[int]] = {}
    for i in range(n):
        r = parent[i]
        while parent[r] != r:
            r = parent[r]
        parent[i] = r
        groups.setdefault(r, []).append(i)
    return list(groups.values())


def solo_rate(capacities: list[float], weights: list[float], bound: float) -> float:
    """``fair_bottleneck`` for one task alone on its resources (capacities and the task's
    weights on them), in plain floats: the same operations in the same order, so the same rate."""
    value = 0.0
    remaining = capacities
    for _ in range(_MAX_ROUNDS):
        inc = min(map(operator.truediv, remaining, weights))
        if bound - value < inc:
            inc = bound - value
        value += inc
        if value == bound:
            return value
        remaining = [r - w * inc for r, w in zip(remaining, weights)]
        remaining = [r if r >= MAXMIN_PRECISION else 0.0 for r in remaining]
        if min(remaining) <= 0:
            return value
    raise SimulationError("the ptask share solver did not converge")


def fair_bottleneck_small(ev: list[int], ec_all: list[int], ew: list[float], starts: list[int],
                           cap: list[float], fat: list[bool], bound: list[float],
                           rank: list[int] | None = None) -> list[float]:
    """``fair_bottleneck`` in plain floats for small systems (numpy's per-call cost dominates
    there): the same operations in the same order, so the same rates."""
    n_var = len(bound)
    n_el = len(ev)
    # local numbering of the constraints used
    local: dict[int, int] = {}
    ec_loc = []
    for c in ec_all:
        k = local.get(c)
        if k is None:
            k = local[c] = len(local)
        ec_loc.append(k)
    ec = ec_loc
    n_c = len(local)
    cap_l = cap
    fat_l = fat
    remaining = [cap_l[c] for c in local]
    is_fat = [fat_l[c] for c in local]
    usage = [0.0] * n_c
    cnst_live = [True] * n_c
    value = [0.0] * n_var
    mu = [0.0] * n_var
    var_live = [True] * n_var
    n_live = n_var
    el_range = range(n_el)
    var_els = list(zip(starts, starts[1:] + [n_el]))
    # each resource's elements in SimGrid's order: its newest variable first (``rank``)
    rank = list(range(n_var)) if rank is None else rank
    cel: list[list[int]] = [[] for _ in range(n_c)]
    for e in sorted(el_range, key=lambda e: -rank[ev[e]]):
        cel[ec[e]].append(e)
    rounds = 0
    while n_live:
        rounds += 1
        if rounds > _MAX_ROUNDS:
            raise _not_converged()
        nb = [0] * n_c
        for e in el_range:
            if var_live[ev[e]]:
                nb[ec[e]] += 1
        for c in range(n_c):
            if cnst_live[c]:
                k = nb[c]
                if k == 0:
                    remaining[c] = 0.0
                    usage[c] = 0.0
                    cnst_live[c] = False
                else:
                    usage[c] = remaining[c] / (1.0 if is_fat[c] else float(k))
        for v in range(n_var):
            if var_live[v]:
                s, t = var_els[v]
                m = min([usage[ec[e]] / ew[e] for e in range(s, t)])
                room = bound[v] - value[v]
                inc = m if m <= room else room
                mu[v] = inc
                value[v] += inc
                if value[v] == bound[v]:
                    var_live[v] = False
                    n_live -= 1
        saturated = []
        for c in range(n_c):
            if cnst_live[c]:
                r = remaining[c]
                if is_fat[c]:   # one update by the least of usage and its elements' consumption
                    u = usage[c]
                    for e in cel[c]:
                        x = ew[e] * mu[ev[e]]
                        if x < u:
                            u = x
                    r -= u
                else:           # one update per element, in the resource's order
                    for e in cel[c]:
                        r -= ew[e] * mu[ev[e]]
                if r < MAXMIN_PRECISION:   # (each update's clamp: the same, updates only subtract)
                    r = 0.0
                remaining[c] = r
                if r <= 0:
                    cnst_live[c] = False
                    saturated.append(c)
        if saturated:
            sat = set(saturated)
            for e in el_range:
                if ec[e] in sat:
                    v = ev[e]
                    if var_live[v]:
                        var_live[v] = False
                        n_live -= 1
    return value


def fair_bottleneck(ev: np.ndarray, ec: np.ndarray, ew: np.ndarray, starts: np.ndarray,
                     cap: np.ndarray, fat: np.ndarray, bound: np.ndarray,
                     rank: np.ndarray | None = None) -> np.ndarray:
    """Rates by SimGrid's fair-bottleneck solver (``lmm/fair_bottleneck.cpp``).

    ``ev``/``ec``/``ew``: variable, constraint and weight of every element (grouped by
    variable, ``starts`` their first element). Each round, every unsaturated resource offers an
    equal share of its remaining capacity to each unfrozen task crossing it (a FATPIPE link
    offers all of it to each); a task grows by the smallest share/weight among its resources
    (or up to its bound); resources left with no capacity freeze their tasks. Quirk kept on
    purpose for fidelity: frozen tasks keep subtracting their last increment from the
    resources they cross. A resource's remaining capacity loses its elements' consumptions one
    after the other, its newest variable first (``rank``: larger is newer; SimGrid's
    ``double_update`` over ``enabled_element_set_``).
    """
    n_var = len(starts)
    n_cnst = len(cap)
    value = np.zeros(n_var)
    mu = np.zeros(n_var)
    var_live = np.ones(n_var, dtype=bool)
    cnst_live = np.ones(n_cnst, dtype=bool)
    remaining = cap.copy()
    usage = np.zeros(n_cnst)
    any_fat = bool(fat[ec].any())
    # the elements by resource, newest variable first, each group headed by a slot for the
    # resource's remaining capacity: a left fold (subtract.reduceat) updates it in that order
    rank = np.arange(n_var) if rank is None else rank
    order = np.lexsort((-rank[ev], ec))
    cs = ec[order]
    heads = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    group_c = cs[heads]
    slots = np.arange(len(order)) + np.searchsorted(heads, np.arange(len(order)), side="right")
    heads_at = heads + np.arange(len(heads))
    fold = np.empty(len(order) + len(heads))
    rounds = 0
    while _count(var_live):
        rounds += 1
        if rounds > _MAX_ROUNDS:
            raise _not_converged()
        # shares offered by each live constraint
        live_elem = var_live[ev]
        nb = np.bincount(ec[live_elem], minlength=n_cnst).astype(np.float64)
        if any_fat:
            nb[fat & (nb > 0)] = 1.0
        empty = cnst_live & (nb == 0)
        remaining[empty] = 0.0
        usage[empty] = 0.0
        cnst_live &= ~empty
        usage[cnst_live] = remaining[cnst_live] / nb[cnst_live]
        # each live variable's increment
        min_inc = np.minimum.reduceat(usage[ec] / ew, starts)
        inc = np.minimum(min_inc, bound - value)
        mu[var_live] = inc[var_live]
        value[var_live] += mu[var_live]
        var_live &= value != bound
        # resources consumed by this round's increments (every element, frozen ones included)
        contrib = ew * mu[ev]
        fold[heads_at] = remaining[group_c]
        fold[slots] = contrib[order]
        updated = remaining.copy()
        updated[group_c] = np.subtract.reduceat(fold, heads_at)
        if any_fat:
            fat_min = np.full(n_cnst, np.inf)
            np.minimum.at(fat_min, ec, contrib)
            updated = np.where(fat, remaining - np.minimum(usage, fat_min), updated)
        remaining[cnst_live] = updated[cnst_live]
        remaining[cnst_live & (remaining < MAXMIN_PRECISION)] = 0.0
        saturated = cnst_live & (remaining <= 0)
        if _count(saturated):
            cnst_live &= ~saturated
            var_live[ev[saturated[ec]]] = False
    return value


def fair_bottleneck_compiled(ev: list[int], ec: list[int], ew: list[float], starts: list[int],
                             cap: list[float], fat: list[bool], bound: list[float],
                             rank: list[int] | None = None) -> list[float]:
    """``fair_bottleneck_small`` in C (``_maxmin.c``): the same operations in the same order,
    so the same rates, for systems of any size."""
    rates = _c_fair_bottleneck(ev, ec, ew, starts, cap, fat, bound,
                               list(range(len(bound))) if rank is None else rank, _MAX_ROUNDS)
    if rates is None:
        raise _not_converged()
    return rates
