"""I/O contention of a schedule on a bandwidth tree, as seed 004 models it (Sect. 3.3.4):
progressive filling at every tree node, each job's interference factor, its computing and
I/O-blocked time, and the machine's goodput.

Why an analysis (and not the engine): 004 scores any schedule with jobs keeping their
durations; a job under contention computes less of its time (I < 1), it does not run longer.
The engine's ``io_model=contention`` is the other, physical view (jobs stretch).

Model (decisions where the paper is terse):
- Between two consecutive starts/ends (an interval Δ_i) the running set is fixed.
- A job asking ``r`` B/s per node requests ``r`` on each of its nodes' links, ``r x (its nodes
  under edge e)`` on edge switch ``e``, and ``r x nodes`` on the core pool and on the PFS.
- At every tree node, the requests of the jobs under it are served by progressive filling
  (Eq. of Sect. 3.3.4: sorted ascending, ``Actual_i = min(Req_i, (Peak - Σ_{j<i} Actual_j) / (n - i))``).
- A job's actual bandwidth is the minimum over the tree nodes it uses of actual/requested
  (synchronous I/O: the slowest part paces the job), so ``I = JobActualBW / JobReqBW`` (Dorier).
- ``T_computing = Σ I_i Δ_i``, ``T_IO = T_total - T_computing``; goodput = Σ nodes x
  T_computing / Σ nodes x T_total (share of allocated node-time spent computing).

Examples
--------
>>> progressive_filling(10.0, [2.0, 6.0, 6.0])
[2.0, 4.0, 4.0]
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from mrsched.atomic import write_rows_atomic
from mrsched.errors import MrschedError, WorkloadError
from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.schedulers.execution.knowledge import TRUE_RATE
from mrsched.sums import ordered_sum

INF = math.inf


def progressive_filling(peak: float, requests: Sequence[float]) -> list[float]:
    """Each child's actual bandwidth under a parent of capacity ``peak`` (seed 004 Sect. 3.3.4),
    in the order of ``requests``."""
    order = sorted(range(len(requests)), key=requests.__getitem__)
    out = [0.0] * len(requests)
    left, n = peak, len(requests)
    for i, k in enumerate(order):
        share = min(requests[k], left / (n - i)) if peak != INF else requests[k]
        out[k] = share
        left -= share
    return out


@dataclass(frozen=True)
class IoJob:
    """A job of a schedule: compute node indices (the tree's), rate per node, run window."""

    id: str
    nodes: int            # bitmask of compute indices
    rate: float           # requested bytes/s per node
    start: float
    finish: float

    @property
    def nb_nodes(self) -> int:
        return self.nodes.bit_count()


def interference(tree: BandwidthTree, running: Sequence[IoJob]) -> dict[str, float]:
    """Interference factor of every running job (1 for jobs without I/O)."""
    ratio = {j.id: 1.0 for j in running}
    io = [j for j in running if j.rate > 0]
    if not io:
        return ratio
    for j in io:
        if j.rate > tree.node_bw:
            ratio[j.id] = tree.node_bw / j.rate
    per_edge: dict[int, list[tuple[str, float]]] = {}
    for j in io:
        for e, use in tree.edge_use(j.nodes, j.rate):
            per_edge.setdefault(e, []).append((j.id, use))
    for e, reqs in per_edge.items():
        got = progressive_filling(tree.edge_bw[e], [u for _, u in reqs])
        for (jid, u), a in zip(reqs, got):
            ratio[jid] = min(ratio[jid], a / u)
    totals = [j.rate * j.nb_nodes for j in io]
    for cap in tree.top_bw:
        got = progressive_filling(cap, totals)
        for j, u, a in zip(io, totals, got):
            ratio[j.id] = min(ratio[j.id], a / u)
    return ratio


@dataclass
class JobContention:
    """One job's result: time computing and blocked on I/O (seconds), least I seen."""

    id: str
    nb_nodes: int
    rate: float
    start: float
    finish: float
    t_computing: float
    t_io: float
    min_interference: float

    @property
    def computing_fraction(self) -> float:
        total = self.finish - self.start
        return self.t_computing / total if total > 0 else 1.0


@dataclass
class Contention:
    """Per job results and the run's summary (seed 004 Figs. 3.5, 3.6)."""

    jobs: list[JobContention]
    time_contended: float           # seconds where some running job has I < 1
    time_busy: float                # seconds where some job runs

    @property
    def goodput(self) -> float:
        alloc = ordered_sum(j.nb_nodes * (j.finish - j.start) for j in self.jobs)
        comp = ordered_sum(j.nb_nodes * j.t_computing for j in self.jobs)
        return comp / alloc if alloc > 0 else 1.0

    def metrics(self) -> dict[str, float]:
        fr = [j.computing_fraction for j in self.jobs if j.finish > j.start]
        return {
            "goodput": self.goodput,
            "computing_fraction_min": min(fr) if fr else 1.0,
            "computing_fraction_max": max(fr) if fr else 1.0,
            "computing_fraction_mean": sum(fr) / len(fr) if fr else 1.0,
            "jobs_contended": sum(1 for j in self.jobs if j.min_interference < 1 - 1e-12),
            "time_contended_share": self.time_contended / self.time_busy if self.time_busy > 0 else 0.0,
        }

    def rows(self) -> list[dict]:
        return [{"job_id": j.id, "nodes": j.nb_nodes, "io_bandwidth_per_node": j.rate, "start": j.start,
                 "finish": j.finish, "t_computing": j.t_computing, "t_io": j.t_io,
                 "computing_fraction": j.computing_fraction, "min_interference": j.min_interference}
                for j in self.jobs]


def contention(tree: BandwidthTree, jobs: Iterable[IoJob]) -> Contention:
    """Sweep the schedule interval by interval (Sect. 3.3.4: ``T_computing = Σ I_i Δ_i``)."""
    jobs = [j for j in jobs if j.finish > j.start]
    events = sorted({t for j in jobs for t in (j.start, j.finish)})
    by_start: dict[float, list[IoJob]] = {}
    for j in jobs:
        by_start.setdefault(j.start, []).append(j)
    comp = {j.id: 0.0 for j in jobs}
    low = {j.id: 1.0 for j in jobs}
    running: dict[str, IoJob] = {}
    contended = busy = 0.0
    for t0, t1 in zip(events, events[1:]):
        for j in [j for j in running.values() if j.finish <= t0]:
            del running[j.id]
        for j in by_start.get(t0, ()):
            running[j.id] = j
        if not running:
            continue
        dt = t1 - t0
        factors = interference(tree, list(running.values()))
        busy += dt
        if any(f < 1 - 1e-12 for f in factors.values()):
            contended += dt
        for jid, f in factors.items():
            comp[jid] += f * dt
            if f < low[jid]:
                low[jid] = f
    out = [JobContention(j.id, j.nb_nodes, j.rate, j.start, j.finish, comp[j.id],
                         (j.finish - j.start) - comp[j.id], low[j.id]) for j in jobs]
    return Contention(out, contended, busy)


# -- reading a run --------------------------------------------------------------------------
def tree_of_platform(path: str | Path) -> tuple[BandwidthTree, dict[int, int]]:
    """The bandwidth tree of a platform file and Batsim resource id -> compute index."""
    from mrsched.schedulers.model.cluster import Cluster
    from mrsched.simulator.platform import load_platform

    plat = load_platform(str(path))
    compute = plat.compute_hosts()
    storage = plat.storage_hosts()
    props = {k: dict(h.properties) for k, h in enumerate(compute)}
    pfs_id = None
    for s, h in enumerate(storage):
        rid = len(compute) + s
        props[rid] = dict(h.properties)
        if str(h.properties.get("pfs", "")).lower() == "true":
            pfs_id = rid
    cluster = Cluster(compute_ids=tuple(range(len(compute))), compute_names=tuple(h.name for h in compute),
                      pfs_id=pfs_id, properties=props)
    return BandwidthTree.from_cluster(cluster), cluster.index_of


def _mask(alloc: str, index_of: dict[int, int], job: str) -> int:
    from mrsched.analysis.jobs import id_ranges

    mask = 0
    try:
        ranges = id_ranges(str(alloc))
    except MrschedError:
        raise WorkloadError(f"bad allocated_resources {alloc!r}", job=job) from None
    for a, b in ranges:
        for rid in range(a, b + 1):
            if rid in index_of:
                mask |= 1 << index_of[rid]
    return mask


def run_contention(jobs_csv: str | Path, platform: str | Path, workload: str | Path) -> Contention:
    """Contention of a finished run: Batsim's ``out_jobs.csv``, the platform and the workload
    (each job's true rate ``true_io_bandwidth_per_node``, else its ``io_bandwidth_per_node``;
    absent means no I/O): what the jobs really drain, whatever the scheduler believed."""
    import csv

    tree, index_of = tree_of_platform(platform)
    try:
        data = json.loads(Path(workload).read_text())
    except (OSError, ValueError) as exc:
        raise WorkloadError(f"cannot read workload: {exc}", file=str(workload)) from None
    rates = {str(j["id"]): float(j.get(TRUE_RATE, j.get("io_bandwidth_per_node")) or 0.0) for j in data.get("jobs", [])}
    jobs = []
    with open(jobs_csv, newline="") as fh:
        for row in csv.DictReader(fh):
            if row.get("final_state") in ("REJECTED", "NOT_SUBMITTED") or not row.get("allocated_resources"):
                continue
            jid = row["job_id"]
            jobs.append(IoJob(f"{row['workload_name']}!{jid}", _mask(row["allocated_resources"], index_of, jid),
                              rates.get(jid, 0.0), float(row["starting_time"]), float(row["finish_time"])))
    return contention(tree, jobs)


def main(argv: list[str] | None = None) -> int:
    """``python -m mrsched.analysis.iocontention RUN_DIR PLATFORM WORKLOAD``: metrics (JSON) and
    ``RUN_DIR/io_contention.csv`` (one row per job)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m mrsched.analysis.iocontention", description=main.__doc__)
    p.add_argument("run_dir")
    p.add_argument("platform")
    p.add_argument("workload")
    args = p.parse_args(argv)
    jobs_csv = Path(args.run_dir) / "out_jobs.csv"
    try:
        if not jobs_csv.is_file():
            raise WorkloadError("no out_jobs.csv: not a finished run directory", file=str(jobs_csv))
        res = run_contention(jobs_csv, args.platform, args.workload)
    except MrschedError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    rows = res.rows()
    write_rows_atomic(Path(args.run_dir) / "io_contention.csv", rows)
    print(json.dumps(res.metrics(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
