"""``processes.fork_call``: a function in a forked child under the guard's rules (its own
session, its output in the log, its exit code, the deadline, the parent's exit handlers not
run twice), as ``start`` does for a command (issue 45: the embedded engine's start)."""

from __future__ import annotations

import os
import signal
import sys
import time

from mrsched.expe import processes


def _speak(code: int) -> int:
    print("to stdout")
    print("to stderr", file=sys.stderr)
    assert os.getsid(0) == os.getpid()          # a session of its own: its group is killable
    return code


def _sleep() -> int:
    time.sleep(60)
    return 0


def test_the_child_writes_its_log_and_exits_with_its_code(tmp_path):
    log = tmp_path / "child.log"
    proc = processes.fork_call(_speak, 3, log=log)
    assert proc.wait(timeout=30) == 3 and proc.poll() == 3
    processes.finish(proc)
    text = log.read_text()
    assert "to stdout" in text and "to stderr" in text


def _raise() -> int:
    raise RuntimeError("broken on purpose")


def test_a_raising_function_is_code_1_with_its_traceback(tmp_path):
    log = tmp_path / "child.log"
    proc = processes.fork_call(_raise, log=log)
    assert proc.wait(timeout=30) == 1
    processes.finish(proc)
    assert "RuntimeError: broken on purpose" in log.read_text()


def test_the_deadline_holds_in_the_child(tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "GUARD_SLACK", 0.0)
    log = tmp_path / "child.log"
    t0 = time.monotonic()
    proc = processes.fork_call(_sleep, log=log, timeout=0.5)
    code = proc.wait(timeout=30)
    processes.finish(proc)
    assert time.monotonic() - t0 < 20
    assert code == -signal.SIGTERM
    assert "still running after 0.5 s" in log.read_text()


def test_a_timeout_of_wait_leaves_the_child_to_kill(tmp_path):
    import subprocess

    import pytest

    proc = processes.fork_call(_sleep, log=tmp_path / "child.log")
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    processes.kill_group(proc, grace=0.5)
    assert proc.poll() == -signal.SIGTERM
