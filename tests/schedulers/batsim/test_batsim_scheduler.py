"""BatsimScheduler: dispatch order, the guarantees that keep Batsim alive, bookkeeping."""

from __future__ import annotations

import doctest
import json

import pytest
from procset import ProcSet

from mrsched.errors import MrschedError, ProtocolError, SimulationError
from mrsched.schedulers.batsim import scheduler as scheduler_module
from mrsched.schedulers.batsim.messages import parse_message
from mrsched.schedulers.batsim.scheduler import MIN_WAKEUP_DELAY, BatsimScheduler


def ev(type_, data, ts):
    return {"timestamp": ts, "type": type_, "data": data}


def begins(n=4, *, dynamic=False, sched_config="", storage=0, ts=0.0, forward_unknown=False):
    compute = [{"id": i, "name": f"n{i}", "state": "idle", "properties": {"role": ""},
                "zone_properties": {}} for i in range(n)]
    stor = [{"id": n + i, "name": f"bb{i}", "state": "idle",
             "properties": {"role": "storage"}, "zone_properties": {}} for i in range(storage)]
    return ev("SIMULATION_BEGINS", {
        "nb_resources": n + storage, "nb_compute_resources": n,
        "nb_storage_resources": storage, "allow_compute_sharing": False,
        "allow_storage_sharing": True,
        "config": {"dynamic-jobs-enabled": dynamic, "sched-config": sched_config,
                   "forward-unknown-events": forward_unknown},
        "compute_resources": compute, "storage_resources": stor,
        "workloads": {"w0": "w.json"},
        "profiles": {"w0": {"d": {"type": "delay", "delay": 10}}}}, ts)


def submit(job_id, res, ts, **extra):
    return ev("JOB_SUBMITTED", {"job_id": job_id, "job": {"id": job_id, "subtime": ts,
                                                          "res": res, "profile": "d",
                                                          **extra}}, ts)


def complete(job_id, alloc, ts):
    return ev("JOB_COMPLETED", {"job_id": job_id, "job_state": "COMPLETED_SUCCESSFULLY",
                                "return_code": 0, "alloc": alloc}, ts)


def msg(now, *events):
    return {"now": now, "events": list(events)}


class Recorder(BatsimScheduler):
    """Records every callback; runs ``self.decide`` in on_no_more_events."""

    def __init__(self, decide=None, **kw):
        super().__init__(**kw)
        self.calls = []
        self.decide = decide

    def on_simulation_begins(self, e):
        self.calls.append(("begins", e.nb_resources))

    def on_job_submission(self, e):
        self.calls.append(("submitted", e.job_id))

    def on_job_completion(self, e):
        self.calls.append(("completed", e.job_id, str(e.alloc)))

    def on_job_killed(self, e):
        self.calls.append(("killed", e.job_ids))

    def on_requested_call(self, e):
        self.calls.append(("call", e.timestamp))

    def on_notify(self, e):
        self.calls.append(("notify", e.notify_type))

    def on_resource_state_changed(self, e):
        self.calls.append(("state", str(e.resources), e.state))

    def on_answer(self, e):
        self.calls.append(("answer", e.answers))

    def on_query(self, e):
        self.calls.append(("query", e.requests))

    def on_unknown_event(self, e):
        self.calls.append(("unknown", e.type))

    def on_no_more_events(self):
        self.calls.append(("decide", self.now))
        if self.decide:
            self.decide(self)

    def on_simulation_ends(self, e):
        self.calls.append(("ends",))


def types(reply):
    return [e["type"] for e in reply["events"]]


