"""Fuzz (issue 43 item 6): ``serve``'s message handling (``BatsimScheduler.handle_message``,
the full path and the registered policies' lean path) over generated sessions: a valid
SIMULATION_BEGINS, then messages of near-valid and hostile events. Invariant
(tests/fuzzing.py): every message is answered with a well-formed reply, or refused with a clean
one-line error naming the event or field (the endpoint then ends the session with exit 2)."""

from __future__ import annotations

import json
import math

from hypothesis import given, strategies as st

from fuzzing import budget, clean
from mrsched.schedulers.batsim.scheduler import BatsimScheduler
from mrsched.schedulers.registry import make_scheduler

ANY = st.recursive(st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats() | st.text(max_size=6),
                   lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                max_size=3), max_leaves=8)
JOB_ID = st.sampled_from(["w0!1", "w0!2", "w0!3", "w0!99", "1", "w1!1", "", "w0!"]) | ANY
NUMBER = st.one_of(st.integers(-2, 50), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([1e308, -7, 0.5]))
STATES = st.sampled_from(["COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED",
                          "COMPLETED_KILLED", "REJECTED", "BOGUS"]) | ANY


class StartAll(BatsimScheduler):
    def on_job_submission(self, event):
        self.execute_job(event.job_id, [0])


SCHEDULERS = {"base": StartAll, "fcfs": lambda: make_scheduler("fcfs", {}),
              "fcfs-easy": lambda: make_scheduler("fcfs-easy", {}),
              "sjf-bb": lambda: make_scheduler("sjf-bb", {})}


def begins():
    return {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 3, "nb_compute_resources": 2, "nb_storage_resources": 1, "config": {},
        "profiles": {"w0": {"d": {"type": "delay", "delay": 10}}},
        "compute_resources": [{"id": i, "name": f"n{i}", "properties": {}} for i in range(2)],
        "storage_resources": [{"id": 2, "name": "bb", "properties": {"role": "storage",
                                                                     "bb_capacity": "1000"}}]}}


@st.composite
def event(draw, now):
    kind = draw(st.sampled_from(["JOB_SUBMITTED", "JOB_SUBMITTED", "JOB_COMPLETED", "JOB_KILLED",
                                 "RESOURCE_STATE_CHANGED", "NOTIFY", "REQUESTED_CALL", "SIMULATION_ENDS",
                                 "ANSWER", "QUERY", "EXECUTE_JOB", "BOGUS"]))
    jid = draw(JOB_ID)
    if kind == "JOB_SUBMITTED":
        job = {"id": jid, "subtime": draw(NUMBER | st.just(now)), "walltime": draw(NUMBER | st.just(100)),
               "res": draw(NUMBER | st.just(1)), "profile": draw(st.sampled_from(["d", "nope"]) | ANY)}
        if draw(st.booleans()):
            job["burst_buffer"] = draw(NUMBER)
        data = {"job_id": jid, "job": job}
    elif kind == "JOB_COMPLETED":
        data = {"job_id": jid, "job_state": draw(STATES), "return_code": draw(NUMBER),
                "alloc": draw(st.sampled_from(["0", "1", "0-1", "5", "x"]) | ANY)}
    elif kind == "JOB_KILLED":
        data = {"job_ids": draw(st.lists(JOB_ID, max_size=2) | ANY)}
    elif kind == "RESOURCE_STATE_CHANGED":
        data = {"resources": draw(st.sampled_from(["0", "0-1", "7", "x"]) | ANY), "state": draw(ANY)}
    elif kind == "NOTIFY":
        data = {"type": draw(st.sampled_from(["no_more_static_job_to_submit", "bogus"]) | ANY)}
    else:
        data = draw(st.dictionaries(st.text(max_size=5), ANY, max_size=2))
    if draw(st.integers(0, 9)) == 0:
        data = draw(ANY)
    return {"timestamp": draw(st.just(now) | NUMBER), "type": kind, "data": data}


@st.composite
def session(draw):
    messages, now = [], 0.0
    for _ in range(draw(st.integers(1, 4))):
        now += draw(st.sampled_from([0.0, 1.0, 5.0]))
        msg = {"now": draw(st.just(now) | NUMBER), "events": draw(st.lists(event(now), max_size=3))}
        if draw(st.integers(0, 14)) == 0:
            msg = draw(ANY)
        messages.append(msg)
    return draw(st.sampled_from(sorted(SCHEDULERS))), messages


@budget(200)
@given(session())
def test_fuzz_serve_messages(case):
    name, messages = case
    sched = SCHEDULERS[name]()
    sched.handle_message({"now": 0.0, "events": [begins()]})
    for msg in messages:
        # as it comes off the wire; a problem of the whole message says "message"
        reply = clean(sched.handle_message, json.loads(json.dumps(msg)), whole="message")
        if reply is None:
            return   # refused: the endpoint ends the session (exit 2)
        assert isinstance(reply, dict) and isinstance(reply.get("events"), list)
        assert isinstance(reply["now"], (int, float)) and math.isfinite(reply["now"])
        json.dumps(reply, allow_nan=False)   # a reply Batsim can read
