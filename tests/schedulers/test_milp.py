"""The HiGHS wrapper of seed 002's policies: MIP start, the incumbent of a solve its budget
stopped, the node limit (in this process, the same answer every time), the time limit honoured
by killing the worker, and the IPSCHED model's symmetry rows and cardinality cuts (same
optimum, found faster)."""

from __future__ import annotations

import time

import numpy as np
import psutil
import pytest

from mrsched.schedulers.optim import milp
from mrsched.schedulers.optim.ipmodel import build_model, cardinality, greedy_start, node_classes, solve_window
from mrsched.schedulers.optim.milp import GRACE, Milp
from mrsched.schedulers.model.cores import core_request


def _knapsack(sizes, values, capacity):
    m = Milp()
    xs = [m.var(cost=v) for v in values]
    m.row([(x, float(s)) for x, s in zip(xs, sizes)], hi=float(capacity))
    return m


def test_a_feasible_start_is_taken_and_an_infeasible_one_ignored():
    m = _knapsack([3, 4, 5], [3.0, 4.0, 5.0], 8)
    good = m.solve(time_limit=10, start=np.array([1.0, 0.0, 0.0]))
    assert good.status == "optimal" and good.started and good.objective == pytest.approx(8.0)
    bad = m.solve(time_limit=10, start=np.array([1.0, 1.0, 1.0]))    # 12 > 8
    assert bad.status == "optimal" and not bad.started and bad.objective == pytest.approx(8.0)
    assert not m.feasible(np.array([0.5, 0.0, 0.0]))                  # not integral


def _loaded(seed: int, nodes: int = 24, jobs: int = 12):
    rng = np.random.default_rng(seed)
    free = rng.integers(0, 9, nodes)
    free[rng.random(nodes) < 0.4] = 0
    gpus = np.minimum(rng.integers(0, 3, nodes), np.where(free > 0, 2, 0))
    reqs = []
    for k in range(jobs):
        kind = rng.integers(0, 3)
        n = int(rng.integers(1, 9))
        if kind == 0:
            reqs.append(core_request(str(k), {"res": 8 * n}))
        elif kind == 1:
            reqs.append(core_request(str(k), {"res": 2 * n, "cores_per_node": 2, "gpus_per_node": 1}))
        else:
            reqs.append(core_request(str(k), {"res": 4 * n, "nodes": n, "gpus_per_node": 2}))
    reqs += reqs[:4]                                                   # identical twins
    return free.tolist(), gpus.tolist(), reqs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cuts_and_start_keep_the_optimum(seed):
    free, gpus, reqs = _loaded(seed)
    weights = [1000.0 - k for k in range(len(reqs))]
    plain = solve_window(weights, reqs, free, gpus, mip_gap=0, start=False, cuts=False)
    fast = solve_window(weights, reqs, free, gpus, mip_gap=0)
    assert plain.status == fast.status == "optimal"
    assert fast.result.objective == pytest.approx(plain.result.objective, rel=1e-9)
    assert fast.result.started


def test_greedy_start_is_slurms_answer_and_feasible():
    free, gpus, reqs = _loaded(7)
    classes = node_classes(free, gpus)
    m, s, y, z, keys = build_model([1.0] * len(reqs), reqs, classes, len(free))
    x = greedy_start(m, s, y, z, keys, reqs, free, gpus)
    assert m.feasible(x) and x[s].sum() >= 1


def test_symmetry_rows_and_cardinality_cuts():
    assert cardinality([5, 1, 3, 2], 6) == 3 and cardinality([7], 6) == 0
    twin = core_request("a", {"res": 8})
    classes = {(8, 0): [0, 1]}
    m, s, *_ = build_model([1.0, 2.0, 3.0], [twin, twin, core_request("c", {"res": 16})], classes, 2)
    rows = {}
    for r, c, v in zip(m.rows, m.cols, m.vals):
        rows.setdefault(r, {})[c] = v
    # the heavier twin (weight 2, job 1) is selected before the lighter (job 0): s1 - s0 >= 0
    assert any(t == {s[1]: 1.0, s[0]: -1.0} and m.lo[r] == 0 for r, t in rows.items())
    # 16 free cores: at most 2 of the jobs (8 + 8) fit together
    assert any(t == {s[0]: 1.0, s[1]: 1.0, s[2]: 1.0} and m.hi[r] == 2 for r, t in rows.items())
    plain, _, *_ = build_model([1.0, 2.0, 3.0], [twin, twin, core_request("c", {"res": 16})], classes, 2, cuts=False)
    assert plain.nb_rows == m.nb_rows - 2


