"""One writer per campaign directory: an exclusive ``flock`` on ``<dir>/.lock``.

Two ``mrsched campaign run`` of the same campaign would run every run twice and delete each
other's files; the second one is refused, naming the holder (pid, command, start time). The
lock is the kernel's: it goes away with its process, however that process ends, so a stale
lock file never blocks a resume.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from pathlib import Path

from mrsched.errors import MrschedError

LOCK_FILE = ".lock"


class CampaignBusy(MrschedError):
    """Another process holds the campaign directory."""


class CampaignLock:
    """``with CampaignLock(dir):`` -- held until the block ends (or the process dies)."""

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(fd)
            os.close(fd)
            raise CampaignBusy(f"campaign directory {self.path.parent} is in use by {holder}",
                               hint="wait for it to end or stop it; one run of a campaign "
                                    "at a time") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "command": " ".join(["mrsched", *sys.argv[1:]]) if sys.argv else "mrsched"}
        from mrsched.expe.manifest import utc_now

        info["started"] = utc_now()
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
            finally:
                os.close(self.fd)  # closing drops the flock
                self.fd = None

    def __enter__(self) -> CampaignLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _describe(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info.get("pid"):
        return "another process"
    return (f"pid {info['pid']} on {info.get('host', '?')} ('{info.get('command', '?')}', "
            f"since {info.get('started', '?')})")
