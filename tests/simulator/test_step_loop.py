"""The engine's kernel in C (``simulator/_steps.c``) against its Python twin
(``kernel.Kernel.run``): the same run, message for message and byte for byte, on every recorded
Batsim and batsched run, on long randomised runs of ties with kills, CALL_ME_LATER and
walltimes (cancelled sleeps), and with the step shortcuts off; errors raised by an actor or the
scheduler come out of either loop unchanged.

The other engine tests run whichever loop the process uses (C when built, Python under
``MRSCHED_PURE_PYTHON=1``); CI runs them with C, and this file runs both.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mrsched.errors import SimulationError
from mrsched.simulator import kernel as kernel_mod
from mrsched.simulator import machines as machines_mod
from mrsched.simulator.engine import simulate
from mrsched.simulator.kernel import KernelBase
from mrsched.simulator.replay import load_transcript
from test_engine_support import FCFS
from test_equal_times import _tied_workload
from test_fidelity import (BATSCHED_CASES, BATSIM_CASES, CONFORMANCE_CASES, SLOW_CASES,
                           _run_engine, replay_of)

OUTPUTS = ("jobs", "machine_states")
#: wall-clock columns of _schedule.csv (they differ from run to run)
WALL_CLOCK = ("scheduling_time", "simulation_time")


@pytest.fixture
def compiled(require):
    require(kernel_mod._steps is not None,
            "the compiled step loop (simulator/_steps.c) was not built: no C compiler at install")


def _in_mode(c: bool, run):
    saved = kernel_mod._compiled_steps
    assert kernel_mod.use_compiled_steps(c) is c
    try:
        return run()
    finally:
        kernel_mod.use_compiled_steps(saved)


def _schedule_row(path: Path) -> dict:
    header, row = path.read_text().splitlines()[:2]
    return {k: v for k, v in zip(header.split(","), row.split(",")) if k not in WALL_CLOCK}


def _assert_same_runs(a, b, prefix_a: Path, prefix_b: Path) -> None:
    assert a.transcript == b.transcript     # every message, every float bit for bit
    for name in OUTPUTS:
        assert (Path(f"{prefix_a}_{name}.csv").read_bytes()
                == Path(f"{prefix_b}_{name}.csv").read_bytes()), name
    assert (_schedule_row(Path(f"{prefix_a}_schedule.csv"))
            == _schedule_row(Path(f"{prefix_b}_schedule.csv")))


def _case_params():
    cases = [("batsim-reference", c) for c in BATSIM_CASES + CONFORMANCE_CASES]
    cases += [("batsched-reference", c) for c in BATSCHED_CASES]
    return ([pytest.param(k, c, id=c) for k, c in cases]
            + [pytest.param("batsim-reference", c, id=c, marks=pytest.mark.slow)
               for c in SLOW_CASES])


@pytest.mark.parametrize("kind, case", _case_params())
def test_both_loops_replay_every_reference_alike(compiled, shared_dir, tmp_path, kind, case):
    """Every recorded run, replayed by either loop: the same messages and output files (the
    other tests compare them with Batsim's own)."""
    case_dir = shared_dir / kind / case
    transcript = load_transcript(case_dir / "transcript.jsonl")
    runs = [_in_mode(c, lambda c=c: _run_engine(case_dir, replay_of(case_dir, transcript),
                                                tmp_path / f"out{int(c)}"))
            for c in (True, False)]
    _assert_same_runs(*runs, tmp_path / "out1", tmp_path / "out0")


class _Unruly(FCFS):
    """FCFS that also kills a running job now and then and asks to be called back (kills cancel
    the killed jobs' sleeps; a call-back is a waiter's sleep)."""

    def __init__(self, seed: int):
        super().__init__()
        self.rng = random.Random(seed)
        self.running: list[str] = []

    def handle_message(self, msg: dict) -> dict:
        for ev in msg["events"]:
            if ev["type"] in ("JOB_COMPLETED", "JOB_KILLED"):
                for jid in ev["data"].get("job_ids", [ev["data"].get("job_id")]):
                    if jid in self.running:
                        self.running.remove(jid)
        reply = super().handle_message(msg)
        self.running += [e["data"]["job_id"] for e in reply["events"]
                         if e["type"] == "EXECUTE_JOB"]
        now = msg["now"]
        if self.running and self.rng.random() < 0.05:
            victim = self.running.pop(self.rng.randrange(len(self.running)))
            reply["events"].append({"timestamp": now, "type": "KILL_JOB",
                                    "data": {"job_ids": [victim]}})
        if self.rng.random() < 0.05:
            reply["events"].append({"timestamp": now, "type": "CALL_ME_LATER",
                                    "data": {"timestamp": now + self.rng.choice([0.5, 30, 60])}})
        return reply


@pytest.mark.parametrize("n, seed, shortcuts", [(1500, 21, True), (1500, 22, False)])
def test_both_loops_run_ties_kills_and_call_backs_alike(compiled, shared_dir, tmp_path, n, seed,
                                                         shortcuts):
    """Many actors woken in one step (equal submission times, one-minute jobs, walltimes),
    sleeps cancelled by kills, waiters: the same run from either loop, with the step shortcuts
    (batched subtractions, folded latency steps) and without."""
    platform = shared_dir / "batsim-reference" / "ties" / "platform.xml"
    wl = _tied_workload(tmp_path / "w.json", n, seed)
    saved = KernelBase._batch_sleeps, KernelBase._fold_latency
    KernelBase._batch_sleeps = KernelBase._fold_latency = shortcuts
    try:
        runs = [_in_mode(c, lambda c=c: simulate(platform, [wl], _Unruly(seed),
                                                 export_prefix=tmp_path / f"out{int(c)}",
                                                 record_transcript=True))
                for c in (True, False)]
    finally:
        KernelBase._batch_sleeps, KernelBase._fold_latency = saved
    kills = [e for e in runs[0].transcript if e["from"] == "batsim"
             for ev in e["msg"]["events"] if ev["type"] == "JOB_KILLED"]
    calls = [e for e in runs[0].transcript if e["from"] == "batsim"
             for ev in e["msg"]["events"] if ev["type"] == "REQUESTED_CALL"]
    assert len(kills) > 10 and len(calls) > 10   # the run did exercise both
    _assert_same_runs(*runs, tmp_path / "out1", tmp_path / "out0")


def _delay_workload(tmp_path: Path) -> Path:
    path = tmp_path / "w.json"
    jobs = [{"id": i, "subtime": float(i), "res": 1, "walltime": 100, "profile": "d"}
            for i in range(20)]
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs,
                                "profiles": {"d": {"type": "delay", "delay": 5}}}))
    return path


