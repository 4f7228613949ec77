"""Decision cost of IPSCHED and AUCSCHED (seed 002) on Machine-L: MILP variables, constraints
and HiGHS solve time per invocation against the window size, and how often a whole run
halved its window.

Run on demand (not a test): ``.venv/bin/python bench/bench_ipsched.py [--problems 8]
[--simulate]``. Two kinds of problems, each a Machine-L (1,024 nodes x 8 cores x 2 GPUs) state
and a window of the first 50 / 100 / 200 queued jobs in priority order:

- *simulated* (representative): states a scheduler actually meets. Mixes III, IV and V (1,000
  jobs at t = 0, so the queue stays long) run under ``slurm-bf``; at ``--problems`` rounds spread
  over the busy part of the run (at least half the cores in use, 200 jobs queued) the free cores
  and GPUs per node and the queue (with its priorities) are recorded before the round decides.
- *synthetic* (stress): every node has 0-8 free cores and 0-2 free GPUs at random, 40 % busy,
  and mix V windows: far more fragmented than any simulated state (hundreds of partly free
  nodes), which makes the packing term c_j of Eq. (1) a hard knapsack.

The limit per solve is the scheduling interval (5 s), as in the policies; "wall" is the
solve's elapsed time (what the limit bounds: HiGHS's worker is killed 0.3 s past it), "cpu" the
CPU time of the whole decision (model, MIP start, layout in this process, and HiGHS in its
worker process): on a shared machine wall time includes other work. The
paper's direct formulation would have 2|J|(1 + |N|) variables (Table 4): 410k for 200 jobs;
CPLEX solved 150k-200k within the interval. ``--simulate`` also runs ESP-2 x 2 and mix V with
both policies and prints how many MILPs hit the limit (each halves the window).

Measured at w = 200 (issue 15, load average 8-13 on 2 cores, studies/IPSCHED.md "Decision cost"):
IPSCHED median solve 0.16 / 0.14 / 0.25 s wall on the mix III / IV / V states, no timeout;
AUCSCHED 1.5k / 0.3k / 0.5k variables, and 12.9k on the synthetic states (28.2k before its
U_ja substitution); worst solve 5.56 s wall for the 5 s limit (144 s before the worker process).
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import time

import numpy as np

from mrsched.schedulers.optim.auction import job_bids, winner_determination
from mrsched.schedulers.optim.bestfit import best_fit_counts
from mrsched.schedulers.optim.ipmodel import solve_window
from mrsched.schedulers.optim import highs_worker
from mrsched.schedulers.optim.milp import start_worker
from mrsched.schedulers.model.cores import core_request
from mrsched.workloads.cpugpu import Machine, generate_mix

NODES, CORES, GPUS = 1024, 8, 2
LIMIT = 5.0
GAP = 0.0     # the policies' default (ipsched.py: only 0 never reorders priorities)


def machine() -> Machine:
    names = [f"node_{k}" for k in range(NODES)]
    return Machine([], names, [CORES] * NODES, [GPUS] * NODES, True)


def loaded_state(rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """Free cores and GPUs per node of a busy machine: blocks of busy and partly free nodes."""
    free = rng.integers(0, CORES + 1, NODES)
    free[rng.random(NODES) < 0.4] = 0
    gpus = np.minimum(rng.integers(0, GPUS + 1, NODES), np.where(free > 0, GPUS, 0))
    return free.tolist(), gpus.tolist()


def problem(seed: int, w: int):
    rng = np.random.default_rng(seed)
    wl = generate_mix(machine(), "V", jobs=w, seed=seed)
    reqs = [core_request(str(j["id"]), j) for j in wl["jobs"]]
    prios = [100_000.0 - k for k in range(w)]
    free, gpus = loaded_state(rng)
    return reqs, prios, free, gpus


def simulated_states(mix: str, count: int, seed: int = 7, jobs: int = 1000) -> list[tuple]:
    """(free, gpus, window requests, priorities) of ``count`` busy rounds of a slurm-bf run."""
    import tempfile
    from pathlib import Path

    from mrsched.platforms.cluster import generate_cluster
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate as run
    from mrsched.simulator.platform import load_platform
    from mrsched.workloads.batsim_json import write_workload

    tmp = Path(tempfile.mkdtemp(prefix="bench_ipsched_states_"))
    atexit.register(shutil.rmtree, tmp, True)   # no litter in /tmp
    plat_path = tmp / "machine_l.xml"
    plat_path.write_text(generate_cluster(nodes=NODES, cores=CORES, gpus=GPUS, pfs=False).xml)
    wpath = tmp / "mix.json"
    write_workload(wpath, generate_mix(machine(), mix, jobs=jobs, seed=seed))
    sched = make_scheduler("slurm-bf", {})
    pol = sched.policy
    states = []
    decide = pol.decide

    def recording(ctx, queue):
        free, gpus = ctx.machine.counts()
        if len(queue) >= 200 and sum(free) <= NODES * CORES / 2:
            states.append((free, gpus, [pol.requests_[j.id] for j in queue[:200]],
                           [pol.priority_of(j, ctx.now) for j in queue[:200]]))
        return decide(ctx, queue)

    pol.decide = recording
    run(load_platform(str(plat_path)), [str(wpath)], sched, export_prefix=str(tmp / "out"))
    step = max(1, len(states) // count)
    return states[step // 2::step][:count]


def bench_ipsched(reqs, prios, free, gpus, limit=LIMIT):
    out = solve_window(prios, reqs, free, gpus, time_limit=limit, mip_gap=GAP)
    r = out.result
    return r.variables, r.constraints, r.seconds, r.status, len(out.layouts), r.cpu


def bench_aucsched(reqs, prios, free, gpus, max_bids=4, gap=None, limit=LIMIT):
    sf, sg = list(free), list(gpus)
    bids = []
    arrays = (np.array(free), np.array(gpus))
    for q in reqs:
        s = best_fit_counts(sf, sg, q)
        if s is not None:
            for n, c in s.per_node:
                sf[n] -= c
                sg[n] -= q.gpus_per_node
        bids.append(job_bids(q, free, gpus, max_bids=max_bids, slurm=s, arrays=arrays))
    out = winner_determination(prios, reqs, bids, free, gpus, time_limit=limit, mip_gap=GAP if gap is None else gap)
    r = out.result
    if r is None:   # no job has a bid: nothing to solve
        return 0, 0, 0.0, "optimal", 0, 0.0
    return r.variables, r.constraints, r.seconds, r.status, len(out.winners), r.cpu


def sources(args) -> list[tuple]:
    """(label, window size -> problems) of the simulated and synthetic states."""
    out = []
    if not args.synthetic_only:
        for mix in ("III", "IV", "V"):
            states = simulated_states(mix, args.problems)
            out.append((f"simulated mix {mix}", lambda w, st=states: [(r[:w], p[:w], f, g) for f, g, r, p in st]))
    out.append(("synthetic", lambda w: [problem(1000 * w + k, w) for k in range(args.problems)]))
    return out


def table(args) -> None:
    start_worker()
    print(f"Machine-L {NODES} x {CORES} cores x {GPUS} GPUs, limit {LIMIT:g} s, {args.problems} problems "
          "per row; solve wall s and decision cpu s as median [max]\n")
    print("| states | policy | window | variables | constraints | paper's direct vars | solve wall s | "
          "decision cpu s | limits hit | started |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, make in sources(args):
        for w in (50, 100, 200):
            probs = make(w)
            for name in ("ipsched", "aucsched"):
                if name == "aucsched" and args.no_aucsched:
                    continue
                rows, cpus = [], []
                for p in probs:   # this process's CPU and HiGHS's, in the worker process
                    t0 = time.process_time()
                    rows.append(bench_ipsched(*p) if name == "ipsched" else bench_aucsched(*p))
                    cpus.append(time.process_time() - t0 + rows[-1][5])
                secs = [r[2] for r in rows]
                print(f"| {label} | {name} | {w} | {statistics.median(r[0] for r in rows):.0f} | "
                      f"{statistics.median(r[1] for r in rows):.0f} | {2 * w * (1 + NODES)} | "
                      f"{statistics.median(secs):.3f} [{max(secs):.3f}] | "
                      f"{statistics.median(cpus):.3f} [{max(cpus):.3f}] | "
                      f"{sum(r[3] == 'limit' for r in rows)}/{len(rows)} | {statistics.median(r[4] for r in rows):.0f} |",
                      flush=True)


def simulate(args) -> None:
    import tempfile
    from pathlib import Path

    from mrsched.platforms.cluster import generate_cluster
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate as run
    from mrsched.simulator.platform import load_platform
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.cpugpu import generate_esp2_cpugpu

    tmp = Path(tempfile.mkdtemp(prefix="bench_ipsched_"))
    atexit.register(shutil.rmtree, tmp, True)   # no litter in /tmp
    plat_path = tmp / "machine_l.xml"
    plat_path.write_text(generate_cluster(nodes=NODES, cores=CORES, gpus=GPUS, pfs=False).xml)
    plat = load_platform(str(plat_path))
    print("\n| workload | policy | MILPs | limits hit (window halved) | median s | max s | scheduler s | run wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for label, wl in (("ESP-2 x 2", generate_esp2_cpugpu(machine(), seed=1)),
                      ("mix V", generate_mix(machine(), "V", jobs=400, seed=1))):
        wpath = tmp / f"{label.replace(' ', '_')}.json"
        write_workload(wpath, wl)
        for name in ("ipsched", "aucsched"):
            sched = make_scheduler(name, {})
            t0 = time.perf_counter()
            res = run(plat, [str(wpath)], sched, export_prefix=str(tmp / f"{name}_{label[:3]}"))
            wall = time.perf_counter() - t0
            solves = sched.policy.solves_
            secs = [s["seconds"] for s in solves] or [0.0]
            print(f"| {label} | {name} | {len(solves)} | {sum(s['status'] == 'limit' for s in solves)} | "
                  f"{statistics.median(secs):.3f} | {max(secs):.3f} | {res.scheduling_time:.1f} | {wall:.1f} |",
                  flush=True)


def traced_highs(cap: float, log: list):
    """A stand-in for :func:`highs_worker.run_highs` that records, for the calibration of
    ``node_limit``, each solve's CPU seconds against the nodes HiGHS has explored (HiGHS's
    MIP-interrupt callback, called at every check of its limits), and stops it past ``cap``
    CPU seconds (status ``limit``)."""
    from highspy import _core as hs

    def run(p: dict) -> dict:
        cpu = time.process_time()
        h = highs_worker.build_highs(p)
        trace = []

        def callback(kind, message, out, into, data):
            spent = time.process_time() - cpu
            trace.append((spent, out.mip_node_count))
            if spent > cap:
                into.user_interrupt = True

        h.setCallback(callback, None)
        h.startCallback(hs.cb.HighsCallbackType.kCallbackMipInterrupt)
        h.run()
        answer = highs_worker.answer(h, cpu)
        log.append({"variables": len(p["cost"]), "nonzeros": len(p["value"]), "cpu": answer["cpu"],
                    "nodes": answer["nodes"], "status": answer["status"], "trace": trace})
        return answer
    return run


def _summary(records: list[dict]) -> dict:
    """One calibration row: per solve, the CPU of presolve and the root node (until the first
    branch-and-bound node, None when it never came), the nodes explored at ``LIMIT`` CPU s,
    and the branch-and-bound rate (nodes per CPU s after the root)."""
    ended, at5, rates, roots, root_over = [], [], [], [], 0
    for r in records:
        first = next((c for c, n in r["trace"] if n >= 1), None)
        r["presolve_root_cpu"] = first
        roots.append(r["cpu"] if first is None else first)
        if first is not None and r["cpu"] - first > 0.05 and r["nodes"] > 1:
            r["nodes_per_s"] = r["nodes"] / (r["cpu"] - first)
            rates.append(r["nodes_per_s"])
        if r["cpu"] < LIMIT:
            if r["status"] == "optimal":
                ended.append(r["nodes"])
        elif first is None or first >= LIMIT:
            root_over += 1
        else:
            r["nodes_at_limit"] = next((n for c, n in r["trace"] if c >= LIMIT), r["nodes"])
            at5.append(r["nodes_at_limit"])
    return {"solves": len(records), "ended": ended, "at5": at5, "rates": rates, "roots": roots,
            "root_over": root_over}


def _row(label: str, policy: str, window, t: dict) -> str:
    def spread(v, fmt="{:.0f}"):
        return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}] ({len(v)})" if v else "-"
    return (f"| {label} | {policy} | {window} | {t['solves']} | {max(t['ended'], default=0)} | "
            f"{spread(t['at5'])} | {t['root_over']} | {spread(t['roots'], '{:.2f}')} | {spread(t['rates'])} |")


def issue_run(policy: str, nodes: int = 16, mix: str = "V", jobs: int = 80) -> None:
    """A whole run of ``policy`` without a limit on issue 42's machine (16 nodes x 8 cores x 2
    GPUs, 80 mix V jobs, seed 1): every MILP it solves goes through ``milp.run_highs``."""
    import tempfile
    from pathlib import Path

    from mrsched.platforms.cluster import generate_cluster
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate as run
    from mrsched.simulator.platform import load_platform
    from mrsched.workloads.batsim_json import write_workload

    tmp = Path(tempfile.mkdtemp(prefix="bench_ipsched_issue_"))
    atexit.register(shutil.rmtree, tmp, True)   # no litter in /tmp
    names = [f"node_{k}" for k in range(nodes)]
    wl = generate_mix(Machine([], names, [CORES] * nodes, [GPUS] * nodes, True), mix, jobs=jobs, seed=1)
    (tmp / "p.xml").write_text(generate_cluster(nodes=nodes, cores=CORES, gpus=GPUS, pfs=False).xml)
    write_workload(tmp / "w.json", wl)
    run(load_platform(str(tmp / "p.xml")), [str(tmp / "w.json")], make_scheduler(policy, {"node_limit": 0}),
        export_prefix=str(tmp / "out"))


def calibrate(args) -> None:
    """Per solve without a limit (up to ``--cap`` CPU s; HiGHS in this process, one thread):
    the most nodes of a solve that ends within the paper's interval (``LIMIT`` CPU s), the nodes
    explored when a longer one reaches it, how many spend it all in presolve and the root node
    (which a node limit does not bound), their CPU, and the branch-and-bound rate."""
    import json

    from mrsched.schedulers.optim import milp

    log: list[dict] = []
    milp.run_highs = traced_highs(args.cap, log)
    rows, totals = [], {"ipsched": [], "aucsched": []}
    policies = ("ipsched",) if args.no_aucsched else ("ipsched", "aucsched")
    print(f"\nCalibration of node_limit: no limit (a solve stopped at {args.cap:g} CPU s), "
          f"{args.problems} problems per row; CPU seconds of HiGHS; median [min-max] (count)\n")
    print(f"| states | policy | window | solves | most nodes of a solve ending within {LIMIT:g} s | "
          f"nodes at {LIMIT:g} s | root over {LIMIT:g} s | presolve + root cpu s | nodes per cpu s after the root |")
    print("|---|---|---|---|---|---|---|---|---|")

    def record(label, name, window):
        t = _summary(log)
        for r in log:
            r.update(states=label, policy=name, window=window)
            rows.append({k: v for k, v in r.items() if k != "trace"})
        totals[name].append(t)
        print(_row(label, name, window, t), flush=True)
        log.clear()

    for name in policies:
        issue_run(name)
        record("issue 42: 16 x 8 x 2, 80 mix V jobs, whole run", name, "run")
    for label, make in sources(args):
        for w in (50, 100, 200):
            probs = make(w)
            for name in policies:
                for p in probs:
                    bench_ipsched(*p, limit=None) if name == "ipsched" else bench_aucsched(*p, limit=None)
                record(label, name, w)
    for name in policies:
        t = {k: sum((x[k] for x in totals[name]), []) if isinstance(totals[name][0][k], list)
             else sum(x[k] for x in totals[name]) for k in totals[name][0]}
        print(_row("all", name, "all", t))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=8)
    ap.add_argument("--synthetic-only", action="store_true", help="skip the simulated states")
    ap.add_argument("--no-aucsched", action="store_true", help="IPSCHED only")
    ap.add_argument("--simulate", action="store_true", help="also run ESP-2 x 2 and mix V (minutes)")
    ap.add_argument("--calibrate", action="store_true",
                    help="instead of the table: nodes explored at 5 CPU s per solve, without a limit")
    ap.add_argument("--cap", type=float, default=20.0, help="--calibrate: CPU seconds a solve may take")
    ap.add_argument("--json", help="--calibrate: write every solve's record to this file")
    args = ap.parse_args()
    if args.calibrate:
        calibrate(args)
        return
    table(args)
    if args.simulate:
        simulate(args)


if __name__ == "__main__":
    main()
