"""The two speed targets of issue 40 item 8, side by side (run on demand, prints a table).

    .venv/bin/python bench/bench_conservative.py --batsched /opt/batsched-local/bin/batsched
    .venv/bin/python bench/bench_conservative.py --sizes 2000 --repeat 1      # no batsched: stand-in
    .venv/bin/python bench/bench_conservative.py --skip-conservative          # only fcfs jobs/s

1. Conservative backfilling against batsched's C++ ``conservative_bf`` on the same overloaded
   work: 128 nodes (``mrsched platform cluster --nodes 128``), ``--sizes`` synthetic delay jobs
   (``mrsched workload synthetic --nodes 128 --jobs N --model delay --mean-interarrival 60
   --seed 1``). Ours is ``mrsched run --policy conservative-bb`` (the whole command: engine,
   scheduler, start-up); batsched is ``batsched -v conservative_bf -p basic -o fcfs -d 0`` on a
   loopback port, served by ``mrsched simulate`` (Batsim's command line), and only batsched's
   own process is counted. Every run is a fresh process; the two alternate, ``--repeat``
   times, and the least CPU of each is kept (a shared machine only slows runs down). The
   ``_jobs.csv`` of every run must be byte-identical to the first one of ours (same
   schedule); the ratio batsched / ours is the target (at least 5). Without ``--batsched``
   the stand-in is printed instead: 5,000 jobs in at most 66 CPU s.
2. The registered ``fcfs`` on ``bench_simulator.py``'s delay workload (``--fcfs-jobs``, 128
   nodes, in process, engine and scheduler in one process as ``bench_simulator.py`` runs it):
   jobs per CPU second, the best of ``--repeat`` fresh processes (target 20,000).

Exit status 1 when a schedule differs.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAND_IN = (5000, 66.0)          # jobs, CPU s: the target's stand-in on the development machine
RATIO = 5.0
FCFS_TARGET = 20_000.0


def mrsched(*args: str) -> list[str]:
    """The ``mrsched`` command line of this interpreter (the checkout's, not another one's)."""
    return [sys.executable, "-m", "mrsched.cli", *args]


def inputs(out: Path, sizes: list[int]) -> tuple[Path, dict[int, Path]]:
    """The platform and the workloads of the target, made with ``mrsched``'s own generators."""
    platform = out / "c128.xml"
    if not platform.exists():
        subprocess.run(mrsched("platform", "cluster", "--nodes", "128", "-o", str(platform)), check=True,
                       capture_output=True)
    workloads = {}
    for n in sizes:
        path = workloads[n] = out / f"w{n}.json"
        if not path.exists():
            subprocess.run(mrsched("workload", "synthetic", "--nodes", "128", "--jobs", str(n), "--model", "delay",
                                   "--mean-interarrival", "60", "--seed", "1", "-o", str(path)),
                           check=True, capture_output=True)
    return platform, workloads


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ours(platform: Path, workload: Path, out: Path, timeout: float) -> tuple[float, Path]:
    """``mrsched run ... --policy conservative-bb``: CPU of the command and its children."""
    if out.exists():
        shutil.rmtree(out)
    before = children_cpu()
    done = subprocess.run(mrsched("run", "-p", str(platform), "-w", str(workload), "--policy", "conservative-bb",
                                  "-o", str(out), "--timeout", str(timeout)),
                          capture_output=True, text=True)
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"bench: mrsched run failed on {workload.name}:\n{done.stderr[-2000:]}")
    return cpu, out / "out_jobs.csv"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_batsched(batsched: str, platform: Path, workload: Path, out: Path, timeout: float) -> tuple[float, Path]:
    """batsched's ``conservative_bf`` served by ``mrsched simulate``: CPU of batsched alone."""
    out.mkdir(parents=True, exist_ok=True)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    sched = subprocess.Popen([batsched, "-v", "conservative_bf", "-p", "basic", "-o", "fcfs", "-d", "0",
                              "-s", endpoint], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)                 # batsched binds before the simulator connects
        done = subprocess.run(mrsched("simulate", "-p", str(platform), "-w", str(workload), "-e",
                                      str(out / "out"), "-s", endpoint, "-q", "--timeout", str(timeout)),
                              capture_output=True, text=True, timeout=timeout + 60)
        if done.returncode != 0:
            raise SystemExit(f"bench: mrsched simulate against batsched failed on {workload.name}:\n"
                             f"{done.stderr[-2000:]}")
        deadline = time.monotonic() + 60
        while True:                     # batsched leaves once SIMULATION_ENDS is answered
            pid, status, usage = os.wait4(sched.pid, os.WNOHANG)
            if pid:
                sched.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                raise SystemExit("bench: batsched did not exit after the simulation ended")
            time.sleep(0.05)
    finally:
        if sched.returncode is None:
            sched.kill()
            sched.wait()
    return usage.ru_utime + usage.ru_stime, out / "out_jobs.csv"


