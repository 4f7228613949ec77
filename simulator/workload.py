"""Batsim JSON workloads as the engine sees them: jobs, profiles and Batsim's job id rules.

Workloads are named ``w0, w1, ...`` in command-line order; a job's full id is
``"{workload}!{id}"``. The job's JSON object is kept (key order, int vs float as in the file)
because Batsim forwards it on JOB_SUBMITTED, only with ``id`` made absolute and every double
as Batsim 4.2.1 sends it (``jsonnum.forwarded``: six decimals, after rapidjson's
own writing and reading of the job's JSON); the simulation itself uses the values read, the
full-precision submission time and walltime.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrsched.errors import WorkloadError
from mrsched.simulator.jsonnum import forwarded, rapidjson_float
from mrsched.simulator.profiles import check_profile

INF = math.inf


@dataclass(slots=True)
class Job:
    """One job of a workload (static or registered by the scheduler)."""

    id: str                      # full id, "w0!1"
    workload: str                # "w0"
    local_id: str                # "1"
    subtime: float
    walltime: float              # -1 when none
    res: int
    profile: str
    json: dict[str, Any]         # forwarded on JOB_SUBMITTED
    dynamic: bool = False


@dataclass
class Workload:
    """One named workload: its jobs (file order) and profiles (file order)."""

    name: str
    path: str
    jobs: list[Job] = field(default_factory=list)
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    nb_res: int | None = None
    #: the rank phases of its usage_trace profiles, read from their files at load time
    traces: dict[str, list] = field(default_factory=dict)


def _number(value: Any, *, file: str, job: str | None, fld: str, allow_negative_one: bool = False,
            integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise WorkloadError(f"expected a number, got {value!r}", file=file, job=job, field=fld)
    if math.isinf(value):   # 1e999 in the file: rapidjson (Batsim) refuses it as too big
        raise WorkloadError(f"{value!r} is not a finite number", file=file, job=job, field=fld)
    if integer and (float(value) != int(value)):
        raise WorkloadError(f"expected an integer, got {value!r}", file=file, job=job, field=fld)
    if value < 0 and not (allow_negative_one and value == -1):
        raise WorkloadError(f"must not be negative, got {value!r}", file=file, job=job, field=fld)
    return value


def parse_job(obj: Any, workload: str, profiles: dict[str, dict], *, file: str,
              index: int | None = None, dynamic: bool = False,
              full_id: str | None = None, owned: bool = False) -> Job:
    """A workload job object -> Job, with Batsim's checks and clear errors. ``owned``: the
    caller hands ``obj`` over (a freshly parsed file): it becomes the forwarded object itself
    instead of a copy (a whole trace's job objects are not held twice while loading)."""
    if type(obj) is dict and full_id is None:
        # hot path (every job of a trace): plain well-typed fields, else the checks below
        raw_id, subtime, res = obj.get("id"), obj.get("subtime"), obj.get("res")
        walltime, profile = obj.get("walltime", -1), obj.get("profile")
        ts, tw, ti = type(subtime), type(walltime), type(raw_id)
        if ((ti is int or ti is str and "!" not in raw_id) and (ts is float or ts is int)
                and 0 <= subtime < INF and type(res) is int and res >= 1
                and (tw is float or tw is int) and (walltime > 0 or walltime == -1)
                and walltime < INF and type(profile) is str and profile in profiles):
            local = str(raw_id)
            return _job(obj, workload, f"{workload}!{local}", local, subtime, walltime, res, profile,
                        dynamic, owned)
    where = f"#{index}" if index is not None else None
    if not isinstance(obj, dict):
        raise WorkloadError("a job must be a JSON object", file=file, job=where)
    if "id" not in obj:
        raise WorkloadError("job has no 'id'", file=file, job=where, field="id")
    raw_id = obj["id"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise WorkloadError(f"job id must be a string or an integer, got {raw_id!r}",
                            file=file, job=where, field="id")
    if full_id is None:
        text = str(raw_id)
        if "!" in text:
            wl, _, local = text.partition("!")
            if wl != workload:
                raise WorkloadError(f"job id '{text}' names workload '{wl}' inside '{workload}'",
                                    file=file, job=text, field="id")
            full_id = text
        else:
            local = text
            full_id = f"{workload}!{local}"
    local = full_id.partition("!")[2]
    for key in ("subtime", "res", "profile"):
        if key not in obj:
            raise WorkloadError(f"job has no '{key}'", file=file, job=full_id, field=key)
    subtime = _number(obj["subtime"], file=file, job=full_id, fld="subtime")
    res = _number(obj["res"], file=file, job=full_id, fld="res", integer=True)
    if res < 1:
        raise WorkloadError("'res' must be at least 1", file=file, job=full_id, field="res")
    walltime = obj.get("walltime", -1)
    walltime = _number(walltime, file=file, job=full_id, fld="walltime", allow_negative_one=True)
    if walltime == 0:
        raise WorkloadError("'walltime' must be positive or -1", file=file, job=full_id,
                            field="walltime")
    profile = obj["profile"]
    if not isinstance(profile, str):
        raise WorkloadError(f"'profile' must be a profile name, got {profile!r}", file=file,
                            job=full_id, field="profile")
    if profile not in profiles:
        from mrsched.errors import suggest
        raise WorkloadError(f"unknown profile '{profile}'", file=file, job=full_id,
                            field="profile", hint=suggest(profile, profiles))
    return _job(obj, workload, full_id, local, subtime, walltime, int(res), profile, dynamic,
                owned)


_WRITTEN = (float, dict, list)   # the values Batsim's writers change (``jsonnum.forwarded``)


def _job(obj: dict, workload: str, full_id: str, local: str, subtime: float, walltime: float,
         res: int, profile: str, dynamic: bool, owned: bool = False) -> Job:
    """A checked job object -> Job; forwarded as Batsim does: the full id, every double as
    Batsim sends it (``jsonnum.forwarded``: the subtime, a walltime, any other field), the rest
    as given (same key order: replacing a key's value keeps its place, so an owned object is
    changed in place). The Job keeps the values read, which the simulation uses."""
    sent = obj if owned else dict(obj)
    sent["id"] = full_id
    for key, value in sent.items():   # every double as Batsim's writers print it
        if type(value) in _WRITTEN:
            sent[key] = forwarded(value)
    return Job(id=full_id, workload=workload, local_id=local, subtime=float(subtime),
               walltime=float(walltime), res=res, profile=profile, json=sent, dynamic=dynamic)


def _not_json(token: str):
    """``NaN``/``Infinity``: Python's json module takes them, JSON (and rapidjson) does not."""
    raise ValueError(f"malformed JSON: '{token}' is not a JSON number")


def load_workload(path: str | Path, name: str) -> Workload:
    """Read one Batsim JSON workload; every problem is a WorkloadError naming file and job."""
    path = Path(path)
    file = str(path)
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise WorkloadError("a workload must be a JSON object with 'jobs' and 'profiles'",
                            file=file)
    profiles = data.get("profiles", {})
    jobs = data.get("jobs")
    if not isinstance(profiles, dict):
        raise WorkloadError("'profiles' must be an object", file=file, field="profiles")
    if not isinstance(jobs, list):
        raise WorkloadError("'jobs' must be a list", file=file, field="jobs")
    for pname, prof in profiles.items():
        check_profile(pname, prof, profiles, file=file)
        # a type name per profile, a profile per job in some traces: one string for them all
        prof["type"] = sys.intern(prof["type"])
    wl = Workload(name=name, path=file, profiles=profiles, nb_res=data.get("nb_res"))
    for pname, prof in profiles.items():
        if prof["type"] == "usage_trace":
            from mrsched.simulator.usage_trace import load_usage_trace

            wl.traces[pname] = load_usage_trace(prof["trace"], file, pname)
    seen: set[str] = set()
    for index, obj in enumerate(jobs):
        job = parse_job(obj, name, profiles, file=file, index=index, owned=True)
        if job.id in seen:
            raise WorkloadError("duplicate job id", file=file, job=job.id, field="id")
        seen.add(job.id)
        wl.jobs.append(job)
    return wl


def load_workloads(paths) -> list[Workload]:
    """Batsim's ``-w`` files, named ``w0, w1, ...`` in order."""
    return [load_workload(p, f"w{i}") for i, p in enumerate(paths)]


def submission_order(jobs: list[Job]) -> list[Job]:
    """Batsim's submitter order: by submission time, then job id as text (see transcripts)."""
    return sorted(jobs, key=lambda j: (j.subtime, j.id))


# ------------------------------------------------------------------------------------------------
# One validator for workload files (issue 43 item 2): `mrsched workload check`, `run`,
# `simulate` and campaigns all call it, so they cannot disagree.
# ------------------------------------------------------------------------------------------------
#: job fields the schedulers read as amounts (docs/WORKLOADS.md): finite numbers >= 0
AMOUNT_FIELDS = ("burst_buffer", "bb_per_node", "gpus_per_node", "io_bandwidth_per_node")


def read_json_file(path: str | Path, *, what: str = "workload") -> Any:
    """A JSON file's value; unreadable, binary, not UTF-8, malformed or too deeply nested
    files are one WorkloadError naming the file (never a traceback)."""
    file = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise WorkloadError("no such file", file=file) from None
    except OSError as exc:
        raise WorkloadError(f"cannot read {what}: {exc.strerror or exc}", file=file) from None
    if b"\0" in raw:
        raise WorkloadError(f"a binary file, not a JSON {what}", file=file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}): "
                            f"not a JSON {what}", file=file) from None
    del raw
    try:
        # numbers as Batsim's rapidjson reads them (jsonnum.py: not always the nearest double)
        return json.loads(text, parse_constant=_not_json, parse_float=rapidjson_float)
    except RecursionError:
        raise WorkloadError(f"nested too deeply to be a JSON {what}", file=file) from None
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"malformed JSON: {exc.msg} (column {exc.colno})", file=file,
                            line=exc.lineno) from None
    except ValueError as exc:
        raise WorkloadError(str(exc), file=file, hint="Batsim's JSON parser refuses it too") from None