def test_callbacks_in_message_order_then_no_more_events():
    def start_first(s):
        if s.now == 0.0:
            s.execute_job("w0!1", [0])  # Batsim completes only a started job
    s = Recorder(decide=start_first)
    s.handle_message(msg(0.0, begins(forward_unknown=True), submit("w0!1", 1, 0.0), submit("w0!2", 2, 0.0)))
    s.handle_message(msg(5.0,
                         ev("NOTIFY", {"type": "no_more_static_job_to_submit"}, 1.0),
                         ev("RESOURCE_STATE_CHANGED", {"resources": "1-2", "state": "1"}, 2.0),
                         ev("ANSWER", {"consumed_energy": 3.5}, 3.0),
                         ev("QUERY", {"requests": {"estimate_waiting_time": {}}}, 3.0),
                         ev("JOB_KILLED", {"job_ids": ["w0!1"], "job_progress": {}}, 4.0),
                         complete("w0!1", "0", 4.0),
                         ev("REQUESTED_CALL", {}, 5.0),
                         ev("BRAND_NEW", {}, 5.0)))
    assert s.calls == [
        ("begins", 4), ("submitted", "w0!1"), ("submitted", "w0!2"), ("decide", 0.0),
        ("notify", "no_more_static_job_to_submit"), ("state", "1-2", "1"),
        ("answer", {"consumed_energy": 3.5}), ("query", {"estimate_waiting_time": {}}),
        ("killed", ("w0!1",)), ("completed", "w0!1", "0"), ("call", 5.0),
        ("unknown", "BRAND_NEW"), ("decide", 5.0)]


def test_jobs_submitted_with_simulation_begins_can_start_at_time_zero():
    def start_all(s):
        for i, job_id in enumerate(["w0!1", "w0!2"]):
            s.execute_job(job_id, [i])
    s = Recorder(decide=start_all)
    reply = s.handle_message(msg(0.0, begins(), submit("w0!1", 1, 0.0),
                                 submit("w0!2", 1, 0.0)))
    assert reply == {"now": 0.0, "events": [
        ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}, 0.0),
        ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "1"}, 0.0)]}
    assert set(s.jobs) == {"w0!1", "w0!2"} and s.jobs["w0!1"]["res"] == 1


def test_actions_are_stamped_now_and_reply_is_valid_json():
    def act(s):
        if s.now == 7.25:
            s.execute_job("w0!1", ProcSet((0, 1)))
            s.reject_job("w0!2")
            s.set_job_metadata("w0!2", "too big")
            s.kill_jobs(["w0!0"])
            s.set_resource_state([2, 3], 1)
    s = Recorder(decide=act)
    s.handle_message(msg(0.0, begins(), submit("w0!0", 1, 0.0)))
    reply = s.handle_message(msg(7.25, submit("w0!1", 2, 7.0), submit("w0!2", 9, 7.25)))
    assert types(reply) == ["EXECUTE_JOB", "REJECT_JOB", "SET_JOB_METADATA", "KILL_JOB",
                            "SET_RESOURCE_STATE"]
    assert {e["timestamp"] for e in reply["events"]} == {7.25}
    assert reply["events"][0]["data"] == {"job_id": "w0!1", "alloc": "0-1"}
    assert reply["events"][4]["data"] == {"resources": "2-3", "state": "1"}
    parse_message(json.loads(json.dumps(reply)))  # what Batsim receives parses back


def test_call_me_later_never_at_or_before_now_and_never_twice():
    asked = []

    def wake(s):
        for when in asked:
            s.call_me_later(when)
    s = Recorder(decide=wake)
    s.handle_message(msg(0.0, begins()))
    asked[:] = [10.0, 10.0, 3.0, 10.0 - 7.0]          # 3.0 and 3.0 are one wake-up
    r = s.handle_message(msg(3.0, ev("NOTIFY", {"type": "x"}, 3.0)))
    whens = [e["data"]["timestamp"] for e in r["events"]]
    assert whens == [10.0, 3.0 + MIN_WAKEUP_DELAY]
    assert all(e["type"] == "CALL_ME_LATER" and e["timestamp"] == 3.0 for e in r["events"])
    assert all(w > 3.0 for w in whens)
    # still pending: not asked again
    asked[:] = [10.0]
    r = s.handle_message(msg(4.0, ev("NOTIFY", {"type": "x"}, 4.0)))
    assert r["events"] == []
    # once due, the same time is in the past: moved after now
    r = s.handle_message(msg(10.0, ev("REQUESTED_CALL", {}, 10.0)))
    assert [e["data"]["timestamp"] for e in r["events"]] == [10.0 + MIN_WAKEUP_DELAY]
    assert 0 < MIN_WAKEUP_DELAY <= 0.01


