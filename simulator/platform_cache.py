"""Parsed platforms kept on disk, by content, so that fresh processes read a large file once.

A campaign runs each simulation in a fresh interpreter, and each would parse the platform
XML again: a Dragonfly of a thousand nodes lists a million routes, tens of seconds of parsing
a run, several times what reading back its pickle costs (docs/PERFORMANCE.md, ``bench_load.py``).
``load_platform`` keeps what it parses from a file of at least ``MIN_BYTES`` in
``$MRSCHED_PLATFORM_CACHE`` (default ``~/.cache/mrsched/platforms``; ``off`` turns the cache
off), under a name that digests the file's path and bytes, the roles, the master host and the
loader itself (the source of the modules that parse and of the classes pickled, mrsched's
and Python's versions): a changed file or a changed loader never reads an old entry. The
folder is kept under ``MAX_BYTES``, the least recently read entries removed first. An entry
that cannot be read is parsed again and rewritten; a folder that cannot be written is
skipped. The entries are the user's own files, read with ``pickle`` like any cache of theirs.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from mrsched.atomic import write_atomic

ENV = "MRSCHED_PLATFORM_CACHE"
MIN_BYTES = 1 << 20      # smaller files parse in a few tens of milliseconds
MAX_BYTES = 2 << 30      # the folder's bound
SUFFIX = ".platform.pickle"
#: the modules whose code decides what a parsed platform holds
_LOADER_MODULES = ("mrsched.simulator.platform", "mrsched.simulator.routing", "mrsched.units",
                   "mrsched.limits")


def folder() -> Path | None:
    """The cache folder, or None when ``$MRSCHED_PLATFORM_CACHE`` is ``off``."""
    value = os.environ.get(ENV, "")
    if value.strip().lower() in ("off", "0", "no", "false"):
        return None
    if value:
        return Path(value)
    try:
        return Path.home() / ".cache" / "mrsched" / "platforms"
    except RuntimeError:          # no home directory to be found: no cache
        return None


@functools.lru_cache(maxsize=1)
def _loader_digest() -> bytes | None:
    """A digest of the loader's code, or None when its source cannot be read (no cache)."""
    from importlib.util import find_spec

    from mrsched import __version__

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{__version__} {sys.version_info[:2]} {pickle.HIGHEST_PROTOCOL}".encode())
    for name in _LOADER_MODULES:
        origin = getattr(find_spec(name), "origin", None)
        try:
            h.update(Path(origin).read_bytes())
        except (TypeError, OSError):   # a frozen or source-less install
            return None
    return h.digest()


def entry(path: str, roles: tuple, master_host: str, digest: bytes, size: int) -> Path | None:
    """Where the platform parsed from a file of ``size`` bytes whose digest is ``digest`` is
    kept, or None (a small file, no folder)."""
    where = folder()
    loader = _loader_digest()
    if where is None or size < MIN_BYTES or loader is None:
        return None
    h = hashlib.blake2b(loader, digest_size=20)
    h.update(repr((os.path.abspath(path), roles, master_host, digest, size)).encode())
    return where / f"{h.hexdigest()}{SUFFIX}"


def read(stored: Path) -> Any | None:
    """The platform kept at ``stored``, or None (absent, unreadable or cut short)."""
    try:
        with open(stored, "rb") as fh:
            platform = pickle.load(fh)
    except Exception:             # a missing, truncated or foreign entry: parse again
        return None
    try:
        os.utime(stored)          # recently read: removed last
    except OSError:               # a folder shared read-only: read, not kept fresh
        pass
    return platform


def write(stored: Path, platform: Any) -> None:
    """Keep ``platform`` at ``stored`` (atomically), then bound the folder."""
    try:
        write_atomic(stored, pickle.dumps(platform, protocol=pickle.HIGHEST_PROTOCOL))
        trim(stored.parent, keep=stored)
    except OSError:               # a read-only or full disk: the run goes on without
        pass


def trim(where: Path, *, keep: Path | None = None, limit: int = MAX_BYTES) -> None:
    """Remove the least recently read entries until the folder holds at most ``limit``
    bytes (``keep``, just written, stays), and what writers killed mid-write left (their
    temporary files, an hour old: a write takes seconds)."""
    stale = time.time() - 3600
    for p in where.glob(f".*{SUFFIX}.*.tmp"):
        try:
            if p.stat().st_mtime < stale:
                p.unlink()
        except OSError:
            pass
    entries = []
    for p in where.glob(f"*{SUFFIX}"):
        try:
            st = p.stat()
        except OSError:
            continue
        entries.append((st.st_mtime_ns, st.st_size, p))
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries):
        if total <= limit:
            break
        if p != keep:
            p.unlink(missing_ok=True)
            total -= size
