"""Typed Batsim v4 messages: lossless round trips of real transcripts, checks on input."""

from __future__ import annotations

import json

import pytest
from procset import ProcSet

from mrsched.errors import ProtocolError
from mrsched.schedulers.batsim import messages as m
from mrsched.schedulers.batsim.messages import parse_message, serialize_message


def transcripts(shared_dir):
    files = sorted(shared_dir.glob("batsim-reference/*/transcript.jsonl"))
    files += sorted(shared_dir.glob("batsched-reference/*/transcript.jsonl"))
    return files


def strict(obj) -> str:
    """JSON text that tells 1 from 1.0 (dict == does not) and ignores key order."""
    return json.dumps(obj, sort_keys=True)


def test_every_reference_transcript_round_trips(shared_dir):
    files = transcripts(shared_dir)
    assert len(files) >= 20
    seen_types = set()
    directions = set()
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            rec = json.loads(line)
            msg = rec["msg"]
            parsed = parse_message(msg)
            back = serialize_message(parsed)
            assert strict(back) == strict(msg), f"{path}:{n} does not round-trip"
            assert back == msg
            directions.add(rec["from"])
            for e in parsed.events:
                assert not isinstance(e, m.UnknownEvent), f"{path}:{n}: {e.type} unknown"
                seen_types.add(e.type)
    assert directions == {"batsim", "scheduler"}
    assert {"SIMULATION_BEGINS", "JOB_SUBMITTED", "JOB_COMPLETED", "NOTIFY",
            "SIMULATION_ENDS", "EXECUTE_JOB"} <= seen_types


def test_typed_fields_of_real_messages(shared_dir):
    lines = (shared_dir / "batsim-reference/io30/transcript.jsonl").read_text().splitlines()
    first = parse_message(json.loads(lines[0])["msg"])
    begins = first.events[0]
    assert isinstance(begins, m.SimulationBegins)
    assert begins.nb_resources == len(begins.compute_resources) + len(begins.storage_resources)
    assert [r.id for r in begins.resources] == list(range(begins.nb_resources))
    assert all(isinstance(r, m.Resource) for r in begins.resources)
    executes = [e for line in lines for e in parse_message(json.loads(line)["msg"]).events
                if isinstance(e, m.ExecuteJob)]
    ex = executes[0]
    assert isinstance(ex.alloc, ProcSet) and ex.alloc == ProcSet((0, 7))
    assert ex.storage_mapping == {"pfs": 18, "bb": 17}
    assert all(type(v) is int for v in ex.storage_mapping.values())  # kept as received
    completed = [e for line in lines for e in parse_message(json.loads(line)["msg"]).events
                 if isinstance(e, m.JobCompleted)]
    assert completed and all(isinstance(c.alloc, ProcSet) for c in completed)
    assert {c.job_state for c in completed} <= set(m.JOB_STATES)


def ev(type_, data, ts=1.0):
    return {"timestamp": ts, "type": type_, "data": data}


ALL_EVENTS = [
    m.SimulationBegins(0.0, 2, 1, 1, False, True, {"sched-config": ""},
                       (m.Resource(0, "n0", "idle", {"role": ""}, {}),),
                       (m.Resource(1, "bb0", "idle", {"role": "storage"}, {}),),
                       {"w0": "w.json"}, {"w0": {"p": {"type": "delay", "delay": 1}}}),
    m.JobSubmitted(1.0, "w0!1", {"id": "w0!1", "res": 2, "burst_buffer": 10**9}),
    m.JobSubmitted(1.0, "w0!2", {"id": "w0!2", "res": 1}, {"type": "delay", "delay": 3}),
    m.JobCompleted(2.0, "w0!1", "COMPLETED_SUCCESSFULLY", 0, ProcSet((0, 1))),
    m.JobKilled(2.0, ("w0!1", "w0!3"), {"w0!1": {"profile_name": "p", "progress": 0.5}}),
    m.RequestedCall(2.0),
    m.Notify(2.0, "no_more_static_job_to_submit"),
    m.Notify(2.0, "event_machine_unavailable", ProcSet((1, 3), 7)),
    m.ResourceStateChanged(2.0, ProcSet((1, 3)), "2"),
    m.Answer(2.0, {"consumed_energy": 12.5}),
    m.Query(2.0, {"estimate_waiting_time": {"job_id": "w0!9"}}),
    m.SimulationEnds(3.0),
    m.ExecuteJob(1.0, "w0!1", ProcSet((0, 1))),
    m.ExecuteJob(1.0, "w0!1", ProcSet((0, 1)), mapping={"0": 0, "1": 1}),
    m.ExecuteJob(1.0, "w0!1", ProcSet(0), storage_mapping={"bb": 1, "pfs": 2}),
    m.ExecuteJob(1.0, "w0!1", ProcSet(0), additional_io_job=m.AdditionalIoJob(
        ProcSet((0, 1)), "io", {"type": "parallel", "cpu": [0, 0], "com": [0, 1, 1, 0]})),
    m.RejectJob(1.0, "w0!1"),
    m.KillJob(1.0, ("w0!1",)),
    m.CallMeLater(1.0, 10),
    m.RegisterJob(1.0, "dyn!a", {"id": "dyn!a", "res": 1, "profile": "p", "subtime": 1.0}),
    m.RegisterProfile(1.0, "dyn", "p", {"type": "delay", "delay": 5}),
    m.SetResourceState(1.0, ProcSet((0, 3)), "1"),
    m.SetJobMetadata(1.0, "w0!1", "io-phased"),
    m.ChangeJobState(1.0, "w0!1", "COMPLETED_KILLED", "because"),
    m.UnknownEvent(1.0, "FROM_THE_FUTURE", {"x": [1, 2.0]}),
]


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: e.type)
def test_each_event_type_round_trips_both_ways(event):
    wire = serialize_message(m.Message(3.0, (event,)))
    json.dumps(wire)  # plain JSON
    again = parse_message(json.loads(json.dumps(wire)))
    assert again.events == (event,)
    assert strict(serialize_message(again)) == strict(wire)


