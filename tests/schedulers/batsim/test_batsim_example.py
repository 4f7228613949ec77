"""The documented FCFS first-fit example, replayed against real Batsim/batsched transcripts."""

from __future__ import annotations

import json
import logging

import pytest
from procset import ProcSet

from mrsched.schedulers.batsim.messages import parse_message
from mrsched.schedulers.example_scheduler import FirstFitScheduler


def replay(path):
    """Feed the recorded Batsim messages; yield (our reply, recorded reply)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["from"] for r in lines[:2]] == ["batsim", "scheduler"]
    s = FirstFitScheduler()
    for batsim, recorded in zip(lines[0::2], lines[1::2]):
        yield s, s.handle_message(batsim["msg"]), recorded["msg"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_first_fit_reproduces_batsched_fcfs_decisions(shared_dir, seed):
    path = shared_dir / f"batsched-reference/fcfs-seed{seed}/transcript.jsonl"
    starts = 0
    busy: dict[str, ProcSet] = {}
    for s, ours, theirs in replay(path):
        got = [(e["type"], e["data"].get("job_id"), e["timestamp"]) for e in ours["events"]]
        want = [(e["type"], e["data"].get("job_id"), e["timestamp"])
                for e in theirs["events"]]
        assert got == want, f"at now={ours['now']}"
        for job_id in [j for j in busy if j not in s.running]:
            del busy[job_id]          # completed in this message
        for e in parse_message(ours).events:
            if e.type == "EXECUTE_JOB":
                starts += 1
                assert len(e.alloc) == s.jobs[e.job_id]["res"]
                assert all(not (e.alloc & other) for other in busy.values())
                busy[e.job_id] = e.alloc
    assert s.finished and starts == 250


def test_jobs_larger_than_the_machine_are_rejected_with_a_reason(caplog):
    s = FirstFitScheduler()
    begins = {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 2, "config": {}, "compute_resources": [
            {"id": 0, "name": "a", "properties": {}}, {"id": 1, "name": "b", "properties": {}}],
        "storage_resources": []}}

    def sub(job_id, res):
        return {"timestamp": 0.0, "type": "JOB_SUBMITTED",
                "data": {"job_id": job_id, "job": {"id": job_id, "res": res}}}
    with caplog.at_level(logging.INFO, logger="mrsched.schedulers.example_scheduler"):
        reply = s.handle_message({"now": 0.0, "events": [begins, sub("w0!big", 3),
                                                         sub("w0!a", 1), sub("w0!b", 2)]})
    assert [(e["type"], e["data"]["job_id"]) for e in reply["events"]] == [
        ("REJECT_JOB", "w0!big"), ("EXECUTE_JOB", "w0!a")]
    assert "w0!big" in caplog.text and "3 nodes" in caplog.text
    # w0!b (2 nodes) waits for w0!a's node, then gets both
    reply = s.handle_message({"now": 5.0, "events": [{
        "timestamp": 5.0, "type": "JOB_COMPLETED", "data": {
            "job_id": "w0!a", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0,
            "alloc": "0"}}]})
    assert reply["events"] == [{"timestamp": 5.0, "type": "EXECUTE_JOB",
                                "data": {"job_id": "w0!b", "alloc": "0-1"}}]
