"""Seed 001 (Euro-Par 2021) experiments and their cost: policies on the I/O-phased KTH-SP2
workload on the default Dragonfly machine, on the embedded simulator.

Run on demand (not a test):

    .venv/bin/python bench/bench_europar.py sjf-cpu            # scheduler CPU, 1,000 jobs, sjf-bb
    .venv/bin/python bench/bench_europar.py first1000          # every policy, first 1,000 jobs
    .venv/bin/python bench/bench_europar.py first1000 -j 2     # the same, two runs at a time
    .venv/bin/python bench/bench_europar.py parts --parts 1-16 # the 16 three-week parts
    .venv/bin/python bench/bench_europar.py full --policies sjf-bb plan-2
    .venv/bin/python bench/bench_europar.py report --from DIR... --out OUT  # figures: mrsched report per set
    .venv/bin/python bench/bench_europar.py tables --from DIR...  # fill studies/EUROPAR2021.md's tables

Each run prints one row: simulated jobs, scheduler CPU seconds (time spent inside the
scheduler's ``handle_message``), wall seconds of the whole simulation, and the metrics of
``mrsched.analysis`` (mean / max waiting time, mean bounded slowdown with tau = 10 min, over
the executed user jobs, phases folded); the CSV adds the median, p95 and p99 waits and the
p99 / max bounded slowdown. ``--out DIR`` also writes ``DIR/<label>.csv`` with every
row (``<label>-<policies>.csv`` when ``--policies`` is given) and keeps each run's Batsim
outputs under ``DIR/runs/``; ``total wall time`` is the whole experiment's. A run whose
``manifest.json`` is there (written last) is not run again: a re-run resumes, reporting the
finished runs' measured cost. The trace defaults to
``../shared/data/KTH-SP2-1996-2.1-cln.swf`` (give ``--trace`` elsewhere; ``mrsched workload
archive`` downloads it). Targets from the brief: sjf-bb scheduler CPU < 5 s on 1,000 jobs;
all policies on 1,000 jobs < 2 min; full-trace sjf-bb < 10 min and plan-2 < 30 min.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from pathlib import Path

PAPER_POLICIES = ("fcfs", "fcfs-easy", "filler", "fcfs-bb", "sjf-bb", "plan-1", "plan-2", "plan-3")
REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO.parent / "shared" / "data" / "KTH-SP2-1996-2.1-cln.swf"


class TimedScheduler:
    """Forwards messages to a scheduler and adds up the process CPU time spent inside it."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.cpu = 0.0
        self.messages = 0

    def handle_message(self, msg: dict) -> dict:
        t = time.process_time()
        try:
            return self.scheduler.handle_message(msg)
        finally:
            self.cpu += time.process_time() - t
            self.messages += 1


def make_workload(trace: Path, out: Path, *, jobs: int | None = None, part: tuple[int, int] | None = None,
                  seed: int = 0) -> Path:
    """The I/O-phased burst-buffer workload (seed 001 Sect. 4.1) of the trace, cached in ``out``."""
    from mrsched.platforms.bundled import bundled_path
    from mrsched.workloads.convert import convert_swf
    from mrsched.workloads.platform_info import read_platform_info

    label = "kth" + (f"-part{part[0]}of{part[1]}" if part else "") + (f"-{jobs}" if jobs else "") + f"-s{seed}"
    path = out / "workloads" / f"{label}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        platform = read_platform_info(bundled_path("dragonfly96"))
        conv = convert_swf(trace, platform=platform, model="burst-buffer", variant="io-phased", seed=seed,
                           jobs=jobs, part=part)
        path.write_text(json.dumps(conv.workload))
    return path


