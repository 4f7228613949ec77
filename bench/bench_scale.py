"""How scheduling cost grows with the number of jobs and with the machine (issue 18).

Run on demand (not a test):

    .venv/bin/python bench/bench_scale.py                                  # the issue's grid
    .venv/bin/python bench/bench_scale.py --sizes 10000 100000 --policies fcfs-bb sjf-bb
    .venv/bin/python bench/bench_scale.py --big-sizes                      # only the 96-node machine
    .venv/bin/python bench/bench_scale.py --check 40c244b --sizes 2000 10000   # decisions unchanged?
    .venv/bin/python bench/bench_scale.py --count --sizes 20000 100000 --big-sizes --policies fcfs-bb

Workloads are the issue's overloaded synthetic burst-buffer ones (``mrsched workload synthetic
--model burst-buffer --variant alloc-only --seed 1``) on the 96-node Dragonfly, plus
``--big-sizes`` jobs on a 10,000-node Dragonfly in the zoned form (4 groups x 25 chassis x 10
routers x 10 nodes; one burst-buffer node per chassis: 9,900 compute nodes), arrivals every 60 s
on average instead of 120 s (its jobs, log-uniform up to the machine, are ~50x wider). Each run is one
``simulate`` call in its own child process (peak memory is the child's maximum resident set).
Printed per run: CPU seconds of the whole run and of the scheduler alone, jobs/s (jobs / whole
CPU), peak memory, and time(N)/time(previous N) for the same policy and machine (the growth:
at most 10 for a 10x step means cost linear in the jobs). Last, for a policy run on both
machines at one size: time per job on 10,000 nodes / time per job on 96 nodes (target 2).
Runs go policy by policy and size by size, the two machines at one size back to back, so that
this ratio compares runs minutes apart (this machine's speed drifts within an hour).

``--check REV`` runs the same workloads with revision REV's ``mrsched`` (exported with ``git
archive`` as ``bench_plan.py`` does, its compiled queue tree built where it has one) and
prints whether every ``_jobs.csv`` is byte-identical: the scale work must not change any
decision. The two runs of a pair swap order from one pair to the next (a fixed order biases
their CPU times on this machine).

The last figures, with their date and commit, are in docs/PERFORMANCE.md; the rounds before
them are in the commit history of this file.
"""

from __future__ import annotations

import argparse
import atexit
import filecmp
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICIES = ("fcfs-bb", "sjf-bb", "fcfs-easy", "conservative-bb", "filler")
BIG = dict(groups=4, chassis=25, routers=10, nodes_per_router=10)   # 10,000 hosts, 100 of them storage


def make_workload(out: Path, jobs: int, platform: Path, label: str, interarrival: float = 120.0) -> Path:
    """The issue's synthetic workload of ``jobs`` jobs on ``platform``, cached in ``out``."""
    path = out / f"synthetic-{label}-{jobs}.json"
    if not path.exists():
        from mrsched.workloads.platform_info import read_platform_info
        from mrsched.workloads.synthetic import synthetic_columns
        head, columns = synthetic_columns(jobs=jobs, platform=read_platform_info(platform), seed=1,
                                          model="burst-buffer", variant="alloc-only",
                                          mean_interarrival=interarrival)
        columns.write(path, head)       # job by job: a million jobs never held as dicts
    return path


def big_platform(out: Path) -> Path:
    path = out / "dragonfly10k.xml"
    if not path.exists():
        from mrsched.platforms.dragonfly import generate_dragonfly
        path.write_text(generate_dragonfly(**BIG, storage_per_chassis=1).xml)
    return path