def test_a_wake_up_stays_after_its_message_reaches_batsims_server():
    """Batsim's request-reply actor sends a reply's events one after the other, each taking the
    master host's message time, and its server aborts on a CALL_ME_LATER not after its clock:
    a wake-up is kept after its message's arrival, the message time read from submissions
    (JOB_SUBMITTED time - subtime, at least, plus a printed microsecond)."""
    asked = []

    def decide(s):
        for job_id in list(s.jobs):
            if job_id not in s._started:
                s.execute_job(job_id, ProcSet(0))
        for when in asked:
            s.call_me_later(when)
    s = Recorder(decide=decide)
    s.handle_message(msg(0.0, begins()))
    assert s.message_latency == 0.0       # nothing seen yet
    job = submit("w0!1", 1, 10.0)
    job["data"]["job"]["subtime"] = 9.9985     # the message took 1.5 ms
    asked[:] = [10.0005]                      # due before its message (second) arrives at 10.003
    r = s.handle_message(msg(10.0, job))
    assert s.message_latency == pytest.approx(0.001501)
    assert [e["type"] for e in r["events"]] == ["EXECUTE_JOB", "CALL_ME_LATER"]
    assert r["events"][1]["data"]["timestamp"] == pytest.approx(10.0 + 2 * 0.001501 + MIN_WAKEUP_DELAY)
    # one due after the arrival is asked as it is; a late one moves past the arrival too
    asked[:] = [20.0, 12.0]
    r = s.handle_message(msg(12.0, ev("NOTIFY", {"type": "x"}, 12.0)))
    assert [e["data"]["timestamp"] for e in r["events"]] == [
        20.0, pytest.approx(12.0 + 2 * 0.001501 + MIN_WAKEUP_DELAY)]


def test_a_costed_reply_keeps_its_wake_ups_after_their_arrival():
    from mrsched.schedulers.batsim.messages import space_wakeups, stamp_reply

    reply = {"now": 5.0, "events": [ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}, 5.0),
                                    ev("CALL_ME_LATER", {"timestamp": 5.5}, 5.0)]}
    # the work ends at 6.0: the wake-up, due before, goes after the end; with 2 ms a message,
    # after its message's arrival (the second of the reply: 6.004)
    assert stamp_reply(reply, 6.0)["events"][1]["data"] == {"timestamp": 6.0 + MIN_WAKEUP_DELAY}
    spaced = stamp_reply(reply, 6.0, latency=0.002)["events"][1]["data"]["timestamp"]
    assert spaced == pytest.approx(6.004 + MIN_WAKEUP_DELAY)
    # without a message time, or with the wake-up after the arrival: unchanged
    assert space_wakeups(reply["events"], 0.0) is reply["events"]
    assert space_wakeups(reply["events"], 0.1) is reply["events"]


def test_call_me_later_refuses_nonsense():
    s = Recorder(decide=lambda s: s.call_me_later(float("nan")))
    with pytest.raises(SimulationError, match="finite"):
        s.handle_message(msg(0.0, begins()))
    s = Recorder(decide=lambda s: s.call_me_later("soon"))
    with pytest.raises(SimulationError, match="number"):
        s.handle_message(msg(0.0, begins()))


def test_execute_job_takes_at_most_one_mapping():
    def bad(s):
        s.execute_job("w0!1", "0", mapping={"0": "0"}, storage_mapping={"bb": 4})
    s = Recorder(decide=bad)
    with pytest.raises(ProtocolError, match="at most one") as err:
        s.handle_message(msg(0.0, begins(storage=1), submit("w0!1", 1, 0.0)))
    assert err.value.job == "w0!1"

    def good(s):
        s.execute_job("w0!1", "0", storage_mapping={"bb": 4})
        s.execute_job("w0!2", "1", additional_io_job={"alloc": [1, 4], "profile_name": "io",
                                                       "profile": {"type": "parallel"}})
    s = Recorder(decide=good)
    r = s.handle_message(msg(0.0, begins(storage=1), submit("w0!1", 1, 0.0),
                             submit("w0!2", 1, 0.0)))
    assert r["events"][0]["data"] == {"job_id": "w0!1", "alloc": "0",
                                      "storage_mapping": {"bb": 4}}
    assert r["events"][1]["data"]["additional_io_job"] == {
        "alloc": "1 4", "profile_name": "io", "profile": {"type": "parallel"}}