def run_one(policy: str, workload: Path, out: Path, *, options: dict | None = None) -> dict:
    """One I/O-phased simulation; returns the row (times and metrics)."""
    from mrsched.analysis.jobs import job_table
    from mrsched.analysis.metrics import run_metrics
    from mrsched.platforms.bundled import bundled_path
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate

    opts = {"job_model": "io-phased", **(options or {})}
    run_dir = out / "runs" / f"{workload.stem}-{policy}"
    run_dir.mkdir(parents=True, exist_ok=True)
    done = _finished(run_dir, opts)
    if done is not None:   # a re-run resumes: the finished run's outputs and its measured cost
        wall, cpu, sched_cpu = done["wall_time"], done["simulation_cpu_s"], done["scheduler_cpu_s"]
    else:
        (run_dir / "manifest.json").unlink(missing_ok=True)   # outputs about to be rewritten
        sched = TimedScheduler(make_scheduler(policy, opts))
        t0, c0 = time.perf_counter(), time.process_time()
        simulate(bundled_path("dragonfly96"), [str(workload)], sched, export_prefix=str(run_dir / "out"),
                 dynamic_jobs=True)
        wall, cpu, sched_cpu = time.perf_counter() - t0, time.process_time() - c0, sched.cpu
    jobs = job_table(run_dir / "out_jobs.csv", workload)
    m = run_metrics(jobs, tau=600.0)
    if done is None:   # written last, atomically: its presence marks the run finished
        write_manifest(run_dir, policy, workload, opts, extra={
            "wall_time": round(wall, 3), "simulation_cpu_s": round(cpu, 2), "scheduler_cpu_s": round(sched_cpu, 2)})
    return {"workload": workload.stem, "policy": policy, "jobs": m["n_jobs"], "executed": m["n_executed"],
            "walltime_reached": m["n_walltime_reached"],
            "scheduler_cpu_s": round(sched_cpu, 2), "simulation_cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "mean_wait_s": m["mean_waiting_time"], "median_wait_s": m["median_waiting_time"],
            "p95_wait_s": m["p95_waiting_time"], "p99_wait_s": m["p99_waiting_time"],
            "max_wait_s": m["max_waiting_time"],
            "mean_bsld": m["mean_bounded_slowdown"], "p99_bsld": m["p99_bounded_slowdown"],
            "max_bsld": m["max_bounded_slowdown"],
            "makespan_s": m["makespan"]}


def _finished(run_dir: Path, options: dict) -> dict | None:
    """The manifest of a finished run of the same options in ``run_dir`` (outputs written,
    cost measured), else None."""
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    keys = ("wall_time", "simulation_cpu_s", "scheduler_cpu_s")
    if manifest.get("options") != options or any(k not in manifest for k in keys) \
            or not (run_dir / "out_jobs.csv").is_file():
        return None
    return manifest


STEM = re.compile(r"^kth(?:-part(?P<part>\d+)of(?P<of>\d+))?(?:-(?P<jobs>\d+))?-s(?P<seed>\d+)$")


def run_of(run_dir: Path) -> tuple[str | None, str | None]:
    """``(workload stem, policy)`` of a run directory this script names ``<stem>-<policy>``,
    else ``(None, None)``."""
    for policy in PAPER_POLICIES:
        stem = run_dir.name[:-len(policy) - 1]
        if run_dir.name.endswith("-" + policy) and STEM.match(stem):
            return stem, policy
    return None, None


def write_manifest(run_dir: Path, policy: str, workload: Path, options: dict, *, extra: dict | None = None) -> None:
    """A ``manifest.json`` as the campaign runner writes (``mrsched.analysis`` reads it): policy,
    inputs, workload set and part, so that ``mrsched report`` compares these runs."""
    from mrsched.platforms.bundled import bundled_path

    m = STEM.match(workload.stem)
    if m is None:
        raise ValueError(f"workload {workload} was not made by make_workload")
    name = "kth-part" if m["part"] else (f"kth-first{m['jobs']}" if m["jobs"] else "kth-whole")
    manifest = {"run_id": run_dir.name, "policy": policy, "policy_label": policy, "options": options,
                "platform": str(bundled_path("dragonfly96")), "platform_name": "dragonfly96",
                "workload": str(workload.resolve()), "workload_name": name,
                "part": f"{m['part']}/{m['of']}" if m["part"] else "", "seed": int(m["seed"]),
                "engine": "embedded (in-process, bench/bench_europar.py)", "status": "ok", **(extra or {})}
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    tmp.replace(run_dir / "manifest.json")


