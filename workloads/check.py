"""Validate a Batsim workload before a simulation: one clear line per problem.

Checks what Batsim would refuse at load time (missing fields, unknown profile types, dangling
profile references, duplicate ids) and what would only fail later (requests larger than the
machine: nodes, burst buffer per node or per job, GPUs). Problems are ``WorkloadError``
objects, so each line names the file, job or profile and field.

:func:`unit_warnings` flags what is valid but probably wrong: requests that look like
processors on a platform whose resources are whole nodes (the mistake of reading a multi-core
trace's processors as nodes), or a workload converted for the other kind of platform.
"""

from __future__ import annotations

import math
from functools import reduce
from pathlib import Path
from typing import Any

from mrsched.errors import WorkloadError
from mrsched.simulator.profiles import PROFILE_FIELDS as ENGINE_PROFILE_FIELDS
from mrsched.workloads.platform_info import PlatformInfo

# profile type -> required fields: the types the embedded engine runs (one table, shared with
# it), plus the ones real Batsim also accepts (SMPI traces, usage traces, messages).
PROFILE_FIELDS: dict[str, tuple[str, ...]] = {
    **ENGINE_PROFILE_FIELDS,
    "smpi": ("trace",),
    "usage_trace": ("trace",),
    "send": ("msg",),
    "recv": (),
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_workload(data: Any, *, file: str | Path | None = None,
                   platform: PlatformInfo | None = None) -> list[WorkloadError]:
    """Every problem found in a workload dict (empty list: valid)."""
    f = None if file is None else str(file)
    problems: list[WorkloadError] = []

    def problem(message: str, **where: Any) -> None:
        problems.append(WorkloadError(message, file=f, **where))

    if not isinstance(data, dict):
        problem("a workload is a JSON object with nb_res, jobs and profiles")
        return problems
    nb_res = data.get("nb_res")
    if nb_res is None:
        problem("missing 'nb_res' (number of compute resources)", field="nb_res")
    elif not isinstance(nb_res, int) or isinstance(nb_res, bool) or nb_res < 1:
        problem(f"'nb_res' must be a positive integer, got {nb_res!r}", field="nb_res")
        nb_res = None
    jobs = data.get("jobs")
    profiles = data.get("profiles")
    if not isinstance(jobs, list):
        problem("missing or non-list 'jobs'", field="jobs")
        jobs = []
    if not isinstance(profiles, dict):
        problem("missing or non-object 'profiles'", field="profiles")
        profiles = {}

    for name, prof in profiles.items():
        if not isinstance(prof, dict):
            problem("a profile is a JSON object", element=f"profile {name}")
            continue
        kind = prof.get("type")
        where = {"element": f"profile {name}"}
        if kind not in PROFILE_FIELDS:
            problem(f"unknown profile type {kind!r}", field="type",
                    hint=f"valid: {', '.join(sorted(PROFILE_FIELDS))}", **where)
            continue
        for key in PROFILE_FIELDS[kind]:
            if key not in prof:
                problem(f"missing field for a {kind} profile", field=key, **where)
        if kind == "delay" and "delay" in prof and (not _number(prof["delay"]) or prof["delay"] < 0):
            problem(f"delay must be a number >= 0, got {prof['delay']!r}", field="delay", **where)
        if kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
            for key in ("cpu", "com"):
                if key in prof and (not _number(prof[key]) or prof[key] < 0):
                    problem(f"must be a number >= 0, got {prof[key]!r}", field=key, **where)
        if kind == "parallel" and isinstance(prof.get("cpu"), list) and isinstance(prof.get("com"), list):
            n = len(prof["cpu"])
            if len(prof["com"]) != n * n:
                problem(f"com has {len(prof['com'])} entries, cpu has {n}: expected {n * n}", field="com", **where)
        if kind == "composed" and isinstance(prof.get("seq"), list):
            for sub in prof["seq"]:
                if sub not in profiles:
                    problem(f"sequence refers to unknown profile {sub!r}", field="seq", **where)
            if "repeat" in prof and (not isinstance(prof["repeat"], int) or prof["repeat"] < 1):
                problem(f"repeat must be an integer >= 1, got {prof['repeat']!r}", field="repeat", **where)

    max_nodes = platform.compute_nodes if platform else nb_res
    unit = platform.unit if platform else "node"  # what one resource is: a node, or a core (per-core)
    seen: set[str] = set()
    for pos, job in enumerate(jobs):
        if not isinstance(job, dict):
            problem(f"jobs[{pos}] is not a JSON object", field="jobs")
            continue
        jid = str(job.get("id", f"#{pos}"))
        where = {"job": jid}
        for key in ("id", "subtime", "res", "profile"):
            if key not in job:
                problem("missing required field", field=key, **where)
        if "id" in job:
            if jid in seen:
                problem("duplicate job id", field="id", **where)
            seen.add(jid)
        sub = job.get("subtime")
        if sub is not None and (not _number(sub) or sub < 0):
            problem(f"subtime must be a number >= 0, got {sub!r}", field="subtime", **where)
        wall = job.get("walltime")
        if wall is not None and (not _number(wall) or (wall <= 0 and wall != -1)):
            problem(f"walltime must be > 0 or -1 (none), got {wall!r}", field="walltime", **where)
        res = job.get("res")
        if res is not None:
            if not isinstance(res, int) or isinstance(res, bool) or res < 1:
                problem(f"res must be an integer >= 1, got {res!r}", field="res", **where)
            elif max_nodes and res > max_nodes:
                problem(f"requests {res} {unit}s, the {'platform' if platform else 'workload (nb_res)'} "
                        f"has {max_nodes}", field="res", **where)
        prof = job.get("profile")
        if prof is not None and str(prof) not in profiles:
            problem(f"refers to unknown profile {prof!r}", field="profile", **where)
        for key in ("burst_buffer", "bb_per_node", "gpus_per_node", "io_bandwidth_per_node"):
            if key in job and (not _number(job[key]) or job[key] < 0):
                problem(f"must be a number >= 0, got {job[key]!r}", field=key, **where)
        if platform is not None:
            bb, per_node = job.get("burst_buffer"), job.get("bb_per_node")
            if _number(bb) and bb > 0 and platform.bb_total == 0:
                problem("requests burst buffer but the platform has no storage node with bb_capacity",
                        field="burst_buffer", **where)
            elif _number(bb) and bb > platform.bb_total:
                problem(f"requests {bb:.4g} bytes of burst buffer, the platform has {platform.bb_total:.4g}",
                        field="burst_buffer", **where)
            gpus = job.get("gpus_per_node")
            if _number(gpus) and gpus > platform.gpus:
                problem(f"requests {gpus:g} GPUs per node, the platform's nodes have at most {platform.gpus}",
                        field="gpus_per_node", **where)
            if _number(per_node) and platform.bb_total and per_node > platform.bb_per_storage_node:
                problem(f"requests {per_node:.4g} bytes per node, a storage node holds "
                        f"{platform.bb_per_storage_node:.4g}", field="bb_per_node", **where)
    return problems


def check_file(path: str | Path, platform: PlatformInfo | None = None,
               warnings: list[WorkloadError] | None = None) -> list[WorkloadError]:
    """Read and check a workload file (an unreadable file is a single problem).

    Pass a list as ``warnings`` to also collect :func:`unit_warnings` (they are not problems).
    """
    from mrsched.workloads.batsim_json import read_workload

    try:
        data = read_workload(path)
    except WorkloadError as exc:
        return [exc]
    if warnings is not None:
        warnings.extend(unit_warnings(data, file=path, platform=platform))
    return check_workload(data, file=path, platform=platform)


# below this many jobs, "every request is a multiple of k" says nothing about units
UNIT_EVIDENCE_JOBS = 10


def unit_warnings(data: Any, *, file: str | Path | None = None,
                  platform: PlatformInfo | None = None) -> list[WorkloadError]:
    """Signs that requests are in the wrong unit (processors or cores on a node platform).

    A workload converted by ``mrsched workload swf`` records its unit (``generator.unit``) when
    a node holds several processors; it must match the platform's. Otherwise, on a whole-node
    platform, requests that are all multiples of a core count above 1 (the platform's
    ``cores`` if it declares them, else their common divisor unless every request is that
    divisor times a power of two, as power-of-two node counts are), or that exceed the
    machine, look like processors.
    """
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        return []
    f = None if file is None else str(file)
    warnings: list[WorkloadError] = []

    def warn(message: str, hint: str) -> None:
        warnings.append(WorkloadError(f"warning: {message}", file=f, field="res", hint=hint))

    generator = data.get("generator") if isinstance(data.get("generator"), dict) else {}
    recorded = generator.get("unit")
    if platform is not None and recorded in ("node", "core") and recorded != platform.unit:
        warn(f"requests are in {recorded}s (the workload was converted for a platform of {recorded}s), "
             f"this platform's resources are {platform.unit}s",
             "convert the trace again with this --platform")
        return warnings
    if recorded in ("node", "core") or (platform is not None and platform.per_core):
        return warnings  # the unit is known, or requests in processors are right (one resource per core)
    res = [j["res"] for j in data["jobs"] if isinstance(j, dict) and isinstance(j.get("res"), int)
           and not isinstance(j.get("res"), bool) and j["res"] >= 1]
    if not res:
        return warnings
    machine = platform.compute_nodes if platform is not None else data.get("nb_res")
    declared = platform.cores if platform is not None and platform.cores_declared and platform.cores > 1 else None
    common = reduce(math.gcd, res)
    if declared:
        cores = declared if all(r % declared == 0 for r in res) else None
    else:  # power-of-two node counts (Batsim's example workloads: 4..128) share a divisor by design
        cores = common if any((r // common) & (r // common - 1) for r in res) else None
    hint = "convert the trace with mrsched workload swf, which divides processors by the cores per node"
    if len(res) >= UNIT_EVIDENCE_JOBS and cores and cores > 1:
        warn(f"all {len(res)} requests are multiples of {cores}: they look like processors of {cores}-core "
             f"nodes, not nodes", hint)
    if isinstance(machine, int) and machine >= 1:
        above = [r for r in res if r > machine]
        if above:
            warn(f"{len(above)} of {len(res)} requests exceed the machine's {machine} nodes (largest "
                 f"{max(above)}): if they count processors, sizes in nodes are processors / cores per node", hint)
    return warnings
