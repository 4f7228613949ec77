"""Engine fidelity against real Batsim 4.2.1 runs: replay the recorded scheduler decisions and
compare every job (state, allocation, times) and every message (events, order, timestamps).

The largest deviations per case are printed in the test output (terminal summary) whatever
pytest's capture mode, via ``record_property`` + a summary line on stderr when ``-s``.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import pytest

from mrsched.simulator.engine import simulate
from mrsched.simulator.replay import ReplayScheduler, load_transcript

BATSIM_CASES = ["delays", "samesubmit", "sequence", "various", "walltime", "easy250", "fcfs250",
                "io30"]
BATSCHED_CASES = [f"{p}-seed{s}" for p in ("fcfs", "easy_bf", "conservative_bf", "filler")
                  for s in (1, 2, 3)]
TIME_TOL = 0.01


# The per-case deviation summary goes into pytest's warnings summary as a plain UserWarning:
# a custom warning class defined here cannot be unpickled by pytest-xdist's controller.


def _read_jobs(path: Path) -> dict[str, dict]:
    with open(path, newline="") as fh:
        return {row["job_id"]: row for row in csv.DictReader(fh)}


def _mmax(case_dir: Path) -> int | None:
    text = (case_dir / "command.txt").read_text()
    return 128 if "--mmax 128" in text else None


_RUNS: dict[Path, tuple] = {}


def run_case(case_dir: Path, tmp_path: Path):
    """Replay one reference case (once per session; outputs land in that run's tmp_path)."""
    if case_dir not in _RUNS:
        transcript = load_transcript(case_dir / "transcript.jsonl")
        result = simulate(case_dir / "platform.xml", [case_dir / "workload.json"],
                          ReplayScheduler(transcript), export_prefix=tmp_path / "out",
                          mmax=_mmax(case_dir), record_transcript=True)
        _RUNS[case_dir] = (transcript, result, tmp_path)
    transcript, result, out_dir = _RUNS[case_dir]
    return transcript, result, out_dir


def compare_jobs(case_dir: Path, tmp_path: Path, *, exec_rel_tol: float | None = None) -> dict:
    ref = _read_jobs(case_dir / "out_jobs.csv")
    mine = _read_jobs(tmp_path / "out_jobs.csv")
    assert set(mine) == set(ref), f"job sets differ: {sorted(set(ref) ^ set(mine))[:5]}"
    worst_time, worst_exec = 0.0, 0.0
    for job_id, r in ref.items():
        m = mine[job_id]
        assert m["final_state"] == r["final_state"], job_id
        assert m["allocated_resources"] == r["allocated_resources"], job_id
        assert m["workload_name"] == r["workload_name"] and m["profile"] == r["profile"], job_id
        for col in ("submission_time", "starting_time", "finish_time"):
            if r[col] == "":
                assert m[col] == "", (job_id, col)
                continue
            dev = abs(float(m[col]) - float(r[col]))
            worst_time = max(worst_time, dev)
            assert dev <= TIME_TOL, f"job {job_id} {col}: {m[col]} vs Batsim {r[col]}"
        if r["execution_time"] and float(r["execution_time"]) > 0:
            rel = abs(float(m["execution_time"]) / float(r["execution_time"]) - 1.0)
            worst_exec = max(worst_exec, rel)
            if exec_rel_tol is not None:
                assert rel <= exec_rel_tol, f"job {job_id} execution_time off by {rel:.2%}"
    return {"worst_time": worst_time, "worst_exec_rel": worst_exec, "jobs": len(ref)}


def compare_messages(recorded: list[dict], mine: list[dict]) -> float:
    """Same Batsim messages, same events in the same order, timestamps within TIME_TOL."""
    rec_b = [e["msg"] for e in recorded if e["from"] == "batsim"]
    my_b = [e["msg"] for e in mine if e["from"] == "batsim"]
    assert len(my_b) == len(rec_b), f"{len(my_b)} messages vs Batsim's {len(rec_b)}"
    worst = 0.0
    for i, (a, b) in enumerate(zip(my_b, rec_b)):
        ea = [(e["type"], e["data"].get("job_id"), e["data"].get("type")) for e in a["events"]]
        eb = [(e["type"], e["data"].get("job_id"), e["data"].get("type")) for e in b["events"]]
        assert ea == eb, f"message {i} at {b['now']}: {ea[:4]} vs Batsim {eb[:4]}"
        worst = max(worst, abs(a["now"] - b["now"]))
        for x, y in zip(a["events"], b["events"]):
            worst = max(worst, abs(x["timestamp"] - y["timestamp"]))
            if x["type"] in ("JOB_SUBMITTED", "JOB_COMPLETED"):
                assert x["data"] == y["data"], f"message {i}: {x['data']} vs {y['data']}"
    assert worst <= TIME_TOL
    return worst


def _report(name: str, stats: dict, record_property) -> None:
    text = (f"fidelity {name}: {stats['jobs']} jobs, max |time dev| {stats['worst_time']:.2e} s, "
            f"max message dev {stats['worst_msg']:.2e} s, "
            f"max exec-time rel dev {stats['worst_exec_rel']:.2e}")
    record_property("fidelity", text)
    warnings.warn(f"fidelity: {text}", UserWarning)


@pytest.mark.parametrize("case", BATSIM_CASES)
def test_batsim_reference(case, shared_dir, tmp_path, record_property):
    case_dir = shared_dir / "batsim-reference" / case
    transcript, result, out_dir = run_case(case_dir, tmp_path)
    stats = compare_jobs(case_dir, out_dir, exec_rel_tol=0.01 if case == "io30" else None)
    stats["worst_msg"] = compare_messages(transcript, result.transcript)
    _report(case, stats, record_property)


@pytest.mark.parametrize("case", BATSCHED_CASES)
def test_batsched_reference(case, shared_dir, tmp_path, record_property):
    case_dir = shared_dir / "batsched-reference" / case
    transcript, result, out_dir = run_case(case_dir, tmp_path)
    stats = compare_jobs(case_dir, out_dir)
    stats["worst_msg"] = compare_messages(transcript, result.transcript)
    _report(case, stats, record_property)


@pytest.mark.parametrize("case", BATSIM_CASES + BATSCHED_CASES)
def test_outputs_byte_identical(case, shared_dir, tmp_path):
    """Deterministic outputs are byte-for-byte Batsim's (jobs and machine states)."""
    kind = "batsched-reference" if "-seed" in case else "batsim-reference"
    case_dir = shared_dir / kind / case
    _, _, out_dir = run_case(case_dir, tmp_path)
    assert (out_dir / "out_jobs.csv").read_bytes() == (case_dir / "out_jobs.csv").read_bytes()
    assert ((out_dir / "out_machine_states.csv").read_bytes()
            == (case_dir / "out_machine_states.csv").read_bytes())


def test_simulation_begins_matches_batsim(shared_dir, tmp_path):
    """SIMULATION_BEGINS carries the same keys and values as Batsim's (workload path aside)."""
    for case in ("delays", "io30", "easy250"):
        case_dir = shared_dir / "batsim-reference" / case
        transcript, result, _ = run_case(case_dir, tmp_path)
        mine = result.transcript[0]["msg"]["events"][0]["data"]
        ref = transcript[0]["msg"]["events"][0]["data"]
        assert list(mine) == list(ref)
        for key in ref:
            if key != "workloads":
                assert mine[key] == ref[key], (case, key)
        assert list(mine["workloads"]) == ["w0"]


@pytest.mark.parametrize("case", BATSIM_CASES + BATSCHED_CASES)
def test_schedule_csv_matches(case, shared_dir, tmp_path):
    """`_schedule.csv`: same columns, same values except the two wall-clock ones."""
    kind = "batsched-reference" if "-seed" in case else "batsim-reference"
    case_dir = shared_dir / kind / case
    _, _, out_dir = run_case(case_dir, tmp_path)
    with open(out_dir / "out_schedule.csv") as fh:
        mine = next(csv.DictReader(fh))
    with open(case_dir / "out_schedule.csv") as fh:
        ref = next(csv.DictReader(fh))
    assert list(mine) == list(ref)
    for key, value in ref.items():
        if key not in ("scheduling_time", "simulation_time"):
            assert mine[key] == value, (key, mine[key], value)
