"""Child process groups that can always be killed: no orphan survives a run or a campaign.

Every engine process is started under ``mrsched.expe.guard`` in its own session (its own
process group), so killing the group also kills whatever the process forked (a policy's
helpers, Batsim's children), and the guard kills the group by itself when this process dies
without cleaning up (``kill -9``): it watches a pipe only this process can write to. Live
groups are tracked so that an interrupted campaign can end all of them at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from mrsched.errors import MrschedError

class Interrupted(MrschedError):
    """A process was about to start after the campaign was interrupted."""


_LIVE: set[subprocess.Popen] = set()
_LOCK = threading.Lock()
# Set when a campaign is interrupted: runs killed by it are unfinished, not failed.
INTERRUPTED = threading.Event()
GRACE = 2.0  # seconds between SIGTERM and SIGKILL: enough for a clean ZeroMQ shutdown
#: Extra seconds the guard grants beyond a run's timeout before killing on its own: the
#: supervising process normally acts first; the guard's deadline is for when nobody does.
GUARD_SLACK = 10.0

_PIPE: tuple[int, int, int] | None = None  # (pid, read fd, write fd) of the parent-death pipe


def python_argv(module: str, *args: str) -> list[str]:
    """``python -P -m module args``: this interpreter, without the working directory on
    ``sys.path`` (a folder named ``mrsched`` there must not shadow the installed package)."""
    return [sys.executable, "-P", "-m", module, *args]


def _death_pipe() -> int:
    """The read end of this process's parent-death pipe (created once per process; the write
    end is never inherited, so it closes exactly when this process dies)."""
    global _PIPE
    with _LOCK:
        if _PIPE is None or _PIPE[0] != os.getpid():
            r, w = os.pipe()
            _PIPE = (os.getpid(), r, w)
        return _PIPE[1]


def start(argv: list[str], *, log: Path, env: dict | None = None,
          cwd: str | None = None, timeout: float | None = None) -> subprocess.Popen:
    """Start ``argv`` under the guard, in a new session, stdout+stderr appended to ``log``;
    the guard kills it if this process dies, or ``timeout`` + ``GUARD_SLACK`` s from now."""
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = _death_pipe()
    limit = 0.0 if timeout is None else float(timeout) + GUARD_SLACK
    guarded = python_argv("mrsched.expe.guard", str(fd), f"{limit:g}", "--", *argv)
    if INTERRUPTED.is_set():
        raise Interrupted("the campaign was interrupted: run not started")
    with open(log, "ab") as fh:
        proc = subprocess.Popen(guarded, stdin=subprocess.DEVNULL, stdout=fh,
                                stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True, pass_fds=(fd,))
    with _LOCK:
        _LIVE.add(proc)
        late = INTERRUPTED.is_set()  # kill_all took its list before this process was added
    if late:
        kill_group(proc, grace=0.5)
        raise Interrupted("the campaign was interrupted: run stopped at its start")
    return proc


def kill_group(proc: subprocess.Popen, grace: float = GRACE) -> None:
    """SIGTERM the whole group, then SIGKILL what is left after ``grace`` seconds."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid  # leader gone; its group id is still its pid
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(pgid):
                break
            time.sleep(0.02)
        else:
            continue
        break
    proc.poll()
    forget(proc)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def finish(proc: subprocess.Popen) -> None:
    """A process ended by itself: kill any stragglers of its group and stop tracking it."""
    if _group_alive(proc.pid):
        kill_group(proc, grace=0.5)
    forget(proc)


def forget(proc: subprocess.Popen) -> None:
    with _LOCK:
        _LIVE.discard(proc)


def kill_all() -> int:
    """Kill every live group started here (campaign interrupted); returns how many. A run
    thread that starts a process after this is refused (``start`` raises ``Interrupted``)."""
    with _LOCK:
        INTERRUPTED.set()
        procs = list(_LIVE)
    for proc in procs:
        kill_group(proc, grace=0.5)
    return len(procs)


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def tail(log: Path, lines: int = 20) -> list[str]:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]
