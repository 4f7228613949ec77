"""BBSched's genetic algorithm: Table 1, determinism, feasibility, accuracy against the exact front."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.errors import ConfigError
from mrsched.schedulers.optim.genetic import GeneticSolver, MaxGenerations
from mrsched.schedulers.optim.pareto import (WindowProblem, exact_front, generational_distance,
                                       non_dominated)

TABLE1 = [[80, 20], [10, 85], [40, 5], [10, 0], [20, 0]]


def random_problem(seed: int, w: int = 20, k: int = 2) -> WindowProblem:
    """A Theta-like window: node counts up to 400 of 4392, burst buffer up to 50 TB."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(1, 400, w)] + [rng.integers(0, 50, w) * 1e12 for _ in range(k - 1)]
    total = np.array([4392.0] + [2160e12] * (k - 1))
    return WindowProblem.build(np.column_stack(cols), total * 0.25, total)


@pytest.mark.parametrize("seed", range(4))
def test_table1_ga_finds_the_true_pareto_set(seed):
    p = WindowProblem.build(TABLE1, [100, 100], [100, 100])
    front = GeneticSolver().solve(p, np.random.default_rng(seed))
    assert sorted(map(tuple, front.objectives.tolist())) == [(80.0, 90.0), (100.0, 20.0)]


def test_same_seed_same_front_and_always_feasible():
    p = random_problem(3)
    a = GeneticSolver().solve(p, np.random.default_rng(11))
    b = GeneticSolver().solve(p, np.random.default_rng(11))
    assert np.array_equal(a.selections, b.selections)
    assert np.array_equal(a.objectives, b.objectives)
    assert p.feasible(a.selections).all()
    assert non_dominated(a.objectives).all()
    assert len({tuple(r) for r in a.selections.tolist()}) == len(a), "no duplicate chromosomes"


def test_ga_is_close_to_the_exact_front_at_window_20():
    # 000 Sect. 3.2.3: G = 500, P = 20 approximates the front closely; a broken crossover,
    # selection or repair leaves GD an order of magnitude higher.
    gds = []
    for seed in range(4):
        p = random_problem(seed)
        exact = exact_front(p)
        ga = GeneticSolver().solve(p, np.random.default_rng(seed))
        gds.append(generational_distance(p.utilisation(ga.objectives), p.utilisation(exact.objectives)))
    assert np.mean(gds) < 0.03, gds


def test_more_generations_do_not_hurt_on_average():
    few, many = [], []
    for seed in range(4):
        p = random_problem(100 + seed)
        ref = p.utilisation(exact_front(p).objectives)
        for gens, out in ((2, few), (500, many)):
            s = GeneticSolver(termination=MaxGenerations(gens)).solve(p, np.random.default_rng(seed))
            out.append(generational_distance(p.utilisation(s.objectives), ref))
    assert np.mean(many) < np.mean(few)


def test_zero_generations_returns_the_repaired_initial_front():
    p = random_problem(5)
    front = GeneticSolver(termination=MaxGenerations(0)).solve(p, np.random.default_rng(0))
    assert p.feasible(front.selections).all() and len(front) >= 1


def test_multiresource_ga_feasible_with_ten_resources():
    p = random_problem(7, w=25, k=10)
    front = GeneticSolver().solve(p, np.random.default_rng(0))
    assert p.feasible(front.selections).all()
    assert non_dominated(front.objectives).all()


@pytest.mark.parametrize("w", [0, 1, 2])
def test_tiny_windows(w):
    p = WindowProblem.build(np.ones((w, 2)), [1, 1], [2, 2])
    front = GeneticSolver().solve(p, np.random.default_rng(0))
    if w:
        assert front.objectives.max(axis=0).tolist() == [1.0, 1.0]
    else:
        assert front.selections.shape == (1, 0)


def test_knob_validation():
    with pytest.raises(ConfigError, match="population"):
        GeneticSolver(population=1)
    with pytest.raises(ConfigError, match="mutation"):
        GeneticSolver(mutation=1.5)
    with pytest.raises(ConfigError, match="generations"):
        MaxGenerations(-1)
    assert MaxGenerations(3).has_terminated(3) and not MaxGenerations(3).has_terminated(2)


def test_windows_wider_than_an_int64_key():
    # Duplicate detection switches from integer keys to packed bits beyond 62 genes.
    p = random_problem(9, w=70)
    front = GeneticSolver(termination=MaxGenerations(30)).solve(p, np.random.default_rng(0))
    assert p.feasible(front.selections).all()
    assert len({tuple(r) for r in front.selections.tolist()}) == len(front)


def test_any_termination_object_works():
    # STYLE.md item 7: the stopping rule is an object; one without a known generation count
    # makes the solver draw its random numbers generation by generation.
    class Calls:
        def __init__(self):
            self.seen = []

        def has_terminated(self, generation: int) -> bool:
            self.seen.append(generation)
            return generation >= 3

    stop = Calls()
    p = WindowProblem.build(TABLE1, [100, 100], [100, 100])
    front = GeneticSolver(termination=stop).solve(p, np.random.default_rng(0))
    assert stop.seen == [0, 1, 2, 3] and p.feasible(front.selections).all()
