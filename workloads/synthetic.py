"""A small synthetic workload for the quickstart and tests: no trace needed, fast, seeded.

Poisson arrivals (exponential inter-arrival times of mean ``mean_interarrival``), job sizes
log-uniform in [min_nodes, max_nodes] (small jobs common, wide ones rare, as in real logs),
run times log-uniform in [min_runtime, max_runtime], walltime = run time x U[1, walltime_factor]
rounded up to a minute (users over-estimate), and for the ``burst-buffer`` model seed 001's
log-normal burst buffer per processor sized to the platform. Same seed, same bytes.
"""

from __future__ import annotations

import math

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.workloads.burst_buffer import LogNormalBurstBuffer
from mrsched.workloads.convert import MODELS, VARIANTS, JobColumns
from mrsched.workloads.platform_info import PlatformInfo


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return np.exp(rng.uniform(math.log(lo), math.log(hi), n))


def generate_synthetic(*, jobs: int = 50, platform: PlatformInfo | None = None, nodes: int | None = None,
                       speed: float = 1e9, seed: int = 0, mean_interarrival: float = 120.0, min_nodes: int = 1,
                       max_nodes: int | None = None, min_runtime: float = 60.0, max_runtime: float = 3600.0,
                       walltime_factor: float = 3.0, model: str = "burst-buffer",
                       variant: str = "alloc-only") -> dict:
    """A Batsim workload dict of ``jobs`` synthetic jobs (see the module docstring)."""
    head, columns = synthetic_columns(jobs=jobs, platform=platform, nodes=nodes, speed=speed, seed=seed,
                                      mean_interarrival=mean_interarrival, min_nodes=min_nodes,
                                      max_nodes=max_nodes, min_runtime=min_runtime, max_runtime=max_runtime,
                                      walltime_factor=walltime_factor, model=model, variant=variant)
    return columns.workload(head)


def synthetic_columns(*, jobs: int = 50, platform: PlatformInfo | None = None, nodes: int | None = None,
                      speed: float = 1e9, seed: int = 0, mean_interarrival: float = 120.0, min_nodes: int = 1,
                      max_nodes: int | None = None, min_runtime: float = 60.0, max_runtime: float = 3600.0,
                      walltime_factor: float = 3.0, model: str = "burst-buffer",
                      variant: str = "alloc-only") -> tuple[dict, JobColumns]:
    """``generate_synthetic``'s workload as its top-level members and job columns: written
    with ``JobColumns.write``, a million jobs never exist as dicts (~1 GB) at once."""
    if platform is not None:
        nodes, speed = platform.compute_nodes, platform.speed
    if not nodes or nodes < 1:
        raise WorkloadError("the machine size is unknown", field="nodes", hint="give --platform or --nodes")
    if model not in MODELS:
        raise WorkloadError(f"unknown profile model '{model}'", field="model", hint=f"valid: {', '.join(MODELS)}")
    if variant not in VARIANTS:
        raise WorkloadError(f"unknown variant '{variant}'", field="variant", hint=f"valid: {', '.join(VARIANTS)}")
    max_nodes = min(max_nodes or nodes, nodes)
    checks = [("jobs", jobs, jobs >= 1, "at least 1"),
              ("min_nodes", min_nodes, 1 <= min_nodes <= max_nodes, f"between 1 and {max_nodes}"),
              ("mean_interarrival", mean_interarrival, 0 < mean_interarrival < math.inf, "a positive number"),
              ("min_runtime", min_runtime, 0 < min_runtime <= max_runtime, f"in (0, max_runtime={max_runtime}]"),
              ("max_runtime", max_runtime, max_runtime < math.inf, "finite"),
              ("walltime_factor", walltime_factor, 1 <= walltime_factor < math.inf, "a number >= 1")]
    for name, value, ok, rule in checks:
        if not ok:   # (NaN fails every comparison)
            raise WorkloadError(f"'{name}' must be {rule}, got {value}", field=name)
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival, jobs)
    gaps[0] = 0.0
    subtime = np.round(np.cumsum(gaps))
    res = np.clip(np.floor(_log_uniform(rng, min_nodes, max_nodes + 1, jobs)), min_nodes, max_nodes).astype(np.int64)
    run = np.round(_log_uniform(rng, min_runtime, max_runtime, jobs))
    walltime = np.ceil(run * rng.uniform(1.0, walltime_factor, jobs) / 60.0) * 60.0
    bb = None
    if model == "burst-buffer":
        if platform is None or not platform.bb_capacities:
            raise WorkloadError("the burst-buffer model needs a platform with storage nodes (bb_capacity)",
                                field="platform")
        bb = LogNormalBurstBuffer().per_processor(res, walltime, rng, capacity=platform.bb_per_storage_node,
                                                  storage_nodes=len(platform.bb_capacities))
    columns = JobColumns(np.arange(1, jobs + 1), subtime, walltime, res, run, bb,
                         {"model": model, "variant": variant, "speed": speed})
    head = {
        "name": f"synthetic-{jobs}-seed{seed}",
        "description": f"{jobs} synthetic jobs (Poisson arrivals, log-uniform sizes and run times), model {model}",
        "nb_res": int(nodes),
        "generator": {"command": "synthetic", "seed": seed, "jobs": jobs, "mean_interarrival": mean_interarrival,
                      "min_nodes": min_nodes, "max_nodes": max_nodes, "min_runtime": min_runtime,
                      "max_runtime": max_runtime, "walltime_factor": walltime_factor, "model": model},
    }
    return head, columns
