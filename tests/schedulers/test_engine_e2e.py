"""End to end through the embedded Batsim-compatible engine: our policies on batsched's inputs
must reproduce batsched's recorded ``out_jobs.csv`` (start times, machines, states)."""

from __future__ import annotations

import csv

import pytest

from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator import engine

CASES = [(variant, policy, seed) for variant, policy in
         [("fcfs", "fcfs"), ("easy_bf", "fcfs-easy"), ("conservative_bf", "conservative-bb"), ("filler", "filler")]
         for seed in (1, 2, 3)]


@pytest.mark.parametrize("variant,policy,seed", CASES, ids=[f"{v}-seed{s}" for v, _, s in CASES])
def test_embedded_engine_reproduces_batsched_outputs(shared_dir, tmp_path, variant, policy, seed):
    ref = shared_dir / "batsched-reference" / f"{variant}-seed{seed}"
    engine.simulate(str(ref / "platform.xml"), [str(ref / "workload.json")], make_scheduler(policy, {}),
                    export_prefix=str(tmp_path / "out"), mmax=128)
    with open(tmp_path / "out_jobs.csv") as f:
        mine = {r["job_id"]: r for r in csv.DictReader(f)}
    with open(ref / "out_jobs.csv") as f:
        expected = {r["job_id"]: r for r in csv.DictReader(f)}
    assert mine.keys() == expected.keys()
    for job_id, row in expected.items():
        got = mine[job_id]
        assert got["final_state"] == row["final_state"]
        assert abs(float(got["starting_time"]) - float(row["starting_time"])) <= 0.01, job_id
        assert got["allocated_resources"] == row["allocated_resources"], job_id
