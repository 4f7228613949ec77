"""Child process groups that can always be killed: no orphan survives a run or a campaign.

Every engine process is started under ``mrsched.expe.guard`` in its own session (its own
process group), so killing the group also kills whatever the process forked (a policy's
helpers, Batsim's children), and the guard kills the group by itself when this process dies
without cleaning up (``kill -9``): it watches a pipe only this process can write to. Live
groups are tracked so that an interrupted campaign can end all of them at once.
``fork_call`` gives a Python function the same guard in a forked child (the embedded engine's
start without a second interpreter).
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


#: set to 0 to start the embedded engine as a fresh interpreter even when it could be forked
FORK_ENV = "MRSCHED_FORK_ENGINE"


def can_fork() -> bool:
    """Whether ``fork_call`` may be used here: a POSIX ``fork`` from a process running one
    thread (forking a threaded process, a campaign's run threads, can copy a lock held
    by another thread into the child), unless ``MRSCHED_FORK_ENGINE=0``."""
    return (hasattr(os, "fork") and os.environ.get(FORK_ENV, "1") != "0"
            and threading.active_count() == 1
            and threading.current_thread() is threading.main_thread())


class Forked:
    """A child made by ``fork_call``, waited for as a ``subprocess.Popen``: ``pid``,
    ``returncode`` (negative: the signal that killed it), ``poll()``, ``wait(timeout)``
    (without polling where Linux gives a pidfd)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        self.args = f"forked pid {pid}"
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def _reaped(self, status: int) -> int:
        self.returncode = os.waitstatus_to_exitcode(status)
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self._reaped(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if timeout is not None:
            if self._pidfd is not None:
                import select

                ready, _, _ = select.select([self._pidfd], [], [], max(0.0, timeout))
                if not ready:
                    raise subprocess.TimeoutExpired(self.args, timeout)
            else:
                deadline = time.monotonic() + timeout
                while self.poll() is None:
                    if time.monotonic() >= deadline:
                        raise subprocess.TimeoutExpired(self.args, timeout)
                    time.sleep(0.005)
                return self.returncode
        _, status = os.waitpid(self.pid, 0)
        return self._reaped(status)


def fork_call(func, *args, log: Path, timeout: float | None = None) -> Forked:
    """``func(*args)`` in a forked child, guarded as ``start`` guards a command: its own
    session, stdout+stderr appended to ``log``, the whole group killed when this process dies
    (the child watches the parent-death pipe) or ``timeout`` + ``GUARD_SLACK`` s from now.
    The child exits with ``func``'s return code after its own exit handlers (not this
    process's). What this process imported is there already: no second interpreter, no
    second import (the embedded engine's start, issue 45). Only where ``can_fork()``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = _death_pipe()
    limit = 0.0 if timeout is None else float(timeout) + GUARD_SLACK
    if INTERRUPTED.is_set():
        raise Interrupted("the campaign was interrupted: run not started")
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    ready_r, ready_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        os.close(ready_r)
        _forked_child(func, args, fd, log_fd, ready_w, limit)
    os.close(log_fd)
    os.close(ready_w)
    try:   # its own session before anything may kill its group (else ours would be killed)
        os.read(ready_r, 1)
    finally:
        os.close(ready_r)
    proc = Forked(pid)
    with _LOCK:
        _LIVE.add(proc)
    return proc


def _forked_child(func, args, fd: int, log_fd: int, ready_fd: int, limit: float) -> None:
    code = 1
    try:
        import atexit

        atexit._clear()                   # the parent's exit handlers are the parent's
        try:
            os.setsid()
        finally:
            os.close(ready_fd)            # the parent goes on: our group is ours
        os.close(_PIPE[2])                # only the parent holds the write end
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(null)
        os.close(log_fd)
        # Python's streams write to the log too, whatever the parent had put in their place
        sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, closefd=False)
        sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, closefd=False)
        threading.Thread(target=_guard_child, args=(fd, limit), daemon=True).start()
        code = func(*args)
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _guard_child(fd: int, limit: float) -> None:
    """In a forked child: what ``mrsched.expe.guard`` does for a command. EOF on the parent-death
    pipe kills the group at once; ``limit`` seconds (0: none) end it as the guard's deadline."""
    import select

    ready, _, _ = select.select([fd], [], [], limit if limit > 0 else None)
    if not ready:
        print(f"guard: still running after {limit:g} s: killed", file=sys.stderr, flush=True)
        try:
            os.killpg(0, signal.SIGTERM)
        except OSError:
            pass
        time.sleep(GRACE)
    os.killpg(0, signal.SIGKILL)


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