def report(sources: list[Path], out: Path, tail: int) -> None:
    """One ``mrsched report`` per workload set (first 1,000 jobs, whole trace, parts) over the
    runs of ``sources`` (directories this script wrote with ``--out``), baseline sjf-bb, the
    ``tail`` worst jobs in the tail plots (Figs. 5-12 of seed 001)."""
    from mrsched.analysis.report import write_report

    sets: dict[str, list[Path]] = {}
    for src in sources:
        for run_dir in sorted((src / "runs").iterdir()):
            if not (run_dir / "out_jobs.csv").is_file():
                continue
            stem, policy = run_of(run_dir)
            if stem is None:
                continue
            workload = src / "workloads" / f"{stem}.json"
            if not (run_dir / "manifest.json").is_file():   # runs of an older version of this script
                write_manifest(run_dir, policy, workload, {"job_model": "io-phased"})
            kind = STEM.match(stem)
            label = "parts" if kind["part"] else (f"first{kind['jobs']}" if kind["jobs"] else "whole")
            sets.setdefault(label, []).append(run_dir)
    for label, dirs in sets.items():
        tree = out / label / "runs"
        tree.mkdir(parents=True, exist_ok=True)
        for d in dirs:
            link = tree / d.name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(d.resolve())
        policies = {json.loads((d / "manifest.json").read_text())["policy"] for d in dirs}
        index = write_report(out / label, baseline="sjf-bb" if "sjf-bb" in policies else None,
                             max_gantt=2, tail_n=tail)
        print(f"{label}: {len(dirs)} runs -> {index}")


