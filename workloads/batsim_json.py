"""Batsim workload JSON: deterministic writing and tolerant reading.

Same workload, same bytes: keys keep the order the generators build them in, numbers that are
whole are written as integers, one job or profile per line (readable diffs, ~50 bytes a job).
Writing streams job by job, so neither a copy of the workload nor its whole text is held.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator

from mrsched.errors import WorkloadError


def plain(value: Any) -> Any:
    """numpy scalars to Python, whole floats to int (``3.0`` -> ``3``), recursively."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            raise WorkloadError(f"non-finite number {value} in a workload")
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
    return value


def iter_workload_text(items: Iterable[tuple[str, Any]]) -> Iterator[str]:
    """The text of a workload, piece by piece, from its top-level ``(key, value)`` pairs.

    ``jobs`` may be any iterable of job dicts and ``profiles`` any iterable of ``(name,
    profile)`` pairs, so a million-job workload is written without holding it (or its text).
    """
    yield "{\n"
    for index, (key, value) in enumerate(items):
        sep = ",\n" if index else ""
        if key == "jobs":
            yield f'{sep} "jobs": ['
            count = 0
            for job in value:
                yield ("\n  " if count == 0 else ",\n  ") + json.dumps(plain(job), separators=(", ", ": "))
                count += 1
            yield "\n ]" if count else "]"
        elif key == "profiles":
            yield f'{sep} "profiles": {{'
            count = 0
            for name, prof in value:
                yield (("\n  " if count == 0 else ",\n  ") + json.dumps(str(name)) + ": "
                       + json.dumps(plain(prof), separators=(", ", ": ")))
                count += 1
            yield "\n }" if count else "}"
        else:
            yield f"{sep} {json.dumps(str(key))}: {json.dumps(plain(value))}"
    yield "\n}\n"


def _items(workload: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in workload.items():
        yield key, (value.items() if key == "profiles" and isinstance(value, dict) else value)


def dumps_workload(workload: dict[str, Any]) -> str:
    """JSON text of a workload: top-level keys in order, one job / profile per line."""
    return "".join(iter_workload_text(_items(workload)))


def write_workload(path: str | Path, workload: dict[str, Any]) -> Path:
    """Write atomically-enough (temp file then rename) so a failed run leaves no half file."""
    return write_workload_items(path, _items(workload))


def write_workload_items(path: str | Path, items: Iterable[tuple[str, Any]]) -> Path:
    """Stream :func:`iter_workload_text` into ``path`` (temp file then rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            for piece in iter_workload_text(items):
                out.write(piece)
        tmp.replace(path)
    except OSError as exc:
        raise WorkloadError(f"cannot write workload: {exc.strerror or exc}", file=str(path)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def read_workload(path: str | Path) -> dict[str, Any]:
    """Parse a workload file; JSON errors become a WorkloadError with the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"cannot read workload: {exc.strerror or exc}", file=str(path)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=str(path),
                            line=exc.lineno) from None
    if not isinstance(data, dict):
        raise WorkloadError("a workload is a JSON object with nb_res, jobs and profiles", file=str(path))
    return data
