"""CPU time to load inputs as ``simulate`` does, with the cyclic collector paused (as the
engine and ``load_platform`` load) and running; run on demand, prints a table.

    .venv/bin/python bench/bench_load.py [--jobs 100000 1000000] [--dragonfly 3x4x3x3 6x6x4x8]

Workloads: ``bench_scale.py``'s overloaded synthetic burst-buffer one on the 96-node machine
(generated once, cached in ``--out``). Platforms: ``mrsched platform dragonfly`` of the given
groups x chassis x routers x nodes per router (3x4x3x3: seed 001's 108 hosts; 6x6x4x8: 1,152
hosts, explicit Full routing, 1.3 million routes), read by ``load_platform``. Each load runs in
a fresh process (the platform cache off), the two modes alternated twice; the ratio is
running / paused. Figures: docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import gc, json, sys, time
from mrsched.simulator.collector import collector_paused
from mrsched.simulator.platform import load_platform
from mrsched.simulator.workload import load_workloads
kind, path, mode = sys.argv[1:]
if mode == "running":   # load_platform pauses the collector itself: switch the pause off
    import mrsched.simulator.platform as module
    module.collector_paused = __import__("contextlib").nullcontext
t = time.process_time()
with collector_paused() if mode == "paused" else __import__("contextlib").nullcontext():
    if kind == "workload":
        size = sum(len(w.jobs) for w in load_workloads([path]))
    else:
        size = len(load_platform(path).hosts)
cpu = time.process_time() - t
print(json.dumps({"cpu": cpu, "size": size}))
"""


def load_cpu(kind: str, path: Path, mode: str) -> dict:
    # a parse each time, never one read back from the platform cache
    env = {**os.environ, "MRSCHED_PLATFORM_CACHE": "off"}
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), mode],
                          capture_output=True, text=True, cwd=REPO, env=env)
    if done.returncode != 0:
        raise SystemExit(f"loading {path} ({mode}) failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of_two(kind: str, path: Path) -> tuple[float, float, int]:
    """(paused CPU s, running CPU s, size): the best of two fresh processes per mode."""
    runs = {"paused": [], "running": []}
    size = None
    for _ in range(2):
        for mode in runs:
            m = load_cpu(kind, path, mode)
            assert size is None or m["size"] == size, m
            size = m["size"]
            runs[mode].append(m["cpu"])
    return min(runs["paused"]), min(runs["running"]), size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--dragonfly", nargs="*", default=["3x4x3x3"], metavar="GxCxRxN",
                    help="Dragonfly platforms: groups x chassis x routers x nodes per router")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mrsched-bench-scale")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    from bench_scale import make_workload

    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{'input':>28s} {'paused cpu s':>13s} {'running cpu s':>14s} {'ratio':>6s}")
    platform = REPO / "platforms" / "dragonfly96.xml"
    for n in args.jobs:
        paused, running, size = best_of_two("workload", make_workload(args.out, n, platform,
                                                                      "dragonfly96"))
        assert size == n, size
        print(f"{f'{n:,} jobs':>28s} {paused:13.1f} {running:14.1f} {running / paused:6.2f}")
    for shape in args.dragonfly:
        g, c, r, n = shape.split("x")
        path = args.out / f"dragonfly-{shape}.xml"
        if not path.exists():
            subprocess.run([sys.executable, "-m", "mrsched", "platform", "dragonfly", "--groups", g,
                            "--chassis", c, "--routers", r, "--nodes-per-router", n, "-o",
                            str(path)], check=True, capture_output=True, cwd=REPO)
        paused, running, size = best_of_two("platform", path)
        label = f"dragonfly {shape} ({size:,} hosts)"
        print(f"{label:>28s} {paused:13.1f} {running:14.1f} {running / paused:6.2f}")
    print("best of two fresh processes per mode; ratio: running / paused")


if __name__ == "__main__":
    main()
