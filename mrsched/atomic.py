"""Atomic file writes: a reader (or a re-run after a kill) sees the old file or the new one.

Everything a campaign may skip on re-run (manifests, generated inputs, the expanded campaign
file) is written to a temporary file in the same directory and renamed over the target.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` through a same-directory temp file and ``os.replace``; the
    file gets the permissions of any file created here (0666 minus the umask; a temporary
    file alone would stay 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | os.PathLike, obj) -> Path:
    """JSON with sorted keys and a trailing newline (stable bytes for stable content)."""
    return write_atomic(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_rows_atomic(path: str | os.PathLike, rows: list[dict], *, empty_header=("job_id",)) -> Path:
    """Dict rows as CSV (columns: every key, in order of first appearance; ``empty_header``
    when there is no row), written as ``write_atomic`` writes."""
    import csv
    import io

    fields = list(dict.fromkeys(k for r in rows for k in r)) or list(empty_header)
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
    return write_atomic(path, buf.getvalue())


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stable_hash(obj, length: int = 12) -> str:
    """Short hash of a JSON-able value, independent of key order (names generated inputs)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return sha256_bytes(text.encode())[:length]
