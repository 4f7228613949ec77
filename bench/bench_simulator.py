"""Simulated jobs per second of the embedded engine (run on demand, prints a table).

    .venv/bin/python bench/bench_simulator.py [--jobs 28000] [--io-jobs 500] [--seed 0]

Workloads are generated here (seeded): delay jobs on a 128-node cluster driven by a trivial
FCFS, in-process and over ZeroMQ (REP peer in a thread), the same in-process with the
registry's ``fcfs`` when ``mrsched.schedulers.registry`` provides it (its own cost shows in the
``sched s`` column), and an I/O-heavy workload (``parallel_homogeneous_pfs``
jobs sharing one PFS link) through the ptask model. Ratios are against the in-process delay
run measured in the same process.

Registry ``fcfs`` on the 28,000-job delay workload (2-core shared machine, load 4-6): 29.0 CPU s
before (it copied the ~28,000-job waiting queue every round), 5.9-6.9 s after (~4,000-4,700
jobs per CPU second, against 12,000-13,000 for the bench FCFS); see bench_trace.py.
After the ptask fast path (issue 7; delay jobs never reach the ptask model, so unchanged):
bench FCFS 1.83 CPU s (15,300 jobs/s), registry fcfs 4.23 s (6,600 jobs/s, 2.47 s of it in the
scheduler), I/O-heavy 500 jobs 0.53 s (all share the PFS link: the full solver, as before).
Issues #21/#14 (SimGrid's step order: actors woken in action-creation order, their puts applied
after; usage_trace; compute sharing), 20,000 delay jobs, bench FCFS, old/new engine alternated
on the shared 2-core machine: 0.90/0.98/0.91 -> 1.00/0.97/0.97 CPU s (~5%; ~20,000 jobs/s).
Whole-trace ptask numbers (KTH-SP2 on Dragonfly, engine 17-21 s -> 3.0-4.8 s) are in
bench_trace.py.
I/O-phased runs (issue 4: bench_europar.py, 1,000 KTH-SP2 jobs with stage-in / checkpoint /
stage-out ptasks, engine CPU = simulation CPU minus scheduler CPU, the old and the new
``ptask.py`` in the same process, 2-core machine under load, identical ``_jobs.csv``): sjf-bb
19.1-25.5 s -> 13.2-17.5 s (x1.4-1.6), fcfs-easy 23.0 s -> 11.8 s (x1.95). Most solves are
small (1-10 tasks): plain-float solver below 32 elements, ``count_nonzero`` instead of
``ndarray.any``, masks of one step computed once, the look-ahead's state adopted by ``advance``.
All eight seed-001 policies on those jobs: 259 s wall, of which ~140 s engine, the rest the
plan-1/2/3 schedulers (29-39 s CPU each).
Issue 4, second round (same measure, old and new ``ptask.py`` interleaved in one process,
byte-identical ``_jobs.csv`` and ``_machine_states.csv``): sjf-bb 12.5-14.3 s -> 4.3-4.8 s
(x2.9-3.0), fcfs-easy 11.7 -> 4.6 s (x2.6), plan-1 12.5 -> 5.3 s (x2.35); part 3 of 16
(sjf-bb) 24.8 -> 8.3 s (x3.0). Two thirds of the solves were look-aheads meeting the same sets
of progressing tasks again: rates are now kept per set (64 sets), and per connected
component (tasks sharing no CPU or link are solved apart, so a change re-solves only its
component; on this machine most systems are one component, so that part is within noise).
The solver tasks' state moved from numpy arrays to plain float lists (a handful of tasks per
system: the per-call cost of numpy dominated), same operations in the same order; systems of
96 tasks or more are stepped on arrays converted once per step loop. Limit: a synthetic
overload (3,000 transfers piling up on one shared link, one component) is on par up to ~100
running tasks, 1.5-2x slower at 400-800 and 3-4x slower at thousands than the all-numpy
layout (per-solve input built from per-task tuples, list <-> array conversions).

Issue #18 (memory and wide jobs; ``--scale N...`` prints the growth table: registry ``fcfs`` on
N delay jobs, each size in a fresh child process, CPU of the run and of the scheduler alone,
engine us/job, the child's peak resident memory, cpu(N)/cpu(previous N)). The engine no longer
holds what a run has finished with: ``_jobs.csv`` rows and machine-state rows go to their files
(temporaries renamed at the end, byte-identical) as jobs end, an ended job's state is replaced
by a shared marker, records are kept in the result only when asked (``keep_records``; ``mrsched
simulate`` and the run workers do not), a job gets its state only once submitted, the parsed
job objects are reused as the forwarded ones, the per-job records are slotted, profile type
names interned, and a profile per job is no longer cached. Wide jobs (10,000-node machine):
host names looked up by id, one flops dict per homogeneous profile, a one-range allocation not
walked, a wide run's idle time summed in C with the same additions. Measured under heavy load
(load 11-16, CPU seconds swing ~15%): peak memory of a whole process, same ``_jobs.csv``,
``_machine_states.csv`` and ``_schedule.csv`` (but its timings):

==================================================  ===============  ===============
run (``mrsched`` workloads on dragonfly96)           before (ca47b15) after
==================================================  ===============  ===============
synthetic delay 100,000 jobs, ``fcfs``               353 MB           279 MB
synthetic burst-buffer 100,000 jobs, ``fcfs-bb``     494 MB           402 MB
28,000 delay jobs (this script's), ``fcfs``          116 MB           92 MB
28,000 delay jobs (this script's), bench FCFS        94 MB            67 MB
==================================================  ===============  ===============

Synthetic delay 1,000,000 jobs with ``fcfs``: 148.7 CPU s (engine 66.0, scheduler 82.8; x11.1
of 100k), peak 1,940 MB, of which ~1,010 MB is the loaded workload (about 1 KB a job: the
forwarded job objects, which the in-process scheduler keeps too, a profile per job, Job).
Synthetic burst-buffer 1,000,000 jobs with ``fcfs-bb``: 696.7 CPU s (engine 117.9, scheduler
578.8), peak 1,946 MB; 100,000 jobs: 33.4 s (engine 8.4), 404 MB (the 1M run shared the machine
at load 10-20, the 100k one at ~6: the ratios are not clean growth figures).
10,000-node zoned Dragonfly, 2,000 jobs ``fcfs-bb``: engine 2.50 -> 2.05 CPU s (1.0 ms a job
against ~0.3 ms on 96 nodes for jobs ~50x wider; what is left per host is mostly the ptask
model's ``add``/``_release``, one constraint per host).

Issue #18 item 4 (target: registry ``fcfs`` at 20,000 delay jobs a CPU second; not met).
Instruction counts (``valgrind --tool=callgrind``, whole process minus an empty one, 4,000 jobs
of this script's workload, identical ``_jobs.csv``), 8a2efb1 -> now: engine with the bench FCFS
591.6k -> 561.2k a job; registry ``fcfs`` 861.4k -> 734.8k; its scheduler alone (replay of the
first 8,000 recorded messages, same replies) 229.1k -> ~140k. Scheduler: plain-order ``fcfs``
walks the runtime's submission-ordered queue (no ordered-queue index: it never asks which job
fits a room), ``Start.nodes`` is listed on first read (the alloc-only path writes EXECUTE_JOB
from the node mask), a ``Job`` keeps its submission's dict uncopied, an empty round replies
with its empty action list. Engine: ending sleeps taken out of the sleep lists in place, job
states and records built positionally, a reply awaiting its actor kept as a tuple. CPU seconds,
28,000 jobs, load 3.7-3.9: this script, registry ``fcfs`` 2.69 s (10,400 jobs/s; 3.10 s at
the session start, load 1.3), bench FCFS 1.61-1.64 s (17,000-17,400 jobs/s); fresh processes
alternated with 8a2efb1: registry 3.44-3.63 -> 2.89-2.91 s (scheduler 1.55-1.65 -> 1.12-1.13).
Why 20,000 is out of reach here: with a scheduler costing nothing the engine runs ~17,000-19,000
jobs/s on this machine (~560k instructions, ~50 us a job: 7 SimGrid steps, 5 internal messages
and 2 scheduler round trips, as Batsim), the whole budget; its profile is flat (the step loop,
each sleep decremented step by step as SimGrid does, alloc parsing, output rows). The scheduler
is ~30 us a job (lean-path checks, the profile's reserve / release, fits_now, the EXECUTE_JOB
text). Next levers: a typed in-process event path (no wire-dict building and checking on either
side; ~5 us a job by estimate) and a compiled step loop.
The compiled step loop (a4643c7, ``simulator/_steps.c``: the clock's steps, the sleeps, the
server's mailbox and the message in flight on C arrays; every actor still Python, called at
the same points in the same order; ``Engine._py_steps`` its twin, selected by
``MRSCHED_PURE_PYTHON=1``). py-spy had put a quarter of the bench FCFS run in that machinery.
This script now also runs the bench FCFS on the Python loop in the same process (the row
"the same, Python step loop"). 28,000 jobs, five runs: bench FCFS 1.26-1.35 CPU s in four
(20,800-22,200 jobs/s) and 1.62 s in one (17,300: this machine's drift), against 1.77-1.93 s
(14,500-15,900) on the Python loop in the same processes; in the best run, engine 1.08 s
against 1.62. Registry ``fcfs`` 2.19-2.43 s (11,500-12,800 jobs/s; ~1.0 s of it the
scheduler). The target is met with the trivial policy in most runs, not with the registry's
``fcfs``, whose own ~35 us a job alone leaves too little of the 50 us.
Same runs: every batsim-reference and batsched-reference case and randomised runs of ties,
kills and call-backs give identical messages and outputs from both loops
(tests/simulator/test_step_loop.py).
667732c: a start sums its machines' idle times and stamps their change in C
(``_steps.idle_stamp``; ``engine._idle_stamp`` its twin, the same additions in order), an end
stamps them; before, each run of machines cost numpy slices and Python floats (~2 us on a few
machines, ~5 us on a thousand). Callgrind, 4,000 jobs, engine with the bench FCFS (whole
process minus an empty one): 432.6k -> 404.5k instructions a job (-6.5 %), identical
``_jobs.csv`` and simulated ``_schedule.csv`` columns. This script, three runs: bench FCFS
1.19-1.30 CPU s (21,500-23,600 jobs/s), on the Python loop 1.79-1.84 s (15,200-15,600),
registry ``fcfs`` 2.19-2.61 s (10,700-12,800; ~1.0-1.2 s of it the scheduler).
"""

