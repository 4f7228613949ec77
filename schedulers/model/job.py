"""What a job asks for: the request every policy reasons about, and the queued job around it.

Burst buffer is kept in both forms (DESIGN.md "Job requests"): ``bb_total`` bytes for the
whole job and ``bb_per_node`` bytes that each compute node gets on one storage node; the
placement works per node, capacity checks per job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from mrsched.errors import WorkloadError

INF = math.inf


@dataclass(frozen=True)
class Request:
    """Resources one job needs for its whole run (rigid, non-preemptive)."""

    nodes: int
    walltime: float = INF           # seconds; INF when the workload gives none
    bb_per_node: int = 0            # bytes per compute node, rounded up (placement splits bb_total exactly)
    bb_total: int = 0               # bytes for the whole job
    gpus_per_node: int = 0
    io_bandwidth_per_node: float = 0.0
    counters: tuple[tuple[str, float], ...] = ()   # other named countable resources (job totals)

    @property
    def has_walltime(self) -> bool:
        return self.walltime != INF


@dataclass(slots=True)
class Job:
    """A submitted job: Batsim id, submission time, request, and the raw fields Batsim sent
    (``fields``: the submission's own dict, read-only: not copied, a job per message)."""

    id: str
    subtime: float
    request: Request
    profile: str | None = None
    profile_data: dict | None = None
    fields: dict = field(default_factory=dict)

    @property
    def walltime(self) -> float:
        return self.request.walltime

    @property
    def nodes(self) -> int:
        return self.request.nodes


def _number(job_id: str, name: str, value: Any, *, integer: bool = False) -> float:
    """A numeric job field, or a WorkloadError naming the job and field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise WorkloadError(f"expected a number, got {value!r}", job=job_id, field=name) from None
    if value != value or value < 0:
        raise WorkloadError(f"expected a non-negative number, got {value!r}", job=job_id, field=name)
    if integer:
        if value != INF and float(value) != int(value):
            raise WorkloadError(f"expected an integer, got {value!r}", job=job_id, field=name)
        return int(value)
    return float(value)


_SHAPES: dict[tuple, Request] = {}     # (res, walltime, burst_buffer) -> shared Request
_SHAPES_MAX = 1 << 16


def request_from_fields(job_id: str, job: Mapping[str, Any], profile: Mapping[str, Any] | None = None,
                        counters: tuple[str, ...] = ()) -> Request:
    """Build a Request from a JOB_SUBMITTED ``job`` object (and its profile when known).

    ``burst_buffer`` (job field) is bytes for the whole job; the Euro-Par artifact's profile
    field ``bb`` is bytes per node (DESIGN.md "Job requests"). A job giving both must agree.
    """
    get = job.get
    res = get("res")
    wall = get("walltime", -1)
    tw = type(wall)
    # hot path (one call per submitted job): plain numbers and no optional resource fields;
    # requests are immutable, so jobs of the same shape share one
    if (type(res) is int and res >= 1 and (tw is float or tw is int) and wall == wall and wall != 0
            and not counters and (profile is None or profile.get("bb") is None)):
        bb = get("burst_buffer")
        if (bb is None or type(bb) is int and bb >= 0) and not get("gpus_per_node") \
                and not get("io_bandwidth_per_node"):
            key = (res, wall, bb)
            req = _SHAPES.get(key)
            if req is None:
                if len(_SHAPES) >= _SHAPES_MAX:
                    _SHAPES.clear()
                bb = bb or 0
                req = _SHAPES[key] = Request(nodes=res, walltime=float(wall) if wall > 0 else INF,
                                             bb_per_node=-(-bb // res), bb_total=bb)
            return req
    return _request_general(job_id, job, profile, counters)


def _request_general(job_id: str, job: Mapping[str, Any], profile: Mapping[str, Any] | None,
                     counters: tuple[str, ...]) -> Request:
    """``request_from_fields`` for any input: every field checked, errors name the field."""
    if "res" not in job:
        raise WorkloadError("missing number of nodes", job=job_id, field="res")
    nodes = _number(job_id, "res", job["res"], integer=True)
    if nodes < 1:
        raise WorkloadError("a job needs at least one node", job=job_id, field="res")
    wall = job.get("walltime", -1)
    if wall is None or (isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall < 0):
        walltime = INF
    else:
        walltime = _number(job_id, "walltime", wall)
        if walltime == 0:
            raise WorkloadError("walltime must be positive (or -1 for none)", job=job_id, field="walltime")
    bb_total = bb_per_node = 0
    if job.get("burst_buffer") is not None:
        bb_total = _number(job_id, "burst_buffer", job["burst_buffer"], integer=True)
        bb_per_node = -(-bb_total // nodes)
    if profile is not None and profile.get("bb") is not None:
        per = _number(job_id, "bb", profile["bb"], integer=True)
        if bb_total and per * nodes != bb_total and bb_per_node != per:
            raise WorkloadError(f"profile 'bb' ({per} bytes/node x {nodes}) disagrees with "
                                f"burst_buffer ({bb_total} bytes)", job=job_id, field="burst_buffer")
        bb_per_node, bb_total = per, per * nodes
    gpus = _number(job_id, "gpus_per_node", job.get("gpus_per_node") or 0, integer=True)
    iobw = _number(job_id, "io_bandwidth_per_node", job.get("io_bandwidth_per_node") or 0)
    extra = tuple((name, _number(job_id, name, job[name])) for name in counters if job.get(name))
    return Request(nodes=nodes, walltime=walltime, bb_per_node=bb_per_node, bb_total=bb_total,
                   gpus_per_node=gpus, io_bandwidth_per_node=iobw, counters=extra)


def job_from_batsim(job_id: str, job: Mapping[str, Any], profiles: Mapping[str, Any] | None = None,
                    counters: tuple[str, ...] = ()) -> Job:
    """A Job from JOB_SUBMITTED data; ``profiles`` maps profile name -> profile (this workload)."""
    subtime = job.get("subtime")
    ts = type(subtime)
    if (ts is float or ts is int) and 0 <= subtime < INF:   # hot path: a plain number
        subtime = float(subtime)
    else:
        if "subtime" not in job:
            raise WorkloadError("missing submission time", job=job_id, field="subtime")
        subtime = _number(job_id, "subtime", job["subtime"])
    profile_name = job.get("profile")
    profile_data = None
    if profiles and profile_name in profiles:
        profile_data = profiles[profile_name]
    request = request_from_fields(job_id, job, profile_data, counters)
    return Job(job_id, subtime, request, profile_name, profile_data,
               job if type(job) is dict else dict(job))
