"""CPU time to load a workload as ``simulate`` does, with the cyclic collector paused (as
``simulate`` loads) and running (as before a4d2031); run on demand, prints a table.

    .venv/bin/python bench/bench_load.py [--jobs 100000 1000000]

The workload is ``bench_scale.py``'s overloaded synthetic burst-buffer one on the 96-node
machine (generated once, cached in ``--out``). Each load runs in a fresh process, the two
modes alternated twice; the ratio is against the paused load of the same size.

Measured at 3d8f0f0 (2-core machine): 100,000 jobs 0.6 CPU s paused, 0.6 running (x1.01);
1,000,000 jobs 6.0 paused, 7.6 running (x1.28). (A by-hand measure before this script, the
collector turned off with ``gc.disable`` in one process, had given 6.6 and 10.0 s.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import gc, json, sys, time
from mrsched.simulator import engine
from mrsched.simulator.workload import load_workloads
paused = sys.argv[2] == "paused"
t = time.process_time()
if paused:
    with engine._collector_paused():
        workloads = load_workloads([sys.argv[1]])
else:
    workloads = load_workloads([sys.argv[1]])
cpu = time.process_time() - t
print(json.dumps({"cpu": cpu, "jobs": sum(len(w.jobs) for w in workloads)}))
"""


def load_cpu(workload: Path, mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(workload), mode], capture_output=True,
                          text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"loading {workload} ({mode}) failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mrsched-bench-scale")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    from bench_scale import make_workload

    args.out.mkdir(parents=True, exist_ok=True)
    platform = REPO / "platforms" / "dragonfly96.xml"
    print(f"{'jobs':>9s} {'paused cpu s':>13s} {'running cpu s':>14s} {'ratio':>6s}")
    for n in args.jobs:
        workload = make_workload(args.out, n, platform, "dragonfly96")
        runs = {"paused": [], "running": []}
        for _ in range(2):
            for mode in runs:
                m = load_cpu(workload, mode)
                assert m["jobs"] == n, m
                runs[mode].append(m["cpu"])
        paused, running = min(runs["paused"]), min(runs["running"])
        print(f"{n:9d} {paused:13.1f} {running:14.1f} {running / paused:6.2f}")
    print("best of two fresh processes per mode; ratio: running / paused")


if __name__ == "__main__":
    main()
