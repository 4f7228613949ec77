"""Invariants of the seed 002 policies on randomised CPU+GPU workloads, through the engine:
no node ever has more cores or GPUs in use than it owns, every allocation honours its request
kind (cores only / nodes + cores / nodes x cores per node, GPUs on every node, contiguity for
the policies that support it), and only jobs that can never fit are rejected."""

from __future__ import annotations

import numpy as np
import pytest
from cpugpu_runs import run_policy, write_platform, write_workload

NODES, CORES, GPUS = 12, 4, 2


def random_jobs(seed: int, n: int = 40) -> list[dict]:
    rng = np.random.default_rng(seed)
    jobs = []
    for k in range(n):
        kind = rng.integers(1, 4)
        g = int(rng.choice([0, 0, 1, 2]))
        job = {"id": str(k), "subtime": float(rng.integers(0, 300)), "runtime": float(rng.integers(10, 200))}
        if kind == 1:
            cores = int(rng.integers(1, 20))
        elif kind == 2:
            nodes = int(rng.integers(1, 6))
            cores = int(rng.integers(nodes, nodes * CORES + 1))
            job["nodes"] = nodes
        else:
            nodes, cpn = int(rng.integers(1, 6)), int(rng.integers(1, CORES + 1))
            cores = nodes * cpn
            job["nodes"], job["cores_per_node"] = nodes, cpn
        job.update(res=cores, cores=cores)
        if g:
            job["gpus_per_node"] = g
        if rng.random() < 0.2:
            job["contiguous"] = True
        jobs.append(job)
    # one that never fits: 3 GPUs per node on 2-GPU nodes
    jobs.append({"id": "never", "subtime": 0.0, "runtime": 10.0, "res": 2, "cores": 2, "gpus_per_node": 3})
    return jobs


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["slurm-bf", "ipsched", "aucsched"])
def test_random_workloads_respect_nodes_and_requests(tmp_path, policy, seed):
    jobs = random_jobs(seed)
    plat = write_platform(tmp_path / "p.xml", NODES, CORES, GPUS)
    wl = write_workload(tmp_path / "w.json", jobs, NODES * CORES)
    rows = run_policy(tmp_path, plat, wl, policy)
    byid = {j["id"]: j for j in jobs}
    assert rows["never"]["final_state"] == "REJECTED"
    events = []
    for jid, row in rows.items():
        if jid == "never":
            continue
        assert row["final_state"] == "COMPLETED_SUCCESSFULLY", (jid, row["final_state"])
        job, layout = byid[jid], row["layout"]
        assert sum(layout.values()) == job["cores"]
        if "cores_per_node" in job:
            assert len(layout) == job["nodes"] and set(layout.values()) == {job["cores_per_node"]}
        elif "nodes" in job:
            assert len(layout) == job["nodes"]
        if job.get("contiguous") and policy != "ipsched":   # IPSCHED has no contiguity option (Table 2)
            nodes = sorted(layout)
            assert nodes == list(range(nodes[0], nodes[-1] + 1)), (jid, nodes)
        g = job.get("gpus_per_node", 0)
        start, end = float(row["starting_time"]), float(row["finish_time"])
        assert start >= job["subtime"]
        for node, cores in layout.items():
            events.append((end, 0, node, -cores, -g))
            events.append((start, 1, node, cores, g))
    used_c, used_g = [0] * NODES, [0] * NODES
    for _, _, node, dc, dg in sorted(events):
        used_c[node] += dc
        used_g[node] += dg
        assert used_c[node] <= CORES and used_g[node] <= GPUS
