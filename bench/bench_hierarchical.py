"""Hierarchical scheduling and decision cost on ensembles (issue #17, seed 004 Ch. 5).

    .venv/bin/python bench/bench_hierarchical.py [--part depths|fig52a|fig52b|fig57|throughput|hetero|all]
                                                 [--jobs 131072] [--json OUT.json]

Machines are one Batsim resource per core (a SimGrid ``<cluster>`` of ``cores`` hosts plus a
master host: :func:`cores_platform`), 36 cores per node as in Sect. 5.1.1 / 5.4.1. Ensembles
come from ``mrsched.workloads.ensemble`` (zero-length jobs written as Batsim accepts them).
Everything runs on the embedded engine in this process; every scheduler instance of a
hierarchy runs in this one process too.

Cost model (``SLURM``): ``per_job`` = 2,240 s / 131,072 jobs = 17.1 ms, the per-job work that
makes SLURM's makespan for 131,072 ``sleep 0`` jobs on 1,152 cores 2,240 s (Sect. 5.4.4) and
linear in the number of jobs (Fig. 5.2a). The same cost is charged to every leaf of a
hierarchy; a parent hands a job down in ``DIST`` s and launches a child in ``LAUNCH`` s.

Parts:
- ``depths``: the 131,072-job ensemble on 1,152 cores at depths 1, 2 (one leaf per node), 3
  (one leaf per core), plus the costed centralized ``fcfs``: makespan, launched jobs per
  simulated second, wall time (the issue's < 5 min per run).
- ``fig52a`` / ``fig52b``: centralized costed fcfs, makespan against ensemble size (1,152
  cores) and against cores (131,072 jobs).
- ``fig57``: depths 1-3 against ensemble size on 1,152 cores with launch and distribution costs.
- ``throughput``: our own schedulers with no charged cost, jobs scheduled per second of
  scheduler CPU (fcfs, fcfs-easy, sjf-bb, conservative-bb), centralized and at depth 2 and 3.
- ``hetero``: heterogeneous ensembles (1-36 cores, 10-600 s): utilisation of centralized vs
  static partitions (Ch. 6's fragmentation), round-robin and weighted distribution.

Measured (2-core development machine shared with other work, load average ~10; rows in
``studies/hierarchical/bench_rows.json``, findings in ``studies/HIERARCHICAL.md``): the 131,072-job
ensemble on 1,152 cores runs in 33 s wall / 8.5 s CPU (centralized costed fcfs), 75 / 17.9 s
(depth 1, 262,148 messages: one per held start), 54 / 12.9 s (depth 2), 65 / 14.3 s (depth 3),
86 / 21.4 s and 69 / 23.3 s (depths 2 and 3 with hand-down and launch costs): every run well
under the issue's 5 minutes. Makespans 2,240.02 / 2,240.02 / 70.00 / 2.34 / 256.02 / 256.02 s.
Older rows of the JSON (parts fig52a/b, fig57, hetero) carry ``sched_s``, the engine's wall
time in the scheduler, instead of ``sched_cpu_s``.
Re-measured at load average 15-20 (CPU s whole run): centralized costed fcfs 11.2, depths 1-3
21.7 / 15.7 / 18.5. ``conservative-bb`` throughput on the 131,072-job ensemble (scheduler CPU
s, jobs per scheduler CPU s): centralized 90.3 (1,451), depth 2 89.8 (1,460), depth 3
78.2 (1,675); on 16,384 jobs: 1.1 (14,322), 1.5 (10,751), 2.2 (7,383) -- 29 s (568 jobs/s)
centralized before the compression pass stopped rescanning the release log per queued job.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.ensemble import generate_ensemble

CORES_PER_NODE = 36
SLURM_PER_JOB = 2240.0 / 131072          # s per job (Sect. 5.4.4 and Fig. 5.2)
SLURM = f"per_job={SLURM_PER_JOB:.6f}"
DIST = SLURM_PER_JOB / 10                # a parent's hand-down: "significantly less" (Sect. 5.3.1)
LAUNCH = 1.0                             # s to launch one child instance (assumption)


def cores_platform(cores: int) -> str:
    """One host per core in a SimGrid ``<cluster>`` zone, plus Batsim's master host.

    Written here rather than by ``mrsched platform cluster --nodes 32 --cores 36``: that
    generator lists every route of a Full zone (1,328,256 routes, a 245 MB file for 1,152
    cores), while the ``<cluster>`` zone's routing is implicit (a few hundred bytes)."""
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- {cores} cores as {cores} one-core hosts (one Batsim resource per core) and a master host -->
<platform version="4.1">
  <zone id="root" routing="Full">
    <cluster id="machine" prefix="core_" suffix="" radical="0-{cores - 1}" speed="1Gf"
             bw="12.5GBps" lat="1us" router_id="machine_router"/>
    <zone id="service" routing="Full">
      <host id="master_host" speed="1Gf"/>
      <router id="service_router"/>
      <link id="master_link" bandwidth="1GBps" latency="1us"/>
      <route src="service_router" dst="master_host"><link_ctn id="master_link"/></route>
    </zone>
    <link id="backbone" bandwidth="100GBps" latency="1us"/>
    <zoneRoute src="machine" dst="service" gw_src="machine_router" gw_dst="service_router">
      <link_ctn id="backbone"/>
    </zoneRoute>
  </zone>