from __future__ import annotations

import argparse
import json
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
    try:
        from mrsched.schedulers.registry import make_scheduler as registry_make
        return registry_make("fcfs", {}), "registry fcfs"
    except Exception:  # registry absent or without fcfs: the local trivial policy
        return FCFS(), "bench FCFS"


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
    ap.add_argument("--profile", action="store_true", help="cProfile the in-process delay run")
    ap.add_argument("--scale", type=int, nargs="+", metavar="N",
                    help="only the growth table: registry fcfs on N delay jobs for each N, each "
                         "in a fresh process, with peak memory (e.g. --scale 10000 100000)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_sim_"))
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
        simulate(cluster, [delay_wl], policy, export_prefix=tmp / "p")
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
    if reg_label != label:
        timed(f"delay, in-process ({reg_label})",
              lambda: simulate(cluster, [delay_wl], reg_policy, export_prefix=tmp / "r"),
              args.jobs)
    timed("I/O-heavy (ptask_L07), in-process",
          lambda: simulate(iop, [io_wl], FCFS(), export_prefix=tmp / "c"), args.io_jobs)
    base = rows[0][4]
    print(f"{'run':40s} {'jobs':>7s} {'wall s':>8s} {'cpu s':>7s} {'jobs/cpu-s':>10s} "
          f"{'msgs':>7s} {'sched s':>8s} {'ratio':>6s}")
    for name, n, wall, cpu, rate, msgs, sched in rows:
        print(f"{name:40s} {n:7d} {wall:8.2f} {cpu:7.2f} {rate:10.0f} {msgs:7d} {sched:8.2f} "
              f"{rate / base:6.2f}")
    print("jobs/cpu-s: CPU time of this process (all threads), robust on a shared machine; "
          "the in-process delay target is >= 20,000 (issue #18)")


if __name__ == "__main__":
    main()
