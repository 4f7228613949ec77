"""Batsim workload JSON: deterministic writing and tolerant reading.

Same workload, same bytes: keys keep the order the generators build them in, numbers that are
whole are written as integers, one job or profile per line (readable diffs, ~50 bytes a job).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

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


def dumps_workload(workload: dict[str, Any]) -> str:
    """JSON text of a workload: top-level keys in order, one job / profile per line."""
    workload = plain(workload)
    parts = []
    for key, value in workload.items():
        if key == "jobs":
            body = ",\n".join("  " + json.dumps(job, separators=(", ", ": ")) for job in value)
            parts.append(f' "jobs": [\n{body}\n ]' if value else ' "jobs": []')
        elif key == "profiles":
            body = ",\n".join(f"  {json.dumps(name)}: {json.dumps(p, separators=(', ', ': '))}"
                              for name, p in value.items())
            parts.append(f' "profiles": {{\n{body}\n }}' if value else ' "profiles": {}')
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_workload(path: str | Path, workload: dict[str, Any]) -> Path:
    """Write atomically-enough (temp file then rename) so a failed run leaves no half file."""
    path = Path(path)
    text = dumps_workload(workload)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise WorkloadError(f"cannot write workload: {exc.strerror or exc}", file=str(path)) from None
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
