"""`mrsched simulate`: bad inputs give one clear line and exit 2; a dead scheduler times out."""

from __future__ import annotations

import json
import socket

import pytest

from mrsched.cli import main
from test_engine_support import platform_file  # noqa: F401 (fixture)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(capsys, *args) -> tuple[int, str]:
    code = main(["simulate", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.err.strip()


def good_workload(tmp_path, **job):
    path = tmp_path / "w.json"
    base = {"id": 1, "subtime": 0, "res": 1, "profile": "d"}
    base.update(job)
    path.write_text(json.dumps({"jobs": [base], "profiles": {"d": {"type": "delay", "delay": 1}}}))
    return path


def test_dead_scheduler_times_out(capsys, platform_file, tmp_path):
    code, err = run_cli(capsys, "-p", platform_file, "-w", good_workload(tmp_path), "-e",
                        tmp_path / "out", "-s", f"tcp://127.0.0.1:{_free_port()}", "--timeout",
                        "0.3")
    assert code == 2
    assert err.count("\n") == 0 and "no answer from the scheduler" in err


@pytest.mark.parametrize("content, expect", [
    ("{", "malformed JSON"),
    (json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "x"}],
                 "profiles": {"x": {"type": "smpi"}}}), "use --engine batsim"),
    (json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "zz"}],
                 "profiles": {}}), "unknown profile 'zz'"),
    # Batsim 4.2.1 refuses these (profiles.cpp: "non-strictly-positive 'delay'"; rapidjson)
    (json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                 "profiles": {"d": {"type": "delay", "delay": 0}}}),
     "'delay' must be a strictly positive finite number, got 0"),
    (json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                 "profiles": {"d": {"type": "delay", "delay": -2.5}}}), "got -2.5"),
    ('{"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}], '
     '"profiles": {"d": {"type": "delay", "delay": NaN}}}', "'NaN' is not a JSON number"),
    ('{"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}], '
     '"profiles": {"d": {"type": "delay", "delay": Infinity}}}', "'Infinity' is not a JSON number"),
    (json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"}],
                 "profiles": {"p": {"type": "parallel_homogeneous_pfs"}}}),
     "no 'bytes_to_read' or 'bytes_to_write'"),
])
def test_bad_workloads(capsys, platform_file, tmp_path, content, expect):
    path = tmp_path / "bad.json"
    path.write_text(content)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, err = run_cli(capsys, "-p", platform_file, "-w", path, "-e", tmp_path / "out",
                        "--replay", empty)
    assert code == 2
    assert err.count("\n") == 0 and expect in err and str(path) in err


def test_missing_and_malformed_platform(capsys, tmp_path):
    wl = good_workload(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, err = run_cli(capsys, "-p", tmp_path / "absent.xml", "-w", wl, "--replay", empty)
    assert code == 2 and "absent.xml" in err and err.count("\n") == 0
    bad = tmp_path / "bad.xml"
    bad.write_text("<platform><zone")
    code, err = run_cli(capsys, "-p", bad, "-w", wl, "--replay", empty)
    assert code == 2 and "bad.xml" in err and "malformed" in err.lower()


def test_missing_workload_and_bad_socket(capsys, platform_file, tmp_path):
    code, err = run_cli(capsys, "-p", platform_file, "-w", tmp_path / "nope.json", "--replay",
                        tmp_path / "x")
    assert code == 2 and "cannot read transcript" in err
    (tmp_path / "x").write_text("")
    code, err = run_cli(capsys, "-p", platform_file, "-w", tmp_path / "nope.json", "--replay",
                        tmp_path / "x")
    assert code == 2 and "nope.json: no such file" in err
    code, err = run_cli(capsys, "-p", platform_file, "-w", good_workload(tmp_path), "-s",
                        "tcp://10.0.0.1:28000")
    assert code == 2 and "loopback" in err


def test_replay_run_writes_outputs(capsys, platform_file, tmp_path):
    wl = good_workload(tmp_path)
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"from": "batsim", "msg": {"now": 0.0, "events": []}},
        {"from": "scheduler", "msg": {"now": 0.0, "events": []}},
        {"from": "batsim", "msg": {"now": 0.0, "events": []}},
        {"from": "scheduler", "msg": {"now": 0.0, "events": [
            {"timestamp": 0.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "2"}}]}},
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines))
    code = main(["simulate", "-p", str(platform_file), "-w", str(wl), "-e", str(tmp_path / "o"),
                 "--replay", str(transcript)])
    out = capsys.readouterr().out
    assert code == 0 and "simulated 1 jobs" in out
    row = (tmp_path / "o_jobs.csv").read_text().splitlines()[1].split(",")
    assert row[7] == "COMPLETED_SUCCESSFULLY" and row[14] == "2"


