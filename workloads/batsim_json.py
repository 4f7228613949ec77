"""Batsim workload JSON: deterministic writing and tolerant reading.

Same workload, same bytes: keys keep the order the generators build them in, numbers that are
whole are written as integers, one job or profile per line (readable diffs, ~50 bytes a job).
Writing streams job by job, so neither a copy of the workload nor its whole text is held;
``scan_workload`` reads one job or profile at a time, so a reader that keeps a few numbers
a job never holds the parsed million-job workload (about 1 KB a job).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from mrsched.errors import WorkloadError
from mrsched.simulator.jsonnum import rapidjson_float


def plain(value: Any, field: str | None = None, job: str | None = None) -> Any:
    """numpy scalars to Python, whole floats to int (``3.0`` -> ``3``), recursively; a NaN or
    an infinity is a WorkloadError naming ``job`` and the field it is in."""
    if isinstance(value, dict):
        return {str(k): plain(v, str(k) if field is None else f"{field}.{k}", job) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{field}[{i}]" if field else f"[{i}]", job) for i, v in enumerate(value)]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            raise WorkloadError(f"non-finite number {value} in a workload", job=job, field=field)
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
    return value


def _job_plain(job: Any) -> Any:
    return plain(job, job=str(job.get("id")) if isinstance(job, dict) and "id" in job else None)


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
                yield ("\n  " if count == 0 else ",\n  ") + json.dumps(_job_plain(job), separators=(", ", ": "))
                count += 1
            yield "\n ]" if count else "]"
        elif key == "profiles":
            yield f'{sep} "profiles": {{'
            count = 0
            for name, prof in value:
                yield (("\n  " if count == 0 else ",\n  ") + json.dumps(str(name)) + ": "
                       + json.dumps(plain(prof, f"profiles.{name}"), separators=(", ", ": ")))
                count += 1
            yield "\n }" if count else "}"
        else:
            yield f"{sep} {json.dumps(str(key))}: {json.dumps(plain(value, str(key)))}"
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
    """Parse a workload file with the reader ``run`` uses (``simulator/workload.py``
    ``read_json_file``): unreadable, binary, non-UTF-8, malformed or too deeply nested files
    are one WorkloadError naming the file (and line)."""
    from mrsched.simulator.workload import read_json_file

    path = Path(path)
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise WorkloadError("a workload is a JSON object with nb_res, jobs and profiles", file=str(path))
    return data


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODE = json.JSONDecoder(parse_float=rapidjson_float).raw_decode   # numbers as Batsim reads them


def scan_workload(path: str | Path, job: Callable[[Any], None],
                  profile: Callable[[str, Any], None]) -> dict[str, Any]:
    """Read a workload one element at a time: ``job(j)`` for every element of ``jobs`` and
    ``profile(name, p)`` for every member of ``profiles``, in file order; returns the other
    top-level members (``jobs`` / ``profiles``: True when read that way). Only the text is
    held, never the parsed jobs; errors are WorkloadErrors with the line, as ``read_workload``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"cannot read workload: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"not UTF-8 text (offset {exc.start}): not a JSON workload",
                            file=str(path)) from None

    def fail(msg: str, pos: int) -> WorkloadError:
        column = pos - text.rfind("\n", 0, pos)
        return WorkloadError(f"not valid JSON: {msg} (column {column})", file=str(path),
                             line=text.count("\n", 0, pos) + 1)

    def skip(pos: int) -> int:
        return _SPACE.match(text, pos).end()

    def value(pos: int) -> tuple[Any, int]:
        try:
            return _DECODE(text, pos)
        except json.JSONDecodeError as exc:
            raise fail(exc.msg, exc.pos) from None
        except RecursionError:
            raise fail("nested too deeply to be a JSON workload", pos) from None

    def members(pos: int, close: str, each: Callable[..., int], keyed: bool) -> int:
        """Past the array / object whose opening bracket is at ``pos``; ``each(pos)`` (arrays)
        or ``each(key, pos)`` (objects) reads one value and returns the position after it."""
        pos = skip(pos + 1)
        if text[pos:pos + 1] == close:
            return pos + 1
        while True:
            pos = skip(pos)
            if keyed:
                if text[pos:pos + 1] != '"':
                    raise fail("expected a member name in double quotes", pos)
                key, pos = value(pos)
                pos = skip(pos)
                if text[pos:pos + 1] != ":":
                    raise fail("expected ':'", pos)
                pos = skip(each(key, skip(pos + 1)))
            else:
                pos = skip(each(pos))
            if text[pos:pos + 1] == close:
                return pos + 1
            if text[pos:pos + 1] != ",":
                raise fail(f"expected ',' or '{close}'", pos)
            pos += 1

    def one_job(pos: int) -> int:
        item, pos = value(pos)
        job(item)
        return pos

    def one_profile(name: str, pos: int) -> int:
        item, pos = value(pos)
        profile(name, item)
        return pos

    top: dict[str, Any] = {}

    def one_member(key: str, pos: int) -> int:
        if key == "jobs" and text[pos:pos + 1] == "[":
            top[key] = True
            return members(pos, "]", one_job, False)
        if key == "profiles" and text[pos:pos + 1] == "{":
            top[key] = True
            return members(pos, "}", one_profile, True)
        top[key], pos = value(pos)
        return pos

    pos = skip(0)
    if text[pos:pos + 1] != "{":
        raise WorkloadError("a workload is a JSON object with nb_res, jobs and profiles", file=str(path))
    pos = skip(members(pos, "}", one_member, True))
    if pos != len(text):
        raise fail("extra data", pos)
    return top
