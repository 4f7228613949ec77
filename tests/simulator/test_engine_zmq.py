"""The engine over ZeroMQ: same results as in-process; a REP peer in a thread."""

from __future__ import annotations

import csv
import json
import threading

import pytest
import zmq

from mrsched.errors import ConfigError, ProtocolError
from mrsched.simulator.connection import ZmqScheduler, check_endpoint
from mrsched.simulator.engine import simulate
from test_engine_support import fcfs, make_workload, platform_file  # noqa: F401 (fixtures)


def serve(policy, sock, stop):
    while not stop.is_set():
        if not sock.poll(100):
            continue
        msg = json.loads(sock.recv_string())
        reply = policy.handle_message(msg)
        sock.send_string(json.dumps(reply))
        if any(e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
            return


def test_zmq_matches_in_process(platform_file, make_workload, fcfs, tmp_path):
    wl = make_workload([{"id": i, "subtime": i * 0.5, "res": 1 + i % 3, "profile": "d10"}
                        for i in range(12)])
    simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "a")
    ctx = zmq.Context.instance()
    rep = ctx.socket(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(fcfs(), rep, stop), daemon=True)
    thread.start()
    try:
        with ZmqScheduler(f"tcp://127.0.0.1:{port}", timeout=10) as conn:
            simulate(platform_file, [wl], conn, export_prefix=tmp_path / "b")
            assert conn.closed  # closed after SIMULATION_ENDS
    finally:
        stop.set()
        thread.join(5)
        rep.close(linger=0)
    with open(tmp_path / "a_jobs.csv") as fa, open(tmp_path / "b_jobs.csv") as fb:
        assert list(csv.reader(fa)) == list(csv.reader(fb))


def test_malformed_reply_is_a_protocol_error(platform_file, make_workload, tmp_path):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])
    ctx = zmq.Context.instance()
    rep = ctx.socket(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")

    def bad():
        rep.recv_string()
        rep.send_string("this is not json")

    thread = threading.Thread(target=bad, daemon=True)
    thread.start()
    try:
        with pytest.raises(ProtocolError, match="malformed JSON"):
            with ZmqScheduler(f"tcp://127.0.0.1:{port}", timeout=5) as conn:
                simulate(platform_file, [wl], conn, export_prefix=None)
    finally:
        thread.join(5)
        rep.close(linger=0)


def test_endpoints_are_loopback_only():
    assert check_endpoint("tcp://localhost:28000") == "tcp://localhost:28000"
    assert check_endpoint("ipc:///tmp/x") == "ipc:///tmp/x"
    for bad in ("tcp://*:28000", "tcp://192.168.1.2:28000", "tcp://127.0.0.1:99999", "x"):
        with pytest.raises(ConfigError):
            check_endpoint(bad)
