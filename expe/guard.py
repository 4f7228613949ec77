"""The guard every child of a run is started under: it dies, with its whole process group,
when the mrsched process that started it dies, however that process ends (even ``kill -9``).

``python -P -m mrsched.expe.guard FD LIMIT -- ARGV...`` runs ARGV in the guard's own process
group (the guard leads a new session) and watches FD, the read end of a pipe whose write end
only the parent holds: the kernel closes it when the parent dies, the read returns EOF and
the guard kills the group. LIMIT (seconds, 0 = none) is a last-resort deadline that holds
even when nobody supervises the run any more. The guard exits as ARGV did (same code, or
killed by the same signal), so callers see the child's own status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

GRACE = 2.0  # seconds between SIGTERM and SIGKILL of the group at the deadline


def _kill_group() -> None:
    try:
        os.killpg(0, signal.SIGKILL)
    except OSError:  # pragma: no cover - the group is ours; nothing else can fail here
        os._exit(137)


def _watch(fd: int) -> None:
    """Block until the parent's write end is closed (the parent died), then kill the group."""
    try:
        while os.read(fd, 64):
            pass
    except OSError:
        pass
    _kill_group()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m mrsched.expe.guard FD LIMIT -- ARGV...", file=sys.stderr)
        return 2
    fd, limit, cmd = int(argv[0]), float(argv[1]), argv[3:]
    # SIGTERM/SIGINT reach the whole group; the guard outlives its child to report its status
    # (a Python handler, not SIG_IGN: an ignored signal would stay ignored in the child)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    threading.Thread(target=_watch, args=(fd,), daemon=True).start()
    try:
        proc = subprocess.Popen(cmd)
    except OSError as exc:
        print(f"cannot start {cmd[0]}: {exc}", file=sys.stderr)
        return 127
    try:
        code = proc.wait(timeout=limit if limit > 0 else None)
    except subprocess.TimeoutExpired:
        print(f"guard: still running after {limit:g} s: killed", file=sys.stderr, flush=True)
        try:
            os.killpg(0, signal.SIGTERM)
        except OSError:
            pass
        deadline = time.monotonic() + GRACE
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is None:
            _kill_group()
        code = proc.wait()
    if code < 0:  # die of the same signal, so that the parent reads the same status
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
