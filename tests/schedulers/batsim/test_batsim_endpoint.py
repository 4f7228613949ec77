"""The ZeroMQ REP loop and ``mrsched serve``, over real sockets on free loopback ports."""

from __future__ import annotations

import io
import json
import os
import signal
import socket as pysocket
import subprocess
import sys
import threading
import time

import pytest
import zmq

from mrsched.errors import ConfigError, SchedulerTimeout
from mrsched.schedulers.batsim.endpoint import check_endpoint, serve
from mrsched.schedulers.batsim.messages import parse_message
from mrsched.schedulers.cli import (load_scheduler_class, make_scheduler_from_spec,
                                    parse_options)
from mrsched.schedulers.example_scheduler import FirstFitScheduler

EXAMPLE = "mrsched.schedulers.example_scheduler:FirstFitScheduler"


def free_port() -> int:
    with pysocket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc=None, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.communicate()}")
        try:
            with pysocket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


class Client:
    """The Batsim side: a REQ socket with a receive timeout so a test never hangs."""

    def __init__(self, port: int):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, 20000)
        self.sock.connect(f"tcp://127.0.0.1:{port}")

    def ask(self, msg) -> dict:
        self.sock.send(msg if isinstance(msg, bytes) else json.dumps(msg).encode())
        return json.loads(self.sock.recv())

    def close(self):
        self.sock.close(linger=0)
        self.ctx.term()


def serve_in_thread(scheduler, port, **kw):
    result = {}

    def target():
        try:
            result["rc"] = serve(scheduler, f"tcp://127.0.0.1:{port}", **kw)
        except Exception as exc:  # reported to the test
            result["exc"] = exc
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, result


def test_replays_the_sequence_transcript_and_exits_0(shared_dir):
    lines = [json.loads(x) for x in
             (shared_dir / "batsim-reference/sequence/transcript.jsonl").read_text().splitlines()]
    port = free_port()
    t, result = serve_in_thread(FirstFitScheduler(), port, timeout=30)
    client = Client(port)
    try:
        for batsim, recorded in zip(lines[0::2], lines[1::2]):
            reply = client.ask(batsim["msg"])
            parsed = parse_message(reply)               # a valid v4 message
            assert reply["now"] == batsim["msg"]["now"]
            assert [(e.type, getattr(e, "job_id", None)) for e in parsed.events] == [
                (e["type"], e["data"].get("job_id")) for e in recorded["msg"]["events"]]
        assert reply == {"now": lines[-2]["msg"]["now"], "events": []}
    finally:
        client.close()
    t.join(10)
    assert not t.is_alive() and result == {"rc": 0}


def test_bad_json_closes_and_returns_2():
    port = free_port()
    err = io.StringIO()
    t, result = serve_in_thread(FirstFitScheduler(), port, timeout=30, stderr=err)
    client = Client(port)
    try:
        client.sock.send(b"{not json")
        t.join(10)
    finally:
        client.close()
    assert result == {"rc": 2}
    line = err.getvalue()
    assert line.count("\n") == 1 and "message 1" in line and "not JSON" in line


def test_receive_timeout_raises_and_frees_the_port():
    port = free_port()
    with pytest.raises(SchedulerTimeout, match="no message"):
        serve(FirstFitScheduler(), f"tcp://127.0.0.1:{port}", timeout=0.3)
    with pysocket.socket() as s:
        s.bind(("127.0.0.1", port))  # the socket was closed


@pytest.mark.parametrize("endpoint", ["tcp://0.0.0.0:28000", "tcp://*:28000",
                                      "tcp://10.1.2.3:28000"])
def test_remote_binding_is_refused_unless_allowed(endpoint):
    with pytest.raises(ConfigError, match="not a loopback"):
        serve(FirstFitScheduler(), endpoint)
    assert check_endpoint(endpoint, allow_remote=True) == endpoint


