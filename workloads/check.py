"""Validate a Batsim workload before a simulation: one clear line per problem.

Checks with the one workload validator ``run``, ``simulate`` and campaigns call
(``simulator/workload.py``: what Batsim refuses at load time, and mrsched's limits on times and
amounts), plus, given a platform, what would only fail later (requests larger than the
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
from mrsched.workloads.platform_info import PlatformInfo

def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_workload(data: Any, *, file: str | Path | None = None,
                   platform: PlatformInfo | None = None,
                   engine: str = "embedded") -> list[WorkloadError]:
    """Every problem found in a workload dict (empty list: valid). The workload's own
    problems are those of the one validator ``run``, ``simulate`` and campaigns call
    (``simulator/workload.py`` ``workload_problems``): what ``check`` calls valid, they run.
    With a ``platform``, requests larger than its machine are problems too."""
    from mrsched.simulator.workload import workload_problems

    f = None if file is None else str(file)
    problems = workload_problems(data, f, engine=engine)
    if platform is None or not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        return problems
    unit = platform.unit   # what one resource is: a node, or a core (per-core platforms)
    for pos, job in enumerate(data["jobs"]):
        if not isinstance(job, dict):
            continue
        where = {"job": str(job.get("id", f"#{pos}"))}

        def problem(message: str, **extra: Any) -> None:
            problems.append(WorkloadError(message, file=f, **where, **extra))

        res = job.get("res")
        if type(res) is int and res > platform.compute_nodes:
            problem(f"requests {res} {unit}s, the platform has {platform.compute_nodes}", field="res")
        bb, per_node = job.get("burst_buffer"), job.get("bb_per_node")
        if _number(bb) and bb > 0 and platform.bb_total == 0:
            problem("requests burst buffer but the platform has no storage node with bb_capacity",
                    field="burst_buffer")
        elif _number(bb) and bb > platform.bb_total:
            problem(f"requests {bb:.4g} bytes of burst buffer, the platform has {platform.bb_total:.4g}",
                    field="burst_buffer")
        gpus = job.get("gpus_per_node")
        if _number(gpus) and gpus > platform.gpus:
            problem(f"requests {gpus:g} GPUs per node, the platform's nodes have at most {platform.gpus}",
                    field="gpus_per_node")
        if _number(per_node) and platform.bb_total and per_node > platform.bb_per_storage_node:
            problem(f"requests {per_node:.4g} bytes per node, a storage node holds "
                    f"{platform.bb_per_storage_node:.4g}", field="bb_per_node")
    return problems


def check_file(path: str | Path, platform: PlatformInfo | None = None,
               warnings: list[WorkloadError] | None = None,
               engine: str = "embedded") -> list[WorkloadError]:
    """Read and check a workload file (an unreadable, binary or malformed file is a single
    problem naming it), with the reader ``run`` uses.

    Pass a list as ``warnings`` to also collect :func:`unit_warnings` (they are not problems).
    """
    from mrsched.simulator.workload import read_json_file

    try:
        data = read_json_file(path)
    except WorkloadError as exc:
        return [exc]
    if warnings is not None:
        warnings.extend(unit_warnings(data, file=path, platform=platform))
    return check_workload(data, file=path, platform=platform, engine=engine)


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