def fcfs_rate(jobs: int, repeat: int, tmp: Path) -> list[float]:
    """Jobs per CPU second of the registered ``fcfs`` on ``bench_simulator.py``'s delay
    workload, each run a fresh process (``bench_simulator.py --scale-child``)."""
    sys.path.insert(0, str(HERE))
    import bench_simulator

    cluster, workload = tmp / "fcfs-cluster.xml", tmp / f"fcfs-delay{jobs}.json"
    cluster.write_text(bench_simulator.CLUSTER)
    bench_simulator.delay_workload(workload, jobs, 0)
    rates = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, str(HERE / "bench_simulator.py"), "--scale-child", str(cluster),
                               str(workload), str(tmp / "fcfs")], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"bench: fcfs run failed:\n{done.stderr[-2000:]}")
        m = json.loads(done.stdout.strip().splitlines()[-1])
        rates.append(m["jobs"] / m["cpu"])
    return rates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batsched", metavar="PATH", help="batsched 1.4.0 binary (absent: the stand-in figure)")
    ap.add_argument("--sizes", nargs="+", type=int, default=[5000, 10000], help="jobs of each conservative run")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each kind (the least CPU is kept)")
    ap.add_argument("--fcfs-jobs", type=int, default=28000, help="delay jobs of the fcfs runs")
    ap.add_argument("--skip-conservative", action="store_true", help="only the fcfs figure")
    ap.add_argument("--skip-fcfs", action="store_true", help="only the conservative figures")
    ap.add_argument("--timeout", type=float, default=14400.0, help="seconds before a run is given up")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mrsched-bench-conservative")
    args = ap.parse_args(argv)
    if args.batsched and not (shutil.which(args.batsched) or Path(args.batsched).is_file()):
        ap.error(f"--batsched {args.batsched}: no such program")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    args.out.mkdir(parents=True, exist_ok=True)
    same = True
    if not args.skip_conservative:
        platform, workloads = inputs(args.out, args.sizes)
        print(f"{'jobs':>6} | {'ours CPU s (runs)':>28} | {'batsched CPU s (runs)':>28} | {'ratio':>6} | "
              f"identical _jobs.csv", flush=True)
        for n in args.sizes:
            ours, theirs, reference, identical = [], [], None, True
            for r in range(args.repeat):    # alternating: ours, batsched, ours, batsched, ...
                cpu, jobs_csv = run_ours(platform, workloads[n], args.out / f"ours{n}-{r}", args.timeout)
                ours.append(cpu)
                if reference is None:
                    reference = jobs_csv
                identical &= filecmp.cmp(reference, jobs_csv, shallow=False)
                if args.batsched:
                    cpu, jobs_csv = run_batsched(args.batsched, platform, workloads[n], args.out / f"bs{n}-{r}",
                                                 args.timeout)
                    theirs.append(cpu)
                    identical &= filecmp.cmp(reference, jobs_csv, shallow=False)
            same &= identical
            runs = " ".join(f"{c:.1f}" for c in ours)
            line = f"{n:>6} | {min(ours):8.1f} ({runs:>17}) | "
            if theirs:
                runs = " ".join(f"{c:.1f}" for c in theirs)
                line += f"{min(theirs):8.1f} ({runs:>17}) | {min(theirs) / min(ours):6.2f} | {identical}"
            else:
                line += f"{'-':>28} | {'-':>6} | {identical}"
            print(line, flush=True)
            if not args.batsched and n == STAND_IN[0]:
                verdict = "met" if min(ours) <= STAND_IN[1] else "NOT met"
                print(f"{'':>6}   stand-in (batsched not given): {n:,} jobs in at most {STAND_IN[1]:.0f} CPU s: "
                      f"{verdict}", flush=True)
        print(f"target: batsched / ours >= {RATIO:.0f} at every size, same schedule"
              + ("" if args.batsched else f"; batsched was not given (--batsched PATH), so the stand-in "
                 f"figure applies: {STAND_IN[0]:,} jobs in at most {STAND_IN[1]:.0f} CPU s on the development "
                 f"machine"))
    if not args.skip_fcfs:
        rates = fcfs_rate(args.fcfs_jobs, args.repeat, args.out)
        runs = " ".join(f"{r:,.0f}" for r in rates)
        verdict = "met" if max(rates) >= FCFS_TARGET else "NOT met"
        print(f"registered fcfs, {args.fcfs_jobs:,} delay jobs in process: {max(rates):,.0f} jobs per CPU s "
              f"(runs: {runs}); target {FCFS_TARGET:,.0f}: {verdict}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
