"""MultiSched's workload (seed 003 Sect. 3): jobs request five extra countable resources.

Seed 003 adds resources R1-R5 to a Theta trace, "randomly generated following normal
distribution", without giving the distributions or capacities. Decisions (ours):

- the five resources are machine-wide pools named for what they model — ``memory`` (GB),
  ``local_ssd`` (GB), ``io_bandwidth`` (MB/s), ``licences`` and ``power`` (W) — with a
  capacity of ``per_node x compute nodes`` (:data:`RESOURCES`);
- each job requests each resource independently with probability ``fraction``; a requesting
  job of ``n`` nodes asks ``max(N(intensity, intensity / 2), 0.05) x n x per_node`` rounded
  up, capped at the capacity (a job must fit alone on the empty machine). With the defaults
  (0.5 x 1.5) the mean demand is 0.75 of the job's node share, but one resource or another
  often binds before nodes do, which is the situation MultiSched is designed for;
- the requests are job fields (DESIGN.md "Job requests": "any other numeric field named in
  a policy's ``resources`` option is a countable resource"), the capacities the workload's
  top-level ``counters`` object. Schedulers learn them from ``sched-config``
  ``{"counters": {...}}`` or the window policies' ``counters`` knob
  (:func:`counters_option` writes its value).

Same base workload, machine and seed: same bytes.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.workloads.platform_info import PlatformInfo

__all__ = ["Resource", "RESOURCES", "generate_multires", "counters_option"]


@dataclass(frozen=True)
class Resource:
    """One pooled resource: job field name, capacity per compute node, unit (documentation)."""

    name: str
    per_node: float
    unit: str


RESOURCES = (
    Resource("memory", 256, "GB"),
    Resource("local_ssd", 1600, "GB"),
    Resource("io_bandwidth", 1000, "MB/s"),
    Resource("licences", 0.5, "seats"),
    Resource("power", 400, "W"),
)


def counters_option(counters: dict[str, float]) -> str:
    """``{"memory": 24576, ...}`` -> ``"memory=24576,..."`` (the window policies' ``counters`` knob)."""
    return ",".join(f"{name}={value:g}" for name, value in counters.items())


def _synthetic_base(jobs: int, nodes: int, seed: int) -> dict:
    from mrsched.workloads.synthetic import generate_synthetic

    return generate_synthetic(jobs=jobs, nodes=nodes, seed=seed, model="delay")


def generate_multires(workload: dict | None = None, *, platform: PlatformInfo | None = None,
                      nodes: int | None = None, fraction: float = 0.5, intensity: float = 1.5,
                      jobs: int = 300, seed: int = 0,
                      resources: tuple[Resource, ...] = RESOURCES) -> dict:
    """A copy of ``workload`` (default: ``jobs`` synthetic jobs) whose jobs request ``resources``."""
    if platform is not None:
        nodes = platform.compute_nodes
    if workload is not None and not nodes:
        nodes = workload.get("nb_res")
    if not isinstance(nodes, int) or nodes < 1:
        raise WorkloadError("the machine size is unknown", field="nodes", hint="give --platform or --nodes")
    if not 0 <= fraction <= 1:
        raise WorkloadError(f"fraction must be in [0, 1], got {fraction}", field="fraction")
    if not (math.isfinite(intensity) and intensity > 0):
        raise WorkloadError(f"intensity must be > 0, got {intensity}", field="intensity")
    out = copy.deepcopy(workload) if workload is not None else _synthetic_base(jobs, nodes, seed)
    job_list = out.get("jobs") or []
    names = [r.name for r in resources]
    for job in job_list:
        clash = next((n for n in names if n in job), None)
        if clash is not None:
            raise WorkloadError("job already has this field", job=str(job.get("id")), field=clash)
    capacity = np.array([math.ceil(r.per_node * nodes) for r in resources], dtype=float)
    per_node = np.array([r.per_node for r in resources], dtype=float)
    rng = np.random.default_rng(seed)
    n = len(job_list)
    asks = rng.random((n, len(resources))) < fraction
    level = np.maximum(rng.normal(intensity, intensity / 2.0, (n, len(resources))), 0.05)
    res = np.array([int(j.get("res", 1)) for j in job_list], dtype=float)
    demand = np.minimum(np.ceil(level * res[:, None] * per_node[None, :]), capacity[None, :])
    demand = np.where(asks, demand, 0.0)
    for k, job in enumerate(job_list):
        for r, name in enumerate(names):
            job[name] = int(demand[k, r])
    out["nb_res"] = int(out.get("nb_res") or nodes)
    out["counters"] = {name: int(c) for name, c in zip(names, capacity)}
    out["name"] = f"{out.get('name', 'workload')}-multires"
    out["description"] = (f"{out.get('description', '')}; MultiSched: {n} jobs, each of "
                          f"{', '.join(names)} requested with probability {fraction:g}, "
                          f"N({intensity:g}, {intensity / 2:g}) x node share").lstrip("; ")
    gen = dict(out.get("generator") or {})
    gen["multires"] = {"fraction": fraction, "intensity": intensity, "seed": seed, "nodes": nodes,
                       "resources": {r.name: {"per_node": r.per_node, "unit": r.unit} for r in resources}}
    out["generator"] = gen
    return out