def test_every_protocol_type_has_a_parser():
    assert set(m.PARSERS) == {
        "SIMULATION_BEGINS", "JOB_SUBMITTED", "JOB_COMPLETED", "JOB_KILLED", "REQUESTED_CALL",
        "NOTIFY", "RESOURCE_STATE_CHANGED", "ANSWER", "QUERY", "SIMULATION_ENDS",
        "EXECUTE_JOB", "REJECT_JOB", "KILL_JOB", "CALL_ME_LATER", "REGISTER_JOB",
        "REGISTER_PROFILE", "SET_RESOURCE_STATE", "SET_JOB_METADATA", "CHANGE_JOB_STATE"}


def test_unknown_event_and_extra_fields_are_kept():
    msg = {"now": 5, "events": [
        ev("SOMETHING_NEW", {"a": 1}, 1),
        ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": {"id": "w0!1", "res": 1, "gpus": 2},
                             "later_field": [1]}, 2),
        ev("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "COMPLETED_FAILED",
                             "return_code": 3, "alloc": "0", "energy": 1.5}, 3)]}
    parsed = parse_message(msg)
    unknown, sub, comp = parsed.events
    assert isinstance(unknown, m.UnknownEvent) and unknown.type == "SOMETHING_NEW"
    assert sub.job["gpus"] == 2 and sub.extra == {"later_field": [1]}
    assert comp.extra == {"energy": 1.5}
    assert strict(serialize_message(parsed)) == strict(msg)
    assert type(serialize_message(parsed)["now"]) is int


def test_no_copies_of_job_dicts():
    job = {"id": "w0!1", "res": 1}
    e = parse_message({"now": 1.0, "events": [ev("JOB_SUBMITTED",
                                                   {"job_id": "w0!1", "job": job})]}).events[0]
    assert e.job is job


@pytest.mark.parametrize("events, match, etype", [
    ([ev("NOTIFY", {"type": "x"}, 2.0)], r"events\[0\].*after the message's now", "NOTIFY"),
    ([ev("NOTIFY", {"type": "x"}, 1.0), ev("REQUESTED_CALL", {}, 0.5)],
     r"events\[1\].*before the previous", "REQUESTED_CALL"),
    ([ev("JOB_SUBMITTED", {"job": {}})], r"events\[0\] lacks data field 'job_id'",
     "JOB_SUBMITTED"),
    ([ev("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY",
                           "return_code": 0, "alloc": "0-x"})], "invalid interval set",
     "JOB_COMPLETED"),
    ([ev("JOB_SUBMITTED", {"job_id": 3, "job": {}})], "must be a string", "JOB_SUBMITTED"),
    ([ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": []})], "JSON object", "JOB_SUBMITTED"),
    ([{"type": "NOTIFY", "data": {}}], r"events\[0\] lacks 'timestamp'", "NOTIFY"),
    ([ev("NOTIFY", {"type": "x"}, "1.0")], "timestamp must be a number", "NOTIFY"),
    ([ev("NOTIFY", [1])], "data must be a JSON object", "NOTIFY"),
    ([ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0", "mapping": {"0": "0"},
                         "storage_mapping": {"bb": 1}})], "at most one", "EXECUTE_JOB"),
    ([ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0", "mapingg": {}})],
     "unknown EXECUTE_JOB field", "EXECUTE_JOB"),
    ([ev("KILL_JOB", {"job_ids": []})], "at least one", "KILL_JOB"),
    ([ev("SET_JOB_METADATA", {"job_id": "w0!1", "metadata": 'a"b'})], "without", 
     "SET_JOB_METADATA"),
])
def test_bad_events_name_the_event(events, match, etype):
    with pytest.raises(ProtocolError, match=match) as err:
        parse_message({"now": 1.5, "events": events})
    assert err.value.event == etype
    assert etype in str(err.value)


@pytest.mark.parametrize("msg, match", [
    ([], "must be a JSON object"),
    ({"events": []}, "lacks 'now'"),
    ({"now": 1.0}, "lacks 'events'"),
    ({"now": "1", "events": []}, "'now' must be a number"),
    ({"now": True, "events": []}, "'now' must be a number"),
    ({"now": 1.0, "events": {}}, "'events' must be a list"),
    ({"now": 1.0, "events": [3]}, "not an event object"),
])
def test_bad_envelopes(msg, match):
    with pytest.raises(ProtocolError, match=match):
        parse_message(msg)


def test_outgoing_rules_hold_at_construction():
    with pytest.raises(ProtocolError, match="at most one") as err:
        m.ExecuteJob(1.0, "w0!1", ProcSet(0), mapping={"0": 0}, storage_mapping={"bb": 1})
    assert err.value.job == "w0!1"
    with pytest.raises(ProtocolError, match="at least one"):
        m.KillJob(1.0, ())
    with pytest.raises(ProtocolError, match="metadata"):
        m.SetJobMetadata(1.0, "w0!1", 'say "hi"')
    with pytest.raises(ProtocolError, match="workload!name"):
        m.RegisterJob(1.0, "noworkload", {})
    with pytest.raises(AttributeError):
        m.RejectJob(1.0, "w0!1").job_id = "w0!2"  # frozen