def test_a_bind_error_says_why():
    """An address of no interface here (TEST-NET-1) is not blamed on another scheduler; a port
    in use is."""
    with pytest.raises(ConfigError, match="no interface with that address") as err:
        serve(FirstFitScheduler(), "tcp://192.0.2.1:28123", allow_remote=True, timeout=0.1)
    assert "another scheduler" not in str(err.value)
    port = free_port()
    with zmq.Context().socket(zmq.REP) as busy:
        busy.setsockopt(zmq.LINGER, 0)
        busy.bind(f"tcp://127.0.0.1:{port}")
        with pytest.raises(ConfigError, match="another scheduler using this port"):
            serve(FirstFitScheduler(), f"tcp://127.0.0.1:{port}", timeout=0.1)


@pytest.mark.parametrize("endpoint, expected", [
    ("tcp://127.0.0.1:5000", "tcp://127.0.0.1:5000"),
    ("tcp://localhost:5000", "tcp://127.0.0.1:5000"),
    ("ipc:///tmp/x.sock", "ipc:///tmp/x.sock"),
])
def test_loopback_endpoints(endpoint, expected):
    assert check_endpoint(endpoint) == expected


@pytest.mark.parametrize("endpoint", ["127.0.0.1:5000", "tcp://127.0.0.1", "udp://x:1",
                                      "tcp://127.0.0.1:0", "tcp://127.0.0.1:http"])
def test_bad_endpoints(endpoint):
    with pytest.raises(ConfigError):
        check_endpoint(endpoint)


def test_options_and_scheduler_specs():
    assert parse_options(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    for bad in (["novalue"], ["=3"], ["a=1", "a=2"]):
        with pytest.raises(ConfigError):
            parse_options(bad)
    s = make_scheduler_from_spec(EXAMPLE, {"k": "v"})
    assert isinstance(s, FirstFitScheduler) and s.options == {"k": "v"}
    with pytest.raises(ConfigError, match="cannot import"):
        load_scheduler_class("no.such.module:X")
    with pytest.raises(ConfigError, match="did you mean 'FirstFitScheduler'"):
        load_scheduler_class("mrsched.schedulers.example_scheduler:FirstFitSchedular")
    with pytest.raises(ConfigError, match="not a scheduler class"):
        load_scheduler_class("mrsched.schedulers.example_scheduler:ProcSet")
    with pytest.raises(ConfigError):  # registry missing, or unknown policy name
        make_scheduler_from_spec("no-such-policy-name", {})


class NoOptions:
    def handle_message(self, msg):
        return {"now": msg["now"], "events": []}


def test_class_without_options_parameter():
    spec = f"{__name__}:NoOptions"
    assert isinstance(make_scheduler_from_spec(spec, {}), NoOptions)
    with pytest.raises(ConfigError, match="takes no 'options'"):
        make_scheduler_from_spec(spec, {"a": "1"})


# ---------------------------------------------------------------- the real command


def start_cli(port, *extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mrsched.cli", "serve", EXAMPLE, "--socket",
         f"tcp://127.0.0.1:{port}", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_listening(port, proc)
    return proc


def finish(proc, limit=20):
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("mrsched serve did not exit")
    return proc.returncode, err


def test_cli_malformed_event_exits_nonzero_naming_the_event():
    port = free_port()
    proc = start_cli(port, "--timeout", "30")
    client = Client(port)
    try:
        client.sock.send(json.dumps({"now": 0.0, "events": [
            {"timestamp": 0.0, "type": "JOB_SUBMITTED", "data": {"job": {}}}]}).encode())
        rc, err = finish(proc)
    finally:
        client.close()
    assert rc == 2
    assert "JOB_SUBMITTED" in err and "job_id" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_cli_exits_cleanly_on_signals(sig, code):
    port = free_port()
    proc = start_cli(port)
    proc.send_signal(sig)
    rc, err = finish(proc)
    assert rc == code and "Traceback" not in err
    with pysocket.socket() as s:
        s.bind(("127.0.0.1", port))  # port released


def test_cli_refuses_remote_bind_with_one_line():
    proc = subprocess.run([sys.executable, "-m", "mrsched.cli", "serve", EXAMPLE, "--socket",
                           "tcp://0.0.0.0:28000"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "loopback" in proc.stderr and "Traceback" not in proc.stderr
