"""Helpers for the seed 002 tests: run a policy through ``mrsched run`` on a per-core platform
and read back where every job's cores and GPUs went."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from mrsched.analysis.cpugpu import core_map, job_nodes
from mrsched.cli import main
from mrsched.platforms.cluster import generate_cluster


def write_platform(path: Path, nodes: int, cores: int, gpus: int) -> Path:
    path.write_text(generate_cluster(nodes=nodes, cores=cores, gpus=gpus, pfs=False).xml, encoding="utf-8")
    return path


def write_workload(path: Path, jobs: list[dict], nb_res: int) -> Path:
    profiles = {}
    out = []
    for j in jobs:
        j = dict(j)
        run = j.pop("runtime")
        pname = f"sleep{run:g}"
        profiles[pname] = {"type": "delay", "delay": float(run)}
        j.setdefault("walltime", float(run) * 2)
        j["profile"] = pname
        out.append(j)
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": out, "profiles": profiles}), encoding="utf-8")
    return path


def run_policy(tmp: Path, platform: Path, workload: Path, policy: str, **options) -> dict[str, dict]:
    """Run and return job id -> row of out_jobs.csv plus ``layout`` (node -> cores)."""
    out = tmp / policy
    args = ["run", "--platform", str(platform), "--workload", str(workload), "--policy", policy, "--out", str(out)]
    for k, v in options.items():
        args += ["--option", f"{k}={v}"]
    assert main(args) == 0
    cmap = core_map(platform)
    rows = {}
    with open(out / "out_jobs.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            row["layout"] = job_nodes(row["allocated_resources"], cmap)
            rows[row["job_id"]] = row
    return rows
