"""MultiSched (seed 003, Fan et al.): BBSched generalised to many resources.

Differences from BBSched (003 Sect. 2): the window is ``window_percent`` % of the queue
(knob k in [0, 100]; 0 = plain base order, 100 = the whole queue); jobs that do not fit
alone in what is free are filtered out before the search; below ``exhaustive_below`` jobs
the true Pareto set is enumerated, above it the genetic algorithm of 000 runs; the decision
rule starts from the highest node use and switches to a solution whose summed utilisation
gains on the other resources exceed ``tradeoff_factor_per_resource`` x (number of
resources) x its node loss (Decision, ALGORITHMS.md: this gives 000's 2x with burst buffer
only and its 4x with three extra objectives, 000 Sect. 5); only resources some job of the
window asks for count. Resources come from job fields and the platform
(``resources="auto"``: burst buffer, GPUs, ``sched-config`` counters and the ``counters``
knob's, e.g. the five of ``mrsched workload multires``).

Decision: the window holds ceil(k% x queue length) jobs, so any k > 0 considers at least
the head job. Starvation bound and EASY backfilling as in BBSched.

Examples
--------
>>> from mrsched.schedulers.policies.multisched import MultiSched
>>> MultiSched(window_percent=50.0).get_params()["exhaustive_below"]
10
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mrsched.schedulers.optim.genetic import GeneticSolver, MaxGenerations
from mrsched.schedulers.optim.pareto import WindowProblem, choose_tradeoff, exact_front
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.policies.window import WindowPolicy, trivial_selection

__all__ = ["MultiSchedSelector", "MultiSched"]


@dataclass(frozen=True)
class MultiSchedSelector:
    """003's optimisation engine (Fig. 3): pre-filter, exhaustive or genetic, decision rule."""

    exhaustive_below: int = 10
    factor_per_resource: float = 1.0
    genetic: GeneticSolver = field(default_factory=GeneticSolver)

    def select(self, problem: WindowProblem, rng: np.random.Generator) -> np.ndarray:
        trivial = trivial_selection(problem)
        if trivial is not None:
            return trivial
        keep = np.flatnonzero(np.all(problem.demands <= problem.free, axis=1))
        # Decision: a resource no remaining job asks for is not scheduled this round (its
        # objective is 0 everywhere); it neither enters the search nor raises the factor.
        cols = np.flatnonzero((np.arange(problem.n_resources) == 0)
                              | np.any(problem.demands[keep] > 0, axis=0))
        sub = WindowProblem.build(problem.demands[np.ix_(keep, cols)], problem.free[cols],
                                  problem.total[cols], [problem.resources[c] for c in cols])
        if len(keep) < self.exhaustive_below:
            front = exact_front(sub)
        else:
            front = self.genetic.solve(sub, rng)
        best = choose_tradeoff(front, sub.total,
                               factor=self.factor_per_resource * sub.n_resources)
        chosen = np.zeros(problem.n_jobs, dtype=bool)
        chosen[keep[front.selections[best]]] = True
        return chosen


class MultiSched(WindowPolicy):
    """``multisched``: window = k% of the queue, pre-filter, exhaustive or GA, many resources."""

    name = "multisched"
    _parameter_constraints = {
        "window_percent": Param(float, min=0.0, max=100.0, help="percentage of the queue in the window "
                                                                "(003's knob k)"),
        "exhaustive_below": Param(int, min=0, help="enumerate the Pareto set when fewer jobs remain "
                                                   "after the pre-filter (003: 10)"),
        "tradeoff_factor_per_resource": Param(float, min=0.0, help="switch when the other resources' gains "
                                                                   "exceed this x number of resources x "
                                                                   "node loss"),
    }

    def __init__(self, *, window_percent: float = 20.0, base_order: str = "fcfs",
                 starvation_bound: int = 50, resources: str = "auto", exhaustive_below: int = 10,
                 generations: int = 500, population: int = 20, mutation: float = 0.0005, seed: int = 0,
                 tradeoff_factor_per_resource: float = 1.0, reserve: str = "all", counters: str = ""):
        self.window_percent = window_percent
        self.base_order = base_order
        self.starvation_bound = starvation_bound
        self.resources = resources
        self.exhaustive_below = exhaustive_below
        self.generations = generations
        self.population = population
        self.mutation = mutation
        self.seed = seed
        self.tradeoff_factor_per_resource = tradeoff_factor_per_resource
        self.reserve = reserve
        self.counters = counters

    def window_size(self, queue_length: int) -> int:
        # Guard the float product against rounding up an exact integer (e.g. 20% of 10).
        return min(queue_length, math.ceil(self.window_percent * queue_length / 100.0 - 1e-9))

    def make_selector(self, resources):
        genetic = GeneticSolver(population=self.population, mutation=self.mutation,
                                termination=MaxGenerations(self.generations))
        return MultiSchedSelector(exhaustive_below=self.exhaustive_below,
                                  factor_per_resource=float(self.tradeoff_factor_per_resource),
                                  genetic=genetic)
