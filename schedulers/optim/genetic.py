"""BBSched's multi-objective genetic algorithm (seed 000 Sect. 3.2.2-3.2.3).

The optimiser is separate from the problem (:class:`~mrsched.schedulers.optim.pareto.WindowProblem`)
and from the stopping rule (:class:`MaxGenerations`), as in pymoo (STYLE.md item 7). The
whole population evolves with numpy array operations: one generation is a handful of
vectorised steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from mrsched.errors import ConfigError
from mrsched.schedulers.optim.pareto import ParetoSet, WindowProblem, _sort_frontmost, pareto_ranks

__all__ = ["Termination", "MaxGenerations", "GeneticSolver"]


class Termination(Protocol):
    """A stopping rule: asked before each generation (pymoo-style, STYLE.md item 7)."""

    def has_terminated(self, generation: int) -> bool: ...


@dataclass(frozen=True)
class MaxGenerations:
    """Stop after ``n_max`` generations (000: G = 500). Iterations, never wall clock."""

    n_max: int = 500

    def __post_init__(self):
        if not isinstance(self.n_max, (int, np.integer)) or self.n_max < 0:
            raise ConfigError(f"generations must be an integer >= 0, got {self.n_max!r}",
                              field="generations")

    def has_terminated(self, generation: int) -> bool:
        return generation >= self.n_max


@dataclass(frozen=True)
class GeneticSolver:
    """Approximate the Pareto set of a window problem (000 Sect. 3.2.2, Fig. 3).

    Each generation: ``population`` children from single-point crossovers of two random
    distinct parents, bit-flip mutation with probability ``mutation`` per gene, repair
    (drop selected jobs from the back of the window until the selection fits), then
    elitist selection of ``population`` survivors out of parents + children by Pareto
    rank, then age (newer first); duplicates are removed, the older copy is kept.
    Survivors age by one. The answer is the rank-0 set of the last population.

    Decision (ALGORITHMS.md): the initial population is uniform random bits, repaired;
    it may hold fewer than ``population`` distinct chromosomes when the window is tiny.
    """

    population: int = 20
    mutation: float = 0.0005
    termination: Termination = field(default_factory=MaxGenerations)

    def __post_init__(self):
        if not isinstance(self.population, (int, np.integer)) or self.population < 2:
            raise ConfigError(f"population must be an integer >= 2, got {self.population!r}",
                              field="population")
        if not (0.0 <= float(self.mutation) <= 1.0):
            raise ConfigError(f"mutation must be a probability in [0, 1], got {self.mutation!r}",
                              field="mutation")

    def solve(self, problem: WindowProblem, rng: np.random.Generator) -> ParetoSet:
        w = problem.n_jobs
        if w == 0:
            return ParetoSet(np.zeros((1, 0), dtype=bool), np.zeros((1, problem.n_resources)))
        size = int(self.population)
        key = _Keys(w)
        pop = problem.repair(rng.random((size, w)) < 0.5)
        pop = pop[key.first_unique(pop)]
        age = np.zeros(len(pop), dtype=np.int64)
        obj = problem.evaluate(pop)
        positions = np.arange(w)
        n_pairs = (size + 1) // 2
        # Hot loop: draw every generation's random numbers at once (one call instead of
        # four per generation); parents are drawn as uniforms scaled to the population
        # size of that generation, which shrinks when duplicates are removed.
        gens = getattr(self.termination, "n_max", None)  # known up front for MaxGenerations
        if gens is not None and gens * 2 * n_pairs * w > 4_000_000:
            gens = None   # very wide windows: draw per generation to bound memory
        if gens is not None:
            draws = rng.random((gens, 2, n_pairs))
            cuts = rng.integers(1, max(w, 2), size=(gens, n_pairs))
            flips = rng.random((gens, 2 * n_pairs, w)) < self.mutation
        generation = 0
        while not self.termination.has_terminated(generation):
            if gens is not None:
                u, cut, flip = draws[generation], cuts[generation], flips[generation]
            else:
                u = rng.random((2, n_pairs))
                cut = rng.integers(1, max(w, 2), size=n_pairs)
                flip = rng.random((2 * n_pairs, w)) < self.mutation
            m = len(pop)
            # Crossover: two distinct random parents, one random cut in 1..w-1.
            first = (u[0] * m).astype(np.int64)
            second = (first + 1 + (u[1] * (m - 1)).astype(np.int64)) % m if m > 1 else first
            a, b = pop[first], pop[second]
            if w > 1:
                head = positions[None, :] < cut[:, None]
                children = np.concatenate((np.where(head, a, b), np.where(head, b, a)))
            else:
                children = np.concatenate((a, b))
            # Mutation: flip each gene with a small probability.
            children = problem.repair((children ^ flip)[:size])
            pool = np.concatenate((pop, children))
            pool_age = np.concatenate((age, np.zeros(len(children), dtype=np.int64)))
            pool_obj = np.concatenate((obj, children.astype(float) @ problem.demands))
            uniq = key.first_unique(pool)  # parents come first: the older copy survives
            if len(uniq) < len(pool):
                pool, pool_age, pool_obj = pool[uniq], pool_age[uniq], pool_obj[uniq]
            # Elitist selection: Pareto rank first, then newer chromosomes first.
            rank = pareto_ranks(pool_obj, limit=size)
            chosen = np.lexsort((pool_age, rank))[:size]
            pop, age, obj = pool[chosen], pool_age[chosen] + 1, pool_obj[chosen]
            generation += 1
        best = pareto_ranks(obj) == 0
        sel, val = pop[best], obj[best]
        order = _sort_frontmost(sel)
        return ParetoSet(selections=sel[order], objectives=val[order])


class _Keys:
    """Duplicate detection on chromosomes: one integer per row while w fits in 62 bits."""

    def __init__(self, w: int):
        self.w = w
        self.bits = (np.int64(1) << np.arange(w, dtype=np.int64)) if w <= 62 else None

    def first_unique(self, x: np.ndarray) -> np.ndarray:
        """Indices of the first occurrence of each distinct row, in original order."""
        if self.bits is not None:
            keys = x.astype(np.int64) @ self.bits
            _, idx = np.unique(keys, return_index=True)
        else:
            _, idx = np.unique(np.packbits(x, axis=1), axis=0, return_index=True)
        return np.sort(idx)
