"""Peak memory and CPU of a large run end to end: generate, simulate, report (run on demand).

    .venv/bin/python bench/bench_report.py [--jobs 100000] [--policy fcfs-bb] [--keep DIR]
    .venv/bin/python bench/bench_report.py --run RUN_DIR     # only the report of a finished run

Each step is the shipped command (``mrsched workload synthetic`` on ``dragonfly96``, burst-buffer
alloc-only, seed 1; ``mrsched run``; ``mrsched report``) in a fresh process, which prints its
own peak resident memory (``ru_maxrss``) and CPU seconds (user + system) when done.

Measured on the 2-core shared machine, a 1,000,000-job ``fcfs-easy`` run: ``workload
synthetic`` 95 MB, 15 CPU s (968 MB when it built the workload dict); ``report`` (``--run``,
load 1-4) 1.56-1.61 GB, 76-82 CPU s (2.44 GB when it parsed the whole workload JSON and held
every run's tables, 1.97 GB with only the workload streamed).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child(argv: list[str]) -> None:
    """Run ``mrsched argv`` in this process; print its cost as the last line."""
    from mrsched.cli import main

    code = main(argv)
    use = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"code": code, "cpu": use.ru_utime + use.ru_stime, "peak_mb": use.ru_maxrss / 1024}))


def step(name: str, argv: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True, text=True)
    got = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    if got is None or got["code"] != 0:
        raise SystemExit(f"{name} failed:\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
    print(f"{name:>20} | {got['cpu']:8.1f} | {got['peak_mb']:8.0f}", flush=True)
    return got


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--policy", default="fcfs-bb")
    ap.add_argument("--run", type=Path, help="report on this finished run directory only")
    ap.add_argument("--keep", type=Path, help="work in this directory (default: a temporary one)")
    args = ap.parse_args(argv)
    out = args.keep or Path(tempfile.mkdtemp(prefix="mrsched-bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'step':>20} | {'cpu s':>8} | {'peak MB':>8}")
    run_dir = args.run
    if run_dir is None:
        platform = str(REPO / "platforms" / "dragonfly96.xml")
        workload = out / f"synthetic-{args.jobs}.json"
        step("workload synthetic", ["workload", "synthetic", "--platform", platform, "--jobs", str(args.jobs),
                                    "--model", "burst-buffer", "--variant", "alloc-only", "--seed", "1",
                                    "-o", str(workload)])
        run_dir = out / "run"
        step("run", ["run", "--platform", platform, "--workload", str(workload), "--policy", args.policy,
                     "--out", str(run_dir), "--force", "--timeout", "7200"])
        manifest = json.loads((run_dir / "manifest.json").read_text())
        print(f"{'(simulation process)':>20} | {manifest['cpu_time']:8.1f} | {manifest['peak_memory_mb']:8.0f}")
    step("report", ["report", str(run_dir), "-o", str(out / "report")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
