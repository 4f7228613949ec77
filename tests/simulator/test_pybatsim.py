"""Interop with a real third-party client: pybatsim 3.2.1 schedulers against our engine over
ZeroMQ (``pip install --no-deps pybatsim==3.2.1 docopt sortedcontainers``); without it these
tests skip, or fail under CI=true (the ``pybatsim`` fixture of tests/conftest.py)."""

from __future__ import annotations

import csv
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mrsched.simulator.connection import ZmqScheduler
from mrsched.simulator.engine import simulate

pytestmark = pytest.mark.usefixtures("pybatsim")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_pybatsim(scheduler: str, case_dir: Path, out_dir: Path, *, mmax: int | None):
    port = _free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    log = open(out_dir / "pybatsim.log", "w")
    # cwd outside the repository: pybatsim imports its own top-level `schedulers` package
    proc = subprocess.Popen([sys.executable, "-m", "batsim.cmds.launcher", scheduler,
                             "-s", endpoint, "-t", "60000", "-v", "warning"],
                            cwd=out_dir, stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.2)
        # a reply's wait covers pybatsim's own start (its imports) on a loaded machine
        with ZmqScheduler(endpoint, timeout=300) as conn:
            result = simulate(case_dir / "platform.xml", [case_dir / "workload.json"], conn,
                              export_prefix=out_dir / "out", mmax=mmax)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == 0, (out_dir / "pybatsim.log").read_text()[-2000:]
    return result


def _jobs(path: Path) -> dict[str, dict]:
    with open(path, newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


@pytest.mark.parametrize("scheduler, case", [("easyBackfill", "easy250"),
                                              ("easyBackfill", "delays"),
                                              ("easyBackfill", "samesubmit"),
                                              ("schedFcfs", "fcfs250")])
def test_deterministic_pybatsim_reproduces_batsim(scheduler, case, shared_dir, tmp_path):
    """pybatsim's deterministic schedulers on our engine give Batsim's own `_jobs.csv`."""
    case_dir = shared_dir / "batsim-reference" / case
    mmax = 128 if "--mmax 128" in (case_dir / "command.txt").read_text() else None
    run_pybatsim(scheduler, case_dir, tmp_path, mmax=mmax)
    ref, mine = _jobs(case_dir / "out_jobs.csv"), _jobs(tmp_path / "out_jobs.csv")
    assert set(ref) == set(mine)
    worst = 0.0
    for job_id, r in ref.items():
        m = mine[job_id]
        assert (m["final_state"], m["allocated_resources"]) == (r["final_state"],
                                                                 r["allocated_resources"]), job_id
        for col in ("starting_time", "finish_time"):
            worst = max(worst, abs(float(m[col]) - float(r[col])))
    assert worst <= 0.01
    # in fact the whole file is Batsim's, byte for byte (same decisions, same times)
    assert (tmp_path / "out_jobs.csv").read_bytes() == (case_dir / "out_jobs.csv").read_bytes()


def test_filler_sched_completes_various(shared_dir, tmp_path):
    case_dir = shared_dir / "batsim-reference" / "various"
    result = run_pybatsim("fillerSched", case_dir, tmp_path, mmax=None)
    rows = list(_jobs(tmp_path / "out_jobs.csv").values())
    assert len(rows) == 9 and len(result.jobs) == 9
    assert {r["job_id"]: r["final_state"] for r in rows}["reach_walltime"] == \
        "COMPLETED_WALLTIME_REACHED"
    # a valid schedule: every job ran, no machine ran two jobs at once
    intervals: dict[int, list[tuple[float, float]]] = {}
    for r in rows:
        assert r["final_state"].startswith("COMPLETED_")
        start, finish = float(r["starting_time"]), float(r["finish_time"])
        assert start >= float(r["submission_time"])
        for token in r["allocated_resources"].split():
            lo, _, hi = token.partition("-")
            for m in range(int(lo), int(hi or lo) + 1):
                intervals.setdefault(m, []).append((start, finish))
    for spans in intervals.values():
        spans.sort()
        for (_, f1), (s2, _) in zip(spans, spans[1:]):
            assert s2 >= f1 - 1e-9
