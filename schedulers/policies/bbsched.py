"""BBSched (seed 000, Fan et al. HPDC'19) and the methods it is compared with (000 Sect. 4.3).

All of them take a window of ``window`` jobs from the base queue (FCFS for Cori, WFP for
Theta), pick jobs from it, bound starvation, then run EASY backfilling
(:class:`~mrsched.schedulers.policies.window.WindowPolicy`). They differ only in the pick:

========================  =====================================================================
``bbsched``               Pareto set of (node use, burst-buffer use) by the genetic algorithm
                          (``solver="ga"``; ``"exact"`` for the true front), then the
                          decision rule of 000 Sect. 3.2.4 with ``tradeoff_factor`` (2x)
``naive``                 in order until a job does not fit (Slurm; 000's Baseline)
``weighted``              max ``node_weight`` x node use + (1 - ``node_weight``) x BB use (0.5)
``weighted-cpu``          the same with 0.8 / 0.2
``weighted-bb``           the same with 0.2 / 0.8
``constrained-cpu``       max node use under the burst-buffer constraint
``constrained-bb``        max burst-buffer use under the node constraint
``bin-packing``           Tetris alignment score, normalised by capacity, greedy
========================  =====================================================================

Decisions (where 000 is silent, see ALGORITHMS.md): GA infeasible chromosomes are repaired
by dropping jobs from the back of the window; ties go to jobs nearest the window front;
weighted and constrained optima are exact by default (``solver="exact"``); with more than
two ``resources`` the weighted methods split ``1 - node_weight`` evenly over the others.

Examples
--------
>>> from mrsched.schedulers.policies.bbsched import BBSched
>>> BBSched(window=10).get_params()["window"]
10
"""

from __future__ import annotations

from mrsched.errors import ConfigError, suggest
from mrsched.schedulers.optim.genetic import GeneticSolver, MaxGenerations
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.policies.window import WindowPolicy, WindowSelector

__all__ = ["BBSched", "Naive", "Weighted", "Constrained", "BinPacking"]


def _genetic(policy) -> GeneticSolver:
    return GeneticSolver(population=policy.population, mutation=policy.mutation,
                         termination=MaxGenerations(policy.generations))


class BBSched(WindowPolicy):
    """``bbsched``: Pareto set of the window (GA or exact), then 000's 2x trade-off rule."""

    name = "bbsched"
    _parameter_constraints = {
        "tradeoff_factor": Param(float, min=0.0, help="switch to a solution whose BB gain exceeds this "
                                                      "many times its node loss (000: 2)"),
    }

    def __init__(self, *, window: int = 20, base_order: str = "fcfs", starvation_bound: int = 50,
                 resources: str = "nodes,burst_buffer", solver: str = "ga", generations: int = 500,
                 population: int = 20, mutation: float = 0.0005, seed: int = 0,
                 tradeoff_factor: float = 2.0, reserve: str = "all", counters: str = ""):
        self.window = window
        self.base_order = base_order
        self.starvation_bound = starvation_bound
        self.resources = resources
        self.solver = solver
        self.generations = generations
        self.population = population
        self.mutation = mutation
        self.seed = seed
        self.tradeoff_factor = tradeoff_factor
        self.reserve = reserve
        self.counters = counters

    def make_selector(self, resources):
        return WindowSelector(method="tradeoff", solver=self.solver, factor=float(self.tradeoff_factor),
                              genetic=_genetic(self))


class Naive(WindowPolicy):
    """``naive``: 000's Baseline, window jobs in order until one does not fit, then EASY."""

    name = "naive"

    def __init__(self, *, window: int = 20, base_order: str = "fcfs", starvation_bound: int = 50,
                 resources: str = "nodes,burst_buffer", reserve: str = "all", counters: str = ""):
        self.window = window
        self.base_order = base_order
        self.starvation_bound = starvation_bound
        self.resources = resources
        self.reserve = reserve
        self.counters = counters

    def make_selector(self, resources):
        return WindowSelector(method="naive")


class Weighted(WindowPolicy):
    """``weighted``: one optimum of a weighted sum of utilisations (000 Sect. 4.3: 0.5 / 0.5)."""

    name = "weighted"
    _parameter_constraints = {
        "node_weight": Param(float, min=0.0, max=1.0, help="weight of node utilisation; the other "
                                                           "resources share the rest"),
    }

    def __init__(self, *, window: int = 20, base_order: str = "fcfs", starvation_bound: int = 50,
                 resources: str = "nodes,burst_buffer", node_weight: float = 0.5, solver: str = "exact",
                 generations: int = 500, population: int = 20, mutation: float = 0.0005, seed: int = 0,
                 reserve: str = "all", counters: str = ""):
        self.window = window
        self.base_order = base_order
        self.starvation_bound = starvation_bound
        self.resources = resources
        self.node_weight = node_weight
        self.solver = solver
        self.generations = generations
        self.population = population
        self.mutation = mutation
        self.seed = seed
        self.reserve = reserve
        self.counters = counters

    def make_selector(self, resources):
        k = len(resources)
        rest = (1.0 - self.node_weight) / (k - 1) if k > 1 else 0.0
        weights = (float(self.node_weight) if k > 1 else 1.0,) + (rest,) * (k - 1)
        return WindowSelector(method="weighted", solver=self.solver, weights=weights,
                              genetic=_genetic(self))


class Constrained(WindowPolicy):
    """``constrained``: maximise the ``target`` resource's use under the others' capacity."""

    name = "constrained"
    _parameter_constraints = {
        "target": Param(str, help="the resource maximised (nodes, burst_buffer, gpus or a counter)"),
    }

    def __init__(self, *, window: int = 20, base_order: str = "fcfs", starvation_bound: int = 50,
                 resources: str = "nodes,burst_buffer", target: str = "nodes", solver: str = "exact",
                 generations: int = 500, population: int = 20, mutation: float = 0.0005, seed: int = 0,
                 reserve: str = "all", counters: str = ""):
        self.window = window
        self.base_order = base_order
        self.starvation_bound = starvation_bound
        self.resources = resources
        self.target = target
        self.solver = solver
        self.generations = generations
        self.population = population
        self.mutation = mutation
        self.seed = seed
        self.reserve = reserve
        self.counters = counters

    def make_selector(self, resources):
        if self.target not in resources:
            raise ConfigError(f"policy '{self.policy_name()}': target '{self.target}' is not among the "
                              f"optimised resources", field="target", hint=suggest(self.target, resources))
        return WindowSelector(method="constrained", solver=self.solver,
                              resource=resources.index(self.target), genetic=_genetic(self))


class BinPacking(WindowPolicy):
    """``bin-packing``: 000's Bin_Packing, Tetris alignment score normalised by capacity."""

    name = "bin-packing"

    def __init__(self, *, window: int = 20, base_order: str = "fcfs", starvation_bound: int = 50,
                 resources: str = "nodes,burst_buffer", reserve: str = "all", counters: str = ""):
        self.window = window
        self.base_order = base_order
        self.starvation_bound = starvation_bound
        self.resources = resources
        self.reserve = reserve
        self.counters = counters

    def make_selector(self, resources):
        return WindowSelector(method="bin-packing")
