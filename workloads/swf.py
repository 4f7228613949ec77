"""Standard Workload Format (Parallel Workloads Archive) reader and cleaner.

An SWF file is ``;``-prefixed header comments (``; MaxNodes: 100``) then one job a line with
exactly 18 whitespace-separated numbers; ``-1`` means "unknown". :func:`read_swf` keeps every
record (as float columns) with its line number; :func:`clean_swf` applies explicit cleaning
rules and counts the dropped jobs by reason, so a conversion says what it threw away.
"""

from __future__ import annotations

import gzip
import math
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mrsched.errors import WorkloadError

SWF_FIELDS = (
    "job_number", "submit_time", "wait_time", "run_time", "allocated_processors", "average_cpu_time",
    "used_memory", "requested_processors", "requested_time", "requested_memory", "status", "user_id",
    "group_id", "executable", "queue", "partition", "preceding_job", "think_time",
)
COL = {name: k for k, name in enumerate(SWF_FIELDS)}

# counts and times that may be -1 (unknown) but never another negative value
_NON_NEGATIVE = ("job_number", "submit_time", "run_time", "allocated_processors", "requested_processors",
                 "requested_time", "used_memory", "requested_memory")


@dataclass
class SwfTrace:
    """All records of one SWF file: ``data[i, COL[field]]`` and the file line of record i."""

    path: str
    header: dict[str, str]
    data: np.ndarray
    lines: np.ndarray

    def __len__(self) -> int:
        return len(self.data)

    def column(self, name: str) -> np.ndarray:
        return self.data[:, COL[name]]

    def header_int(self, key: str) -> int | None:
        """A whole-number header value (``; MaxNodes: 100``), None when absent; a value that
        is not a whole number (``MaxNodes: abc``) is an error naming the file and header,
        never ignored."""
        value = self.header.get(key)
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number.is_integer()):
            raise WorkloadError(f"header '{key}: {value}' is not a whole number", file=self.path,
                                field=key, hint=f"fix or remove the '; {key}:' line")
        return int(number)


#: header values mrsched reads as whole numbers (machine size, cores per node, start date)
HEADER_NUMBERS = ("MaxNodes", "MaxProcs", "UnixStartTime")

GZIP_MAGIC = b"\x1f\x8b"


def _open_text(path: Path):
    """Text lines of a plain or gzip-compressed trace, told apart by content, not by name.

    A gzip trace saved without ``.gz`` is read as gzip; a ``.gz`` name that holds no gzip
    data (an HTML error page, a plain copy) is refused rather than guessed at.
    """
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == GZIP_MAGIC:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    if path.suffix == ".gz":
        if not magic:
            raise WorkloadError("empty file (a .gz trace holds gzip data)", file=str(path))
        raise WorkloadError("named .gz but not gzip-compressed", file=str(path),
                            hint="recompress it with gzip, or rename it to .swf if it is plain text")
    return open(path, encoding="utf-8", errors="replace")


def read_swf(path: str | Path) -> SwfTrace:
    """Read every job record and the ``; Key: value`` header of an SWF file (``.gz`` too).

    Records are parsed into a flat array of doubles (8 bytes a value, not a Python list of
    floats per job), so a million-job trace costs ~150 MB, not ~1 GB.
    """
    path = Path(path)
    header: dict[str, str] = {}
    values = array("d")
    lines = array("q")
    try:
        handle = _open_text(path)
    except OSError as exc:
        raise WorkloadError(f"cannot read SWF trace: {exc.strerror or exc}", file=str(path)) from None
    lineno = 0
    try:
        with handle:
            for lineno, raw in enumerate(handle, start=1):
                text = raw.strip()
                if not text:
                    continue
                if text.startswith(";"):
                    _header_line(text, header)
                    continue
                values.extend(_record(text, path, lineno))
                lines.append(lineno)
    except (OSError, EOFError, zlib.error) as exc:  # gzip: truncated stream, bad CRC, bad data
        raise _gzip_error(path, lineno, exc) from None
    except WorkloadError:
        # damaged deflate data often decodes to garbage lines before zlib notices: blame the damage
        damage = _gzip_damage(path) if _is_gzip(path) else None
        if damage is not None:
            raise _gzip_error(path, lineno, damage) from None
        raise
    data = np.frombuffer(values, dtype=float).reshape(-1, len(SWF_FIELDS))
    trace = SwfTrace(str(path), header, data, np.frombuffer(lines, dtype=np.int64))
    for key in HEADER_NUMBERS:   # refused when read, whether or not a conversion needs them
        trace.header_int(key)
    return trace


def _gzip_error(path: Path, lineno: int, exc: BaseException) -> WorkloadError:
    if isinstance(exc, EOFError):
        reason = "the compressed stream ends early"
    else:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return WorkloadError(f"corrupt or truncated gzip data after line {lineno}: {reason}", file=str(path),
                         hint="download the trace again, e.g. with mrsched workload fetch")


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as probe:
        return probe.read(2) == GZIP_MAGIC


def _gzip_damage(path: Path) -> BaseException | None:
    """The decompression error of a whole ``.gz`` file, None if it decompresses and checks."""
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        return exc
    return None


