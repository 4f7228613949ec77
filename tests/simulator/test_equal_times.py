"""Equal times over long runs (issue #14): randomised workloads made of ties — many jobs
submitted at the same instants, most lasting exactly one minute (KTH-SP2's most common runtime),
half of them sleeps (delay) and half executions (ptasks) — on the `ties` platform (real message
latencies). The rules of docs/DESIGN.md "Equal times" must hold over thousands of ties:

- the order is a function of the run alone: the engine's own transcript, replayed, gives the
  same messages bit for bit, and ZeroMQ gives what in-process gives;
- jobs whose actions end in one SimGrid step report in the order those actions were created
  (their start order), one message transfer after the other.
"""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from mrsched.simulator.engine import simulate
from mrsched.simulator.replay import ReplayScheduler
from test_engine_support import FCFS


def _tied_workload(path: Path, n: int, seed: int) -> Path:
    rng = random.Random(seed)
    instants = [60.0 * k for k in range(n // 8)]          # few instants: many equal subtimes
    jobs = []
    for i in range(n):
        kind = rng.choice(["d60", "c60", "d60", "c60", "d30", "c120"])
        jobs.append({"id": i, "subtime": rng.choice(instants), "res": rng.choice([1, 1, 2, 4]),
                     "walltime": rng.choice([-1, 60, 600]), "profile": kind})
    profiles = {"d60": {"type": "delay", "delay": 60}, "d30": {"type": "delay", "delay": 30},
                "c60": {"type": "parallel_homogeneous", "cpu": 60e9, "com": 0},
                "c120": {"type": "parallel_homogeneous", "cpu": 120e9, "com": 0}}
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path


def _batsim_messages(transcript: list[dict]) -> list[dict]:
    return [e["msg"] for e in transcript if e["from"] == "batsim"]


@pytest.fixture
def ties_platform(shared_dir) -> Path:
    return shared_dir / "batsim-reference" / "ties" / "platform.xml"


@pytest.mark.parametrize("n, seed", [(800, 1), (800, 2),
                                     (5000, 3)])
def test_ties_replay_bit_for_bit(ties_platform, tmp_path, n, seed):
    wl = _tied_workload(tmp_path / "w.json", n, seed)
    first = simulate(ties_platform, [wl], FCFS(), export_prefix=tmp_path / "a",
                     record_transcript=True)
    again = simulate(ties_platform, [wl], ReplayScheduler(first.transcript),
                     export_prefix=tmp_path / "b", record_transcript=True)
    assert _batsim_messages(again.transcript) == _batsim_messages(first.transcript)
    for name in ("jobs", "machine_states"):
        assert ((tmp_path / f"b_{name}.csv").read_bytes()
                == (tmp_path / f"a_{name}.csv").read_bytes())
    # the workload is made of ties: most completions share their step with others
    finishes = [r.finish_time for r in first.jobs if r.finish_time is not None]
    assert len(finishes) - len(set(finishes)) > n // 8


def test_same_step_completions_report_in_creation_order(ties_platform, tmp_path):
    """Rule 2 (+ the server's one-at-a-time mailbox): jobs ending in one step report in the
    order their actions were created, i.e. the order the engine started them."""
    wl = _tied_workload(tmp_path / "w.json", 800, 4)
    result = simulate(ties_platform, [wl], FCFS(), export_prefix=None, record_transcript=True)
    started: list[str] = []
    for entry in result.transcript:
        if entry["from"] == "scheduler":
            started += [e["data"]["job_id"] for e in entry["msg"]["events"]
                        if e["type"] == "EXECUTE_JOB"]
    completed = [e["data"]["job_id"] for m in _batsim_messages(result.transcript)
                 for e in m["events"] if e["type"] == "JOB_COMPLETED"]
    start_rank = {j: k for k, j in enumerate(started)}
    by_finish: dict[float, list[str]] = {}
    for r in result.jobs:
        if r.finish_time is not None and r.final_state == "COMPLETED_SUCCESSFULLY":
            by_finish.setdefault(r.finish_time, []).append(f"{r.workload}!{r.local_id}")
    groups = [g for g in by_finish.values() if len(g) > 1]
    assert len(groups) > 20, "the workload should hold many equal completions"
    position = {j: k for k, j in enumerate(completed)}
    for group in groups:
        assert sorted(group, key=position.__getitem__) == sorted(group, key=start_rank.__getitem__)


def test_ties_over_zeromq_as_in_process(ties_platform, tmp_path):
    import zmq
    from mrsched.simulator.connection import ZmqScheduler

    wl = _tied_workload(tmp_path / "w.json", 300, 5)
    local = simulate(ties_platform, [wl], FCFS(), export_prefix=None, record_transcript=True)
    rep = zmq.Context.instance().socket(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")
    policy = FCFS()

    def serve():
        while rep.poll(10_000):
            msg = json.loads(rep.recv_string())
            rep.send_string(json.dumps(policy.handle_message(msg)))
            if any(e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with ZmqScheduler(f"tcp://127.0.0.1:{port}", timeout=30) as conn:
            remote = simulate(ties_platform, [wl], conn, export_prefix=None,
                              record_transcript=True)
    finally:
        thread.join(10)
        rep.close(linger=0)
    assert _batsim_messages(remote.transcript) == _batsim_messages(local.transcript)