@pytest.mark.parametrize("decide, match", [
    (lambda s: s.execute_job("w0!9", "0"), "never submitted"),
    (lambda s: (s.execute_job("w0!1", "0"), s.execute_job("w0!1", "1")), "already started"),
    (lambda s: (s.reject_job("w0!1"), s.execute_job("w0!1", "1")), "already started or rej"),
    (lambda s: s.execute_job("w0!1", "4"), "does not exist"),
    (lambda s: s.execute_job("w0!1", []), "empty"),
    (lambda s: s.reject_job("w0!9"), "never submitted"),
    (lambda s: s.kill_jobs([]), "at least one"),
    (lambda s: s.set_job_metadata("w0!1", 'a "quote"'), "metadata"),
])
def test_decisions_batsim_would_refuse_raise_clear_errors(decide, match):
    s = Recorder(decide=decide)
    with pytest.raises(MrschedError, match=match):
        s.handle_message(msg(0.0, begins(), submit("w0!1", 1, 0.0)))


def test_dynamic_registration_and_registration_finished_once():
    def register(s):
        if s.now == 0.0:
            s.register_profile("dyn", "p", {"type": "delay", "delay": 3})
            s.register_job("dyn!a", {"res": 1, "profile": "p", "subtime": 0.0})
            s.execute_job("dyn!a", "0")
            s.notify_registration_finished()
            s.notify_registration_finished()
        else:
            s.notify_registration_finished()
    s = Recorder(decide=register)
    r = s.handle_message(msg(0.0, begins(dynamic=True)))
    assert types(r) == ["REGISTER_PROFILE", "REGISTER_JOB", "EXECUTE_JOB", "NOTIFY"]
    assert r["events"][1]["data"] == {"job_id": "dyn!a", "job": {
        "id": "dyn!a", "res": 1, "profile": "p", "subtime": 0.0}}
    assert r["events"][3]["data"] == {"type": "registration_finished"}
    r = s.handle_message(msg(1.0, ev("NOTIFY", {"type": "x"}, 1.0)))
    assert r["events"] == []  # sent once over the whole simulation


@pytest.mark.parametrize("decide, dynamic, match", [
    (lambda s: s.register_job("dyn!a", {"res": 1, "profile": "nope"}), True,
     "not registered"),
    (lambda s: s.register_job("w0!1", {"res": 1, "profile": "d"}), True, "already exists"),
    (lambda s: s.register_job("dyn!a", {"id": "dyn!b", "res": 1, "profile": "d"}), True,
     "not the job id"),
    (lambda s: s.register_job("noworkload", {"res": 1, "profile": "d"}), True,
     "workload!name"),
    (lambda s: (s.register_profile("dyn", "p", {}), s.register_profile("dyn", "p", {})),
     True, "already registered"),
    (lambda s: (s.notify_registration_finished(), s.register_profile("dyn", "p", {})),
     True, "already finished"),
    (lambda s: s.register_profile("dyn", "p", {}), False, "without dynamic jobs"),
    (lambda s: s.notify_registration_finished(), False, "without dynamic jobs"),
])
def test_registration_errors(decide, dynamic, match):
    s = Recorder(decide=decide)
    with pytest.raises(MrschedError, match=match):
        s.handle_message(msg(0.0, begins(dynamic=dynamic), submit("w0!1", 1, 0.0)))


def test_registered_job_may_use_a_profile_of_its_static_workload():
    s = Recorder(decide=lambda s: s.register_job("w0!dyn", {"res": 1, "profile": "d"}))
    r = s.handle_message(msg(0.0, begins(dynamic=True)))
    assert types(r) == ["REGISTER_JOB"] and "w0!dyn" in s.jobs