def _header_line(text: str, header: dict[str, str]) -> None:
    body = text[1:].strip()
    if ":" in body:
        key, _, value = body.partition(":")
        key = key.strip()
        if key[:1].isupper() and " " not in key and key not in header:
            header[key] = value.strip()


def _record(text: str, path: Path, lineno: int) -> list[float]:
    """The 18 numbers of one job record, checked (file and line in every error)."""
    parts = text.split()
    if len(parts) != len(SWF_FIELDS):
        raise WorkloadError(f"a job record has {len(parts)} fields, SWF has exactly {len(SWF_FIELDS)}",
                            file=str(path), line=lineno,
                            hint="job_number submit wait run procs cpu mem req_procs req_time req_mem "
                                 "status user group exe queue partition preceding think")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        bad = next(p for p in parts if not _is_number(p))
        raise WorkloadError(f"'{bad}' is not a number", file=str(path), line=lineno,
                            field=SWF_FIELDS[parts.index(bad)]) from None
    if not all(math.isfinite(v) for v in values):
        raise WorkloadError("non-finite number (nan or inf) in a job record", file=str(path), line=lineno)
    for name in _NON_NEGATIVE:
        value = values[COL[name]]
        if value < 0 and value != -1:
            raise WorkloadError(f"negative value {parts[COL[name]]} (only -1, 'unknown', may be negative)",
                                file=str(path), line=lineno, field=name)
    return values


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class CleaningReport:
    """What cleaning kept and dropped, by reason (first matching rule wins)."""

    total: int
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    capped: int = 0
    run_beyond_walltime: int = 0
    rounded_up: int = 0
    cores_per_node: int = 1

    def lines(self) -> list[str]:
        out = [f"{self.total} records, {self.kept} jobs kept"]
        for reason, count in self.dropped.items():
            if count:
                out.append(f"dropped {count}: {reason}")
        if self.rounded_up and self.cores_per_node > 1:
            out.append(f"rounded up {self.rounded_up}: processors not a multiple of {self.cores_per_node} "
                       f"(the cores of a node), sized to the next whole node")
        elif self.rounded_up:
            out.append(f"rounded up {self.rounded_up}: a fractional number of processors, sized to the "
                       f"next whole one")
        if self.capped:
            out.append(f"capped {self.capped}: requested processors above the platform, set to its size")
        if self.run_beyond_walltime:
            out.append(f"note {self.run_beyond_walltime}: run time above requested time "
                       f"(kept; such jobs hit their walltime in simulation)")
        return out


CLEANING_RULES = (
    "submit time unknown",
    "requested processors unknown or zero",
    "requested time unknown or zero",
    "run time unknown or zero",
    "status excluded",
    "requested processors above the platform",
)


def clean_swf(trace: SwfTrace, *, max_nodes: int | None = None, oversize: str = "drop",
              exclude_status: tuple[int, ...] = (), cores_per_node: int = 1) -> tuple[np.ndarray, CleaningReport]:
    """Indices of usable records and the report; rules in :data:`CLEANING_RULES` order.

    Seed 001's artifact drops records with a non-positive run time, requested time or
    requested processors (KTH-SP2: 28,467 of 28,476 kept), then jobs wider than the 96
    compute nodes (28,453, the paper's count): ``max_nodes=96, oversize="drop"``.
    ``oversize="cap"`` keeps those jobs at the platform's size instead. With ``cores_per_node``
    > 1, ``max_nodes`` counts whole nodes and a request occupies ``ceil(processors /
    cores_per_node)`` of them (the rounded-up requests are counted among the kept jobs).
    """
    if oversize not in ("drop", "cap"):
        raise WorkloadError(f"oversize must be 'drop' or 'cap', got {oversize!r}", field="oversize")
    n = len(trace)
    remaining = np.ones(n, dtype=bool)
    report = CleaningReport(total=n, cores_per_node=cores_per_node)
    checks = [
        trace.column("submit_time") < 0,
        trace.column("requested_processors") <= 0,
        trace.column("requested_time") <= 0,
        trace.column("run_time") <= 0,
        np.isin(trace.column("status"), np.array(exclude_status, dtype=float)),
    ]
    if cores_per_node < 1:
        raise WorkloadError(f"cores per node must be >= 1, got {cores_per_node}", field="cores_per_node")
    procs = trace.column("requested_processors")
    nodes = np.ceil(np.ceil(procs) / cores_per_node)   # 2.5 processors take 3 (WORKLOADS.md)
    too_large = (nodes > max_nodes) if max_nodes else np.zeros(n, dtype=bool)
    if oversize == "drop":
        checks.append(too_large)
    else:
        checks.append(np.zeros(n, dtype=bool))
    for reason, bad in zip(CLEANING_RULES, checks):
        hit = remaining & bad
        report.dropped[reason] = int(hit.sum())
        remaining &= ~bad
    if oversize == "cap":
        report.capped = int((remaining & too_large).sum())
    kept = np.flatnonzero(remaining)
    report.kept = len(kept)
    report.rounded_up = int((procs[kept] % cores_per_node != 0).sum())
    report.run_beyond_walltime = int((trace.column("run_time")[kept] > trace.column("requested_time")[kept]).sum())
    return kept, report
