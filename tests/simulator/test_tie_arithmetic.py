"""Tie-heavy randomised runs against the step arithmetic (issue 42): tasks whose run time equals
their walltime, parallel tasks sharing links and the PFS (the solver's per-step arithmetic) and
cut by their walltime (they run on until their JOB_COMPLETED is received), kills stamped at
completions, I/O-phased jobs registered together. As in ``test_step_arithmetic.py``, the step
loop's shortcuts must be plain steps, the compiled loop its Python twin, and a run's own
transcript replayed must give it again, bit for bit: ties are decided by the arithmetic alone.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mrsched.simulator import kernel as kernel_mod
from mrsched.simulator.engine import simulate
from mrsched.simulator.kernel import KernelBase
from test_engine_support import FCFS
from test_equal_times import _batsim_messages

# one second of a 1 Gflop/s node; bytes that take about a second on a 1.25 GB/s node link
FLOP_S = 1e9
BYTE_S = 1.25e9


def _tie_workload(path: Path, n: int, seed: int) -> Path:
    """Jobs of 10 s (so ending together often), submitted at few instants, most with a walltime
    equal to their nominal run time or shorter; CPU-only, link-sharing and PFS-writing tasks."""
    rng = random.Random(seed)
    instants = [10.0 * k for k in range(n // 6)]
    profiles = {
        "cpu": {"type": "parallel_homogeneous", "cpu": 10 * FLOP_S, "com": 0},
        "net": {"type": "parallel_homogeneous", "cpu": 2 * FLOP_S, "com": 4 * BYTE_S},
        "pfs": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0,
                "bytes_to_write": 6 * BYTE_S, "storage": "pfs"},
        "mix": {"type": "composed", "seq": ["cpu", "net"]},
        "d10": {"type": "delay", "delay": 10},
    }
    jobs = []
    for i in range(n):
        jobs.append({"id": i, "subtime": rng.choice(instants), "res": rng.choice([1, 2, 2, 4]),
                     "walltime": rng.choice([-1, 10, 10, 5, 15, 20]),
                     "profile": rng.choice(["cpu", "net", "pfs", "net", "mix", "d10"])})
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path


class KillingFCFS(FCFS):
    """``FCFS`` that also kills, at a message's time, a few of the jobs it believes running
    (some of which may already have ended in that very step), sometimes twice."""

    def __init__(self, seed: int):
        super().__init__()
        self.rng = random.Random(seed)
        self.running: list[str] = []

    def handle_message(self, msg: dict) -> dict:
        ended = {e["data"]["job_id"] for e in msg["events"] if e["type"] == "JOB_COMPLETED"}
        self.running = [j for j in self.running if j not in ended]
        reply = super().handle_message(msg)
        started = [e["data"]["job_id"] for e in reply["events"] if e["type"] == "EXECUTE_JOB"]
        kills = [j for j in self.running if self.rng.random() < 0.04]
        for jid in kills:
            for _ in range(self.rng.choice([1, 1, 2])):
                reply["events"].append({"timestamp": msg["now"], "type": "KILL_JOB",
                                        "data": {"job_ids": [jid]}})
        self.running = [j for j in self.running if j not in kills] + started
        return reply


class InOrder:
    """The recorded replies, the i-th to the i-th message (a deterministic run receives the
    very same messages again)."""

    def __init__(self, transcript: list[dict]):
        self.replies = iter([e["msg"] for e in transcript if e["from"] == "scheduler"])

    def handle_message(self, msg: dict) -> dict:
        return next(self.replies)


def _run(platform, wl, prefix, scheduler, *, compiled: bool, plain: bool, **kw):
    saved = KernelBase._batch_sleeps, KernelBase._fold_latency, kernel_mod._compiled_steps
    KernelBase._batch_sleeps = KernelBase._fold_latency = not plain
    kernel_mod.use_compiled_steps(compiled)
    try:
        return simulate(platform, [wl], scheduler, export_prefix=prefix, record_transcript=True,
                        **kw)
    finally:
        KernelBase._batch_sleeps, KernelBase._fold_latency = saved[:2]
        kernel_mod.use_compiled_steps(saved[2])


def _same(a, b, pa: Path, pb: Path) -> None:
    assert _batsim_messages(a.transcript) == _batsim_messages(b.transcript)
    assert Path(f"{pa}_jobs.csv").read_bytes() == Path(f"{pb}_jobs.csv").read_bytes()
    assert (Path(f"{pa}_machine_states.csv").read_bytes()
            == Path(f"{pb}_machine_states.csv").read_bytes())


@pytest.fixture
def ties_platform(shared_dir) -> Path:
    return shared_dir / "batsim-reference" / "ties" / "platform.xml"


@pytest.mark.parametrize("n, seed", [(300, 21), (1200, 22)])
def test_walltime_ties_kills_and_shared_tasks(ties_platform, tmp_path, n, seed):
    wl = _tie_workload(tmp_path / "w.json", n, seed)
    compiled = kernel_mod._steps is not None
    runs = {}
    for name, c, plain in (("fast", compiled, False), ("plain", compiled, True),
                           ("python", False, False)):
        runs[name] = _run(ties_platform, wl, tmp_path / name, KillingFCFS(seed), compiled=c,
                          plain=plain)
    _same(runs["fast"], runs["plain"], tmp_path / "fast", tmp_path / "plain")
    _same(runs["fast"], runs["python"], tmp_path / "fast", tmp_path / "python")
    again = _run(ties_platform, wl, tmp_path / "again", InOrder(runs["fast"].transcript),
                 compiled=compiled, plain=False)
    _same(runs["fast"], again, tmp_path / "fast", tmp_path / "again")

    # what the workload was made for
    rows = runs["fast"].jobs
    states = [r.final_state for r in rows]
    assert states.count("COMPLETED_KILLED") >= n // 60
    cut = [r for r in rows if r.final_state == "COMPLETED_WALLTIME_REACHED" and r.profile != "d10"]
    assert len(cut) >= n // 20   # parallel tasks cut by their walltime (run on as zombies)
    ties = [r for r in rows if r.final_state == "COMPLETED_SUCCESSFULLY" and r.walltime > 0
            and abs((r.finish_time - r.starting_time) - r.walltime) < 1e-9]
    assert ties   # ended in their timeout's step, successfully
    finishes = [r.finish_time for r in rows if r.finish_time is not None]
    assert len(finishes) - len(set(finishes)) > n // 10


def test_numpy_steps_are_the_list_steps(ties_platform, tmp_path, monkeypatch):
    """The solver's tasks are stepped on numpy arrays from ``ptask_steps._VECTOR_MIN`` tasks on
    (here: never, the systems are smaller): forced on every system, a tie-heavy run gives the
    same bits as with the float lists."""
    from mrsched.simulator import ptask_steps

    wl = _tie_workload(tmp_path / "w.json", 300, 23)
    compiled = kernel_mod._steps is not None
    lists = _run(ties_platform, wl, tmp_path / "lists", KillingFCFS(23), compiled=compiled,
                 plain=False)
    monkeypatch.setattr(ptask_steps, "_VECTOR_MIN", 1)
    arrays = _run(ties_platform, wl, tmp_path / "arrays", KillingFCFS(23), compiled=compiled,
                  plain=False)
    _same(lists, arrays, tmp_path / "lists", tmp_path / "arrays")
    assert any(r.final_state == "COMPLETED_WALLTIME_REACHED" and r.profile in ("net", "pfs")
               for r in lists.jobs)   # shared tasks ran (and were cut)


def test_io_phased_jobs_registered_together(tmp_path):
    """I/O-phased jobs (dynamic stage-in, compute, checkpoint, drain, stage-out sub-jobs over
    burst buffers and the PFS) submitted at a few instants, many with tight walltimes."""
    from mrsched.platforms.cluster import generate_cluster
    from mrsched.schedulers.registry import make_scheduler

    plat = tmp_path / "io.xml"
    plat.write_text(generate_cluster(nodes=8, storage=2, bb_capacity="6GB",
                                     pfs_bandwidth="2GBps").xml)
    rng = random.Random(5)
    jobs = [{"id": i, "subtime": rng.choice([0, 0, 100, 100, 250]), "res": rng.choice([1, 2, 4]),
             "walltime": rng.choice([900, 1800, 4000]), "profile": "p",
             "burst_buffer": rng.choice([1, 2, 3]) * 10**9} for i in range(40)]
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 8, "jobs": jobs, "profiles": {
        "p": {"type": "parallel_homogeneous", "cpu": 1200 * FLOP_S, "com": 0}}}))
    compiled = kernel_mod._steps is not None
    runs = {}
    for name, c, plain in (("fast", compiled, False), ("plain", compiled, True),
                           ("python", False, False)):
        runs[name] = _run(plat, wl, tmp_path / name,
                          make_scheduler("fcfs-bb", {"job_model": "io-phased"}), compiled=c,
                          plain=plain, dynamic_jobs=True)
    _same(runs["fast"], runs["plain"], tmp_path / "fast", tmp_path / "plain")
    _same(runs["fast"], runs["python"], tmp_path / "fast", tmp_path / "python")
    again = _run(plat, wl, tmp_path / "again", InOrder(runs["fast"].transcript),
                 compiled=compiled, plain=False, dynamic_jobs=True)
    _same(runs["fast"], again, tmp_path / "fast", tmp_path / "again")
    rows = runs["fast"].jobs
    assert sum(r.workload == "w0-io" for r in rows) > 3 * len(jobs)   # the phases
    assert any(r.final_state == "COMPLETED_WALLTIME_REACHED" for r in rows)
