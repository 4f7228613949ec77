"""Real traces on demand: fetch a Parallel Workloads Archive trace into a cache and verify it.

Traces are not shipped (licence and size); :func:`fetch` downloads the ``.swf.gz`` once into
the cache directory (``$MRSCHED_CACHE`` or ``~/.cache/mrsched/traces``), decompresses it and
checks the SHA-256 of the *uncompressed* ``.swf``: that checksum was computed from a verified
local copy of the cleaned log, while the archive's ``.gz`` bytes (compression level, header
time stamp) are not known to us, so they are not checked. ``source=`` (a path or a
``file://`` URL, compressed or not) replaces the download, e.g. in tests or offline.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from mrsched.errors import WorkloadError, suggest

PWA = "https://www.cs.huji.ac.il/labs/parallel/workload"


@dataclass(frozen=True)
class ArchiveTrace:
    """Where a trace lives in the archive and the SHA-256 of its uncompressed SWF."""

    url: str
    sha256: str
    description: str


TRACES: dict[str, ArchiveTrace] = {
    "KTH-SP2-1996-2.1-cln": ArchiveTrace(
        f"{PWA}/l_kth_sp2/KTH-SP2-1996-2.1-cln.swf.gz",
        "fba36494c4e4257f72182e8b629ebb0bcb054b3b82851ef957445bd627adcc87",
        "KTH IBM SP2, 100 nodes, Sep 1996 - Aug 1997, 28,476 records (seed 001's workload)"),
    "LLNL-Atlas-2006-2.1-cln": ArchiveTrace(
        f"{PWA}/l_llnl_atlas/LLNL-Atlas-2006-2.1-cln.swf.gz",
        "8b3aaab739fa0bda8abaccc37c207d0b19d9d147b19e7f47a1641133a56fd07f",
        "LLNL Atlas, 1,152 nodes x 8 cores, Nov 2006 - Jun 2007, 43,778 records (sizes in processors)"),
    "LLNL-Thunder-2007-1.1-cln": ArchiveTrace(
        f"{PWA}/l_llnl_thunder/LLNL-Thunder-2007-1.1-cln.swf.gz",
        "aad5a3120a6adf0342d46fb4830e022121cdfbd3de9ecdd9cf10145b8864b6a5",
        "LLNL Thunder, 1,002 nodes x 4 cores, Jan - Jun 2007, 121,039 records (sizes in processors)"),
}


def cache_dir() -> Path:
    return Path(os.environ.get("MRSCHED_CACHE") or Path.home() / ".cache" / "mrsched" / "traces")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy_source(source: str, target: Path) -> None:
    """Copy a local path or file:// / http(s):// URL to ``target``, decompressing .gz."""
    parsed = urlparse(str(source))
    tmp = target.with_name(target.name + ".part")
    try:
        if parsed.scheme in ("http", "https"):
            with urllib.request.urlopen(source, timeout=60) as response, open(tmp, "wb") as out:
                shutil.copyfileobj(response, out)
            raw = tmp
        else:
            raw = Path(parsed.path if parsed.scheme == "file" else source)
            if not raw.is_file():
                raise WorkloadError("trace source not found", file=str(raw))
        compressed = str(source).endswith(".gz")
        opener = gzip.open if compressed else open
        dest = target.with_name(target.name + ".new")
        with opener(raw, "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
        dest.replace(target)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # truncated, corrupt or not gzip at all
        reason = "the compressed stream ends early" if isinstance(exc, EOFError) else str(exc)
        raise WorkloadError(f"corrupt or truncated gzip data: {reason}", file=str(source),
                            hint="download it again") from None
    except OSError as exc:
        raise WorkloadError(f"cannot fetch trace: {exc}", file=str(source),
                            hint="check the network, or pass a local copy with --source") from None
    finally:
        for leftover in (tmp, target.with_name(target.name + ".new")):
            if leftover.exists():
                leftover.unlink()


def fetch(name: str, *, cache: str | Path | None = None, source: str | Path | None = None,
          verify: bool = True) -> Path:
    """Path of the uncompressed SWF trace ``name`` in the cache, downloading it if needed."""
    key = name.removesuffix(".gz").removesuffix(".swf")
    if key not in TRACES:
        raise WorkloadError(f"unknown archive trace '{name}'", hint=suggest(key, TRACES))
    info = TRACES[key]
    directory = Path(cache) if cache else cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{key}.swf"
    if not target.is_file():
        _copy_source(str(source) if source else info.url, target)
    if verify:
        actual = sha256_of(target)
        if actual != info.sha256:
            bad = target.with_name(target.name + ".corrupt")
            target.replace(bad)
            raise WorkloadError(f"checksum mismatch: sha256 {actual}, expected {info.sha256}", file=str(bad),
                                hint="the download is damaged or not this trace; it was set aside")
    return target
