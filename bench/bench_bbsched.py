"""Decision time of BBSched / MultiSched per invocation, and the GA's distance to the true front.

Run on demand (not a test): ``.venv/bin/python bench/bench_bbsched.py [--problems 10]``.
Windows are Theta-like (seed 000 Table 2: 4,392 nodes, 2.16 PB of burst buffer; S4-like
requests: 75% of the jobs ask 20-285 TB; 1-1024 nodes, log-uniform) with 10-50% of each
resource free, so that burst buffer binds and the Pareto front holds real trade-offs (with
Theta's 128-node minimum the front is nearly always one point). Prints one table per question; times are means over
the problems, and every ratio is against the naive in-order selection timed in this process,
beside the papers' targets (000: < 0.2 s at w = 20; 003: < 0.6 s with ten resources).
GD is the generational distance (000 Sect. 3.2.3) in utilisation space to the exact front;
the exact solver's own GD is 0 by construction.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mrsched.errors import SimulationError
from mrsched.schedulers.optim.genetic import GeneticSolver
from mrsched.schedulers.optim.pareto import WindowProblem, exact_front, generational_distance
from mrsched.schedulers.policies.multisched import MultiSchedSelector
from mrsched.schedulers.policies.window import WindowSelector, select_in_order

NODES, BB = 4392.0, 2.16e15
TB = 1e12


def theta_window(rng: np.random.Generator, w: int, extra: int = 0) -> WindowProblem:
    """A window of ``w`` jobs; ``extra`` more resources (normal requests, as in 003 Sect. 3)."""
    nodes = np.round(np.exp(rng.uniform(0.0, np.log(1024.0), w)))
    bb = np.where(rng.random(w) < 0.75, rng.uniform(20, 285, w) * TB, 0.0)
    cols, total = [nodes, bb], [NODES, BB]
    for _ in range(extra):
        cols.append(np.maximum(rng.normal(100.0, 40.0, w), 0.0).round())
        total.append(100.0 * w / 4)
    total = np.array(total)
    free = total * rng.uniform(0.1, 0.5, len(total))
    names = ["nodes", "burst_buffer"] + [f"r{j}" for j in range(extra)]
    return WindowProblem.build(np.column_stack(cols), free, total, names)


def timed(fn, *args):
    """CPU seconds of one call: the machine may be shared, wall time would measure the
    neighbours (wall time is reported beside it in the tables)."""
    t = time.process_time()
    out = fn(*args)
    return time.process_time() - t, out


def wall(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def naive_time(windows) -> float:
    """Baseline: CPU seconds of the naive in-order selection, averaged over 200 calls."""
    t = time.process_time()
    for _ in range(200):
        for p in windows:
            select_in_order(p)
    return (time.process_time() - t) / (200 * len(windows))


def bench_bbsched(problems: int, seed: int) -> None:
    print(f"BBSched decision per invocation ({problems} Theta-like windows each; ratio vs naive)")
    print(f"{'w':>4} {'solver':>7} {'cpu s':>9} {'max cpu':>9} {'wall s':>9} {'x naive':>10} "
          f"{'front':>6} {'GD':>8}")
    for w in (10, 20, 50):
        rng = np.random.default_rng(seed + w)
        windows = [theta_window(rng, w) for _ in range(problems)]
        naive = naive_time(windows)
        exact_fronts = []
        for solver in ("exact", "ga"):
            times, walls, sizes, gds = [], [], [], []
            failed = 0
            for i, p in enumerate(windows):
                sel = WindowSelector(method="tradeoff", solver=solver, factor=2.0)
                try:
                    dt, _ = timed(sel.select, p, np.random.default_rng(i))
                except SimulationError:
                    failed += 1
                    if solver == "exact":
                        exact_fronts.append(None)
                    continue
                times.append(dt)
                walls.append(wall(sel.select, p, np.random.default_rng(i)))
                if solver == "exact":
                    front = exact_front(p)
                    exact_fronts.append(front)
                    gds.append(0.0)
                else:
                    front = GeneticSolver().solve(p, np.random.default_rng(i))
                    ref = exact_fronts[i]
                    if ref is not None:
                        gds.append(generational_distance(p.utilisation(front.objectives),
                                                         p.utilisation(ref.objectives)))
                sizes.append(len(front))
            if not times:
                print(f"{w:>4} {solver:>7} {'state limit on every window':>40}")
                continue
            gd = f"{np.mean(gds):8.4f}" if gds else f"{'n/a':>8}"
            note = f"  ({failed} over the state limit)" if failed else ""
            print(f"{w:>4} {solver:>7} {np.mean(times):9.4f} {np.max(times):9.4f} {np.mean(walls):9.4f} "
                  f"{np.mean(times) / naive:10.0f} {np.mean(sizes):6.1f} {gd}{note}")
    print("target (000 Sect. 3.2.3): GA < 0.2 s per invocation at w = 20\n")


def bench_multisched(problems: int, seed: int) -> None:
    print(f"MultiSched decision per invocation, window of 30 jobs ({problems} windows each)")
    print(f"{'resources':>9} {'cpu s':>9} {'max cpu':>9} {'wall s':>9} {'x naive':>10} {'after filter':>13}")
    for k in range(2, 11):
        rng = np.random.default_rng(seed + 100 + k)
        windows = [theta_window(rng, 30, extra=k - 2) for _ in range(problems)]
        naive = naive_time(windows)
        sel = MultiSchedSelector()
        times = [timed(sel.select, p, np.random.default_rng(i))[0] for i, p in enumerate(windows)]
        walls = [wall(sel.select, p, np.random.default_rng(i)) for i, p in enumerate(windows)]
        kept = np.mean([np.all(p.demands <= p.free, axis=1).sum() for p in windows])
        print(f"{k:>9} {np.mean(times):9.4f} {np.max(times):9.4f} {np.mean(walls):9.4f} "
              f"{np.mean(times) / naive:10.0f} "
              f"{kept:13.1f}")
    print("target (003 Sect. 3): < 0.6 s with ten resources")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench_bbsched(args.problems, args.seed)
    bench_multisched(args.problems, args.seed)


if __name__ == "__main__":
    main()
