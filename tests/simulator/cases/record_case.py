#!/usr/bin/env python3
"""Record one real Batsim 4.2.1 run into a case folder of this directory (a developer tool:
the tests only read what it wrote, they never run Batsim or batsched).

    python tests/simulator/cases/record_case.py NAME -p PLATFORM -w WORKLOAD \
        [--batsim-flags "--enable-dynamic-jobs ..."] -- SCHEDULER COMMAND with {socket}

The scheduler is started with ``{socket}`` replaced by a loopback endpoint it binds; Batsim
connects to ``../shared/tools/record_transcript.py``, which relays every message to the scheduler
and writes them to ``NAME/transcript.jsonl``. The folder then holds the inputs
(``platform.xml``, ``workload.json``), Batsim's outputs (``out_jobs.csv``, ``out_schedule.csv``,
``out_machine_states.csv``) and ``command.txt`` (the command lines, as the shared cases' ones).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(os.environ.get("CASES_DIR", Path(__file__).resolve().parent))
SHARED = Path(__file__).resolve().parents[3].parent / "shared"
BATSIM = os.environ.get("BATSIM", "/opt/batsim-local/bin/batsim")


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("-p", "--platform", required=True)
    ap.add_argument("-w", "--workload", required=True)
    ap.add_argument("--batsim-flags", default="")
    ap.add_argument("--note", default="", help="a line for command.txt")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep NAME/logs (Batsim's log: every actor's action and its time)")
    try:
        import zmq  # noqa: F401  (the recorder runs with this interpreter)
    except ImportError:
        ap.error("pyzmq is needed: run this with the project's virtualenv python")
    argv = sys.argv[1:]
    if "--" not in argv:
        ap.error("give the scheduler command after --")
    cut = argv.index("--")
    args = ap.parse_args(argv[:cut])
    sched = argv[cut + 1:]
    case = HERE / args.name
    if case.exists():
        shutil.rmtree(case)
    case.mkdir(parents=True)
    shutil.copyfile(args.platform, case / "platform.xml")
    shutil.copyfile(args.workload, case / "workload.json")
    back, front = free_port(), free_port()
    sched_cmd = [a.replace("{socket}", f"tcp://127.0.0.1:{back}") for a in sched]
    batsim_cmd = [BATSIM, "-s", f"tcp://127.0.0.1:{front}", "-p", "platform.xml",
                  "-w", "workload.json", "-e", "out", *shlex.split(args.batsim_flags)]
    logs = case / "logs"
    logs.mkdir()
    procs = []
    try:
        procs.append(subprocess.Popen(sched_cmd, stdout=open(logs / "sched.log", "w"),
                                      stderr=subprocess.STDOUT))
        time.sleep(0.5)
        procs.append(subprocess.Popen([sys.executable, str(SHARED / "tools" / "record_transcript.py"),
                                       f"tcp://127.0.0.1:{front}", f"tcp://127.0.0.1:{back}",
                                       str(case / "transcript.jsonl")],
                                      stdout=open(logs / "recorder.log", "w"),
                                      stderr=subprocess.STDOUT))
        time.sleep(0.5)
        bat = subprocess.Popen(batsim_cmd, cwd=case, stdout=open(logs / "batsim.log", "w"),
                               stderr=subprocess.STDOUT)
        procs.append(bat)
        code, deadline, gone = None, time.monotonic() + args.timeout, None
        while code is None and time.monotonic() < deadline:
            try:
                code = bat.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                # a scheduler that exited (crashed) leaves Batsim waiting for its reply; one
                # that answered SIMULATION_ENDS leaves Batsim writing its outputs
                if (gone is None and procs[0].poll() is not None
                        and "SIMULATION_ENDS" not in _text(case / "transcript.jsonl")):
                    gone = time.monotonic()
                if gone is not None and time.monotonic() > gone + 3:
                    break
        if code is None:
            code = "the scheduler exited" if gone is not None else "timeout"
        if code == 0:     # (after an abort the scheduler waits for a message)
            for p in procs:
                p.wait(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
    (case / "out_schedule.trace").unlink(missing_ok=True)   # Pajé trace: not compared
    shown = [a.replace("{socket}", "tcp://127.0.0.1:PORT") for a in sched]
    (case / "command.txt").write_text(
        "batsim 4.2.1 (SimGrid 3.32)\n"
        f"batsim -s tcp://127.0.0.1:28000 -p platform.xml -w workload.json -e out"
        f"{' ' + args.batsim_flags if args.batsim_flags else ''}\n"
        f"scheduler: {' '.join(shlex.quote(a) for a in shown)}\n"
        + (f"note: {args.note}\n" if args.note else ""))
    if code != 0:    # the folder stays, logs included: what did Batsim refuse?
        print(f"batsim failed ({code}): see {logs / 'batsim.log'}", file=sys.stderr)
        return 1
    if not args.keep_logs:
        shutil.rmtree(logs)
    print(f"recorded {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
