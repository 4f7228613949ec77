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
