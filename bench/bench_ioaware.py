"""Decision time per event of I/O-aware EASY on seed 004's CTS-1 model (Fig. 3.7).

    .venv/bin/python bench/bench_ioaware.py [--jobs 2500] [--underprovision 0.3] [--seed 1]
                                            [--knowledge learned --io-spread 0.8]

Runs the embedded engine in-process with ``fcfs-easy`` (I/O-ignorant and ``io_aware=true``)
on a workload of seed 004's model (KTH-SP2 as source trace), times every scheduler reply
(one reply answers one Batsim message: the events of one instant) and prints the 50th, 75th
and 95th percentiles and the maximum in milliseconds. Target (issue 16): 95th < 10 ms.
``--knowledge`` times the I/O-aware run with that knowledge source (seed 004 Ch. 4) on a
workload with true rates (``--io-spread``, default 0.8 then).
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.iomodel import model_workload

TRACE = Path(__file__).resolve().parents[1] / "../shared/data/KTH-SP2-1996-2.1-cln.swf"


class Timed:
    """Wraps a scheduler: the wall time of every handle_message call."""

    def __init__(self, sched):
        self.sched, self.times = sched, []

    def __getattr__(self, name):
        return getattr(self.sched, name)

    def handle_message(self, msg):
        t = time.perf_counter()
        out = self.sched.handle_message(msg)
        self.times.append(time.perf_counter() - t)
        return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=2500)
    p.add_argument("--underprovision", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trace", default=str(TRACE))
    p.add_argument("--knowledge", default="requested", choices=["requested", "perfect", "noisy", "learned"])
    p.add_argument("--io-spread", type=float, default=None, help="true rates (default: 0.8 with --knowledge)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, tmp, True)   # no litter in /tmp
    plat = tmp / "cts1.xml"
    plat.write_text(generate_iotree(underprovision=args.underprovision).xml)
    spread = args.io_spread if args.io_spread is not None else (0.8 if args.knowledge != "requested" else 0.0)
    _, wl = model_workload(args.trace, jobs=args.jobs, nodes=3888, io_rate=18e6, seed=args.seed, io_spread=spread,
                           max_nodes=2722 if spread else None)
    write_workload(tmp / "w.json", wl)
    print(f"CTS-1, {args.jobs} jobs, PFS underprovisioned by {args.underprovision:g}, seed {args.seed}, "
          f"io_spread {spread:g}, knowledge {args.knowledge}")
    for aware in (False, True):
        options = {"io_aware": aware, **({"knowledge": args.knowledge} if aware and args.knowledge != "requested" else {})}
        sched = Timed(make_scheduler("fcfs-easy", options))
        t = time.perf_counter()
        simulate(plat, [tmp / "w.json"], sched, export_prefix=None)
        wall = time.perf_counter() - t
        ms = np.array(sched.times) * 1e3
        print(f"  fcfs-easy io_aware={str(aware).lower():5}: {len(ms)} replies, decision time p50 "
              f"{np.percentile(ms, 50):.3f} ms, p75 {np.percentile(ms, 75):.3f} ms, p95 {np.percentile(ms, 95):.3f} ms, "
              f"max {ms.max():.1f} ms; run {wall:.1f} s")


if __name__ == "__main__":
    main()
