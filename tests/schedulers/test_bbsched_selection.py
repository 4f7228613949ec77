"""Selection rules on plain arrays: seed 000 Table 1 for BBSched and every comparison method."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.errors import ConfigError
from mrsched.schedulers.optim.pareto import WindowProblem
from mrsched.schedulers.policies.window import (WindowSelector, fill_in_order, select_bin_packing,
                                                select_in_order, trivial_selection)

TB = 10**12
# Seed 000 Table 1: 100 nodes, 100 TB; J1..J5 (nodes, burst buffer).
TABLE1 = [[80, 20 * TB], [10, 85 * TB], [40, 5 * TB], [10, 0], [20, 0]]


def table1() -> WindowProblem:
    return WindowProblem.build(TABLE1, [100, 100 * TB], [100, 100 * TB])


def jobs(mask) -> list[int]:
    return [int(i) + 1 for i in np.flatnonzero(mask)]


METHODS = {
    # name: (selector, expected jobs after EASY-like fill at equal walltimes) -- 000 Table 1(b)
    "bbsched": (WindowSelector(method="tradeoff", factor=2.0), [2, 3, 4, 5]),
    "bbsched-exact": (WindowSelector(method="tradeoff", solver="exact", factor=2.0), [2, 3, 4, 5]),
    "naive": (WindowSelector(method="naive"), [1, 4]),
    "weighted": (WindowSelector(method="weighted", solver="exact", weights=(0.5, 0.5)), [2, 3, 4, 5]),
    "weighted-cpu": (WindowSelector(method="weighted", solver="exact", weights=(0.8, 0.2)), [1, 5]),
    "weighted-bb": (WindowSelector(method="weighted", solver="exact", weights=(0.2, 0.8)), [2, 3, 4, 5]),
    "constrained-cpu": (WindowSelector(method="constrained", solver="exact", resource=0), [1, 5]),
    "constrained-bb": (WindowSelector(method="constrained", solver="exact", resource=1), [2, 3, 4, 5]),
    "bin-packing": (WindowSelector(method="bin-packing"), [1, 5]),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_table1_selection(name):
    selector, expected = METHODS[name]
    p = table1()
    chosen = selector.select(p, np.random.default_rng(0))
    assert p.feasible(chosen)[0]
    assert jobs(fill_in_order(p, chosen)) == expected


def test_naive_stops_at_the_first_job_that_does_not_fit():
    # "A naive method selects J1 and backfills J4" (000 Sect. 1): J2 blocks the in-order pass.
    p = table1()
    assert jobs(select_in_order(p)) == [1]
    assert jobs(fill_in_order(p, select_in_order(p))) == [1, 4]


def test_weighted_ga_agrees_with_exact_on_table1():
    p = table1()
    for w, expected in (((0.5, 0.5), [2, 3, 4, 5]), ((0.8, 0.2), [1, 5])):
        s = WindowSelector(method="weighted", solver="ga", weights=w).select(p, np.random.default_rng(1))
        assert jobs(s) == expected


def test_bin_packing_normalises_by_capacity():
    # In raw units the burst-buffer bytes would swamp nodes; normalised, the node-heavy job
    # aligns better with a machine whose nodes are all free and burst buffer mostly used.
    p = WindowProblem.build([[10, 1 * TB], [1, 9 * TB]], [10, 10 * TB], [10, 100 * TB])
    assert jobs(select_bin_packing(p))[0] == 1


def test_trivial_selections_skip_the_solver():
    p = WindowProblem.build([[1, 0], [2, 0]], [5, 5], [5, 5])
    assert trivial_selection(p).tolist() == [True, True]
    p = WindowProblem.build([[6, 0], [7, 0]], [5, 5], [10, 10])
    assert trivial_selection(p).tolist() == [False, False]
    assert trivial_selection(table1()) is None


def test_selector_validation():
    with pytest.raises(ConfigError, match="did you mean 'naive'"):
        WindowSelector(method="naiv")
    with pytest.raises(ConfigError, match="solver"):
        WindowSelector(solver="milp")
    with pytest.raises(ConfigError, match="3 weights for 2 resources"):
        WindowSelector(method="weighted", solver="exact", weights=(0.2, 0.2, 0.6)).select(
            table1(), np.random.default_rng(0))
