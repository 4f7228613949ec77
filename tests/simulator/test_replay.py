"""``ReplayScheduler``: recorded replies are given back when the engine reaches the Batsim
message they answered, one at a time when two messages share a printed time."""

from __future__ import annotations

from mrsched.simulator.replay import ReplayScheduler


def _submitted(now: float, *ids: str) -> dict:
    return {"now": now, "events": [{"timestamp": now, "type": "JOB_SUBMITTED",
                                    "data": {"job_id": i, "job": {"id": i, "res": 1}}}
                                   for i in ids]}


def _state(now: float, resources: str) -> dict:
    return {"now": now, "events": [{"timestamp": now, "type": "SET_RESOURCE_STATE",
                                    "data": {"resources": resources, "state": "0"}}]}


TRANSCRIPT = [
    {"from": "batsim", "msg": _submitted(19.034202, "w0!0")},
    {"from": "scheduler", "msg": _state(19.034202, "0-3")},
    {"from": "batsim", "msg": _submitted(19.034202, "w0!1", "w0!2")},
    {"from": "scheduler", "msg": _state(19.034202, "4-11")},
]


def _resources(reply: dict) -> list[str]:
    return [e["data"]["resources"] for e in reply["events"]]


def test_two_messages_at_one_printed_time_get_their_own_replies():
    """Case ``energy_switch_gap``: Batsim answered w0!0 with one request and w0!1, w0!2 (the
    same printed time) with another; merged, the second request reached Batsim's server a
    message early."""
    replay = ReplayScheduler(TRANSCRIPT)
    assert _resources(replay.handle_message(_submitted(19.034202, "w0!0"))) == ["0-3"]
    assert _resources(replay.handle_message(_submitted(19.034202, "w0!1", "w0!2"))) == ["4-11"]


def test_messages_the_engine_batched_get_both_replies():
    """The engine sent both Batsim messages' jobs in one: both replies are due at once."""
    replay = ReplayScheduler(TRANSCRIPT)
    reply = replay.handle_message(_submitted(19.034202, "w0!0", "w0!1", "w0!2"))
    assert _resources(reply) == ["0-3", "4-11"]


def _notify(now: float, kind: str) -> dict:
    return {"now": now, "events": [{"timestamp": now, "type": "NOTIFY", "data": {"type": kind}}]}


NOTIFIED = [
    {"from": "batsim", "msg": _submitted(159.193406, "w0!10")},
    {"from": "scheduler", "msg": _state(159.193406, "0-1")},
    {"from": "batsim", "msg": _notify(159.193406, "no_more_static_job_to_submit")},
    {"from": "scheduler", "msg": _state(164.193406, "2-3")},
]


def test_a_notify_alone_at_one_printed_time_gets_its_own_reply():
    """Drawn case s9047 (batsched ``killer2``): Batsim answered the submission, then sent the
    submitter's NOTIFY alone at the same time; its reply (a kill) was merged into the first,
    and the killed job ended one message early."""
    replay = ReplayScheduler(NOTIFIED)
    assert _resources(replay.handle_message(_submitted(159.193406, "w0!10"))) == ["0-1"]
    reply = replay.handle_message(_notify(159.193406, "no_more_static_job_to_submit"))
    assert _resources(reply) == ["2-3"]


def test_a_notify_the_engine_batched_gets_both_replies():
    replay = ReplayScheduler(NOTIFIED)
    msg = _submitted(159.193406, "w0!10")
    msg["events"] += _notify(159.193406, "no_more_static_job_to_submit")["events"]
    assert _resources(replay.handle_message(msg)) == ["0-1", "2-3"]
