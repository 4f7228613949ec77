"""Batsim JSON workloads as the engine sees them: jobs, profiles and Batsim's job id rules.

Workloads are named ``w0, w1, ...`` in command-line order; a job's full id is
``"{workload}!{id}"``. The job's JSON object is kept (key order, int vs float as in the file)
because Batsim forwards it verbatim on JOB_SUBMITTED, only with ``id`` made absolute and
``subtime`` written with 6 decimals as Batsim 4.2.1's JSON writer does (the simulation itself
uses the full-precision submission time).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrsched.errors import WorkloadError
from mrsched.simulator.jsonnum import rapidjson_float
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


def round_subtime(value: float) -> float | int:
    """Batsim's JSON writer prints doubles with 6 decimals."""
    if isinstance(value, int):
        return value
    return float(f"{value:.6f}")


def _number(value: Any, *, file: str, job: str | None, fld: str, allow_negative_one: bool = False,
            integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise WorkloadError(f"expected a number, got {value!r}", file=file, job=job, field=fld)
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


def _job(obj: dict, workload: str, full_id: str, local: str, subtime: float, walltime: float,
         res: int, profile: str, dynamic: bool, owned: bool = False) -> Job:
    """A checked job object -> Job; forwarded as Batsim does: the full id, the subtime with 6
    decimals, every other field as given (same key order: replacing a key's value keeps its
    place, so an owned object is changed in place)."""
    forwarded = obj if owned else dict(obj)
    forwarded["id"] = full_id
    forwarded["subtime"] = round_subtime(obj["subtime"])
    return Job(id=full_id, workload=workload, local_id=local, subtime=float(subtime),
               walltime=float(walltime), res=res, profile=profile, json=forwarded, dynamic=dynamic)


def _not_json(token: str):
    """``NaN``/``Infinity``: Python's json module takes them, JSON (and rapidjson) does not."""
    raise ValueError(f"malformed JSON: '{token}' is not a JSON number")


def load_workload(path: str | Path, name: str) -> Workload:
    """Read one Batsim JSON workload; every problem is a WorkloadError naming file and job."""
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise WorkloadError("no such file", file=file) from None
    except OSError as exc:
        raise WorkloadError(f"cannot read: {exc.strerror}", file=file) from None
    try:
        # numbers as Batsim's rapidjson reads them (jsonnum.py: not always the nearest double)
        data = json.loads(text, parse_constant=_not_json, parse_float=rapidjson_float)
        del text   # a million-job file's text is a quarter GB: not kept while the jobs are built
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):
            raise WorkloadError(str(exc), file=file,
                                hint="Batsim's JSON parser refuses it too") from None
        raise WorkloadError(f"malformed JSON: {exc.msg} (column {exc.colno})", file=file,
                            line=exc.lineno) from None
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
