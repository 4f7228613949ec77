"""SimGrid's step arithmetic in the engine (docs/DESIGN.md, "Equal times", issue #14): the
shortcuts of the step loop (``kernel.Kernel.run`` and ``_steps.c``: sleeps' subtractions batched
until one ends, a message's latency step done with its transfer step) must be the very same
float operations as plain steps. Over long randomised runs made of ties (equal submission
times, most jobs one minute long, delays and executions, walltimes), both give every job's raw
times bit for bit and the same messages.
"""

from __future__ import annotations

import pytest

from mrsched.simulator.engine import simulate
from mrsched.simulator.kernel import KernelBase
from test_engine_support import FCFS
from test_equal_times import _batsim_messages, _tied_workload


def _run(platform, wl, prefix, *, batch: bool, fold: bool):
    saved = KernelBase._batch_sleeps, KernelBase._fold_latency
    KernelBase._batch_sleeps, KernelBase._fold_latency = batch, fold
    try:
        return simulate(platform, [wl], FCFS(), export_prefix=prefix, record_transcript=True)
    finally:
        KernelBase._batch_sleeps, KernelBase._fold_latency = saved


@pytest.mark.parametrize("n, seed", [(600, 11), (3000, 12)])
def test_shortcuts_are_plain_steps(shared_dir, tmp_path, n, seed):
    platform = shared_dir / "batsim-reference" / "ties" / "platform.xml"
    wl = _tied_workload(tmp_path / "w.json", n, seed)
    fast = _run(platform, wl, tmp_path / "fast", batch=True, fold=True)
    plain = _run(platform, wl, tmp_path / "plain", batch=False, fold=False)
    times = [(r.local_id, r.starting_time, r.finish_time) for r in fast.jobs]
    assert times == [(r.local_id, r.starting_time, r.finish_time) for r in plain.jobs]
    assert _batsim_messages(fast.transcript) == _batsim_messages(plain.transcript)
    assert (tmp_path / "fast_jobs.csv").read_bytes() == (tmp_path / "plain_jobs.csv").read_bytes()


@pytest.mark.parametrize("case", ["ties", "kthties", "samesubmit2", "decisioncost", "delays",
                                  "walltime"])
def test_reference_cases_with_plain_steps(shared_dir, tmp_path, case):
    """The recorded Batsim runs, equal-time orders included, with plain steps too."""
    from test_fidelity import _run_engine, compare_all_messages, compare_jobs_rows, replay_of
    from mrsched.simulator.replay import load_transcript

    case_dir = shared_dir / "batsim-reference" / case
    transcript = load_transcript(case_dir / "transcript.jsonl")
    saved = KernelBase._batch_sleeps, KernelBase._fold_latency
    KernelBase._batch_sleeps = KernelBase._fold_latency = False
    try:
        result = _run_engine(case_dir, replay_of(case_dir, transcript), tmp_path / "out")
    finally:
        KernelBase._batch_sleeps, KernelBase._fold_latency = saved
    compare_all_messages(transcript, result.transcript)
    compare_jobs_rows(case_dir / "out_jobs.csv", tmp_path / "out_jobs.csv")