@pytest.mark.parametrize("c", [True, False])
def test_an_error_in_the_scheduler_comes_out_of_either_loop(compiled, shared_dir, tmp_path, c):
    """A scheduler that raises mid-run: its own exception, from C as from Python."""
    class Failing(FCFS):
        def handle_message(self, msg):
            if msg["now"] > 7:
                raise RuntimeError("scheduler broke at 7 s")
            return super().handle_message(msg)

    platform = shared_dir / "batsim-reference" / "ties" / "platform.xml"
    with pytest.raises(RuntimeError, match="scheduler broke at 7 s"):
        _in_mode(c, lambda: simulate(platform, [_delay_workload(tmp_path)], Failing(),
                                     export_prefix=tmp_path / "o"))
    assert not list(tmp_path.glob("o_*.csv"))   # a failed run leaves no output


@pytest.mark.parametrize("c", [True, False])
def test_a_stalled_run_names_its_waiting_jobs_from_either_loop(compiled, shared_dir, tmp_path, c):
    """A scheduler that never starts anything: the engine's named error, not a hang or crash."""
    class Idle:
        def handle_message(self, msg):
            return {"now": msg["now"], "events": []}

    platform = shared_dir / "batsim-reference" / "ties" / "platform.xml"
    with pytest.raises(SimulationError, match="20 submitted job"):
        _in_mode(c, lambda: simulate(platform, [_delay_workload(tmp_path)], Idle(),
                                     export_prefix=None))


@pytest.mark.parametrize("value, compiled_used", [("1", False), ("yes", False), ("", True)])
def test_the_environment_selects_the_python_step_loop(compiled, value, compiled_used):
    """``MRSCHED_PURE_PYTHON=1`` starts a process on the Python twin, as for the schedulers'
    compiled parts; an engine built then has no compiled kernel."""
    import os
    import subprocess
    import sys

    code = ("from types import SimpleNamespace as N; from mrsched.simulator import kernel; "
            "net = N(master='m', loopback=(0.0, 1.0, 0.0), comm_spec=None, platform=None, "
            "names=[]); print(kernel._compiled_steps, type(kernel.make_kernel(net)).__name__)")
    env = dict(os.environ, MRSCHED_PURE_PYTHON=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == [str(compiled_used),
                                  "CompiledKernel" if compiled_used else "Kernel"]


def test_machine_times_keep_as_their_twin(compiled):
    """The machines' times in C (``_steps.ld_stamp``, ``ld_totals``): the same long doubles,
    bit for bit, as ``machines._ld_stamp`` and ``_ld_totals`` (numpy's longdouble), over random
    state changes of runs of machines; the sums are Batsim's, machine by machine in order."""
    import numpy as np

    steps = kernel_mod._steps
    if np.dtype(np.longdouble).itemsize * 3 != steps.MACHINE_TIMES_SIZE:
        pytest.skip("numpy's longdouble is not C's long double here")
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.choice([3, 50, 2000]))
        c_times = bytearray(n * steps.MACHINE_TIMES_SIZE)
        py_times = machines_mod._ld_times(n)
        now = 0.0
        for _ in range(30):
            now += float(np.round(rng.random() * 1e5, int(rng.integers(0, 7))))
            lo = int(rng.integers(0, n))
            hi = int(rng.integers(lo, n + 1))
            computing = bool(rng.random() < 0.5)
            steps.ld_stamp(c_times, now, lo, hi, computing)
            machines_mod._ld_stamp(py_times, now, lo, hi, computing)
        got = np.frombuffer(c_times, dtype=np.longdouble).reshape(n, 3)
        assert np.array_equal(got, py_times)     # (values: a long double's padding is not)
        c_sum, py_sum = steps.ld_totals(c_times), machines_mod._ld_totals(py_times)
        assert [x.hex() for x in c_sum] == [x.hex() for x in py_sum]
        plain = [np.longdouble(0), np.longdouble(0)]
        for row in py_times:                    # Batsim's export loop, written out
            plain[0] += row[0]
            plain[1] += row[1]
        assert py_sum == (float(plain[0]), float(plain[1]))
    with pytest.raises(IndexError, match="outside"):
        steps.ld_stamp(bytearray(4 * steps.MACHINE_TIMES_SIZE), 1.0, 2, 5, False)
    with pytest.raises(TypeError, match="whole records"):
        steps.ld_totals(bytearray(steps.MACHINE_TIMES_SIZE + 1))
    with pytest.raises(BufferError):
        steps.ld_stamp(bytes(steps.MACHINE_TIMES_SIZE), 1.0, 0, 1, False)   # read-only
