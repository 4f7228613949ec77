"""Simulated jobs per second of the embedded engine (run on demand, prints a table).

    .venv/bin/python bench/bench_simulator.py [--jobs 28000] [--io-jobs 500] [--seed 0]
    .venv/bin/python bench/bench_simulator.py --scale 100000 1000000     # growth table only
    .venv/bin/python bench/bench_simulator.py --profile [registry]       # cProfile of one run

Workloads are generated here (seeded): delay jobs on a 128-node cluster, and an I/O-heavy
workload (``parallel_homogeneous_pfs`` jobs sharing one PFS link, through the ptask model).
Rows: the delay jobs driven in process by a trivial FCFS (``FCFS`` below), the same on the
engine's Python step loop when the compiled one is built, the same over ZeroMQ (REP peer in a
thread), the same in process with the registry's ``fcfs`` (its own cost shows in the ``sched
s`` column), and the I/O-heavy jobs. ``jobs/cpu-s`` is jobs per CPU second of this process
(robust on a shared machine); ``ratio`` is against the first row, measured in the same
process. The registry ``fcfs`` row is issue 40's in-process target (20,000 jobs/s).

``--scale N...``: registry ``fcfs`` on N delay jobs, each size in a fresh child process: CPU of
the run and of the scheduler alone, engine us a job, the child's peak resident memory and
cpu(N) / cpu(previous N). Figures and their history: docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np

CLUSTER = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="c1" prefix="a" suffix="" radical="0-127" speed="1Gf" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"/>
  <cluster id="c2" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="125MBps"
           lat="50us" bb_bw="2.25GBps" bb_lat="500us"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="1.25GBps" latency="500us"/>
  <zoneRoute src="c1" dst="c2" gw_src="ac1_router" gw_dst="master_hostc2_router">
    <link_ctn id="backbone"/>
  </zoneRoute>
</zone>
</platform>
"""

IO_PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="root" routing="Full">
    <cluster id="compute" prefix="node_" radical="0-31" suffix="" speed="1Gf" bw="1250MBps"
             lat="50us" bb_bw="2500MBps" bb_lat="50us" router_id="compute_router"/>
    <zone id="storage" routing="Full">
      <host id="master" speed="1Gf"><prop id="role" value="master"/></host>
      <host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host>
      <link id="pfs_link" bandwidth="500MBps" latency="100us"/>
      <link id="storage_backbone" bandwidth="10GBps" latency="10us"/>
      <router id="storage_router"/>
      <route src="pfs" dst="storage_router"><link_ctn id="pfs_link"/></route>
      <route src="master" dst="storage_router"><link_ctn id="storage_backbone"/></route>
      <route src="master" dst="pfs"><link_ctn id="storage_backbone"/><link_ctn id="pfs_link"/></route>
    </zone>
    <link id="uplink" bandwidth="20GBps" latency="10us"/>
    <zoneRoute src="compute" dst="storage" gw_src="compute_router" gw_dst="storage_router">
      <link_ctn id="uplink"/></zoneRoute>
  </zone>
