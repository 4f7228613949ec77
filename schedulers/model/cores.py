"""Seed 002's job requests (Sect. 4.2, Table 2) from workload job fields (README "Job requests").

Kinds: 1 = total cores only (``cores``, optionally ``nodes_min``/``nodes_max``); 2 = ``nodes``
and total cores; 3 = ``nodes`` and ``cores_per_node``. Any kind may ask ``gpus_per_node`` (on
every node it uses) and ``contiguous`` (one block of consecutive nodes; AUCSCHED honours it,
seed 002 Table 2). ``res`` is the job's core count on a per-core platform, so ``cores``
defaults to it and must agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from mrsched.errors import WorkloadError


@dataclass(frozen=True)
class CoreRequest:
    """What one job asks of a CPU+GPU machine."""

    cores: int
    nodes_min: int = 1
    nodes_max: int = 0          # 0: as many as cores
    cores_per_node: int = 0     # 0: not requested
    gpus_per_node: int = 0
    contiguous: bool = False
    kind: int = 1               # 1 cores only, 2 nodes + cores, 3 nodes + cores per node

    def __post_init__(self) -> None:
        if self.nodes_max == 0:
            object.__setattr__(self, "nodes_max", self.cores)

    @property
    def min_per_node(self) -> int:
        """Fewest free cores a node must have to take part."""
        return self.cores_per_node or 1


def _int(job_id: str, fields: Mapping[str, Any], name: str, default: int | None = None) -> int | None:
    value = fields.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise WorkloadError(f"expected a non-negative integer, got {value!r}", job=job_id, field=name)
    return int(value)


def core_request(job_id: str, fields: Mapping[str, Any], *, per_core: bool = True) -> CoreRequest:
    """The request of a job from its workload fields; WorkloadError names the job and field."""
    res = _int(job_id, fields, "res")
    cores = _int(job_id, fields, "cores", res if per_core else None)
    if cores is None:
        cores = res
    if not cores or cores < 1:
        raise WorkloadError("a job needs at least one core", job=job_id, field="cores")
    if per_core and res is not None and cores != res:
        raise WorkloadError(f"cores ({cores}) must equal res ({res}): res counts cores on a per-core platform",
                            job=job_id, field="cores")
    nodes = _int(job_id, fields, "nodes")
    nmin, nmax = _int(job_id, fields, "nodes_min"), _int(job_id, fields, "nodes_max")
    cpn = _int(job_id, fields, "cores_per_node", 0)
    gpn = _int(job_id, fields, "gpus_per_node", 0)
    contiguous = bool(fields.get("contiguous") or False)
    if nodes is not None and (nmin is not None or nmax is not None):
        raise WorkloadError("give nodes or nodes_min/nodes_max, not both", job=job_id, field="nodes")
    if nodes is not None:
        nmin = nmax = nodes
    if cpn:
        if nmin is None and nmax is None:
            if cores % cpn:
                raise WorkloadError(f"cores ({cores}) is not a multiple of cores_per_node ({cpn})",
                                    job=job_id, field="cores_per_node")
            nmin = nmax = cores // cpn
        if nmin != nmax or nmin * cpn != cores:
            raise WorkloadError(f"nodes x cores_per_node must equal cores ({nmin} x {cpn} != {cores})",
                                job=job_id, field="cores_per_node")
    nmin = 1 if nmin is None else nmin
    nmax = cores if nmax is None else nmax
    if nmin < 1 or nmin > nmax:
        raise WorkloadError(f"nodes range [{nmin}, {nmax}] is empty", job=job_id, field="nodes_min")
    if nmin > cores:
        raise WorkloadError(f"{nmin} nodes cannot each get a core of a {cores}-core job", job=job_id, field="nodes")
    kind = 3 if cpn else 2 if nodes is not None else 1
    return CoreRequest(cores=cores, nodes_min=nmin, nodes_max=min(nmax, cores), cores_per_node=cpn,
                       gpus_per_node=gpn, contiguous=contiguous, kind=kind)