def install_counters(pkg: str) -> dict[str, int]:
    """Count, for ``--count``, what the ordered policies' queue work is made of: backfilling
    passes (``start_all_that_fit``), the jobs they try and start, queries with a room (``next_job``)
    and those that return a job, tree searches (``_MinTree.first``: each lane's, and each lane's
    tree over the runs; before 84a15ff, one tree over whole runs, so the searches a query of older
    rounds count otherwise) and those that find one. The wrappers cost time: such a run is not
    for timing."""
    import importlib
    oq = importlib.import_module(pkg + ".schedulers.ordered_queue")
    if hasattr(oq, "use"):
        oq.use(False)   # the pure-Python tree, whose searches are Python calls to count (same answers)
    ordered = importlib.import_module(pkg + ".schedulers.policies.ordered").OrderedPolicy
    counts = dict.fromkeys(("passes", "tried", "started", "queries", "answers", "searches", "hits"), 0)
    in_pass = [False]
    start_all, next_job, first = ordered.start_all_that_fit, oq.OrderedQueue.next_job, oq._MinTree.first
    remove = oq.OrderedQueue.remove

    def counted_pass(*args, **kw):
        counts["passes"] += 1
        in_pass[0] = True
        try:
            return start_all(*args, **kw)
        finally:
            in_pass[0] = False

    def counted_query(self, after=None, room=oq._ANY, *rest):
        found = next_job(self, after, room, *rest)
        if room is not oq._ANY:
            counts["queries"] += 1
            counts["answers"] += found[0] is not None
            counts["tried"] += in_pass[0] and found[0] is not None
        return found

    def counted_remove(self, job):
        counts["started"] += in_pass[0]     # a pass takes out only the jobs it starts
        return remove(self, job)

    def counted_search(self, *args):
        s = first(self, *args)
        counts["searches"] += 1
        counts["hits"] += s >= 0
        return s

    ordered.start_all_that_fit = staticmethod(counted_pass)
    oq.OrderedQueue.next_job, oq.OrderedQueue.remove, oq._MinTree.first = counted_query, counted_remove, counted_search
    return counts


def child(pkg: str, policy: str, platform: str, workload: str, prefix: str, count: str = "") -> None:
    """One run in this process; prints its measures as one JSON line (``count``: with the
    counts of ``install_counters``)."""
    import importlib
    counts = install_counters(pkg) if count else None
    registry = importlib.import_module(pkg + ".schedulers.registry")
    engine = importlib.import_module(pkg + ".simulator.engine")
    scheduler = registry.make_scheduler(policy, {})
    spent = [0.0]

    class Timed:
        def handle_message(self, msg: dict) -> dict:
            t = time.process_time()
            try:
                return scheduler.handle_message(msg)
            finally:
                spent[0] += time.process_time() - t

    # as `mrsched run` does: the engine keeps no per-job records (older revisions, for --check,
    # have no such option and keep them)
    import inspect
    kw = {"keep_records": False} if "keep_records" in inspect.signature(engine.simulate).parameters else {}
    t0, w0 = time.process_time(), time.perf_counter()
    engine.simulate(platform, [workload], Timed(), export_prefix=prefix, **kw)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"cpu": cpu, "wall": wall, "sched": spent[0], "peak_mb": peak_kb / 1024, "counts": counts}))