</platform>
"""


class FCFS:
    """First come, first served on the lowest free ids; the whole policy in a few lines."""

    def __init__(self):
        self.free: list[int] = []
        self.queue: deque[tuple[str, int]] = deque()   # popped from the front: O(1)

    def handle_message(self, msg: dict) -> dict:
        for e in msg["events"]:
            t, d = e["type"], e["data"]
            if t == "JOB_SUBMITTED":
                self.queue.append((d["job_id"], d["job"]["res"]))
            elif t == "JOB_COMPLETED":
                for tok in d["alloc"].split():
                    lo, _, hi = tok.partition("-")
                    self.free.extend(range(int(lo), int(hi or lo) + 1))
                self.free.sort()
            elif t == "SIMULATION_BEGINS":
                self.free = list(range(d["nb_compute_resources"]))
        out = []
        while self.queue and self.queue[0][1] <= len(self.free):
            jid, res = self.queue.popleft()
            ids, self.free = self.free[:res], self.free[res:]
            out.append({"timestamp": msg["now"], "type": "EXECUTE_JOB",
                        "data": {"job_id": jid, "alloc": " ".join(map(str, ids))}})
        return {"now": msg["now"], "events": out}


def make_scheduler(use_registry: bool = False):
    if not use_registry:
        return FCFS(), "bench FCFS"
    from mrsched.schedulers.registry import make_scheduler as registry_make
    return registry_make("fcfs", {}), "registry fcfs"


def delay_workload(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sub = np.cumsum(rng.exponential(8.0, n))
    res = rng.integers(1, 33, n)
    dur = rng.integers(10, 2000, n)
    profiles = {f"d{d}": {"type": "delay", "delay": int(d)} for d in np.unique(dur)}
    jobs = [{"id": i, "subtime": float(round(sub[i], 3)), "res": int(res[i]),
             "walltime": int(dur[i]) * 2, "profile": f"d{dur[i]}"} for i in range(n)]
    path.write_text(json.dumps({"nb_res": 128, "jobs": jobs, "profiles": profiles}))


def io_workload(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sub = np.cumsum(rng.exponential(5.0, n))
    res = rng.integers(1, 9, n)
    profiles = {
        "w": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0, "bytes_to_write": 2e8,
              "storage": "pfs"},
        "c": {"type": "parallel_homogeneous", "cpu": 5e9, "com": 1e7},
        "job": {"type": "composed", "seq": ["c", "w"]},
    }
    jobs = [{"id": i, "subtime": float(round(sub[i], 3)), "res": int(res[i]), "profile": "job"}
            for i in range(n)]
    path.write_text(json.dumps({"nb_res": 32, "jobs": jobs, "profiles": profiles}))


def run_zmq(platform, workload, prefix):
    import zmq

    from mrsched.simulator.connection import ZmqScheduler
    from mrsched.simulator.engine import simulate

    policy, _ = make_scheduler()
    ctx = zmq.Context.instance()
    rep = ctx.socket(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")

    def serve():
        while True:
            msg = json.loads(rep.recv_string())
            rep.send_string(json.dumps(policy.handle_message(msg)))
            if any(e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with ZmqScheduler(f"tcp://127.0.0.1:{port}", timeout=60) as conn:
        result = simulate(platform, [workload], conn, export_prefix=prefix)
    thread.join(10)
    rep.close(linger=0)
    return result


def scale_child(platform: str, workload: str, prefix: str) -> None:
    """One registry-``fcfs`` run in this (fresh) process: prints CPU of the run and of the
    scheduler alone, and the process's peak resident memory, as one JSON line."""
    import resource

    from mrsched.simulator.engine import simulate

    policy, _ = make_scheduler(use_registry=True)
    spent = [0.0]

    class Timed:
        def handle_message(self, msg: dict) -> dict:
            t = time.process_time()
            try:
                return policy.handle_message(msg)
            finally:
                spent[0] += time.process_time() - t

    c0 = time.process_time()
    result = simulate(platform, [workload], Timed(), export_prefix=prefix, keep_records=False)
    cpu = time.process_time() - c0
    print(json.dumps({"jobs": result.nb_jobs, "cpu": cpu, "sched": spent[0],
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def scale(sizes: list[int], seed: int, tmp: Path) -> None:
    """Growth with the jobs: each size in a fresh child process (its peak memory is its own)."""
    import subprocess
    import sys

    cluster = tmp / "cluster.xml"
    cluster.write_text(CLUSTER)
    print(f"{'delay jobs, registry fcfs':>26s} {'cpu s':>8s} {'sched s':>8s} {'engine s':>8s} "
          f"{'engine us/job':>13s} {'jobs/cpu-s':>10s} {'peak MB':>8s} {'x prev':>7s}")
    prev = None
    for n in sizes:
        wl = tmp / f"delay{n}.json"
        delay_workload(wl, n, seed)
        done = subprocess.run([sys.executable, __file__, "--scale-child", str(cluster), str(wl),
                               str(tmp / f"s{n}")], capture_output=True, text=True)
        wl.unlink()
        if done.returncode != 0:
            raise SystemExit(f"{n} jobs failed:\n{done.stderr[-2000:]}")
        m = json.loads(done.stdout.strip().splitlines()[-1])
        engine = m["cpu"] - m["sched"]
        growth = f"{m['cpu'] / prev[1]:7.1f}" if prev else ""
        print(f"{n:26d} {m['cpu']:8.1f} {m['sched']:8.1f} {engine:8.1f} "
              f"{1e6 * engine / n:13.0f} {n / m['cpu']:10.0f} {m['peak_mb']:8.0f} {growth:>7s}")
        prev = (n, m["cpu"])
    print("x prev: cpu(N) / cpu(previous N) (10 for a 10x step: linear); peak MB: the child's "
          "maximum resident set (engine and scheduler)")


def main() -> None:
    from mrsched.simulator.engine import simulate

    import sys
    if len(sys.argv) == 5 and sys.argv[1] == "--scale-child":
        scale_child(*sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=28000)
    ap.add_argument("--io-jobs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", nargs="?", const="bench", choices=("bench", "registry"),
                    help="cProfile the in-process delay run driven by the bench FCFS (default) "
                         "or by the registry's fcfs")
    ap.add_argument("--scale", type=int, nargs="+", metavar="N",
                    help="only the growth table: registry fcfs on N delay jobs for each N, each "
                         "in a fresh process, with peak memory (e.g. --scale 10000 100000)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_sim_"))
    atexit.register(shutil.rmtree, tmp, True)   # no litter in /tmp
    if args.scale:
        scale(args.scale, args.seed, tmp)
        return
    cluster, iop = tmp / "cluster.xml", tmp / "io.xml"
    cluster.write_text(CLUSTER)
    iop.write_text(IO_PLATFORM)
    delay_wl, io_wl = tmp / "delay.json", tmp / "io.json"
    delay_workload(delay_wl, args.jobs, args.seed)
    io_workload(io_wl, args.io_jobs, args.seed)
    rows = []

    def timed(name, fn, n):
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows.append((name, n, wall, cpu, n / cpu, result.nb_messages, result.scheduling_time))

    policy, label = make_scheduler()
    reg_policy, reg_label = make_scheduler(use_registry=True)
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        simulate(cluster, [delay_wl], reg_policy if args.profile == "registry" else policy,
                 export_prefix=tmp / "p")
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return
    timed(f"delay, in-process ({label})",
          lambda: simulate(cluster, [delay_wl], policy, export_prefix=tmp / "a"), args.jobs)
    from mrsched.simulator import kernel
    if kernel._compiled_steps:   # the same run on the kernel's Python twin
        kernel.use_compiled_steps(False)
        try:
            timed("  the same, Python step loop", lambda: simulate(
                cluster, [delay_wl], make_scheduler()[0], export_prefix=tmp / "py"), args.jobs)
        finally:
            kernel.use_compiled_steps(True)
    timed("delay, ZeroMQ (REP thread)", lambda: run_zmq(cluster, delay_wl, tmp / "b"), args.jobs)
    timed(f"delay, in-process ({reg_label})",
          lambda: simulate(cluster, [delay_wl], reg_policy, export_prefix=tmp / "r"), args.jobs)
    timed("I/O-heavy (ptask_L07), in-process",
          lambda: simulate(iop, [io_wl], FCFS(), export_prefix=tmp / "c"), args.io_jobs)
    base = rows[0][4]
    print(f"{'run':40s} {'jobs':>7s} {'wall s':>8s} {'cpu s':>7s} {'jobs/cpu-s':>10s} "
          f"{'msgs':>7s} {'sched s':>8s} {'ratio':>6s}")
    for name, n, wall, cpu, rate, msgs, sched in rows:
        print(f"{name:40s} {n:7d} {wall:8.2f} {cpu:7.2f} {rate:10.0f} {msgs:7d} {sched:8.2f} "
              f"{rate / base:6.2f}")
    print("jobs/cpu-s: CPU time of this process (all threads), robust on a shared machine; "
          "the in-process delay target is >= 20,000 (issue 40)")


if __name__ == "__main__":
    main()