def test_against_mrsched_serve(capsys, platform_file, tmp_path):
    """Both halves of the project over a real socket: `mrsched serve fcfs` + `mrsched simulate`."""
    import subprocess
    import sys

    port = _free_port()
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"profiles": {"d": {"type": "delay", "delay": 5}}, "jobs": [
        {"id": i, "subtime": i, "res": 1 + i % 4, "walltime": 100, "profile": "d"}
        for i in range(10)]}))
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", "serve", "fcfs", "-s",
                             f"tcp://127.0.0.1:{port}", "--timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        code = main(["simulate", "-p", str(platform_file), "-w", str(wl), "-e",
                     str(tmp_path / "o"), "-s", f"tcp://127.0.0.1:{port}", "--timeout", "60"])
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, out
    lines = (tmp_path / "o_jobs.csv").read_text().splitlines()[1:]
    assert len(lines) == 10
    assert all(",COMPLETED_SUCCESSFULLY," in line for line in lines)


@pytest.mark.parametrize("reply, expect", [
    ("[" * 100_000 + "]" * 100_000, "nests arrays or objects too deeply"),
    ('{"now": NaN, "events": []}', "'NaN' is not a JSON number"),
    ('{"now": 0, "events": [{"timestamp": Infinity, "type": "NOTIFY", "data": {}}]}',
     "'Infinity' is not a JSON number"),
])
def test_unreadable_replies_are_one_line(capsys, platform_file, tmp_path, reply, expect):
    """#13 item 5: a 100k-deep reply is one error line, not a RecursionError traceback; NaN and
    Infinity are refused as Batsim's rapidjson refuses them."""
    import zmq
    import threading

    rep = zmq.Context.instance().socket(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")

    def answer():
        if rep.poll(10_000):
            rep.recv()
            rep.send_string(reply)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        code, err = run_cli(capsys, "-p", platform_file, "-w", good_workload(tmp_path), "-e",
                            tmp_path / "out", "-s", f"tcp://127.0.0.1:{port}", "--timeout", "10")
    finally:
        thread.join(10)
        rep.close(linger=0)
    assert code == 2
    assert err.count("\n") == 0 and expect in err and "Traceback" not in err


def test_compute_sharing_flag(capsys, shared_dir, tmp_path):
    """`--enable-compute-sharing` as Batsim's: the sharing case replays to Batsim's outputs."""
    case = shared_dir / "batsim-reference" / "sharing"
    code, err = run_cli(capsys, "-p", case / "platform.xml", "-w", case / "workload.json", "-e",
                        tmp_path / "out", "--enable-compute-sharing", "--replay",
                        case / "transcript.jsonl")
    assert code == 0, err
    assert (tmp_path / "out_jobs.csv").read_bytes() == (case / "out_jobs.csv").read_bytes()
    assert ((tmp_path / "out_machine_states.csv").read_bytes()
            == (case / "out_machine_states.csv").read_bytes())
    code, err = run_cli(capsys, "-p", case / "platform.xml", "-w", case / "workload.json", "-e",
                        tmp_path / "out2", "--replay", case / "transcript.jsonl")
    # without the flag the recorded decisions cannot run (the replay waits for free machines)
    assert code == 2 and "cannot progress" in err


def test_replay_writer_goes_with_replay(capsys, platform_file, tmp_path):
    code, err = run_cli(capsys, "-p", platform_file, "-w", good_workload(tmp_path),
                        "--replay-writer", "rapidjson")
    assert code == 2 and err.count("\n") == 0 and "--replay-writer goes with --replay" in err