</platform>
"""


def depth_options(depth: int, cores: int, **extra) -> dict:
    """Sect. 5.4.1's hierarchies: depth 2 = one leaf per node, depth 3 = one leaf per core."""
    nodes = max(1, cores // CORES_PER_NODE)
    if depth == 1:
        return {"depth": 1, **extra}
    if depth == 2:
        return {"depth": 2, "branching": nodes, **extra}
    return {"depth": 3, "branching": f"{nodes},{cores // nodes}", **extra}


class Bench:
    def __init__(self, workdir: Path):
        self.dir = workdir
        self.rows: list[dict] = []

    def platform(self, cores: int) -> str:
        path = self.dir / f"cores{cores}.xml"
        if not path.exists():
            path.write_text(cores_platform(cores))
        return str(path)

    def workload(self, name: str, **kwargs) -> str:
        path = self.dir / f"{name}.json"
        if not path.exists():
            write_workload(path, generate_ensemble(**kwargs))
        return str(path)

    def run(self, part: str, label: str, cores: int, wl: str, policy: str, options: dict, jobs: int) -> dict:
        sched = make_scheduler(policy, options)
        sched_cpu = [0.0]
        handle = sched.handle_message

        def timed(msg, handle=handle, acc=sched_cpu, clock=time.process_time):
            t0 = clock()
            reply = handle(msg)
            acc[0] += clock() - t0
            return reply
        sched.handle_message = timed      # scheduler CPU, not wall time (the machine is shared)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        res = simulate(self.platform(cores), [wl], sched, export_prefix=str(self.dir / "out"))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        started, busy_cores, span = 0, 0.0, res.makespan
        with open(self.dir / "out_jobs.csv") as f:
            for r in csv.DictReader(f):
                if r["final_state"] == "REJECTED":
                    continue
                started += 1
                busy_cores += float(r["execution_time"]) * int(r["requested_number_of_resources"])
        row = {"part": part, "label": label, "cores": cores, "jobs": jobs, "policy": policy,
               "options": {k: v for k, v in options.items()}, "makespan": round(span, 4), "started": started,
               "rejected": jobs - started, "jobs_per_sim_s": round(started / span, 2) if span > 0 else None,
               "utilisation": round(busy_cores / (cores * span), 4) if span > 0 else None,
               "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "sched_cpu_s": round(sched_cpu[0], 2),
               "jobs_per_sched_cpu_s": round(started / sched_cpu[0]) if sched_cpu[0] > 0 else None,
               "messages": res.nb_messages}
        self.rows.append(row)
        print(f"{part:10s} {label:28s} cores={cores:5d} jobs={jobs:7d} makespan={span:10.3f} s "
              f"started={started:7d} util={row['utilisation'] or 0:6.3f} wall={wall:7.1f} s "
              f"cpu={cpu:6.1f} s sched_cpu={sched_cpu[0]:6.1f} s msgs={res.nb_messages}", flush=True)
        return row


RUN_LIMIT_S = 300.0     # issue 17's bar: the 131,072-job ensemble at depths 1-3, < 5 min per run


def done_when(rows: list[dict], what: str) -> None:
    """Print each run against issue 17's five minutes, judged on the run's CPU time: on a
    shared machine wall time measures the other users too (the load average is printed)."""
    load = os.getloadavg()[0]
    for row in rows:
        print(f"done-when ({what}): {row['label']:28s} jobs={row['jobs']:7d} cpu={row['cpu_s']:7.1f} s "
              f"-> {'under' if row['cpu_s'] < RUN_LIMIT_S else 'OVER'} 5 min (wall {row['wall_s']:.1f} s, "
              f"load average {load:.1f})", flush=True)


def part_depths(b: Bench, jobs: int) -> None:
    cores = 1152
    wl = b.workload(f"zero{jobs}", jobs=jobs, nb_res=cores)
    rows = [b.run("depths", "centralized fcfs (costed)", cores, wl, "fcfs", {"decision_cost": SLURM}, jobs)]
    for depth in (1, 2, 3):
        rows.append(b.run("depths", f"depth {depth}", cores, wl, "hierarchical",
                          depth_options(depth, cores, decision_cost=SLURM), jobs))
    for depth in (2, 3):
        rows.append(b.run("depths", f"depth {depth} +dist +launch", cores, wl, "hierarchical",
                          depth_options(depth, cores, decision_cost=SLURM, distribution_cost=DIST,
                                        launch_cost=LAUNCH), jobs))
    done_when(rows, "ensemble at depths 1-3")


def part_fig52a(b: Bench, jobs: int) -> None:
    cores = 1152
    for n in sorted({n for n in (1024, 4096, 16384, 32768, 65536) if n < jobs} | {jobs}):
        wl = b.workload(f"zero{n}", jobs=n, nb_res=cores)
        b.run("fig52a", "centralized fcfs (costed)", cores, wl, "fcfs", {"decision_cost": SLURM}, n)


def part_fig52b(b: Bench, jobs: int) -> None:
    for cores in (36, 72, 144, 288, 576, 1152):
        wl_c = b.workload(f"zero{jobs}_c{cores}", jobs=jobs, nb_res=cores)
        b.run("fig52b", "centralized fcfs (costed)", cores, wl_c, "fcfs", {"decision_cost": SLURM}, jobs)


def part_fig57(b: Bench, jobs: int) -> None:
    cores = 1152
    for n in sorted({n for n in (256, 2048, 16384) if n < jobs} | {jobs}):
        wl = b.workload(f"zero{n}", jobs=n, nb_res=cores)
        for depth in (1, 2, 3):
            b.run("fig57", f"depth {depth} +dist +launch", cores, wl, "hierarchical",
                  depth_options(depth, cores, decision_cost=SLURM, distribution_cost=DIST, launch_cost=LAUNCH), n)


THROUGHPUT_POLICIES = ["fcfs", "fcfs-easy", "sjf-bb", "conservative-bb"]


def part_throughput(b: Bench, jobs: int) -> None:
    cores = 1152
    wl = b.workload(f"zero{jobs}", jobs=jobs, nb_res=cores)
    rows = []
    for policy in THROUGHPUT_POLICIES:
        rows.append(b.run("throughput", f"{policy} centralized", cores, wl, policy, {}, jobs))
        for depth in (2, 3):
            rows.append(b.run("throughput", f"{policy} depth {depth}", cores, wl, "hierarchical",
                              depth_options(depth, cores, leaf_policy=policy), jobs))
    for row in rows:
        print(f"throughput: {row['label']:28s} jobs={row['jobs']:7d} "
              f"{row['jobs_per_sched_cpu_s'] or 0:8d} jobs per scheduler CPU s", flush=True)
    done_when(rows, "throughput runs")


def part_hetero(b: Bench, jobs: int) -> None:
    cores = 1152
    n = min(jobs, 8192)
    wl = b.workload(f"hetero{n}", jobs=n, cores="1-36", runtime="10-600", nb_res=cores, seed=1)
    b.run("hetero", "centralized fcfs", cores, wl, "fcfs", {}, n)
    b.run("hetero", "centralized fcfs-easy", cores, wl, "fcfs-easy", {}, n)
    for dist in ("round-robin", "weighted"):
        for leaf in ("fcfs", "fcfs-easy"):
            b.run("hetero", f"depth 2 {leaf} {dist}", cores, wl, "hierarchical",
                  depth_options(2, cores, leaf_policy=leaf, distribution=dist), n)
    wl1 = b.workload(f"hetero1core{n}", jobs=n, cores=1, runtime="10-600", nb_res=cores, seed=1)
    b.run("hetero", "1-core centralized fcfs", cores, wl1, "fcfs", {}, n)
    for dist in ("round-robin", "weighted"):
        b.run("hetero", f"1-core depth 3 fcfs {dist}", cores, wl1, "hierarchical",
              depth_options(3, cores, distribution=dist), n)


PARTS = {"depths": part_depths, "fig52a": part_fig52a, "fig52b": part_fig52b, "fig57": part_fig57,
         "throughput": part_throughput, "hetero": part_hetero}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", action="append", choices=[*PARTS, "all"], help="default: depths")
    ap.add_argument("--jobs", type=int, default=131072)
    ap.add_argument("--json", help="append the rows to this JSON file")
    ap.add_argument("--policies", help="throughput part: comma-separated policies (default: all four)")
    ap.add_argument("--workdir", help="keep inputs and outputs here (default: a temporary directory)")
    args = ap.parse_args(argv)
    parts = args.part or ["depths"]
    if args.policies:
        THROUGHPUT_POLICIES[:] = args.policies.split(",")
    if "all" in parts:
        parts = list(PARTS)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        b = Bench(workdir)
        for p in parts:
            PARTS[p](b, args.jobs)
        if args.json:
            path = Path(args.json)
            old = json.loads(path.read_text()) if path.exists() else []
            path.write_text(json.dumps(old + b.rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
