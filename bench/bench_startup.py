"""Start-up cost of small runs (issue 45): ``mrsched run`` on Batsim's ``delays`` case against
Batsim + batsched, and ``mrsched.simulate`` in a loop.

Run on demand (not a test):

    .venv/bin/python bench/bench_startup.py
    .venv/bin/python bench/bench_startup.py --batsim /opt/batsim-local/bin/batsim \\
        --batsched /opt/batsched-local/bin/batsched --repeat 9

Each ``mrsched run`` is a whole process (``python -m mrsched.cli run ... --force``), timed wall
and CPU (its own and its children's, from ``os.wait4``); with ``--batsim`` and ``--batsched``
the pair (``batsched -v easy_bf`` then ``batsim -p ... -w ... -e ...``, on a free port) is
timed the same way, alternating with mrsched so that both see the same load. Printed: the
median and the best of each, and the ratio of the medians, against the targets: within 3x of
Batsim + batsched, or at most 0.15 s wall without them. Then ``simulate`` on ``delays`` in
this process, N times: runs per second (target 100). A shared machine's load moves wall times
a lot; CPU seconds and the alternation make the ratio fairer.

Bytecode: a fresh interpreter reads ``.pyc`` files; where ``PYTHONDONTWRITEBYTECODE`` is set
(none are written, every start compiles the sources), the children get a private
``PYTHONPYCACHEPREFIX`` in a temporary folder, warmed by one untimed run, so that the
figures are those of an installed package.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DELAYS = ROOT.parent / "shared" / "batsim-reference" / "delays"
TARGET_RATIO = 3.0
TARGET_WALL = 0.15
TARGET_RATE = 100.0


def timed(argv: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a command and its children, output discarded."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime


def timed_pair(batsim: str, batsched: str, case: Path, out: str) -> tuple[float, float]:
    """Batsim + batsched on ``case``: both started, Batsim waited for, then batsched."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    t0 = time.perf_counter()
    sched = subprocess.Popen([batsched, "-v", "easy_bf", "-s", url], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    sim = subprocess.Popen([batsim, "-p", str(case / "platform.xml"), "-w", str(case / "workload.json"),
                            "-e", out, "-s", url], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    cpu = 0.0
    for proc in (sim, sched):
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        if proc.returncode != 0:
            raise SystemExit(f"Batsim or batsched failed ({proc.returncode})")
    return time.perf_counter() - t0, cpu


def summary(name: str, values: list[tuple[float, float]]) -> tuple[float, float]:
    walls, cpus = [w for w, _ in values], [c for _, c in values]
    med_w, med_c = statistics.median(walls), statistics.median(cpus)
    print(f"{name:22} wall median {med_w:.3f} s (best {min(walls):.3f})   "
          f"CPU median {med_c:.3f} s (best {min(cpus):.3f})")
    return med_w, med_c


def bench_run(args, env: dict, tmp: str) -> None:
    case = args.case
    argv = [sys.executable, "-m", "mrsched.cli", "run", "-p", str(case / "platform.xml"), "-w",
            str(case / "workload.json"), "--policy", args.policy, "-o", f"{tmp}/run", "--force"]
    timed(argv, env, tmp)                       # warm: bytecode, the file cache
    pair = args.batsim and args.batsched
    if pair:
        timed_pair(args.batsim, args.batsched, case, f"{tmp}/batsim")
    ours, theirs = [], []
    for _ in range(args.repeat):
        ours.append(timed(argv, env, tmp))
        if pair:
            theirs.append(timed_pair(args.batsim, args.batsched, case, f"{tmp}/batsim"))
    print(f"mrsched run on {case.name}, {args.policy}, {args.repeat} runs "
          f"(load average {os.getloadavg()[0]:.1f})")
    wall, cpu = summary("mrsched run", ours)
    if pair:
        pwall, pcpu = summary("Batsim + batsched", theirs)
        ratio_w, ratio_c = wall / pwall, cpu / pcpu
        verdict = "met" if ratio_w <= TARGET_RATIO else "NOT met"
        print(f"ratio of medians: wall {ratio_w:.2f}x, CPU {ratio_c:.2f}x "
              f"(target: wall within {TARGET_RATIO:g}x: {verdict})")
    else:
        verdict = "met" if wall <= TARGET_WALL else "NOT met"
        print(f"target without Batsim: at most {TARGET_WALL} s wall: {verdict}")


def bench_simulate(args) -> None:
    import mrsched

    case = args.case
    platform, workload = case / "platform.xml", case / "workload.json"
    mrsched.simulate(platform, workload, args.policy)        # imports, first-run caches
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(args.loop):
        mrsched.simulate(platform, workload, args.policy)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rate = args.loop / wall
    verdict = "met" if rate >= TARGET_RATE else "NOT met"
    print(f"mrsched.simulate on {case.name} x {args.loop}: {rate:.0f} runs/s wall "
          f"({args.loop / cpu:.0f} per CPU second; target {TARGET_RATE:g}/s: {verdict})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", type=Path, default=DELAYS, help="a folder with platform.xml and workload.json")
    ap.add_argument("--policy", default="fcfs-easy")
    ap.add_argument("--batsim", help="a Batsim 4.2.1 binary (e.g. /opt/batsim-local/bin/batsim)")
    ap.add_argument("--batsched", help="a batsched binary (e.g. /opt/batsched-local/bin/batsched)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs of each command")
    ap.add_argument("--loop", type=int, default=200, help="simulate calls timed in the loop")
    args = ap.parse_args()
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        if env.get("PYTHONDONTWRITEBYTECODE"):
            env.pop("PYTHONDONTWRITEBYTECODE")
            env["PYTHONPYCACHEPREFIX"] = f"{tmp}/pycache"
            print("PYTHONDONTWRITEBYTECODE is set: the runs use a private bytecode cache")
        bench_run(args, env, tmp)
    bench_simulate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
