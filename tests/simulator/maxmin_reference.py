"""SimGrid 3.32's fair-bottleneck solver (``src/kernel/lmm/fair_bottleneck.cpp`` 18-140)
written out plainly, loop for loop: the reference of ``simulator/maxmin.py``'s two solvers.

A constraint holds its enabled elements newest variable first (``System.cpp`` 246-253,
530-547: elements are pushed at the front); each round, every element's consumption is taken
off its constraint's remaining capacity one after the other (``double_update``)."""

from __future__ import annotations

PRECISION = 1e-5   # maxmin/precision


def fair_bottleneck(variables: list[dict], capacity: list[float], fatpipe: list[bool]) -> list[float]:
    """``variables[v]``: ``{"bound": b, "elements": [(constraint, weight), ...], "rank": r}``
    (a larger rank joined the solve later); returns each variable's value."""
    elements = {c: [] for c in range(len(capacity))}    # constraint -> [(variable, weight)]
    for v in sorted(range(len(variables)), key=lambda v: -variables[v]["rank"]):
        for c, w in variables[v]["elements"]:
            elements[c].append((v, w))
    value = [0.0] * len(variables)
    mu = [0.0] * len(variables)
    saturated_vars = [v for v in range(len(variables))
                      if any(w != 0 for _, w in variables[v]["elements"])]
    remaining = list(capacity)
    usage = [0.0] * len(capacity)
    cnst_list = [c for c in range(len(capacity)) if elements[c]]
    while saturated_vars:
        for c in list(cnst_list):
            nb = sum(1 for v, w in elements[c] if w > 0 and v in saturated_vars)
            if nb > 0 and fatpipe[c]:
                nb = 1
            if nb == 0:
                remaining[c] = 0.0
                usage[c] = 0.0
                cnst_list.remove(c)
            else:
                usage[c] = remaining[c] / nb
        for v in list(saturated_vars):
            min_inc = float("inf")
            for c, w in variables[v]["elements"]:
                if w > 0:
                    min_inc = min(min_inc, usage[c] / w)
            bound = variables[v]["bound"]
            if bound > 0:
                min_inc = min(min_inc, bound - value[v])
            mu[v] = min_inc
            value[v] += mu[v]
            if value[v] == bound:
                saturated_vars.remove(v)
        for c in list(cnst_list):
            if not fatpipe[c]:
                for v, w in elements[c]:
                    remaining[c] -= w * mu[v]
                    if remaining[c] < PRECISION:
                        remaining[c] = 0.0
            else:
                for v, w in elements[c]:
                    usage[c] = min(usage[c], w * mu[v])
                remaining[c] -= usage[c]
                if remaining[c] < PRECISION:
                    remaining[c] = 0.0
            if remaining[c] <= 0.0:
                cnst_list.remove(c)
                for v, w in elements[c]:
                    if w > 0 and v in saturated_vars:
                        saturated_vars.remove(v)
    return value
