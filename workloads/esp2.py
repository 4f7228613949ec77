"""The ESP-2 benchmark workload (seed 002 Sect. 5.1, Table 11), optionally with GPU copies.

230 jobs of 14 types; a type's size is a fraction of the machine's cores. Submission (seed
002): 50 jobs released at time 0, the others with Gaussian inter-arrival times of mean 30 s,
and the two full-machine Z jobs at minute 80 and 240. Decisions where the paper is silent:
the order of the non-Z jobs is a seeded shuffle; the inter-arrival standard deviation is 10 s
(clipped at 0); a Z job is never submitted before the last other job (with 178 jobs after
the first 50, the last arrives near minute 89, so the first Z job follows it, as "after all
other jobs are submitted" requires). ``gpu_copies=True`` is seed 002's CPU-GPU version: every
non-Z job twice, the copy asking ``gpus`` GPUs per node, Z times doubled (458 jobs).

Requests: ``cores`` = size x machine cores (at least 1), ``res`` = nodes needed at
``cores_per_node`` cores each, ``gpus_per_node``; profiles are ``delay`` (execution time) or
``compute`` (``parallel_homogeneous``, execution time x host speed); walltime = 2 x the
execution time (Decision: ESP gives none; a loose bound that never kills a job).
"""

from __future__ import annotations

import math

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.workloads.platform_info import PlatformInfo

# Table 11: type -> (size as a fraction of the machine, count, execution time in s)
ESP2_TABLE = {
    "A": (0.03125, 75, 257), "B": (0.06250, 9, 341), "C": (0.50000, 3, 536), "D": (0.25000, 3, 601),
    "E": (0.50000, 3, 312), "F": (0.06250, 9, 1846), "G": (0.12500, 6, 1321), "H": (0.15820, 6, 1078),
    "I": (0.03125, 24, 1438), "J": (0.06250, 24, 715), "K": (0.09570, 15, 495), "L": (0.12500, 36, 369),
    "M": (0.25000, 15, 192), "Z": (1.00000, 2, 100),
}


def generate_esp2(*, platform: PlatformInfo | None = None, nodes: int | None = None,
                  cores_per_node: int | None = None, gpus: int = 2, speed: float = 1e9, seed: int = 0,
                  gpu_copies: bool = False, initial_jobs: int = 50, mean_interarrival: float = 30.0,
                  std_interarrival: float = 10.0, z_minutes: tuple[float, float] = (80.0, 240.0),
                  model: str = "delay") -> dict:
    """The ESP-2 workload dict for a machine of ``nodes`` x ``cores_per_node`` cores."""
    if platform is not None:
        nodes, speed = platform.compute_nodes, platform.speed
        cores_per_node = cores_per_node or platform.cores
        gpus = platform.gpus if gpu_copies and platform.gpus else gpus
    nodes = nodes or 1024
    cores_per_node = cores_per_node or 8
    if model not in ("delay", "compute"):
        raise WorkloadError(f"unknown profile model '{model}'", field="model", hint="valid: delay, compute")
    if nodes < 1 or cores_per_node < 1:
        raise WorkloadError("the machine needs at least one node and one core per node", field="nodes")
    if gpu_copies and gpus < 1:
        raise WorkloadError("GPU copies need GPUs per node >= 1", field="gpus")
    total_cores = nodes * cores_per_node
    rng = np.random.default_rng(seed)
    others = [t for t, (_, count, _) in ESP2_TABLE.items() if t != "Z" for _ in range(count)]
    requests = [(t, 0) for t in others]
    if gpu_copies:
        requests += [(t, gpus) for t in others]
    order = rng.permutation(len(requests))
    requests = [requests[k] for k in order]
    n_first = min(initial_jobs, len(requests))
    gaps = np.clip(rng.normal(mean_interarrival, std_interarrival, len(requests) - n_first), 0, None)
    submit = np.concatenate([np.zeros(n_first), np.cumsum(gaps)])
    factor = 2.0 if gpu_copies else 1.0
    last = float(submit.max()) if len(submit) else 0.0
    z_times, prev = [], last
    for minutes in z_minutes:
        t = max(minutes * 60.0 * factor, prev + 1.0)
        z_times.append(t)
        prev = t
    requests += [("Z", 0)] * ESP2_TABLE["Z"][1]
    submit = np.concatenate([submit, z_times])

    jobs, profiles = [], {}
    for k, ((kind, g), t) in enumerate(zip(requests, submit), start=1):
        size, _, seconds = ESP2_TABLE[kind]
        cores = max(1, round(size * total_cores))
        res = math.ceil(cores / cores_per_node)
        pname = f"esp_{kind}"
        jobs.append({"id": k, "subtime": round(float(t), 3), "walltime": float(seconds) * 2, "res": res,
                     "profile": pname, "run_time": float(seconds), "cores": cores, "gpus_per_node": g,
                     "esp_type": kind})
        if pname not in profiles:
            profiles[pname] = ({"type": "delay", "delay": float(seconds)} if model == "delay" else
                               {"type": "parallel_homogeneous", "cpu": round(seconds * speed), "com": 0})
    return {
        "name": "ESP-2" + ("-gpu" if gpu_copies else ""),
        "description": f"ESP-2 (seed 002 Table 11): {len(jobs)} jobs on {nodes} nodes x {cores_per_node} cores"
                       + (f", GPU copies with {gpus} GPUs per node" if gpu_copies else ""),
        "nb_res": int(nodes),
        "generator": {"command": "esp2", "seed": seed, "gpu_copies": gpu_copies, "cores_per_node": cores_per_node,
                      "initial_jobs": initial_jobs, "mean_interarrival": mean_interarrival,
                      "std_interarrival": std_interarrival, "z_submit": z_times, "model": model},
        "jobs": jobs,
        "profiles": dict(sorted(profiles.items())),
    }