def test_simulation_ends_gets_an_empty_reply_and_then_actions_are_refused():
    s = Recorder(decide=lambda s: s.call_me_later(100.0))
    s.handle_message(msg(0.0, begins()))
    reply = s.handle_message(msg(50.0, ev("SIMULATION_ENDS", {}, 50.0)))
    assert reply == {"now": 50.0, "events": []}
    assert s.finished
    assert s.calls[-1] == ("ends",)                      # no on_no_more_events after the end
    with pytest.raises(SimulationError, match="ended"):
        s.call_me_later(60.0)
    with pytest.raises(ProtocolError, match="after SIMULATION_ENDS"):
        s.handle_message(msg(60.0, ev("NOTIFY", {"type": "x"}, 60.0)))


def test_actions_in_on_simulation_ends_are_refused():
    class Late(BatsimScheduler):
        def on_simulation_ends(self, event):
            self.call_me_later(5.0)
    s = Late()
    s.handle_message(msg(0.0, begins()))
    with pytest.raises(SimulationError, match="ended"):
        s.handle_message(msg(1.0, ev("SIMULATION_ENDS", {}, 1.0)))


def test_simulation_ends_must_be_last_and_time_cannot_go_back():
    s = Recorder()
    s.handle_message(msg(2.0, begins()))
    with pytest.raises(ProtocolError, match="goes back in time"):
        s.handle_message(msg(1.0, []) | {"events": []})
    with pytest.raises(ProtocolError, match="last event"):
        s.handle_message(msg(3.0, ev("SIMULATION_ENDS", {}, 3.0), ev("NOTIFY", {"type": "x"},
                                                                      3.0)))


def test_a_new_simulation_resets_state():
    s = Recorder(decide=lambda s: s.call_me_later(5.0))
    s.handle_message(msg(0.0, begins(), submit("w0!1", 1, 0.0)))
    s.handle_message(msg(1.0, ev("SIMULATION_ENDS", {}, 1.0)))
    r = s.handle_message(msg(0.0, begins(n=2)))
    assert not s.finished and s.jobs == {} and len(s.compute_resources) == 2
    assert types(r) == ["CALL_ME_LATER"]  # the old pending wake-up is forgotten


def test_bookkeeping_attributes():
    s = BatsimScheduler(options={"k": "v"})
    assert s.options == {"k": "v"} and s.now == 0.0 and not s.finished
    s.handle_message(msg(0.0, begins(n=3, storage=2, sched_config='{"depth": 2}')))
    assert [r.name for r in s.compute_resources] == ["n0", "n1", "n2"]
    assert [r.id for r in s.storage_resources] == [3, 4]
    assert s.storage_resources[0].properties == {"role": "storage"}
    assert s.sched_config == {"depth": 2}
    assert s.config["dynamic-jobs-enabled"] is False
    assert s.profiles["w0"]["d"]["delay"] == 10 and s.workloads == {"w0": "w.json"}
    s2 = BatsimScheduler()
    s2.handle_message(msg(0.0, begins(sched_config="fast mode")))
    assert s2.sched_config == "fast mode"
    s3 = BatsimScheduler()
    s3.handle_message(msg(0.0, begins()))
    assert s3.sched_config == {}


def test_subclass_that_forgets_super_init_still_works():
    class Forgetful(BatsimScheduler):
        def __init__(self):
            self.mine = 1

        def on_job_submission(self, e):
            self.reject_job(e.job_id)
    s = Forgetful()
    r = s.handle_message(msg(0.0, begins(), submit("w0!1", 9, 0.0)))
    assert types(r) == ["REJECT_JOB"]


def test_actions_outside_a_message_are_refused():
    with pytest.raises(SimulationError, match="before the first message"):
        BatsimScheduler().call_me_later(3.0)


def test_malformed_message_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="JOB_SUBMITTED"):
        BatsimScheduler().handle_message(msg(0.0, ev("JOB_SUBMITTED", {"job": {}}, 0.0)))


def test_module_docstring_example_runs():
    result = doctest.testmod(scheduler_module)
    assert result.attempted > 0 and result.failed == 0
