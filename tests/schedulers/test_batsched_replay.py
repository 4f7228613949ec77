"""Replaying real Batsim 4.2.1 + batsched 1.4.0 runs: our decisions must equal the recorded ones.

Each Batsim message of the transcript is fed to our scheduler; the EXECUTE_JOB / REJECT_JOB
of our reply must name the same jobs as batsched's reply to that very message (so every start
time is identical), and — batsched's "basic" selector taking the lowest free ids — the same
machines.
"""

from __future__ import annotations

import json

import pytest

from mrsched.schedulers.registry import make_scheduler

CASES = [(variant, policy, seed) for variant, policy in
         [("fcfs", "fcfs"), ("easy_bf", "fcfs-easy"), ("conservative_bf", "conservative-bb"), ("filler", "filler")]
         for seed in (1, 2, 3)]


def decisions(msg: dict) -> list[tuple]:
    return sorted((e["type"], e["data"]["job_id"], e["data"].get("alloc"), e["timestamp"])
                  for e in msg["events"] if e["type"] in ("EXECUTE_JOB", "REJECT_JOB"))


@pytest.mark.parametrize("variant,policy,seed", CASES, ids=[f"{v}-seed{s}" for v, _, s in CASES])
def test_replay_matches_batsched(shared_dir, variant, policy, seed):
    path = shared_dir / "batsched-reference" / f"{variant}-seed{seed}" / "transcript.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    scheduler = make_scheduler(policy, {})
    started = 0
    for ask, answer in zip(lines[0::2], lines[1::2]):
        assert ask["from"] == "batsim" and answer["from"] == "scheduler"
        reply = scheduler.handle_message(ask["msg"])
        mine, ref = decisions(reply), decisions(answer["msg"])
        assert [d[:3] for d in mine] == [d[:3] for d in ref], f"at now={ask['msg']['now']}"
        for (_, _, _, t_mine), (_, _, _, t_ref) in zip(mine, ref):
            assert abs(t_mine - t_ref) <= 0.01
        started += sum(1 for d in mine if d[0] == "EXECUTE_JOB")
    assert started == 250
    assert scheduler.finished
