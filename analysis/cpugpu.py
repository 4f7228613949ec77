"""Seed 002's placement metrics on CPU+GPU machines (per-core platforms, DESIGN.md "CPU+GPU
machines"): where each job's cores landed, and Sect. 6's measures.

- utilisation = theoretical run time / run time, theoretical = sum(execution time x cores) /
  machine cores, run time = last finish - first submission (Sect. 6: a lower bound, not the
  optimum);
- packing factor = nodes used / fewest nodes the job's cores fit on (ceil(cores / cores per node));
- fragmentation = contiguous node blocks per job; spread = (last - first + 1) / nodes used,
  nodes in the 1-D order (name order, numbers as numbers);
- GPUs in use over time (``gpus_per_node`` of the workload x nodes of the job), beside busy
  nodes and cores (:func:`cpugpu_series`, the report's utilisation figure): on a per-core
  platform every Batsim resource is a core and carries its node's ``gpus`` property, so the
  generic GPU count (gpus_per_node x resources, capacity summed over resources) would count
  each GPU once per core; ``utilisation_gpus`` is recomputed here from nodes;
- window halvings of ``ipsched``/``aucsched`` (MILP timeouts), read from the jobs' metadata.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from mrsched.schedulers.batsim.intervals import parse_intervals


@dataclass
class CoreMap:
    """Batsim resource id -> node index, and per node its name, cores and GPUs."""

    node_of: dict[int, int]
    names: list[str]
    cores: list[int]
    gpus: list[int]

    @property
    def total_cores(self) -> int:
        return sum(self.cores)


def core_map(platform: str | Path) -> CoreMap:
    """A platform's compute resources as Batsim numbers them (host-name order) and their nodes
    (``node`` properties on per-core platforms, else one node per host)."""
    from mrsched.workloads.cpugpu import read_machine

    m = read_machine(platform)
    index = {n: k for k, n in enumerate(m.names)}
    return CoreMap({rid: index[node] for rid, (_, node) in enumerate(m.hosts)}, m.names, m.cores, m.gpus)


def job_nodes(alloc: str, cmap: CoreMap) -> dict[int, int]:
    """Node index -> cores of one job's ``allocated_resources`` text."""
    out: dict[int, int] = {}
    if not isinstance(alloc, str) or not alloc.strip():
        return out
    for rid in parse_intervals(alloc):
        n = cmap.node_of[int(rid)]
        out[n] = out.get(n, 0) + 1
    return out


def blocks(nodes: list[int]) -> int:
    """Contiguous runs in sorted node indices."""
    nodes = sorted(nodes)
    return sum(1 for k, n in enumerate(nodes) if k == 0 or n != nodes[k - 1] + 1)


def placement_rows(jobs, cmap: CoreMap) -> list[dict]:
    """Per started job: nodes, packing factor, fragmentation, spread (``jobs``: out_jobs rows as dicts)."""
    per_node = max(cmap.cores, default=1)
    rows = []
    for job in jobs:
        alloc = job.get("allocated_resources")
        nodes = job_nodes(alloc, cmap)
        if not nodes:
            continue
        idx = sorted(nodes)
        cores = sum(nodes.values())
        rows.append({"job_id": job["job_id"], "nodes": len(idx), "cores": cores,
                     "packing_factor": len(idx) / math.ceil(cores / per_node),
                     "fragmentation": blocks(idx), "spread": (idx[-1] - idx[0] + 1) / len(idx)})
    return rows


def seed002_metrics(jobs, cmap: CoreMap) -> dict[str, float]:
    """Sect. 6's measures over one run (``jobs``: out_jobs rows as dicts, rejected ones skipped)."""
    started = [j for j in jobs if isinstance(j.get("allocated_resources"), str) and j["allocated_resources"].strip()
               and float(j.get("starting_time", -1)) >= 0]
    if not started:
        return {}
    first = min(float(j["submission_time"]) for j in started)
    last = max(float(j["finish_time"]) for j in started)
    theoretical = sum(float(j["execution_time"]) * len(parse_intervals(j["allocated_resources"]))
                      for j in started) / max(cmap.total_cores, 1)
    rows = placement_rows(started, cmap)
    mean = lambda key: sum(r[key] for r in rows) / len(rows)   # noqa: E731
    return {"seed002_utilisation": theoretical / (last - first) if last > first else float("nan"),
            "packing_factor": mean("packing_factor"), "fragmentation": mean("fragmentation"),
            "spread": mean("spread")}


def gpu_usage(jobs, gpus_per_node: dict[str, int], cmap: CoreMap) -> list[tuple[float, int]]:
    """(time, GPUs in use) steps: each started job holds gpus_per_node on each of its nodes."""
    events: list[tuple[float, int]] = []
    for job in jobs:
        g = gpus_per_node.get(str(job["job_id"]), 0)
        nodes = job_nodes(job.get("allocated_resources"), cmap)
        if not g or not nodes:
            continue
        events.append((float(job["starting_time"]), g * len(nodes)))
        events.append((float(job["finish_time"]), -g * len(nodes)))
    events.sort()
    out, used = [], 0
    for t, d in events:
        used += d
        if out and out[-1][0] == t:
            out[-1] = (t, used)
        else:
            out.append((t, used))
    return out