def collect(sources: list[Path]) -> list[dict]:
    """Metrics of every run under ``sources`` (first directory wins for a workload and policy):
    the statistics the report's tables show, from each run's ``out_jobs.csv``."""
    import numpy as np

    from mrsched.analysis.jobs import job_table
    from mrsched.analysis.metrics import run_metrics

    rows: dict[tuple[str, str], dict] = {}
    for src in sources:
        for run_dir in sorted((src / "runs").glob("*")):
            stem, policy = run_of(run_dir)
            if stem is None or (stem, policy) in rows or not (run_dir / "out_jobs.csv").is_file():
                continue
            jobs = job_table(run_dir / "out_jobs.csv", src / "workloads" / f"{stem}.json")
            m = run_metrics(jobs, tau=600.0)
            waits = np.sort(jobs["waiting_time"].to_numpy(float))[::-1]
            kind = STEM.match(stem)
            rows[(stem, policy)] = {
                "stem": stem, "part": int(kind["part"] or 0), "seed": int(kind["seed"]), "policy": policy,
                "n": m["n_jobs"], "mean": m["mean_waiting_time"], "median": m["median_waiting_time"],
                "p95": m["p95_waiting_time"], "p99": m["p99_waiting_time"], "max": m["max_waiting_time"],
                "excl": waits[max(1, len(waits) // 100):].mean(), "bsld": m["mean_bounded_slowdown"],
                "p99b": m["p99_bounded_slowdown"], "maxb": m["max_bounded_slowdown"],
                "walltime": m["n_walltime_reached"]}
    return list(rows.values())


def _num(v: float, d: int = 0) -> str:
    return f"{v:,.{d}f}"


def policy_table(rows: list[dict], stem: str) -> str:
    """One workload's statistics per policy, with means relative to sjf-bb's when it ran."""
    rs = sorted((r for r in rows if r["stem"] == stem), key=lambda r: PAPER_POLICIES.index(r["policy"]))
    base = next((r for r in rs if r["policy"] == "sjf-bb"), None)
    head = ("| policy | mean wait | median | p95 | p99 | max wait | mean wait without the worst 1% | mean BSLD "
            "| p99 BSLD | max BSLD |")
    out = [head + (" wait / sjf-bb | BSLD / sjf-bb |" if base else ""),
           "|---|" + "---|" * (9 + (2 if base else 0))]
    for r in rs:
        line = (f"| {r['policy']} | {_num(r['mean'])} | {_num(r['median'])} | {_num(r['p95'])} | {_num(r['p99'])} "
                f"| {_num(r['max'])} | {_num(r['excl'])} | {_num(r['bsld'], 2)} | {_num(r['p99b'], 1)} "
                f"| {_num(r['maxb'])} |")
        if base:
            line += f" {r['mean'] / base['mean']:.2f} | {r['bsld'] / base['bsld']:.2f} |"
        out.append(line)
    return "\n".join(out)


def parts_table(rows: list[dict], seed: int = 0) -> str:
    """Each part's mean wait and mean BSLD divided by sjf-bb's on the same part (Figs. 11-12),
    and the median over the parts with the number of parts behind it."""
    import statistics

    parts = [r for r in rows if r["part"] and r["seed"] == seed]
    pols = [p for p in PAPER_POLICIES if any(r["policy"] == p for r in parts)]
    by = {(r["part"], r["policy"]): r for r in parts}
    out = ["| part | jobs | " + " | ".join(f"{p} wait" for p in pols) + " | "
           + " | ".join(f"{p} BSLD" for p in pols) + " |", "|---|---|" + "---|" * (2 * len(pols))]
    ratios: dict[tuple[str, str], list[float]] = {}
    for k in sorted({r["part"] for r in parts}):
        base = by.get((k, "sjf-bb"))
        cells = {"mean": [], "bsld": []}
        for metric in ("mean", "bsld"):
            for p in pols:
                r = by.get((k, p))
                if r is None or base is None:
                    cells[metric].append("")
                    continue
                ratio = r[metric] / base[metric]
                ratios.setdefault((metric, p), []).append(ratio)
                cells[metric].append(f"{ratio:.2f}")
        n = next(r["n"] for r in parts if r["part"] == k)
        out.append(f"| {k} | {n:,} | " + " | ".join(cells["mean"]) + " | " + " | ".join(cells["bsld"]) + " |")
    med = {key: statistics.median(v) for key, v in ratios.items()}
    out.append("| **median (parts)** | | "
               + " | ".join(f"{med[('mean', p)]:.2f} ({len(ratios[('mean', p)])})" if ("mean", p) in med else ""
                            for p in pols) + " | "
               + " | ".join(f"{med[('bsld', p)]:.2f}" if ("bsld", p) in med else "" for p in pols) + " |")
    return "\n".join(out)


#: table names of EUROPAR2021.md -> workload stems
TABLE_ALIASES = {"first1000": "kth-1000-s0", "whole": "kth-s0", "whole-s1": "kth-s1"}


def fill_tables(doc: Path, rows: list[dict]) -> list[str]:
    """Replace each ``<!-- table:NAME -->`` ... ``<!-- /table -->`` block of ``doc``: NAME is
    ``parts`` (seed 0), ``parts-s<seed>``, a workload stem (``kth-1000-s0``, ``kth-s1``) or an
    alias of one (``first1000``, ``whole``, ``whole-s1``); blocks without runs are left alone.
    Returns the names filled."""
    text = doc.read_text()
    filled = []

    def body(name: str) -> str | None:
        name = TABLE_ALIASES.get(name, name)
        if name == "parts" or name.startswith("parts-s"):
            seed = int(name[7:]) if name != "parts" else 0
            return parts_table(rows, seed) if any(r["part"] and r["seed"] == seed for r in rows) else None
        return policy_table(rows, name) if any(r["stem"] == name for r in rows) else None

    def sub(m: re.Match) -> str:
        new = body(m.group(2))
        if new is None:
            return m.group(0)
        filled.append(m.group(2))
        return f"{m.group(1)}{new}\n{m.group(4)}"

    text = re.sub(r"(<!-- table:([\w-]+) -->\n)(.*?)(<!-- /table -->)", sub, text, flags=re.S)
    tmp = doc.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(doc)
    return filled


COLUMNS = ("workload", "policy", "jobs", "scheduler_cpu_s", "wall_s", "mean_wait_s", "max_wait_s", "mean_bsld",
           "walltime_reached")


def print_row(row: dict, header: bool = False) -> None:
    if header:
        print(" | ".join(f"{c:>16}" for c in COLUMNS))
    cells = []
    for c in COLUMNS:
        v = row[c]
        cells.append(f"{v:>16.1f}" if isinstance(v, float) else f"{v!s:>16}")
    print(" | ".join(cells), flush=True)


def parse_parts(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("sjf-cpu", "first1000", "parts", "full", "report", "tables"))
    ap.add_argument("--doc", type=Path, default=REPO / "studies" / "EUROPAR2021.md",
                    help="tables: the page whose <!-- table:NAME --> blocks are filled")
    ap.add_argument("--from", dest="sources", type=Path, nargs="+", default=None,
                    help="report: the --out directories of earlier runs (default: --out)")
    ap.add_argument("--tail", type=int, default=3000, help="report: jobs in the tail plots")
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--policies", nargs="+", default=None)
    ap.add_argument("--parts", default="1-16", help="part numbers of 16, e.g. 1-16 or 3")
    ap.add_argument("--seed", type=int, default=0, help="seed of the burst-buffer draws")
    ap.add_argument("--out", type=Path, default=Path("/tmp/mrsched-europar"))
    ap.add_argument("--parallel", "-j", type=int, default=1,
                    help="runs at once, one process each (the campaign's parallelism)")
    args = ap.parse_args(argv)
    if args.what == "report":
        report(args.sources or [args.out], args.out / "report", args.tail)
        return 0
    if args.what == "tables":
        filled = fill_tables(args.doc, collect(args.sources or [args.out]))
        print(f"{args.doc}: filled {', '.join(filled) or 'no table'}")
        return 0
    if not args.trace.exists():
        print(f"trace not found: {args.trace} (give --trace)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    started = time.perf_counter()
    if args.what == "sjf-cpu":
        workloads, policies = [make_workload(args.trace, args.out, jobs=1000, seed=args.seed)], ["sjf-bb"]
    elif args.what == "first1000":
        workloads = [make_workload(args.trace, args.out, jobs=1000, seed=args.seed)]
        policies = list(PAPER_POLICIES)
    elif args.what == "parts":
        workloads = [make_workload(args.trace, args.out, part=(i, 16), seed=args.seed) for i in parse_parts(args.parts)]
        policies = list(PAPER_POLICIES)
    else:
        workloads, policies = [make_workload(args.trace, args.out, seed=args.seed)], ["sjf-bb", "plan-2"]
    policies = args.policies or policies
    tasks = [(policy, wl) for wl in workloads for policy in policies]
    first = True
    if args.parallel <= 1:
        for policy, wl in tasks:
            row = run_one(policy, wl, args.out)
            rows.append(row)
            print_row(row, header=first)
            first = False
    else:
        # one process per run, the slowest (plan) policies first so that none is left alone at
        # the end; rows are printed as runs finish and written in the sequential order
        from concurrent.futures import ProcessPoolExecutor, as_completed

        order = sorted(range(len(tasks)), key=lambda k: not tasks[k][0].startswith("plan"))
        done: dict[int, dict] = {}
        with ProcessPoolExecutor(max_workers=args.parallel) as pool:
            futures = {pool.submit(run_one, tasks[k][0], tasks[k][1], args.out): k for k in order}
            for fut in as_completed(futures):
                done[futures[fut]] = fut.result()
                print_row(done[futures[fut]], header=first)
                first = False
        rows = [done[k] for k in range(len(tasks))]
    total = time.perf_counter() - started
    print(f"total wall time: {total:.1f} s for {len(rows)} runs")
    label = args.what if args.what != "parts" else f"parts-{args.parts}"
    if args.policies:
        label += "-" + "-".join(args.policies)
    with open(args.out / f"{label}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
