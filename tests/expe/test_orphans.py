"""Issue 13 item 1: a `mrsched run` or `mrsched campaign run` killed with SIGKILL leaves no
process behind (its engine, `mrsched serve`, a policy's helpers), and the guard's own
deadline holds a run's timeout even when nobody supervises it any more."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from conftest import marked


def wait_for(path: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not (path.is_file() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)


def launch(argv: list[str], tmp_path: Path) -> tuple[subprocess.Popen, str, Path]:
    mark = uuid.uuid4().hex
    pidfile = tmp_path / "pids"
    env = dict(os.environ, MRSCHED_TEST_MARK=mark, MRSCHED_TEST_PIDFILE=str(pidfile))
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", *argv], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, mark, pidfile


def kill_and_check(proc: subprocess.Popen, mark: str, pidfile: Path) -> None:
    wait_for(pidfile)  # the hanging policy runs: the engine and its helper are alive
    assert len(marked(mark)) >= 3
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(2.0)
    left = marked(mark)
    for p in left:  # do not leak them into the other tests, whatever the outcome
        p.kill()
    assert left == [], [" ".join(p.cmdline()) for p in left]


@pytest.mark.parametrize("engine", ["embedded", "batsim"])
def test_sigkilled_run_leaves_no_process(tmp_path, inputs, engine_env, engine):
    argv = ["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
            "--policy", "misbehaving:HangingScheduler", "--out", str(tmp_path / "r"),
            "--timeout", "120", "--engine", engine, "--batsim", engine_env["batsim"]]
    kill_and_check(*launch(argv, tmp_path), )


def test_sigkilled_campaign_leaves_no_process(tmp_path, inputs, engine_env):
    (tmp_path / "c.yaml").write_text(
        f"name: orphans\nplatforms: [{inputs['platform']}]\nworkloads: [{inputs['workload']}]\n"
        "policies: ['misbehaving:HangingScheduler', fcfs]\nparallelism: 2\ntimeout: 120\n")
    kill_and_check(*launch(["campaign", "run", "c.yaml", "--no-progress"], tmp_path))


def test_guard_enforces_the_deadline_alone(tmp_path):
    """The guard kills its group at LIMIT even if its parent never does anything."""
    r, w = os.pipe()
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-P", "-m", "mrsched.expe.guard", str(r), "1", "--",
                             "sleep", "60"], pass_fds=(r,), start_new_session=True,
                            stderr=subprocess.PIPE)
    os.close(r)
    try:
        code = proc.wait(timeout=20)
    finally:
        os.close(w)
    assert time.monotonic() - t0 < 10
    assert code == -signal.SIGTERM  # the child's fate, reported as the child's
    assert b"still running after 1 s" in proc.stderr.read()


def test_sigterm_of_run_exits_143_and_kills_the_engine(tmp_path, inputs, engine_env):
    """Issue 13 item 4: SIGTERM is 143 (128 + 15), the line says what re-running does."""
    argv = ["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
            "--policy", "misbehaving:HangingScheduler", "--out", str(tmp_path / "r"),
            "--timeout", "120"]
    mark = uuid.uuid4().hex
    pidfile = tmp_path / "pids"
    env = dict(os.environ, MRSCHED_TEST_MARK=mark, MRSCHED_TEST_PIDFILE=str(pidfile))
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", *argv], env=env,
                            stderr=subprocess.PIPE, text=True)
    wait_for(pidfile)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert err.strip() == ("mrsched run: interrupted (SIGTERM): the run was stopped unfinished; "
                           "run the same command again to redo it")
    assert marked(mark) == []


def test_sigterm_of_a_busy_campaign_is_acted_on_at_once(tmp_path, inputs, engine_env):
    """Two runs in flight (worker threads busy): SIGTERM ends the campaign within seconds,
    exit 143, their processes gone."""
    (tmp_path / "c.yaml").write_text(
        f"name: busy\nplatforms: [{inputs['platform']}]\nworkloads: [{inputs['workload']}]\n"
        "policies: ['misbehaving:HangingScheduler', {policy: 'misbehaving:HangingScheduler', "
        "name: again}]\nparallelism: 2\ntimeout: 300\n")
    mark = uuid.uuid4().hex
    pidfile = tmp_path / "pids"
    env = dict(os.environ, MRSCHED_TEST_MARK=mark, MRSCHED_TEST_PIDFILE=str(pidfile))
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", "campaign", "run", "c.yaml",
                             "--no-progress"], env=env, cwd=tmp_path, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 30
    while not (pidfile.is_file() and len(pidfile.read_text().split()) >= 4):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert time.monotonic() - t0 < 15
    assert "interrupted (SIGTERM): 0 of 2 runs finished" in err
    assert marked(mark) == []


def test_no_process_starts_after_a_campaign_is_interrupted(tmp_path):
    """A run thread that reaches its start after kill_all must not start an engine that
    would then run unsupervised while the campaign waits for its threads."""
    from mrsched.expe import processes

    processes.INTERRUPTED.clear()
    try:
        processes.kill_all()
        with pytest.raises(processes.Interrupted):
            processes.start(["sleep", "60"], log=tmp_path / "log")
    finally:
        processes.INTERRUPTED.clear()
    assert psutil.Process().children(recursive=True) == []
