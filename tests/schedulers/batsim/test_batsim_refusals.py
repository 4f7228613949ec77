"""Issue 13 items 5 and 7: `mrsched serve` refuses, with one line naming the event, every
message real Batsim never sends -- on the full path (any BatsimScheduler) and on the lean
path of the registered policies alike."""

from __future__ import annotations

import json
import os
import socket as pysocket
import subprocess
import sys
import time

import pytest
import zmq

from mrsched.errors import ProtocolError
from mrsched.schedulers.batsim.scheduler import BatsimScheduler
from mrsched.schedulers.registry import make_scheduler


def begins(n=2, storage=0, **over):
    data = {"nb_resources": n + storage, "nb_compute_resources": n, "nb_storage_resources": storage,
            "config": {}, "profiles": {"w0": {"d": {"type": "delay", "delay": 10}}},
            "compute_resources": [{"id": i, "name": f"n{i}", "properties": {}}
                                                for i in range(n)],
            "storage_resources": [{"id": n + i, "name": f"s{i}", "properties": {"role": "storage"}}
                                  for i in range(storage)]}
    data.update(over)
    return {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": data}


def submit(jid, t=0.0, **job):
    job = {"id": jid, "subtime": t, "walltime": 10, "res": 1, "profile": "d", **job}
    return {"timestamp": t, "type": "JOB_SUBMITTED", "data": {"job_id": jid, "job": job}}


def complete(jid, t):
    return {"timestamp": t, "type": "JOB_COMPLETED", "data": {
        "job_id": jid, "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "0"}}


def msg(now, *events):
    return {"now": now, "events": list(events)}


class StartAll(BatsimScheduler):
    def on_job_submission(self, event):
        self.execute_job(event.job_id, [0])


SCHEDULERS = {"base": StartAll, "fcfs": lambda: make_scheduler("fcfs", {}),
              "filler": lambda: make_scheduler("filler", {})}


@pytest.fixture(params=sorted(SCHEDULERS))
def sched(request):
    s = SCHEDULERS[request.param]()
    s.handle_message(msg(0.0, begins()))
    return s


def test_duplicate_submission_is_refused_not_started_twice(sched):
    reply = sched.handle_message(msg(1.0, submit("w0!1", 1.0)))
    assert [e["type"] for e in reply["events"]] == ["EXECUTE_JOB"]
    with pytest.raises(ProtocolError, match="submitted twice") as err:
        sched.handle_message(msg(2.0, submit("w0!1", 2.0)))
    assert "JOB_SUBMITTED" in str(err.value) and "w0!1" in str(err.value)


def test_duplicate_submission_in_one_message(sched):
    with pytest.raises(ProtocolError, match="submitted twice"):
        sched.handle_message(msg(1.0, submit("w0!1", 1.0), submit("w0!1", 1.0)))


@pytest.mark.parametrize("case,why", [("unknown", "unknown job"), ("twice", "completed twice"),
                                      ("rejected", "was rejected")])
def test_impossible_completions_are_refused(case, why):
    s = make_scheduler("fcfs", {})
    s.handle_message(msg(0.0, begins()))
    s.handle_message(msg(1.0, submit("w0!1", 1.0), submit("w0!2", 1.0, res=9)))  # w0!2 rejected
    if case == "unknown":
        bad = msg(5.0, complete("w0!7", 5.0))
    elif case == "rejected":
        bad = msg(5.0, complete("w0!2", 5.0))
    else:
        s.handle_message(msg(5.0, complete("w0!1", 5.0)))
        bad = msg(6.0, complete("w0!1", 6.0))
    with pytest.raises(ProtocolError, match=why) as err:
        s.handle_message(bad)
    assert "event JOB_COMPLETED" in str(err.value)


@pytest.mark.parametrize("job,why", [({"res": 1.5}, "res must be an integer"),
                                     ({"res": "2"}, "res must be an integer"),
                                     ({"id": "w0!9"}, "job.id is 'w0!9'"),
                                     ({"walltime": -7}, "walltime must be -1"),
                                     ({"walltime": 0}, "walltime must be -1"),
                                     ({"walltime": float("nan")}, "walltime must be -1"),
                                     ({"profile": "nope"}, "profile 'nope' is not among")])
def test_malformed_jobs_are_refused(sched, job, why):
    with pytest.raises(ProtocolError, match=why) as err:
        sched.handle_message(msg(1.0, submit("w0!1", 1.0, **job)))
    assert "w0!1" in str(err.value)


@pytest.mark.parametrize("jid", ["w01", "!1", "w0!", "w0!1!2"])
def test_job_ids_not_in_batsims_form_are_refused(sched, jid):
    with pytest.raises(ProtocolError, match="is not 'workload!name'"):
        sched.handle_message(msg(1.0, submit(jid, 1.0)))


def started(sched):
    reply = sched.handle_message(msg(1.0, submit("w0!1", 1.0)))
    assert [e["type"] for e in reply["events"]] == ["EXECUTE_JOB"]
    return reply["events"][0]["data"]["alloc"]


def test_a_completion_on_another_allocation_is_refused(sched):
    assert started(sched) == "0"
    bad = complete("w0!1", 5.0)
    bad["data"]["alloc"] = "1"
    with pytest.raises(ProtocolError, match="alloc '1' is not the job's '0'"):
        sched.handle_message(msg(5.0, bad))


def test_an_unknown_job_state_is_refused(sched):
    started(sched)
    bad = complete("w0!1", 5.0)
    bad["data"]["job_state"] = "FINISHED"
    with pytest.raises(ProtocolError, match="job_state 'FINISHED' is not one of"):
        sched.handle_message(msg(5.0, bad))


def test_job_killed_for_a_job_never_started_is_refused(sched):
    with pytest.raises(ProtocolError, match="never started") as err:
        sched.handle_message(msg(1.0, {"timestamp": 1.0, "type": "JOB_KILLED",
                                       "data": {"job_ids": ["w0!5"], "job_progress": {}}}))
    assert "JOB_KILLED" in str(err.value) and "w0!5" in str(err.value)


def test_a_state_change_beyond_the_machine_is_refused(sched):
    with pytest.raises(ProtocolError, match="resource 7, which the machine does not have"):
        sched.handle_message(msg(1.0, {"timestamp": 1.0, "type": "RESOURCE_STATE_CHANGED",
                                       "data": {"resources": "0 7", "state": "1"}}))


def test_an_unknown_event_type_is_refused(sched):
    with pytest.raises(ProtocolError, match="unknown event type 'FROM_THE_FUTURE'"):
        sched.handle_message(msg(1.0, {"timestamp": 1.0, "type": "FROM_THE_FUTURE", "data": {}}))


def test_simulation_ends_while_jobs_run_is_refused(sched):
    started(sched)
    with pytest.raises(ProtocolError, match="SIMULATION_ENDS while 1 job"):
        sched.handle_message(msg(5.0, {"timestamp": 5.0, "type": "SIMULATION_ENDS", "data": {}}))


@pytest.mark.parametrize("now", [float("nan"), -1.0, float("inf")])
def test_bad_now_is_refused(now):
    s = make_scheduler("fcfs", {})
    with pytest.raises(ProtocolError, match="finite time >= 0"):
        s.handle_message(msg(now, begins()))


@pytest.mark.parametrize("now", [float("nan"), float("inf")])
def test_bad_now_is_refused_mid_simulation(sched, now):
    """On the lean path of the registered policies too."""
    with pytest.raises(ProtocolError, match="finite time >= 0"):
        sched.handle_message(msg(now, submit("w0!1", 1.0)))


@pytest.mark.parametrize("over,why", [({"nb_resources": 5}, "nb_resources is 5"),
                                      ({"compute_resources": [{"id": 0, "name": "a", "properties": {}},
                                                              {"id": 0, "name": "b", "properties": {}}]},
                                       "resource id 0 is listed twice")])
def test_inconsistent_resources_are_refused(over, why):
    for s in (StartAll(), make_scheduler("fcfs", {})):
        with pytest.raises(ProtocolError, match=why):
            s.handle_message(msg(0.0, begins(**over)))


def test_events_before_simulation_begins_are_refused():
    for s in (StartAll(), make_scheduler("fcfs", {})):
        with pytest.raises(ProtocolError, match="JOB_SUBMITTED before SIMULATION_BEGINS"):
            s.handle_message(msg(0.0, submit("w0!1")))


# ---------------------------------------------------------------- over the wire, `mrsched serve`

def free_port() -> int:
    with pysocket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_cli(url: str, policy="fcfs"):
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", "serve", policy, "--socket", url,
                             "--timeout", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    line = proc.stdout.readline()
    assert line.startswith("mrsched serve: ready, listening on "), line
    return proc


def client(url: str):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 20000)
    if "[" in url:
        sock.setsockopt(zmq.IPV6, 1)
    sock.connect(url)
    return ctx, sock


def one_error_line(proc) -> str:
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("frames,why", [
    ([json.dumps(msg(0.0, submit("w0!1"))).encode()], "JOB_SUBMITTED before SIMULATION_BEGINS"),
    ([b"[" * 100_000 + b"]" * 100_000], "nested too deeply"),
    ([b'{"now": NaN, "events": []}'], "NaN is not a JSON number"),
    ([b'{"now": 0, "events": []}', b"second part"], "has 2 parts"),
])
def test_serve_refuses_with_one_line(frames, why):
    url = f"tcp://127.0.0.1:{free_port()}"
    proc = serve_cli(url)
    ctx, sock = client(url)
    try:
        sock.send_multipart(frames)
        err = one_error_line(proc)
    finally:
        sock.close(linger=0)
        ctx.term()
    assert why in err


def test_serve_refuses_a_duplicate_submission_naming_the_event():
    url = f"tcp://127.0.0.1:{free_port()}"
    proc = serve_cli(url)
    ctx, sock = client(url)
    try:
        for m in (msg(0.0, begins()), msg(1.0, submit("w0!1", 1.0))):
            sock.send(json.dumps(m).encode())
            json.loads(sock.recv())
        sock.send(json.dumps(msg(2.0, submit("w0!1", 2.0))).encode())
        err = one_error_line(proc)
    finally:
        sock.close(linger=0)
        ctx.term()
    assert "event JOB_SUBMITTED, job w0!1: job submitted twice" in err


def test_serve_on_ipv6_loopback():
    if not __import__("socket").has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        with pysocket.socket(pysocket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    url = f"tcp://[::1]:{free_port()}"
    proc = serve_cli(url)
    ctx, sock = client(url)
    try:
        sock.send(json.dumps(msg(0.0, begins())).encode())
        assert json.loads(sock.recv()) == {"now": 0.0, "events": []}
        sock.send(json.dumps(msg(1.0, {"timestamp": 1.0, "type": "SIMULATION_ENDS", "data": {}})).encode())
        assert json.loads(sock.recv())["events"] == []
        proc.communicate(timeout=20)
    finally:
        sock.close(linger=0)
        ctx.term()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
