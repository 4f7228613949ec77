"""Real Batsim 4.2.1 runs recorded in ``tests/simulator/cases/`` (by ``cases/record_case.py``:
inputs, every message, Batsim's outputs; see ``cases/README.md``) and the long shared case
``kth4000easy``: the engine driven by the recorded scheduler replies must send Batsim's messages
(every event, its data and time) and write Batsim's ``out_jobs.csv`` rows (issues 42 and 46).
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket as sock
import threading
from pathlib import Path

import pytest

from mrsched.simulator.replay import ReplayScheduler, load_transcript
from test_fidelity import _run_engine, compare_all_messages, compare_jobs_rows, replay_of

CASES_DIR = Path(__file__).resolve().parent / "cases"
LOCAL_CASES = sorted(d.name for d in CASES_DIR.iterdir() if (d / "transcript.jsonl").is_file())


def batsim_line(case_dir: Path) -> str:
    return next(line for line in (case_dir / "command.txt").read_text().splitlines()
                if line.startswith("batsim -"))


def run_case(case_dir: Path, scheduler, prefix: Path):
    """The engine on a case's inputs with its Batsim command line, read by ``mrsched
    simulate``'s own parser (so the recorded flags go through the CLI's mapping)."""
    from mrsched.simulator import cli
    from mrsched.simulator.engine import simulate
    from mrsched.simulator.platform import load_platform

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(shlex.split(batsim_line(case_dir))[1:])
    options = cli.engine_options(args)
    platform = load_platform(str(case_dir / args.platform), roles=options["roles"],
                             master_host=args.master_host)
    return simulate(platform, [case_dir / w for w in args.workload], scheduler,
                    export_prefix=prefix, record_transcript=True, **options)


def compare_replies(recorded: list[dict], mine: list[dict]) -> None:
    """A scheduler served live answered as the recorded one: same decisions, same times."""
    rec_s = [e["msg"] for e in recorded if e["from"] == "scheduler"]
    my_s = [e["msg"] for e in mine if e["from"] == "scheduler"]
    assert len(my_s) == len(rec_s)
    for i, (a, b) in enumerate(zip(my_s, rec_s)):
        assert abs(a["now"] - b["now"]) <= 1e-5, f"reply {i}: now {a['now']} vs {b['now']}"
        assert [(e["type"], e["data"]) for e in a["events"]] == [
            (e["type"], e["data"]) for e in b["events"]], f"reply {i}: other decisions"
        assert all(abs(x["timestamp"] - y["timestamp"]) <= 1e-5
                   for x, y in zip(a["events"], b["events"])), f"reply {i}: other times"


#: what the engine does not reproduce yet (strict: the test fails once it does)
KNOWN_GAPS: dict[str, str] = {}    # case name -> why (none since messages share links)


def _replay_params():
    return [pytest.param(c, marks=[pytest.mark.xfail(reason=KNOWN_GAPS[c], strict=True)]
                         if c in KNOWN_GAPS else []) for c in LOCAL_CASES]


@pytest.mark.parametrize("case", _replay_params())
def test_recorded_case_replayed(case, tmp_path):
    case_dir = CASES_DIR / case
    transcript = load_transcript(case_dir / "transcript.jsonl")
    result = run_case(case_dir, replay_of(case_dir, transcript), tmp_path / "out")
    compare_all_messages(transcript, result.transcript)
    compare_jobs_rows(case_dir / "out_jobs.csv", tmp_path / "out_jobs.csv")
    # and byte for byte: every time, stretch and mean as Batsim prints it (long doubles
    # included: case ld_times)
    assert (tmp_path / "out_jobs.csv").read_text() == (case_dir / "out_jobs.csv").read_text()
    mine, ref = (_schedule(d / "out_schedule.csv") for d in (tmp_path, case_dir))
    assert mine == ref


def _schedule(path: Path) -> dict[str, str]:
    """``_schedule.csv``'s values but the run's own CPU and wall times."""
    head, values = path.read_text().splitlines()[:2]
    row = dict(zip(head.split(","), values.split(",")))
    for key in ("scheduling_time", "simulation_time"):
        row.pop(key, None)
    return row


def batsched_command(case_dir: Path) -> tuple[str, dict] | None:
    """The batsched variant and options that answered Batsim (command.txt), or None."""
    line = next(line for line in (case_dir / "command.txt").read_text().splitlines()
                if line.startswith("scheduler:"))
    argv = shlex.split(line.partition(":")[2])
    if not argv or not argv[0].endswith("batsched"):
        return None
    variant = argv[argv.index("-v") + 1]
    options = (json.loads(argv[argv.index("--variant_options") + 1])
               if "--variant_options" in argv else {})
    return variant, options


def _stood_in(case: str) -> bool:
    from batsched_standin import VARIANTS

    command = batsched_command(CASES_DIR / case)
    return command is not None and command[0] in VARIANTS


SERVED_CASES = [c for c in LOCAL_CASES if _stood_in(c)]


@pytest.mark.parametrize("case", SERVED_CASES)
def test_recorded_case_served(case, tmp_path):
    """batsched's decisions taken live (``batsched_standin``, the same variant and options) on
    the engine, over ZeroMQ: batsched's replies, Batsim's messages and rows."""
    from batsched_standin import BatschedStandIn
    from mrsched.schedulers.batsim.endpoint import serve
    from mrsched.simulator.connection import ZmqScheduler

    case_dir = CASES_DIR / case
    variant, options = batsched_command(case_dir)
    transcript = load_transcript(case_dir / "transcript.jsonl")
    socket, port = _free_endpoint()
    server = threading.Thread(target=serve, args=(BatschedStandIn(variant, options), socket),
                              kwargs={"timeout": 60}, daemon=True)
    server.start()
    with ZmqScheduler(socket, timeout=60) as conn:
        result = run_case(case_dir, conn, tmp_path / "out")
    server.join(30)
    compare_replies(transcript, result.transcript)
    compare_all_messages(transcript, result.transcript)
    compare_jobs_rows(case_dir / "out_jobs.csv", tmp_path / "out_jobs.csv")


def _free_endpoint() -> tuple[str, int]:
    with sock.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"tcp://127.0.0.1:{port}", port


def test_walltime_tie_completes(tmp_path):
    """``w0!1010``: 1e10 flops on a 1 Gflop/s host under a walltime of 10 s. Its task and its
    timeout end in one SimGrid step; the task's action was created first, so the job completes
    (Batsim: ``COMPLETED_SUCCESSFULLY``, return code 0)."""
    case_dir = CASES_DIR / "walltime_fcfs"
    transcript = load_transcript(case_dir / "transcript.jsonl")
    result = run_case(case_dir, replay_of(case_dir, transcript), tmp_path / "out")
    row = next(r for r in result.jobs if r.local_id == "1010")
    assert (row.final_state, row.finish_time - row.starting_time) == ("COMPLETED_SUCCESSFULLY",
                                                                     pytest.approx(10.0))
    completed = [e["data"] for m in result.transcript if m["from"] == "batsim"
                 for e in m["msg"]["events"] if e["type"] == "JOB_COMPLETED"]
    assert {"job_id": "w0!1010", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0,
            "alloc": "11"} in completed


def _kth4000easy(shared_dir) -> Path:
    case_dir = shared_dir / "batsim-reference" / "kth4000easy"
    if not (case_dir / "transcript.jsonl").is_file():
        from conftest import missing

        missing(f"{case_dir} is absent")
    return case_dir


def test_kth4000easy_replayed(shared_dir, tmp_path):
    """4,000 KTH-SP2 jobs, every message: job 1252 ends exactly at its walltime (successfully),
    and jobs 474 and 475, both submitted at 256039, go in two messages (the submitter woke a
    hair before that time and takes the job it slept for anyway)."""
    case_dir = _kth4000easy(shared_dir)
    transcript = load_transcript(case_dir / "transcript.jsonl")
    result = _run_engine(case_dir, replay_of(case_dir, transcript), tmp_path / "out")
    compare_all_messages(transcript, result.transcript)
    compare_jobs_rows(case_dir / "out_jobs.csv", tmp_path / "out_jobs.csv")


def test_kth4000easy_served(shared_dir, tmp_path):
    """The policy that answered Batsim (``fcfs-easy``) decides live on the engine: the same
    replies, the same Batsim messages and rows."""
    from mrsched.schedulers.registry import make_scheduler

    case_dir = _kth4000easy(shared_dir)
    transcript = load_transcript(case_dir / "transcript.jsonl")
    result = _run_engine(case_dir, make_scheduler("fcfs-easy", {}), tmp_path / "out")
    compare_all_messages(transcript, result.transcript)
    compare_replies(transcript, result.transcript)
    compare_jobs_rows(case_dir / "out_jobs.csv", tmp_path / "out_jobs.csv")


@pytest.mark.parametrize("a, b, batsim", [
    (20636.0, 0.00827761356595123, 20635.991722386432),      # double: ...436
    (231673.0, 0.004453746965737493, 231672.99554625305),    # double: ...302
    (76714.0, 0.007130182821131186, 76713.99286981719),      # double: ...717
    (256039.0, 256038.99999999997, 256039.0 - 256038.99999999997),   # exact: the same
])
def test_submitter_sleep_is_a_long_double_difference(a, b, batsim):
    """Batsim's submitter sleeps ``(double)(subtime - clock)`` computed in x86 long doubles
    (values from numpy.longdouble, the same 80-bit format): twice rounded, it may differ from
    the double difference in the last bit."""
    from mrsched.simulator.submitter import _ld_sub

    assert _ld_sub(a, b) == batsim
    assert _ld_sub(b, a) == -batsim


def test_submitter_sleep_matches_long_doubles_on_random_times():
    """``_ld_sub`` against the x86 80-bit long double itself (numpy.longdouble where it is that
    format), on times of every magnitude a workload gives, ties of the 64-bit rounding
    included: the same double every time."""
    import random
    from fractions import Fraction

    import numpy as np

    from mrsched.simulator.submitter import _ld_sub

    if np.finfo(np.longdouble).nmant != 63:
        pytest.skip("numpy.longdouble is not the x86 80-bit format on this machine")
    rng = random.Random(11)
    inexact = 0
    for _ in range(20000):
        a = rng.choice([rng.uniform(0, 1e9), float(rng.randrange(10**9)), rng.uniform(0, 10)])
        b = rng.choice([rng.uniform(0, a), a * rng.random() ** 8, rng.uniform(0, 1e-3),
                        a - rng.uniform(0, 1e-6)])
        want = float(np.longdouble(a) - np.longdouble(b))
        assert _ld_sub(a, b) == want, (a, b)
        assert _ld_sub(b, a) == -want, (a, b)
        inexact += Fraction(a) - Fraction(b) != Fraction(a - b)
    assert inexact > 5000


def test_a_batsched_reply_is_read_from_rapidjsons_text(tmp_path):
    """Case ``kill_repeated``: batsched's reply at 10.000075 says ``"now":20.000075000000004``
    (rapidjson's Grisu2, where Python writes ``...002``) and stamps a KILL_JOB so; Batsim reads
    that text and its request-reply actor sleeps until then. Its log (``--sg-log
    'root.fmt:[%.17d]%e[%a]%e%m%n'``) has job 2's EXECUTE_JOB received at
    20.00012000602410822: the replay that reads batsched's numbers from rapidjson's text
    (``replay_of``) starts job 2 then, one reading Python's text an ulp and a half early."""
    case_dir = CASES_DIR / "kill_repeated"
    transcript = load_transcript(case_dir / "transcript.jsonl")
    starts = {}
    for name, replay in (("batsched", replay_of(case_dir, transcript)),
                         ("python", ReplayScheduler(transcript, writer="python"))):
        result = run_case(case_dir, replay, tmp_path / name)
        starts[name] = next(r.starting_time for r in result.jobs if r.local_id == "2")
    assert starts["batsched"] == float("20.00012000602410822") != starts["python"]
