"""Pareto utilities: dominance, ranks, the exact front, generational distance, decision rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mrsched.errors import ConfigError, SimulationError, WorkloadError
from mrsched.schedulers.optim.pareto import (ParetoSet, WindowProblem, choose_tradeoff, dominates,
                                       exact_front, frontmost, generational_distance,
                                       non_dominated, pareto_ranks)

# Seed 000 Table 1: 100 nodes, 100 TB; (nodes, TB) per job J1..J5.
TABLE1 = [[80, 20], [10, 85], [40, 5], [10, 0], [20, 0]]


def table1() -> WindowProblem:
    return WindowProblem.build(TABLE1, [100, 100], [100, 100])


def brute_front(problem: WindowProblem):
    """All feasible subsets, their non-dominated objective vectors, and for each vector the
    front-most selection (lexicographic on window order)."""
    w = problem.n_jobs
    rows = np.array(list(itertools.product([True, False], repeat=w)), dtype=bool)
    # product(True, False) enumerates front-most first: the first hit per vector wins.
    rows = rows[problem.feasible(rows)]
    obj = problem.evaluate(rows)
    keep = non_dominated(obj)
    best = {}
    for r, o in zip(rows[keep], obj[keep]):
        best.setdefault(tuple(o), r)
    return best


def test_table1_exact_front_is_j1j5_and_j2j3j4j5():
    front = exact_front(table1())
    got = sorted(tuple(j + 1 for j in front.jobs(i)) for i in range(len(front)))
    assert got == [(1, 5), (2, 3, 4, 5)]
    by_jobs = {tuple(j + 1 for j in front.jobs(i)): tuple(front.objectives[i]) for i in range(len(front))}
    assert by_jobs[(1, 5)] == (100, 20)
    assert by_jobs[(2, 3, 4, 5)] == (80, 90)


def test_table1_decision_rule_picks_j2_to_j5():
    p = table1()
    front = exact_front(p)
    assert front.jobs(choose_tradeoff(front, p.total)) == [1, 2, 3, 4]
    # The burst-buffer gain (0.7) is below 4x the node loss (0.8): keep max node use.
    assert front.jobs(choose_tradeoff(front, p.total, factor=4.0)) == [0, 4]


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_exact_front_matches_brute_force(seed, k):
    rng = np.random.default_rng(seed)
    w = int(rng.integers(1, 11))
    demands = rng.integers(0, 6, size=(w, k)).astype(float)  # small ints: many ties
    free = rng.integers(3, 15, size=k)
    p = WindowProblem.build(demands, free, free + 5)
    front = exact_front(p)
    expected = brute_front(p)
    got = {tuple(o): s for o, s in zip(front.objectives, front.selections)}
    assert set(got) == set(expected)
    for vec, sel in got.items():
        assert np.array_equal(sel, expected[vec]), "front-most selection kept per vector"
    assert p.feasible(front.selections).all()


def test_exact_front_large_window_agrees_with_brute_force_on_objectives():
    rng = np.random.default_rng(42)
    w = 16
    demands = np.c_[rng.integers(1, 60, w), rng.integers(0, 40, w) * 1e12]
    p = WindowProblem.build(demands, [150, 200e12], [400, 500e12])
    front = exact_front(p)
    expected = brute_front(p)
    assert {tuple(o) for o in front.objectives} == set(expected)


def test_exact_front_state_bound_is_a_clear_error():
    rng = np.random.default_rng(0)
    p = WindowProblem.build(rng.random((20, 2)), [5.0, 5.0], [10.0, 10.0])
    with pytest.raises(SimulationError, match="solver='ga'"):
        exact_front(p, max_states=50)


def test_exact_front_when_nothing_fits_is_the_empty_selection():
    p = WindowProblem.build([[5, 0], [3, 9]], [2, 2], [10, 10])
    front = exact_front(p)
    assert len(front) == 1 and not front.selections.any()
    assert choose_tradeoff(front, p.total) == 0


def test_dominance_and_non_dominated_keep_equal_rows():
    assert dominates([2, 1], [1, 1]) and not dominates([1, 1], [1, 1])
    assert not dominates([2, 0], [1, 1])
    f = np.array([[1, 1], [2, 0], [1, 1], [0, 0], [0, 2]])
    assert non_dominated(f).tolist() == [True, True, True, False, True]


@pytest.mark.parametrize("k", [2, 3])
def test_non_dominated_fast_paths_match_pairwise_definition(k):
    rng = np.random.default_rng(k)
    f = rng.integers(0, 12, size=(300, k)).astype(float)
    expected = [not any(dominates(g, x) for g in f) for x in f]
    assert non_dominated(f).tolist() == expected


def test_pareto_ranks_peel_fronts():
    f = np.array([[3, 0], [0, 3], [2, 2], [1, 1], [0, 0], [1, 0]])
    assert pareto_ranks(f).tolist() == [0, 0, 0, 1, 3, 2]
    # Three objectives peel a domination matrix; with a limit, peeling stops once enough
    # rows are ranked and the rest share the next rank.
    f3 = np.column_stack((f, np.zeros(len(f))))
    assert pareto_ranks(f3).tolist() == [0, 0, 0, 1, 3, 2]
    assert pareto_ranks(f3, limit=3).tolist() == [0, 0, 0, 1, 1, 1]


def chain_ranks(f: np.ndarray) -> list[int]:
    """Rank by definition: 0 when undominated, else 1 + the highest rank of a dominator."""
    order = sorted(range(len(f)), key=lambda i: -sum(f[i]))   # dominators have larger sums
    rank = {}
    for i in order:
        rank[i] = max((rank[j] + 1 for j in order if j in rank and dominates(f[j], f[i])), default=0)
    return [rank[i] for i in range(len(f))]


@pytest.mark.parametrize("seed", range(5))
def test_two_objective_sweep_matches_the_definition_with_ties(seed):
    rng = np.random.default_rng(seed)
    f = rng.integers(0, 5, size=(int(rng.integers(1, 50)), 2)).astype(float)
    assert pareto_ranks(f).tolist() == chain_ranks(f)
    f3 = np.column_stack((f, np.zeros(len(f))))
    assert pareto_ranks(f3).tolist() == chain_ranks(f3)


def test_frontmost_is_lexicographic_on_window_order():
    sel = np.array([[0, 1, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]], dtype=bool)
    assert frontmost(sel) == 2
    assert frontmost(sel, [0, 1]) == 1


def test_generational_distance():
    ref = np.array([[1.0, 0.2], [0.8, 0.9]])
    assert generational_distance(ref, ref) == 0.0
    approx = np.array([[1.0, 0.1], [0.8, 0.9]])
    assert generational_distance(approx, ref) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        generational_distance(approx, np.zeros((0, 2)))


def test_multiresource_rule_sums_gains_against_k_times_loss():
    # nodes, bb, gpus as fractions of capacity 1.
    sel = np.eye(3, dtype=bool)
    obj = np.array([[1.0, 0.0, 0.0],    # max nodes
                    [0.8, 0.3, 0.35],   # gains 0.65 > 3 x 0.2 = 0.6 -> qualifies
                    [0.7, 0.5, 0.39]])  # gains 0.89 < 3 x 0.3 = 0.9 -> does not
    front = ParetoSet(sel, obj)
    assert choose_tradeoff(front, np.ones(3)) == 1
    assert choose_tradeoff(front, np.ones(3), factor=4.0) == 0


def test_tradeoff_uses_total_capacity_not_free():
    # Same front, totals differ: 10 TB more BB is 10% of 100 TB but 1% of 1000 TB.
    front = ParetoSet(np.eye(2, dtype=bool), np.array([[50.0, 0.0], [48.0, 10.0]]))
    assert choose_tradeoff(front, np.array([100.0, 100.0])) == 1
    assert choose_tradeoff(front, np.array([100.0, 1000.0])) == 0


def test_problem_repair_drops_from_the_back():
    p = table1()
    x = np.array([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [1, 0, 0, 1, 1]], dtype=bool)
    assert p.repair(x).astype(int).tolist() == [[1, 0, 0, 0, 0], [0, 1, 1, 1, 1],
                                                [1, 0, 0, 1, 0]]


def test_problem_validation_names_job_and_field():
    with pytest.raises(WorkloadError, match="job j2.*burst_buffer"):
        WindowProblem.build([[1, 0], [1, -3]], [2, 2], [2, 2], jobs=["j1", "j2"])
    with pytest.raises(ConfigError, match="shapes"):
        WindowProblem.build([[1, 0, 0]], [2, 2], [2, 2])
    with pytest.raises(ConfigError, match="total capacity"):
        WindowProblem.build([[1, 0]], [2, 0], [2, 0])


def test_exact_front_refuses_windows_beyond_62_jobs():
    p = WindowProblem.build(np.ones((63, 2)), [1.0, 1.0], [100.0, 100.0])
    with pytest.raises(ConfigError, match="solver='ga'"):
        exact_front(p)