def _value_problem(value: Any) -> str | None:
    """Non-finite numbers and nesting deeper than MAX_JSON_DEPTH inside one field's value,
    walked without recursion."""
    from mrsched.limits import MAX_JSON_DEPTH

    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        kind = type(item)
        if kind is float and not math.isfinite(item):
            return f"{item!r} is not a finite number"
        if kind is dict or kind is list:
            if depth > MAX_JSON_DEPTH:
                return f"nested more than {MAX_JSON_DEPTH} levels deep"
            todo.extend((v, depth + 1) for v in (item.values() if kind is dict else item))
    return None


def workload_problems(data: Any, file: str | Path | None, *, engine: str = "embedded",
                      limit: int | None = None) -> list[WorkloadError]:
    """Every problem of a parsed workload, in file order (empty: ``run`` takes it): Batsim's
    own checks (the engine's :func:`parse_job` and ``profiles.check_profile``, naming jobs by
    their id in the file), then mrsched's rules (``mrsched/limits.py``): times up to
    ``MAX_TIME``, no request above ``nb_res``, scheduler amounts finite and >= 0. ``engine``
    other than ``"embedded"`` leaves ``smpi`` profiles and usage-trace files to real Batsim.
    ``limit``: stop after that many problems."""
    from mrsched.limits import time_problem
    from mrsched.simulator.profiles import check_profile

    file = None if file is None else str(file)
    problems: list[WorkloadError] = []

    def add(exc: WorkloadError) -> bool:
        problems.append(exc)
        return limit is not None and len(problems) >= limit

    if not isinstance(data, dict):
        add(WorkloadError("a workload must be a JSON object with 'nb_res', 'jobs' and 'profiles'",
                          file=file))
        return problems
    nb_res = data.get("nb_res")
    if "nb_res" not in data:
        # Batsim 4.2.1 (workload.cpp) refuses it: "the 'nb_res' field is missing"; the
        # embedded engine only needs it for --mmax-workload
        if engine != "embedded" and add(WorkloadError(
                "missing 'nb_res' (the number of machines): real Batsim refuses the workload",
                file=file, field="nb_res")):
            return problems
    elif type(nb_res) is not int or nb_res < 1:
        nb_res = None
        if add(WorkloadError(f"'nb_res' must be a positive integer, got {data['nb_res']!r}",
                             file=file, field="nb_res")):
            return problems
    profiles, jobs = data.get("profiles", {}), data.get("jobs")
    if not isinstance(profiles, dict):
        add(WorkloadError("'profiles' must be an object", file=file, field="profiles"))
        return problems
    if not isinstance(jobs, list):
        add(WorkloadError("'jobs' must be a list", file=file, field="jobs"))
        return problems
    for key, value in data.items():
        if key not in ("jobs", "profiles"):
            problem = _value_problem(value)
            if problem and add(WorkloadError(problem, file=file, field=key)):
                return problems
    for name, prof in profiles.items():
        element = f"profile {name}"
        try:
            if engine != "embedded" and isinstance(prof, dict) and prof.get("type") == "smpi":
                continue
            check_profile(name, prof, profiles, file=file)
            problem = next(filter(None, (_value_problem(v) for v in prof.values())), None)
            if problem:
                raise WorkloadError(problem, file=file, element=element)
            if prof["type"] == "delay" and (problem := time_problem(prof["delay"])):
                raise WorkloadError(problem, file=file, element=element, field="delay")
            if prof["type"] == "usage_trace" and engine == "embedded":
                from mrsched.simulator.usage_trace import load_usage_trace

                load_usage_trace(prof["trace"], file or ".", name)
        except WorkloadError as exc:
            if add(exc):
                return problems
    seen: set[str] = set()
    for index, obj in enumerate(jobs):
        try:
            job = parse_job(obj, "w0", profiles, file=file, index=index)
        except WorkloadError as exc:   # "job w0!4" is the engine's name for the file's job 4
            if exc.job and exc.job.startswith("w0!"):
                exc = WorkloadError(exc.message, file=exc.file, line=exc.line, element=exc.element,
                                    job=exc.job[3:], field=exc.field, hint=exc.hint)
            if add(exc):
                return problems
            continue
        where = {"file": file, "job": job.local_id}
        found = []
        if job.id in seen:
            found.append(WorkloadError("duplicate job id", field="id", **where))
        seen.add(job.id)
        for key in ("subtime", "walltime"):
            value = obj[key] if key in obj else -1
            if value != -1 and (problem := time_problem(value)):
                found.append(WorkloadError(problem, field=key, **where))
        if nb_res is not None and job.res > nb_res:
            found.append(WorkloadError(f"requests {job.res} machines, the workload's 'nb_res' is "
                                       f"{nb_res}", field="res", **where))
        for key, value in obj.items():
            if key in AMOUNT_FIELDS and (isinstance(value, bool) or not isinstance(value, (int, float))
                                         or not 0 <= value < INF):
                found.append(WorkloadError(f"must be a finite number >= 0, got {value!r}", field=key,
                                           **where))
            elif type(value) is float and not math.isfinite(value) or type(value) in (dict, list):
                problem = _value_problem(value)
                if problem:
                    found.append(WorkloadError(problem, field=key, **where))
        for exc in found:
            if add(exc):
                return problems
    return problems


def validate_workload(path: str | Path, *, engine: str = "embedded") -> dict:
    """Read and check a workload file as ``run`` takes it: its parsed value, or the first
    problem raised (a WorkloadError naming the file, job or profile and field)."""
    data = read_json_file(path)
    problems = workload_problems(data, path, engine=engine, limit=1)
    if problems:
        raise problems[0]
    return data