def run_child(pkg: str, pythonpath: str | None, policy: str, platform: Path, workload: Path, prefix: Path,
              timeout: float, count: bool = False) -> dict | None:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--child", pkg, policy, str(platform), str(workload), str(prefix)]
    if count:
        cmd.append("count")
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise SystemExit(f"{policy} on {workload.name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def count_text(c: dict[str, int]) -> str:
    """``install_counters``' counts as rates (what does not grow with the queue, and what does)."""
    def per(a: str, b: str) -> str:
        return f"{c[a] / c[b]:.2f}" if c[b] else "-"
    c = dict(c, refused=c["tried"] - c["started"])
    return (f"{c['passes']:,} backfilling passes, {per('tried', 'passes')} jobs tried a pass "
            f"({per('refused', 'passes')} of them refused by fits_now), "
            f"{per('searches', 'queries')} tree searches a query, {per('hits', 'answers')} hits a job "
            f"returned")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(*argv[1:7])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000, 1_000_000],
                    help="jobs on the 96-node machine")
    ap.add_argument("--big-sizes", nargs="*", type=int, default=[100_000],
                    help="jobs on the 10,000-node machine (none: skip it)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run is given up")
    ap.add_argument("--check", metavar="REV", default=None,
                    help="also run revision REV and compare every _jobs.csv byte for byte")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mrsched-bench-scale")
    ap.add_argument("--count", action="store_true",
                    help="also count backfilling passes, jobs tried, tree searches and hits "
                         "(slower: times are not comparable)")
    args = ap.parse_args(argv)
    from mrsched.errors import ConfigError
    from mrsched.schedulers.registry import policy_class
    for policy in args.policies:        # one line now, not a child's traceback later
        try:
            policy_class(policy)
        except ConfigError as exc:
            ap.error(str(exc))
    args.out.mkdir(parents=True, exist_ok=True)
    from mrsched.platforms.bundled import bundled_path
    machines = [("dragonfly96", Path(bundled_path("dragonfly96")), args.sizes, 120.0)] if args.sizes else []
    if args.big_sizes:
        # jobs of 1..9,900 nodes (log-uniform) are ~50x wider there: arrivals twice as often
        # keep that machine overloaded too
        machines.append(("dragonfly10k", big_platform(args.out), args.big_sizes, 60.0))
    base_dir = None
    if args.check:
        sys.path.insert(0, str(REPO / "bench"))
        from bench_plan import export_revision
        base_dir = tempfile.mkdtemp(prefix="mrsched-scale-base-")
        atexit.register(shutil.rmtree, base_dir, True)   # no litter in /tmp
        export_revision(args.check, Path(base_dir))
    print(f"{'machine':>12} | {'policy':>15} | {'jobs':>9} | {'cpu s':>8} | {'sched s':>8} | {'jobs/s':>8} | "
          f"{'peak MB':>8} | {'x prev':>6}" + (" | baseline cpu s | identical _jobs.csv" if args.check else ""))
    all_same = True
    cpu: dict[tuple[str, str, int], float] = {}     # (machine, policy, jobs) -> CPU s
    # policy by policy, size by size, both machines at a size one after the other: the ratio
    # of their times compares runs minutes apart, not the two ends of the grid (this machine's
    # speed drifts by 10-20 % within an hour)
    runs = sorted(((policy, n, m) for m, (_, _, sizes, _) in enumerate(machines) for n in sizes
                   for policy in args.policies),
                  key=lambda r: (args.policies.index(r[0]), r[1], r[2]))
    prev: dict[tuple[str, str], float] = {}         # (machine, policy) -> CPU s of its previous size
    given_up: set[tuple[str, str]] = set()
    for k, (policy, n, m) in enumerate(runs):
        label, platform, _, interarrival = machines[m]
        if (label, policy) in given_up:
            continue
        workload = make_workload(args.out, n, platform, label, interarrival)
        prefix = args.out / f"{label}-{policy}-{n}"
        base_prefix = args.out / f"{label}-{policy}-{n}-baseline"
        # with --check, the baseline goes first every other run: a fixed order biases the pair
        base_first = bool(args.check) and k % 2 == 1
        if base_first:
            base = run_child("mrsched_baseline", base_dir, policy, platform, workload, base_prefix,
                             args.timeout)
        got = run_child("mrsched", None, policy, platform, workload, prefix, args.timeout, args.count)
        if got is None:
            print(f"{label:>12} | {policy:>15} | {n:>9} | > {args.timeout:.0f} s (given up)", flush=True)
            given_up.add((label, policy))
            continue
        last = prev.get((label, policy))
        growth = f"{got['cpu'] / last:6.1f}" if last else f"{'':>6}"
        line = (f"{label:>12} | {policy:>15} | {n:>9} | {got['cpu']:8.1f} | {got['sched']:8.1f} | "
                f"{n / got['cpu']:8.0f} | {got['peak_mb']:8.0f} | {growth}")
        prev[label, policy] = cpu[label, policy, n] = got["cpu"]
        if args.check:
            if not base_first:
                base = run_child("mrsched_baseline", base_dir, policy, platform, workload,
                                 base_prefix, args.timeout)
            if base is None:
                line += f" | > {args.timeout:.0f} | (baseline given up)"
            else:
                same = filecmp.cmp(f"{base_prefix}_jobs.csv", f"{prefix}_jobs.csv", shallow=False)
                all_same &= same
                line += f" | {base['cpu']:14.1f} | {same}"
        print(line, flush=True)
        if got.get("counts"):
            print(f"{'':>12}   counts: {count_text(got['counts'])}", flush=True)
    for (label, policy, n), big in cpu.items():   # the "within 2x per job" on the large machine
        small = cpu.get(("dragonfly96", policy, n))
        if label == "dragonfly10k" and small:
            print(f"{policy}, {n} jobs: time per job on 10,000 nodes / on 96 nodes = {big / small:.2f} (target 2)")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
