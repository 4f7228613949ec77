"""studies/bbsched_summary.py (the tables and Kiviats of studies/BBSCHED.md) on a small campaign of
the same shape: a two-part S1 family and a five-pool multires workload generated from a small
SWF trace, naive / bbsched / fcfs-bb, two seeds."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mrsched.expe.launch import run_campaign

POOLS = ("memory", "local_ssd", "io_bandwidth", "licences", "power")
# what `mrsched workload multires` prints for an 8-node platform
CAPS = "memory=2048,local_ssd=12800,io_bandwidth=8000,licences=4,power=3200"


def swf_trace(path: Path) -> Path:
    """60 jobs of 1-6 processors on an 8-node machine, arriving faster than they run."""
    rng = np.random.default_rng(7)
    lines = ["; Version: 2.2", "; MaxNodes: 8", "; MaxProcs: 8", ";"]
    t = 0
    for k in range(1, 61):
        t += int(rng.integers(0, 120))
        run, procs = int(rng.integers(30, 600)), int(rng.integers(1, 7))
        lines.append(f"{k} {t} 0 {run} {procs} -1 -1 {procs} {int(run * rng.uniform(1, 2)) + 1} "
                     "-1 1 1 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """studies/bbsched.yaml's shape in small: its generators on a small trace, seeded workloads."""
    tmp = tmp_path_factory.mktemp("bbsched_summary")
    trace = swf_trace(tmp / "trace.swf")
    path = tmp / "bbsched.yaml"
    path.write_text(f"""
name: bbsched-small
engine: embedded
timeout: 120
parallelism: 2
seeds: 1-2
platforms:
  - {{generate: cluster, nodes: 8, storage: 2, bb_capacity: 10GB, name: c8}}
workloads:
  - {{generate: bbsched, name: kth-S1, trace: {trace}, part: [1/2, 2/2], scenario: S1}}
  - {{generate: multires, name: kth-multires, trace: {trace}, part: [1/2]}}
policies:
  - {{policy: naive, options: {{counters: &caps "{CAPS}"}}}}
  - {{policy: bbsched, options: {{counters: *caps, generations: 10}}}}
  - fcfs-bb
""")
    summary = run_campaign(path, output=tmp / "out", progress=False, report=False, log=lambda *a: None)
    assert summary.all_ok and summary.total == 18
    (tmp / "out" / "report").mkdir(exist_ok=True)   # where `mrsched campaign run` reports
    return tmp / "out"


def table(text: str, heading: str) -> dict[str, dict[str, str]]:
    """The markdown table under ``#### heading``: {first cell: {column: cell}}."""
    lines = text.split(f"#### {heading}\n\n", 1)[1].splitlines()
    rows = [ln for ln in lines[:next((i for i, ln in enumerate(lines) if not ln.startswith("|")),
                                     len(lines))]]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    return {cells[0]: dict(zip(head, cells)) for cells in
            ([c.strip() for c in r.strip("|").split("|")] for r in rows[2:])}


def mean_wait(campaign: Path, policy: str, workload: str) -> float:
    """Mean waiting time of every run of (policy, workload), averaged over its seeds."""
    waits = []
    for d in sorted((campaign / "runs").iterdir()):
        man = json.loads((d / "manifest.json").read_text())
        if man["policy_label"] == policy and man["workload_name"] == workload:
            with open(d / "out_jobs.csv", newline="") as fh:
                rows = list(csv.DictReader(fh))
            waits.append(np.mean([float(r["starting_time"]) - float(r["submission_time"])
                                  for r in rows if r["final_state"] != "REJECTED"]))
    assert waits
    return float(np.mean(waits))


def test_summary_tables_and_kiviats(campaign):
    proc = subprocess.run([sys.executable, "-m", "mrsched.studies.bbsched_summary", str(campaign)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    policies = {"naive", "bbsched", "fcfs-bb"}
    for wl in ("kth-S1-p1", "kth-S1-p2", "kth-multires-p1"):
        t = table(out, wl)
        assert set(t) == policies
        for pol, row in t.items():
            expected = mean_wait(campaign, pol, wl)
            assert float(row["wait"]) == pytest.approx(expected, abs=5e-4 if expected < 100 else 0.5)
        # ordered by waiting time; naive is the 0 % reference
        waits = [float(r["wait"]) for r in t.values()]
        assert waits == sorted(waits)
        assert float(t["naive"]["wait_vs"]) == 0
        ratio = mean_wait(campaign, "bbsched", wl) / mean_wait(campaign, "naive", wl)
        assert float(t["bbsched"]["wait_vs"]) == pytest.approx(100 * (ratio - 1), abs=0.5)
    pools = table(out, "kth-multires-p1")
    for row in pools.values():
        assert all(0 < float(row[p]) <= 1 for p in POOLS)
        assert float(row["pools_mean"]) == pytest.approx(np.mean([float(row[p]) for p in POOLS]),
                                                         abs=2e-3)
    assert "per seed wait change vs naive (%):" in out
    # families: the two S1 parts averaged; fcfs-bb, blind to the pools, left out of multires
    s1 = table(out, "kth-S1 (parts and seeds averaged)")
    assert set(s1) == policies
    both = np.mean([mean_wait(campaign, "naive", "kth-S1-p1"),
                    mean_wait(campaign, "naive", "kth-S1-p2")])
    assert float(s1["naive"]["wait"]) == pytest.approx(both, abs=5e-4 if both < 100 else 0.5)
    assert set(table(out, "kth-multires (parts and seeds averaged)")) == policies
    for fam in ("kth-S1", "kth-multires"):
        png = campaign / "report" / f"kiviat_{fam}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
