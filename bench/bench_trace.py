"""Whole-trace simulation speed: the registry's policies on the embedded engine (run on demand).

    .venv/bin/python bench/bench_trace.py [--jobs 28000] [--trace SWF] [--repeat 3] [--skip-delay] [--skip-trace]

Two cases, each against a baseline measured in the same process (ratio column):
1. ``fcfs`` on a 28,000-job delay workload (bench_simulator's generator, 128-node cluster);
   baseline = the same engine driving bench_simulator's 20-line FCFS.
2. ``sjf-bb`` (alloc-only) on the whole KTH-SP2 trace converted with the burst-buffer model
   onto the bundled ``dragonfly96`` platform (``../shared/data/KTH-SP2-1996-2.1-cln.swf``,
   skipped when absent); baseline = the bench FCFS on the same workload (same engine and
   ptask work, a trivial scheduler).
``sched-only s`` replays the recorded engine messages into a fresh scheduler and times its
``handle_message`` alone (the replies must be identical: checked, printed as ``same``); it
isolates the scheduler's own cost from the engine on a shared machine. Times are CPU seconds
of this process (``time.process_time``), the least of ``--repeat`` runs (default 3): on this
shared 2-core virtual machine identical runs differ by up to 25% even in CPU time, and other
load only ever adds to it.

Measured on the 2-core shared machine (load 4-6, so absolute numbers swing by ~30%).
First round (scheduler queue view, commit 7441969 -> 1st tree): "sched-only" replays the same
recorded messages into the scheduler code before and after; both give identical replies.

==========================================  =============  =============  =================
run                                          cpu s before   cpu s after    sched-only s
==========================================  =============  =============  =================
delay 28,000, bench FCFS (baseline)          2.2-2.7        2.2-2.3        (0.07)
delay 28,000, registry fcfs                  29.0           5.9-6.9        15.3 -> 3.4
KTH-SP2 28,453, bench FCFS (baseline)        --             17.4-20.9      --
KTH-SP2 28,453, registry sjf-bb              41.6-43.9      36.3-43.0      9.5 -> 9.0-10.2
==========================================  =============  =============  =================

Second round (engine fast path, issue 7): the ptask model keeps *isolated* tasks (no latency,
resources no other running task uses: every KTH job, CPU-only on exclusive nodes) out of the
sharing solver at a constant rate with an analytic completion time, and
``parallel_homogeneous`` no longer walks all host pairs when ``com`` is 0. Before/after
measured in one process (the previous ``ptask.py``/``profiles.py`` loaded beside the new ones,
runs interleaved), machine under load:

==========================================  =============  =============  ==============
run                                          cpu s before   cpu s after    after/before
==========================================  =============  =============  ==============
delay 28,000, bench FCFS (no ptask)          2.46           2.48           1.01
delay 28,000, registry fcfs (no ptask)       5.89           5.84           0.99
KTH-SP2 28,453, bench FCFS (engine)          16.59          4.79           0.29
KTH-SP2 28,453, registry sjf-bb              27.23          12.29          0.45
==========================================  =============  =============  ==============

With less load (this script, after): KTH bench FCFS 3.0-3.6 s (was 17-21 s: ~5.5x), sjf-bb
12.0 s of which 8.0 s are the policy's own (sched-only), so the engine now takes ~4 s of it
and the 10 s target is missed by the scheduler part; delay fcfs 4.1 s (6,900 jobs/s), of which
2.8 s are the scheduler's, the engine + bench FCFS alone 2.0 s (14,000 jobs/s).
KTH outputs: same job order and allocations as before; 267 of 28,453 rows move by one unit in
the 6th decimal (the analytic time differs from the stepped sum by ~1 ulp near a rounding
boundary of ``x.xxxxxx5``).
Delay case: the registry ``fcfs`` copied the whole waiting queue every round (the workload
overloads the machine, ~28,000 jobs wait: quadratic); ``ctx.queue`` is now a view
(``WaitingQueue``), 4.5x less scheduler time. What is left there is ~60 us per message of
protocol and bookkeeping (message parsing into dataclasses, Job construction, profile
reserve/release, EXECUTE_JOB interval formatting), short of the 10,000 target.

Third round (scheduler hot paths, same decisions: every replay below is ``same``). EASY reuses
a blocked job's earliest start when the profile after the present slice is unchanged (exact:
the job failed the present slice's checks, the scan's answer reads only later slices);
``fits_now`` evaluates the scan's first candidate inline; the prefix cache is truncated at the
first changed slice instead of dropped on every change; ``infeasible_reason`` is memoised per
request shape; starts build their ProcSet from ids (no text round-trip) and intervals are
built/formatted without procset's re-checks; sjf keeps its queue sorted across rounds
(``EasyBackfilling._sjf_order``, added after the table: 5.7 s in the fresh-process replay
below). Before = the previous commit's ``schedulers/``
loaded from an export beside the same engine, runs interleaved (2 pairs, loaded machine):

==========================================  =============  =============  ==============
run                                          cpu s before   cpu s after    sched-only s
==========================================  =============  =============  ==============
delay 28,000, bench FCFS (baseline)          2.25 / 2.14    2.19 / 1.93    --
delay 28,000, registry fcfs                  4.33 / 4.45    4.05 / 3.83    3.50 / 3.19 -> 3.34 / 2.49
KTH-SP2 28,453, bench FCFS (baseline)        4.18 / 3.39    3.56 / 3.34    --
KTH-SP2 28,453, registry sjf-bb              11.43 / 11.36  11.77 / 10.58  7.56 / 7.03 -> 6.40 / 6.84
==========================================  =============  =============  ==============

The in-run "sched-only" numbers swing with the process's heap (the replay runs after three
simulations: the garbage collector's full passes walk it). Replaying the same recorded
messages in fresh processes, 3 interleaved old/new pairs each: sjf-bb 6.55-7.00 s -> 5.63-5.99 s
(-13%), fcfs 2.37-2.48 s -> 2.11-2.22 s (-10%); with ``gc.freeze()`` before the replay fcfs
takes 1.6 s. Targets still missed: sjf-bb whole run ~11 s (engine ~4-5 s + scheduler ~6 s),
delay fcfs ~7,300 jobs/cpu-s. What is left in sjf-bb is one EASY pass per message (~27 queued
jobs sorted by walltime, ~4 fits_now checks, the head's reserve/release, ~100 us); in fcfs the
per-message protocol work (event dataclasses, Job/Request construction, interval text).

Fourth round (this session; the machine was shared with long experiment runs, so wall and CPU
times swing by 20-30% between identical runs; instruction counts from ``valgrind
--tool=callgrind`` on a replay of the first 8,000 recorded messages are the steady measure).
Node ids and Batsim ranges of a start are read per run of set bits (was: per node, the largest
single cost of the fcfs replay), Requests shared per job shape, repeated interval texts parsed
once, fcfs skips a round whose blocked head and profile are unchanged, EASY reserves a blocked
job only when a later job reaches the window check, well-formed events parsed inline: fcfs
replay 115,500 -> 99,600 instructions per message (-14%), every reply identical. Whole runs
(engines paused around the measurement): delay fcfs 4.3-4.9 s (5,700-6,500 jobs/s; engine +
bench FCFS 1.8-2.2 s), KTH sjf-bb 10.2-12.8 s (engine + bench FCFS 3.3-3.7 s, sched-only 6.0 s).
Both targets are still missed: the scheduler side of fcfs costs 60-100 us a job where the 10,000
jobs/s target leaves it ~30 us after the engine's share.

Fifth round (issue 7, same replies and outputs throughout). Scheduler: ``PolicyScheduler``
takes the common messages (JOB_SUBMITTED, JOB_COMPLETED of a job it started, REQUESTED_CALL,
well-formed) on a lean path straight into the runtime and writes EXECUTE_JOB from the node
mask's runs; anything else goes through the full checked path (tests/schedulers/
test_lean_path.py); ``Policy.idle_round`` lets fcfs skip a blocked round before its context is
built; EASY makes the blocked job's reservation only when a later job's window reaches its
start. Engine: alloc texts parsed once, one format per ``_jobs.csv`` row, a fast path for
well-typed workload jobs, the main loop's invariants in locals, the run's inputs frozen for the
garbage collector, no walltime timer for a lone delay ending before it, empty replies without
per-event work. This script now runs each case in a fresh process (a process that had already
simulated and freed a whole trace ran the next one up to 30% slower) and keeps the least CPU of
``--repeat`` runs.

Instruction counts (callgrind): fcfs replay of the first 8,000 messages 102,200 -> 72,800 per
message (-29%); whole 4,000-job delay run with fcfs 785,700 -> 625,300 per job (-20%), engine
with the bench FCFS 483,600 -> 434,600. CPU seconds, this script, experiment runs paused, the
session-start code (``old``) and this round's measured one after the other with the same script:

==========================================  =============  =============
run                                          old            this round
==========================================  =============  =============
delay 28,000, bench FCFS (baseline)          1.70           1.44-1.60
delay 28,000, registry fcfs                  3.95           2.77-3.12 (8,980-10,100 jobs/s)
KTH-SP2 28,453, bench FCFS (baseline)        2.68           2.40-2.88
KTH-SP2 28,453, registry sjf-bb              9.26           8.99-9.24
==========================================  =============  =============

At the end of the session, nothing else running, ``--repeat 5``: delay fcfs 2.79 s and 2.94 s
(10,030 and 9,520 jobs/s; bench FCFS 1.48 / 1.58 s), KTH sjf-bb 8.20 s (bench FCFS 2.19 s).

The KTH target (< 10 s) is met, also by the session-start code once measured in a fresh
process (the earlier rounds' 10-13 s were this script's long-lived process). The delay target
(10,000 jobs/s) is reached by the best runs only: identical runs of this machine differ by
10-15% in CPU time, and the measured range straddles the target. The registry fcfs costs
1.8-1.9x the engine with the bench FCFS; a reliable 10,000 needs about 10% less of either.

Sixth round (issue 7, same replies and outputs). The runtime's waiting queue is an
``OrderedDict``: a plain dict keeps a hole per removed job until it grows again, and reading
the head of a long FIFO queue (every round) walked all of them, so the 28,000-job fcfs replay
grew quadratic (1.30 -> 0.82 s of replay CPU). During a run the garbage collector runs ~30x
less often (restored after the run; ~6% of a delay run), and a reply's request-reply actor is
a plain object instead of a closure naming itself (no garbage cycle per reply). This script
now alternates the baseline's and the policy's runs (the policy's used to follow all the
baseline's, in an older process) and its replay freezes the recorded messages for the
collector, as a run freezes its inputs. The bench FCFS pops its queue in O(1) (it was
quadratic), which makes the baseline a little faster. Nothing else running, ``--repeat 5``,
three invocations: delay fcfs 2.53 / 2.66 / 2.53 s (11,055 / 10,534 / 11,078 jobs/s; bench
FCFS 1.34-1.40 s, ratio 1.81-1.91); KTH sjf-bb 7.63 / 7.77 s (bench FCFS 2.14-2.16 s). Both
targets are met, the delay one by 5-11%: less than this machine's spread between identical
runs, but in every measured run.

Seventh round (issue #18, engine side; see bench_simulator.py for the memory changes). Same
replies and byte-identical ``_jobs.csv`` (``bench_scale.py --check ca47b15``: ``fcfs-bb``,
``sjf-bb``, ``fcfs-easy``, ``filler`` on 2,000 jobs / 96 nodes and 1,000 jobs / 10,000
nodes). The machine ran at load 11-21 all along (other sessions' benchmarks), so CPU seconds
swing by ~15%: delay 28,000 fcfs 3.44 s (8,146 jobs/s, sched-only 1.90 s), bench FCFS 1.44 s
(19,447 jobs/s), against 3.56 / 1.46 s at the session start (load < 1): no measurable change
on delay jobs, whose engine cost is the protocol itself (5 internal messages and 2 scheduler
round trips a job, ~45-55 us).

Ninth round (issue #18 item 4, 20,000 jobs/s asked; see bench_simulator.py for instruction
counts and why it is out of reach): this script, ``--skip-trace``, load 3.6-3.8: delay 28,000
bench FCFS 1.70 s (16,502 jobs/s), registry ``fcfs`` 2.74 s (10,232 jobs/s, sched-only 1.09 s,
``same``), ratio 1.61 (2.01-2.23 before this round).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_simulator as bs  # noqa: E402  (the delay workload generator and the bench FCFS)

ROOT = Path(__file__).resolve().parents[1]
KTH = ROOT.parent / "shared" / "data" / "KTH-SP2-1996-2.1-cln.swf"


def run(platform, workload, scheduler, prefix, record=False):
    from mrsched.simulator.engine import simulate

    c0, t0 = time.process_time(), time.perf_counter()
    result = simulate(platform, [workload], scheduler, export_prefix=prefix, record_transcript=record)
    return result, time.perf_counter() - t0, time.process_time() - c0


def scheduler_only(policy: str, transcript: list[dict]) -> tuple[float, bool]:
    """CPU seconds of a fresh scheduler answering the recorded messages, and whether every
    reply equals the recorded one (it must: same inputs, deterministic policy)."""
    from mrsched.schedulers.registry import make_scheduler

    msgs = [e["msg"] for e in transcript if e["from"] != "scheduler"]
    replies = [e["msg"] for e in transcript if e["from"] == "scheduler"]
    sched = make_scheduler(policy, {})
    gc.collect()
    gc.freeze()   # the recorded messages are input, as a run's workload is (Engine.run)
    c0 = time.process_time()
    out = [sched.handle_message(m) for m in msgs]
    cpu = time.process_time() - c0
    gc.unfreeze()
    same = len(out) == len(replies) and all(
        json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) for a, b in zip(out, replies))
    return cpu, same


def kth_workload(trace: Path, out: Path, platform: Path) -> int:
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.convert import convert_swf
    from mrsched.workloads.platform_info import read_platform_info

    conv = convert_swf(trace, platform=read_platform_info(platform), model="burst-buffer",
                       variant="alloc-only", seed=0)
    write_workload(out, conv.workload)
    return len(conv.workload["jobs"])


def main() -> None:
    from mrsched.platforms.bundled import bundled_path
    from mrsched.schedulers.registry import make_scheduler

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=28000, help="jobs of the delay workload")
    ap.add_argument("--trace", type=Path, default=KTH, help="SWF trace of case 2")
    ap.add_argument("--policy", default="sjf-bb", help="policy of case 2")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per case; the least CPU is kept")
    ap.add_argument("--skip-delay", action="store_true")
    ap.add_argument("--skip-trace", action="store_true")
    ap.add_argument("--only", choices=("delay", "trace"), help=argparse.SUPPRESS)   # one case, JSON rows
    args = ap.parse_args()
    if args.only is None:
        # each case in a fresh process, as a user's run is (its baseline in the same process):
        # a process that already simulated and freed a whole trace runs the next one up to 30%
        # slower (a scattered heap), which would measure this script, not the simulator
        rows = []
        for only, skip in (("delay", args.skip_delay), ("trace", args.skip_trace)):
            if skip:
                continue
            cmd = [sys.executable, __file__, "--only", only, "--jobs", str(args.jobs), "--trace", str(args.trace),
                   "--policy", args.policy, "--repeat", str(args.repeat)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                if line.startswith("ROW "):
                    rows.append(tuple(json.loads(line[4:])))
                else:
                    print(line)
        print_rows(rows)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_trace_"))
    rows = []   # name, jobs, wall, cpu, sched-only cpu, same, baseline cpu

    def best_pair(platform, workload, policy):
        """Wall and CPU seconds of the bench FCFS and of ``policy``, each the run with the
        least CPU of ``--repeat``; the two alternate (baseline, policy, baseline, ...) so a
        process that slows down as it ages weighs on both alike (the machine's other load
        only ever adds time: the least is the closest to the code's own cost)."""
        base, runs = [], []
        for _ in range(args.repeat):
            _, w, c = run(platform, workload, bs.FCFS(), tmp / "base")
            base.append((c, w))
            _, w, c = run(platform, workload, make_scheduler(policy, {}), tmp / policy)
            runs.append((c, w))
        return min(base), min(runs)

    def case(name, platform, workload, jobs, policy):
        (bc, bw), (c, w) = best_pair(platform, workload, policy)
        rows.append((f"{name}, bench FCFS (baseline)", jobs, bw, bc, None, None, bc))
        # a second, recorded run feeds the replay (recording is kept out of the timed run)
        res, _, _ = run(platform, workload, make_scheduler(policy, {}), None, record=True)
        so, same = scheduler_only(policy, res.transcript)
        rows.append((f"{name}, registry {policy}", jobs, w, c, so, same, bc))

    if args.only == "delay":
        cluster, wl = tmp / "cluster.xml", tmp / "delay.json"
        cluster.write_text(bs.CLUSTER)
        bs.delay_workload(wl, args.jobs, 0)
        case(f"delay {args.jobs}", cluster, wl, args.jobs, "fcfs")
    if args.only == "trace":
        if not args.trace.exists():
            print(f"skipping the trace case: {args.trace} not found (pass --trace)")
        else:
            platform = bundled_path("dragonfly96")
            wl = tmp / "trace.json"
            n = kth_workload(args.trace, wl, platform)
            case(f"{args.trace.stem[:12]} {n}", platform, wl, n, args.policy)
    for row in rows:
        print("ROW " + json.dumps(row))


def print_rows(rows: list[tuple]) -> None:
    print(f"{'run':44s} {'jobs':>6s} {'wall s':>7s} {'cpu s':>7s} {'jobs/cpu-s':>10s} "
          f"{'sched-only s':>12s} {'same':>5s} {'x baseline':>10s}")
    for name, jobs, wall, cpu, so, same, base in rows:
        so_txt = "" if so is None else f"{so:12.2f}"
        same_txt = "" if same is None else str(same)
        print(f"{name:44s} {jobs:6d} {wall:7.2f} {cpu:7.2f} {jobs / cpu:10.0f} {so_txt:>12s} "
              f"{same_txt:>5s} {cpu / base:10.2f}")
    print("targets: delay fcfs >= 20,000 jobs/cpu-s (issue #18; was 10,000); whole trace sjf-bb < 10 s")


if __name__ == "__main__":
    main()
