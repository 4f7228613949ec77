"""Simulated annealing over permutations, apart from any scheduling problem (STYLE.md Do 7).

The problem is anything with ``evaluate(order, first_changed, bound) -> candidate | None`` (a
candidate has a ``score``, lower is better; None when the score would not be below ``bound``)
and ``commit(candidate)`` (the accepted state, which later evaluations may reuse from position
``first_changed`` on). The acceptance draw ``u`` is made before the evaluation, so the
acceptance test ``u < exp((prev - score) / T)`` becomes the bound ``score < prev - T ln u``:
a problem whose partial scores only grow can stop evaluating a rejected move early, with
exactly the decisions of a full evaluation. The stopping rule is a
:class:`CoolingSchedule`: a fixed number of iterations, never wall-clock time, so a seeded run
is reproducible on any machine (STYLE.md Do 4).

Seed 001, Sect. 3.3 and Algorithm 2: the move swaps two random positions; a worse candidate is
accepted with probability ``exp((prev - score) / T)``; ``T <- max(rate * T, t_min)`` after
each cooling step (30 steps x 6 moves, rate 0.9, floor 1; T0 = worst - best initial score,
following Ben-Ameur's initial temperature method cited there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np


class Candidate(Protocol):
    order: Sequence[int]
    score: float


class PermutationProblem(Protocol):
    def evaluate(self, order: list[int], first_changed: int = 0,
                 bound: float = math.inf) -> Candidate | None: ...

    def commit(self, candidate: Candidate) -> None: ...


@dataclass(frozen=True)
class CoolingSchedule:
    """Iteration budget and geometric cooling (seed 001 Alg. 2: 30 x 6, 0.9, floor 1)."""

    steps: int = 30
    moves: int = 6
    rate: float = 0.9
    t_min: float = 1.0

    @property
    def iterations(self) -> int:
        return self.steps * self.moves


@dataclass
class AnnealingResult:
    best: Candidate
    evaluations: int
    accepted: int


def swap_move(order: list[int], rng: np.random.Generator) -> tuple[list[int], int]:
    """Swap two distinct random positions; returns the new order and the first changed index."""
    n = len(order)
    i, j = swap_pair(n, rng)
    if i > j:
        i, j = j, i
    new = list(order)
    new[i], new[j] = new[j], new[i]
    return new, i


def swap_pair(n: int, rng: np.random.Generator) -> tuple[int, int]:
    """``rng.choice(n, size=2, replace=False)`` as two ints, drawing exactly what it draws.

    ``Generator.choice`` without replacement and without ``p`` samples by Floyd's algorithm
    (two bounded draws: in ``[0, n-2]``, then in ``[0, n-1]``, which becomes ``n-1`` if equal
    to the first) and then shuffles the two (one more bounded draw in ``[0, 1]``). The same
    bounded draws through ``integers`` (same generator routine) cost less;
    tests/schedulers/test_plan_lists.py compares both streams draw by draw (a numpy whose
    ``choice`` samples otherwise fails it)."""
    integers = rng.integers
    a = int(integers(n - 1))
    b = int(integers(n))
    if b == a:
        b = n - 1
    if integers(2):          # choice's shuffle of the pair: slot 1 swaps with slot (draw)
        return a, b
    return b, a


def anneal(problem: PermutationProblem, start: Candidate, t0: float, rng: np.random.Generator,
           schedule: CoolingSchedule = CoolingSchedule()) -> AnnealingResult:
    """Minimise ``problem``'s score from ``start`` (already committed in ``problem``)."""
    current = best = start
    temperature = float(t0)
    evaluations = accepted = 0
    if len(start.order) < 2:
        return AnnealingResult(best, 0, 0)
    for _ in range(schedule.steps):
        for _ in range(schedule.moves):
            order, first = swap_move(current.order, rng)     # copies the order
            # draw every iteration so the random stream does not depend on the scores' values
            u = rng.random()
            cand = problem.evaluate(order, first, acceptance_bound(current.score, temperature, u))
            evaluations += 1
            if cand is not None:
                current = cand
                problem.commit(cand)
                accepted += 1
                if cand.score < best.score:
                    best = cand
        temperature = max(schedule.rate * temperature, schedule.t_min)
    return AnnealingResult(best, evaluations, accepted)


def acceptance_bound(prev: float, temperature: float, u: float) -> float:
    """Scores strictly below this are accepted: ``u < exp((prev - score) / T)`` (seed 001 Alg. 2)
    rewritten as ``score < prev - T ln u``; at T <= 0 only improvements pass."""
    if temperature <= 0:
        return prev
    if u <= 0.0:
        return math.inf
    return prev - temperature * math.log(u)