def test_a_stopped_solve_keeps_the_incumbent():
    # a loaded 1,024-node machine and 50 jobs: far from provable in 10 ms, but the MIP start
    # (SLURM's best fit) is an incumbent that is laid out and returned
    rng = np.random.default_rng(3)
    free = rng.integers(0, 9, 1024)
    free[rng.random(1024) < 0.4] = 0
    gpus = np.minimum(rng.integers(0, 3, 1024), np.where(free > 0, 2, 0)).tolist()
    reqs = [core_request(str(k), {"res": 8 * int(rng.integers(4, 80))}) for k in range(50)]
    out = solve_window([1e5 - k for k in range(50)], reqs, free.tolist(), gpus, time_limit=0.01, mip_gap=1e-4)
    assert out.status == "limit" and out.result.stopped_by == "time" and out.result.x is not None and out.layouts
    used = [0] * 1024
    for j, layout in out.layouts.items():
        assert layout.cores == reqs[j].cores
        for n, c in layout.per_node:
            used[n] += c
    assert all(u <= f for u, f in zip(used, free))



def _market_split(rows: int = 4, n: int = 30, seed: int = 0) -> Milp:
    """Cornuejols-Dawande market split as an optimisation: binaries x, dense rows a_i x + e_i =
    half of row i, minimise the slack e. Many seconds for HiGHS; x = 0 is a feasible start."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, (rows, n))
    m = Milp()
    xs = [m.var() for _ in range(n)]
    for i in range(rows):
        half = float(a[i].sum() // 2)
        e = m.var(cost=-1.0, ub=half, integer=False)
        m.row([(x, float(a[i, k])) for k, x in enumerate(xs)] + [(e, 1.0)], lo=half, hi=half)
    return m


def _start(m: Milp) -> np.ndarray:
    x = np.zeros(m.nb_vars)
    for r in range(m.nb_rows):
        x[max(c for row, c in zip(m.rows, m.cols) if row == r)] = m.hi[r]   # the row's slack
    return x


def _children() -> list[int]:
    return [p.pid for p in psutil.Process().children() if p.status() != psutil.STATUS_ZOMBIE]


def test_a_node_limit_stops_the_same_solve_at_the_same_answer():
    """The work budget: HiGHS stops after that many branch-and-bound nodes, in this process (no
    worker), and the same model gives the same incumbent and node count every time (HiGHS on one
    thread without a time limit is deterministic)."""
    m = _market_split()
    before = _children()
    runs = [m.solve(node_limit=200, start=_start(m)) for _ in range(2)]
    assert _children() == before
    for res in runs:
        assert res.status == "limit" and res.stopped_by == "nodes" and res.nodes == 200
        assert res.started and m.feasible(res.x)
    assert np.array_equal(runs[0].x, runs[1].x) and runs[0].objective == runs[1].objective
    done = _knapsack([3, 4, 5], [3.0, 4.0, 5.0], 8).solve(node_limit=200)
    assert done.status == "optimal" and done.stopped_by is None and done.nodes <= 200


def test_a_solve_is_back_by_its_limit():
    m = _market_split()
    milp.start_worker()
    t0 = time.perf_counter()
    res = m.solve(time_limit=0.5, start=_start(m))
    assert time.perf_counter() - t0 < 0.5 + GRACE + 0.5
    assert res.status == "limit" and res.stopped_by == "time" and res.started and m.feasible(res.x)


def test_an_overrun_is_killed_at_the_deadline_and_the_start_answers(monkeypatch):
    """HiGHS past the deadline (as in a presolve that overran its own limit; here the deadline
    is set before HiGHS's limit): the worker is killed and reaped, the MIP start is the
    answer, and the next solve has a fresh worker."""
    m = _market_split()
    milp.start_worker()
    first = milp._worker().proc.pid
    monkeypatch.setattr(milp, "GRACE", -0.9)
    t0 = time.perf_counter()
    res = m.solve(time_limit=1.0, start=_start(m))
    assert time.perf_counter() - t0 < 0.1 + 0.5
    assert res.status == "limit" and res.nodes == -1 and np.array_equal(res.x, _start(m))
    assert not psutil.pid_exists(first)
    assert _children() == [milp._worker().proc.pid]          # the next worker, already starting
    monkeypatch.setattr(milp, "GRACE", GRACE)
    good = _knapsack([3, 4, 5], [3.0, 4.0, 5.0], 8).solve(time_limit=30)
    assert good.status == "optimal" and good.objective == pytest.approx(8.0)


def test_the_worker_dies_with_its_scheduler_process():
    """A scheduler process killed with SIGKILL (no atexit) leaves no HiGHS worker behind."""
    import signal
    import subprocess
    import sys

    code = ("import time; from mrsched.schedulers.optim import milp; milp.start_worker(); "
            "print(milp._worker().proc.pid, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    worker = int(proc.stdout.readline())
    assert psutil.pid_exists(worker)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    deadline = time.monotonic() + 5.0
    while psutil.pid_exists(worker) and psutil.Process(worker).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the HiGHS worker outlived its scheduler process"
        time.sleep(0.05)