#: what ``schedulers.policies.cpugpu.halving_metadata`` writes on the job heading a window its budget stopped
HALVINGS = re.compile(r"window halved (\d+)x")


def window_halvings(jobs) -> int:
    """Window halvings of a run: the counts in its jobs' metadata (``jobs``: out_jobs rows)."""
    total = 0
    for job in jobs:
        m = HALVINGS.search(str(job.get("metadata") or ""))
        if m:
            total += int(m.group(1))
    return total


def cpugpu_series(jobs, gpus_per_node: dict[str, int], cmap: CoreMap) -> dict[str, list[tuple[float, float]]]:
    """Fraction of nodes (any core busy), cores and GPUs in use over time, as (time, fraction)
    steps (releases before acquisitions at equal times); ``jobs``: out_jobs rows as dicts."""
    events: list[tuple[float, int, dict[int, int], int]] = []   # time, +1/-1, node -> cores, GPUs
    for job in jobs:
        nodes = job_nodes(job.get("allocated_resources"), cmap)
        if not nodes or float(job.get("starting_time", -1)) < 0:
            continue
        g = gpus_per_node.get(str(job["job_id"]), 0) * len(nodes)
        events.append((float(job["starting_time"]), 1, nodes, g))
        events.append((float(job["finish_time"]), -1, nodes, g))
    events.sort(key=lambda e: (e[0], e[1]))
    busy = [0] * len(cmap.names)
    n_busy = cores = gpus = 0
    caps = {"nodes": len(cmap.names), "cores": cmap.total_cores, "gpus": sum(cmap.gpus)}
    out: dict[str, list[tuple[float, float]]] = {k: [(0.0, 0.0)] for k in caps if caps[k]}
    for t, sign, nodes, g in events:
        for n, c in nodes.items():
            was = busy[n] > 0
            busy[n] += sign * c
            n_busy += (busy[n] > 0) - was
            cores += sign * c
        gpus += sign * g
        for key, used in (("nodes", n_busy), ("cores", cores), ("gpus", gpus)):
            if key not in out:
                continue
            steps = out[key]
            value = used / caps[key]
            if steps[-1][0] == t:
                steps[-1] = (t, value)
            else:
                steps.append((t, value))
    return out


def _gpus_per_node(run) -> dict[str, int]:
    jobs = run.jobs
    if jobs is None or "gpus_per_node" not in jobs.columns:
        return {}
    g = jobs["gpus_per_node"].fillna(0)
    return {str(j): int(v) for j, v in zip(jobs["job_id"], g) if v}


def run_cpugpu_series(run) -> dict[str, "object"]:
    """The report's utilisation series (DataFrames with ``time`` and ``fraction``) of a loaded
    run on a per-core platform: nodes, cores and GPUs; {} elsewhere."""
    import pandas as pd

    loaded = _load(run)
    if loaded is None:
        return {}
    rows, cmap = loaded
    series = cpugpu_series(rows, _gpus_per_node(run), cmap)
    return {k: pd.DataFrame(v, columns=["time", "fraction"]) for k, v in series.items()}


_MAPS: dict[str, CoreMap | None] = {}


def _cached_map(platform: str) -> CoreMap | None:
    """The platform's core map when it is a per-core platform (else None), read once."""
    if platform not in _MAPS:
        from mrsched.workloads.cpugpu import read_machine

        try:
            per_core = read_machine(platform).per_core
        except Exception:   # noqa: BLE001 - not a readable per-core platform: no seed 002 metrics
            per_core = False
        _MAPS[platform] = core_map(platform) if per_core else None
    return _MAPS[platform]


def _load(run):
    """(out_jobs rows as dicts, core map) of a run on a per-core platform, else None."""
    import csv

    from mrsched.analysis.runs import _jobs_csv, _paths, _resolve

    plats = _paths(run.manifest.get("platform"))
    plat = _resolve(plats[0], run.path) if plats else None
    cmap = _cached_map(str(plat)) if plat is not None else None
    path = _jobs_csv(run.path)
    if cmap is None or path is None:
        return None
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh)), cmap


def run_cpugpu_metrics(run) -> dict[str, float]:
    """Seed 002's measures of a loaded run (``mrsched.analysis.runs.Run``) on a per-core
    platform ({} elsewhere), GPU utilisation counted per node (overriding ``run_metrics``'
    per-resource count) and the window halvings."""
    loaded = _load(run)
    if loaded is None:
        return {}
    all_rows, cmap = loaded
    rows = [r for r in all_rows if r.get("allocated_resources")]
    out = seed002_metrics(rows, cmap)
    out["window_halvings"] = window_halvings(all_rows)
    gpn = _gpus_per_node(run)
    if sum(cmap.gpus) and rows:
        started = [r for r in rows if float(r.get("starting_time", -1)) >= 0]
        if started:
            t0 = min(float(r["submission_time"]) for r in all_rows if r.get("submission_time"))
            t1 = max(float(r["finish_time"]) for r in started)
            used = sum(gpn.get(str(r["job_id"]), 0) * len(job_nodes(r["allocated_resources"], cmap))
                       * (float(r["finish_time"]) - float(r["starting_time"])) for r in started)
            out["utilisation_gpus"] = used / (sum(cmap.gpus) * (t1 - t0)) if t1 > t0 else float("nan")
    return out
