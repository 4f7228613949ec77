"""Seed 002's CPU+GPU workloads for per-core platforms (DESIGN.md "CPU+GPU machines"): the
ESP-2 set duplicated into CPU-only and GPU copies (Sect. 5.1, Table 11) and the generated
mixes I-V (Sect. 5.2, Table 12); and :func:`read_machine`, the nodes of a platform file.

Every job's ``res`` is its core count (one Batsim resource per core) and its request is in
the fields the seed 002 policies read: ``cores``, ``nodes``, ``cores_per_node``,
``gpus_per_node`` (docs/WORKLOADS.md "Job requests"). Profiles are delays (the paper's jobs sleep).

Mix decisions where Sect. 5.2 is silent: all jobs are submitted at time 0 (the generator
targets a workload run time, not an arrival process); a job's cores are a multiple of the
cores per node drawn uniformly in [cores per node, ``max_cores``] (default: an eighth of the
machine); walltime = 2 x run time (never kills a job).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.schedulers.model.nodes import natural_key
from mrsched.workloads.esp2 import generate_esp2
from mrsched.workloads.platform_info import parse_platform_xml, radical_ids

# Table 12: fractions of (cores only, nodes x 4|8 cores per node, 1 GPU/node, 2 GPUs/node)
MIXES = {
    "I": (1.0, 0.0, 0.0, 0.0),
    "II": (0.0, 1.0, 0.0, 0.0),
    "III": (0.5, 0.5, 0.0, 0.0),
    "IV": (0.4, 0.4, 0.2, 0.0),
    "V": (1 / 3, 1 / 3, 1 / 6, 1 / 6),
}


@dataclass
class Machine:
    """Compute hosts in Batsim id order with their node, and per node (1-D order) cores and GPUs."""

    hosts: list[tuple[str, str]]     # (host name, node name), Batsim id order
    names: list[str]
    cores: list[int]
    gpus: list[int]
    per_core: bool

    @property
    def total_cores(self) -> int:
        return sum(self.cores)


def read_machine(path: str | Path) -> Machine:
    """The nodes of a platform file (hosts and ``<cluster>`` zones), as DESIGN.md maps them."""
    path = Path(path)
    root = parse_platform_xml(path)
    hosts: list[tuple[str, dict]] = []
    for el in root.iter():
        if el.tag not in ("host", "cluster"):
            continue
        props = {p.get("id"): p.get("value", "") for p in el.findall("prop")}
        if (props.get("role") or "compute") not in ("compute", "compute_node"):
            continue
        if el.tag == "host":
            hosts.append((el.get("id"), props))
            continue
        for k in radical_ids(el.get("radical", "")):
            hosts.append((f"{el.get('prefix', '')}{k}{el.get('suffix', '')}", props))
    if not hosts:
        raise WorkloadError("the platform has no compute host", file=str(path))
    per_core = any(p.get("resource") == "core" for _, p in hosts)
    hosts.sort(key=lambda h: h[0])
    cores: dict[str, int] = {}
    gpus: dict[str, int] = {}
    out_hosts = []
    for name, props in hosts:
        node = props.get("node") if per_core else name
        if not node:
            raise WorkloadError(f"host '{name}' of a per-core platform has no node property", file=str(path))
        out_hosts.append((name, node))
        cores[node] = cores.get(node, 0) + 1
        try:
            gpus[node] = int(float(props.get("gpus") or 0))
        except ValueError:
            raise WorkloadError(f"host '{name}': gpus must be an integer", file=str(path), field="gpus") from None
    names = sorted(cores, key=natural_key)
    return Machine(out_hosts, names, [cores[n] for n in names], [gpus[n] for n in names], per_core)


def _per_core(machine: Machine, where: str) -> None:
    if not machine.per_core:
        raise WorkloadError("needs a per-core platform (`mrsched platform cluster --cores C`)", field="platform",
                            file=where)


def generate_esp2_cpugpu(machine: Machine, *, seed: int = 0, gpus: int | None = None) -> dict:
    """ESP-2 x 2 (458 jobs): every non-Z job as a CPU-only copy and a copy asking ``gpus`` GPUs
    per node (default: the machine's), Z jobs at twice their times (seed 002 Sect. 5.1)."""
    cpn = max(machine.cores)
    g = machine.gpus[0] if gpus is None else gpus
    wl = generate_esp2(nodes=len(machine.names), cores_per_node=cpn, gpus=g, gpu_copies=True, seed=seed)
    for job in wl["jobs"]:
        job["res"] = job["cores"]          # one Batsim resource per core
        if not job["gpus_per_node"]:
            del job["gpus_per_node"]
    wl["nb_res"] = machine.total_cores
    wl["name"] = "ESP-2-cpugpu"
    wl["generator"]["command"] = "cpugpu esp"
    return wl


def generate_mix(machine: Machine, mix: str, *, jobs: int = 400, seed: int = 0, max_cores: int | None = None,
                 min_runtime: float = 60.0, max_runtime: float = 600.0) -> dict:
    """One of seed 002's generated workloads I-V (Table 12) for ``machine``."""
    if mix not in MIXES:
        raise WorkloadError(f"unknown mix '{mix}'", field="mix", hint="valid: I, II, III, IV, V")
    if jobs < 1:
        raise WorkloadError("jobs must be at least 1", field="jobs")
    cpn = min(machine.cores)
    nodes = len(machine.names)
    if max_cores is None:
        max_cores = max(cpn, machine.total_cores // 8)
    if max_cores < cpn:
        raise WorkloadError(f"max_cores ({max_cores}) is below one node's {cpn} cores", field="max_cores")
    top_gpus = min(machine.gpus)
    rng = np.random.default_rng(seed)
    kinds = rng.choice(4, size=jobs, p=np.array(MIXES[mix]) / sum(MIXES[mix]))
    if (kinds >= 2).any() and top_gpus < 2 and ((kinds == 3).any() or top_gpus < 1):
        raise WorkloadError(f"mix {mix} asks GPUs the machine's nodes lack", field="mix")
    out, profiles = [], {}
    for k in range(jobs):
        kind = int(kinds[k])
        g, per = 0, 0
        if kind == 1:                                   # nodes x 4 or 8 cores per node
            per = int(rng.choice([4, 8]))
            per = per if per <= cpn and cpn % per == 0 else cpn
        elif kind in (2, 3):                            # g GPUs per node, 1 or 2 cores per GPU
            g = kind - 1
            per = min(int(rng.choice([1, 2])) * g, cpn)   # (no more than a node has)
        top = min(max_cores, per * nodes) if per else max_cores
        if top >= cpn:                                  # whole nodes' worth of cores
            cores = int(rng.integers(1, top // cpn + 1)) * cpn
            cores -= cores % per if per else 0          # (whole nodes of `per` cores)
        else:                                           # a small machine: `per` at a time
            cores = int(rng.integers(1, top // per + 1)) * per
        runtime = float(round(rng.uniform(min_runtime, max_runtime)))
        job = {"id": k + 1, "subtime": 0, "walltime": 2 * runtime, "res": cores, "profile": f"delay{runtime:g}",
               "run_time": runtime, "cores": cores}
        if per:
            job.update(nodes=cores // per, cores_per_node=per)
        if g:
            job["gpus_per_node"] = g
        out.append(job)
        profiles.setdefault(job["profile"], {"type": "delay", "delay": runtime})
    return {"name": f"seed002-mix-{mix}",
            "description": f"seed 002 Table 12 workload {mix}: {jobs} jobs on {nodes} nodes x {cpn} cores",
            "nb_res": machine.total_cores,
            "generator": {"command": "cpugpu", "mix": mix, "jobs": jobs, "seed": seed, "max_cores": max_cores,
                          "min_runtime": min_runtime, "max_runtime": max_runtime},
            "jobs": out, "profiles": dict(sorted(profiles.items()))}
