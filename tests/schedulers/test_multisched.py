"""MultiSched (seed 003): window = k% of the queue, pre-filter, exhaustive/GA, generalised rule."""

from __future__ import annotations

import numpy as np
import pytest
from engine_run import begins_data, simulate

from mrsched.errors import ConfigError
from mrsched.schedulers.optim.genetic import GeneticSolver, MaxGenerations
from mrsched.schedulers.optim.pareto import WindowProblem, exact_front
from mrsched.schedulers.policies.multisched import MultiSched, MultiSchedSelector
from mrsched.schedulers.registry import make_policy, make_scheduler

TB = 10**12


@pytest.mark.parametrize("percent, queue, size", [(0, 10, 0), (20, 10, 2), (25, 3, 1), (100, 7, 7),
                                                  (50, 0, 0), (10, 1, 1)])
def test_window_is_k_percent_of_the_queue(percent, queue, size):
    assert MultiSched(window_percent=float(percent)).window_size(queue) == size


def gpu_machine_jobs():
    """10 nodes x 2 GPUs, 10 TB: J1+J2 fill the nodes; J2+J3+J4 trade 20% of the nodes for
    20% of the burst buffer and 60% of the GPUs."""
    return [dict(id=1, subtime=0, runtime=100, walltime=100, res=8),
            dict(id=2, subtime=0, runtime=100, walltime=100, res=2),
            dict(id=3, subtime=0, runtime=100, walltime=100, res=3, burst_buffer=TB, gpus_per_node=2),
            dict(id=4, subtime=0, runtime=100, walltime=100, res=3, burst_buffer=TB, gpus_per_node=2)]


def run_gpu_machine(policy: str, options: dict) -> list[int]:
    res = simulate(make_scheduler(policy, options),
                   begins_data(10, storage=[{"bb_capacity": 10 * TB}], gpus=[2] * 10),
                   gpu_machine_jobs())
    return sorted(int(k.split("!")[1]) for k, t in res["start"].items() if t == 0)


def test_generalised_rule_trades_nodes_for_gpus_and_bb():
    # MultiSched sees nodes, burst buffer and GPUs: gains 0.2 + 0.6 > 3 x 0.2 node loss.
    assert run_gpu_machine("multisched", {"window_percent": "100"}) == [2, 3, 4]
    # BBSched sees nodes and burst buffer only: gain 0.2 < 2 x 0.2, keeps J1 + J2.
    assert run_gpu_machine("bbsched", {"solver": "exact", "window": "4"}) == [1, 2]
    # MultiSched restricted to the same two resources agrees with BBSched.
    assert run_gpu_machine("multisched", {"window_percent": "100",
                                          "resources": "nodes,burst_buffer"}) == [1, 2]


def test_zero_percent_window_is_the_base_order_with_easy():
    assert run_gpu_machine("multisched", {"window_percent": "0"}) == [1, 2]


def random_problem(seed: int, w: int, k: int, free: float = 0.5) -> WindowProblem:
    rng = np.random.default_rng(seed)
    total = np.array([100.0] + [50.0] * (k - 1))
    d = np.column_stack([rng.integers(1, 40, w)] + [rng.integers(0, 25, w) for _ in range(k - 1)])
    return WindowProblem.build(d, total * free, total)


def test_prefilter_and_exhaustive_search_give_the_exact_choice():
    p = random_problem(1, 14, 4, free=0.4)
    alone = np.all(p.demands <= p.free, axis=1)
    assert 0 < alone.sum() < 10 and not alone.all()       # some jobs filtered, < 10 remain
    chosen = MultiSchedSelector().select(p, np.random.default_rng(0))
    assert p.feasible(chosen)[0] and not (chosen & ~alone).any()
    # Same answer as the rule applied to the exact front of the whole window.
    from mrsched.schedulers.optim.pareto import choose_tradeoff
    front = exact_front(p)
    assert chosen.tolist() == front.selections[choose_tradeoff(front, p.total, factor=4.0)].tolist()


def test_genetic_path_above_the_exhaustive_limit_is_feasible_and_seeded():
    p = random_problem(2, 30, 10)
    sel = MultiSchedSelector(exhaustive_below=2,
                             genetic=GeneticSolver(termination=MaxGenerations(60)))
    a = sel.select(p, np.random.default_rng(3))
    b = sel.select(p, np.random.default_rng(3))
    assert p.feasible(a)[0] and a.any() and a.tolist() == b.tolist()


def test_knobs():
    p = make_policy("multisched", window_percent=50.0, exhaustive_below=5)
    assert p.get_params()["window_percent"] == 50.0
    with pytest.raises(ConfigError, match="window_percent"):
        make_policy("multisched", window_percent=150.0)
    with pytest.raises(ConfigError, match="did you mean 'window_percent'"):
        make_policy("multisched", window=5)
