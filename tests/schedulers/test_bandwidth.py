"""I/O-aware scheduling on a bandwidth tree (seed 004 Sect. 3.2.4): Fig. 3.3's example, the
tree read from SIMULATION_BEGINS, infeasible jobs rejected, and the never-exceed invariant."""

from __future__ import annotations

import random

import pytest

from mrsched.errors import ConfigError
from mrsched.schedulers.profile.bandwidth import BandwidthProfile, BandwidthTree
from mrsched.schedulers.model.cluster import cluster_from_simulation_begins
from mrsched.schedulers.model.decisions import Reject, Start
from mrsched.schedulers.registry import make_policy, make_runtime
from mrsched.schedulers.execution.runtime import PolicyRuntime

MB = 1e6
IO_POLICIES = ["fcfs-easy", "fcfs-bb", "sjf-bb", "easy-bf", "filler", "fcfs", "conservative-bb"]


def tree_cluster(units: int, per_unit: int, edge_bw: float, core_bw: float, pfs_bw: float, node_bw: float = 1e12):
    """SIMULATION_BEGINS data of an iotree platform (the properties `mrsched platform iotree` writes)."""
    compute = []
    for u in range(units):
        for k in range(per_unit):
            props = {"edge": str(u), "edge_bw": repr(edge_bw), "node_bw": repr(node_bw)}
            compute.append({"id": len(compute), "name": f"su{u:02d}_n{k}", "properties": props})
    storage = [{"id": len(compute), "name": "pfs",
                "properties": {"role": "storage", "pfs": "true", "pfs_bw": repr(pfs_bw), "core_bw": repr(core_bw)}}]
    return cluster_from_simulation_begins({"compute_resources": compute, "storage_resources": storage})


def job(res: int, rate: float, walltime: float = 100.0, subtime: float = 0.0) -> dict:
    return {"subtime": subtime, "walltime": walltime, "res": res, "profile": "p", "io_bandwidth_per_node": rate}


def starts(decisions) -> dict[str, list[int]]:
    return {d.job_id: list(d.nodes) for d in decisions if isinstance(d, Start)}


def test_tree_read_from_simulation_begins():
    tree = BandwidthTree.from_cluster(tree_cluster(3, 2, 256 * MB, 1000 * MB, 400 * MB))
    assert tree.edge_of == (0, 0, 1, 1, 2, 2)
    assert tree.edge_bw == (256 * MB,) * 3
    assert tree.top_names == ("core", "pfs") and tree.top_bw == (1000 * MB, 400 * MB)


def test_a_platform_without_tree_is_refused():
    from mrsched.schedulers.model.cluster import Cluster
    with pytest.raises(ConfigError, match="io_aware needs a bandwidth tree"):
        BandwidthTree.from_cluster(Cluster.simple(4))


@pytest.mark.parametrize("policy", IO_POLICIES)
def test_fig_3_3_job2_refuses_the_contended_switch(policy):
    """Fig. 3.3: Job 1 loads unit 0's edge switch; Job 2's lowest free nodes would put one of
    its nodes under that switch (over-allocating it): the I/O-aware scheduler places it on
    the other units instead; the I/O-ignorant one takes the lowest ids."""
    cl = tree_cluster(3, 2, 256 * MB, 10_000 * MB, 10_000 * MB)
    for aware, expected in ((True, [2, 3, 4]), (False, [1, 2, 3])):
        rt = make_runtime(policy, io_aware=aware)
        rt.begin(cl, 0.0)
        rt.submit(0.0, "w!1", job(1, 192 * MB))
        rt.submit(0.0, "w!2", job(3, 128 * MB))
        got = starts(rt.step(0.0))
        assert got["w!1"] == [0]
        assert got["w!2"] == expected


def test_fig_3_3_job2_waits_when_no_part_of_the_tree_has_room():
    """With the PFS too small for both, Job 2 starts only when Job 1 has ended."""
    cl = tree_cluster(3, 2, 256 * MB, 10_000 * MB, 500 * MB)
    rt = make_runtime("fcfs-easy", io_aware=True)
    rt.begin(cl, 0.0)
    rt.submit(0.0, "w!1", job(1, 192 * MB, walltime=100))
    rt.submit(0.0, "w!2", job(3, 128 * MB, walltime=100))
    rt.submit(0.0, "w!3", job(1, 0.0, walltime=50))       # no I/O: backfills beside the reservation
    assert starts(rt.step(0.0)) == {"w!1": [0], "w!3": [1]}
    rt.complete(60.0, "w!1")
    assert starts(rt.step(60.0)) == {"w!2": [0, 2, 3]}   # lowest ids fit once unit 0 is free


def test_easy_reservation_respects_future_bandwidth():
    """The head job waits for bandwidth, not nodes: its reservation is at the end of the job
    holding the PFS, and a later job asking bandwidth that would delay it is not backfilled,
    while one that fits beside it is."""
    cl = tree_cluster(2, 4, 10_000 * MB, 10_000 * MB, 500 * MB)
    rt = make_runtime("fcfs-easy", io_aware=True)
    rt.begin(cl, 0.0)
    rt.submit(0.0, "w!1", job(2, 150 * MB, walltime=100))   # 300 of 500 MB/s until t=100
    rt.submit(0.0, "w!2", job(4, 100 * MB, walltime=100))   # needs 400: reserved at t=100
    rt.submit(0.0, "w!3", job(1, 150 * MB, walltime=500))   # fits now (200 free) but not beside w!2 after 100
    rt.submit(0.0, "w!4", job(1, 150 * MB, walltime=100))   # fits now and ends by t=100: backfilled
    got = starts(rt.step(0.0))
    assert set(got) == {"w!1", "w!4"}
    rt.complete(100.0, "w!1")
    rt.complete(100.0, "w!4")
    assert set(starts(rt.step(100.0))) == {"w!2"}      # 400 + 150 > 500: w!3 still waits


@pytest.mark.parametrize("policy", IO_POLICIES)
def test_never_fitting_job_is_rejected_with_reason(policy):
    cl = tree_cluster(2, 2, 256 * MB, 10_000 * MB, 300 * MB)
    rt = make_runtime(policy, io_aware=True)
    rt.begin(cl, 0.0)
    rt.submit(0.0, "w!1", job(4, 100 * MB))     # 400 MB/s > PFS 300
    rt.submit(0.0, "w!2", job(2, 140 * MB))     # 280 > 256 on one unit: one node per unit
    out = rt.step(0.0)
    rejects = {d.job_id: d.reason for d in out if isinstance(d, Reject)}
    assert rejects == {"w!1": "asks 4e+08 B/s in all (4 nodes x 1e+08), the pfs level carries 3e+08 B/s"}
    assert starts(out) == {"w!2": [0, 2]}


def test_io_aware_off_ignores_bandwidth():
    cl = tree_cluster(2, 2, 256 * MB, 10_000 * MB, 300 * MB)
    rt = make_runtime("fcfs-easy")
    rt.begin(cl, 0.0)
    rt.submit(0.0, "w!1", job(4, 100 * MB))
    assert starts(rt.step(0.0)) == {"w!1": [0, 1, 2, 3]}




def _used_bandwidth(tree, running):
    edges = [0.0] * tree.nb_edges
    total = 0.0
    for nodes, rate in running.values():
        for e, u in tree.edge_use(nodes, rate):
            edges[e] += u
        total += nodes.bit_count() * rate
    return edges, total


@pytest.mark.parametrize("policy", IO_POLICIES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_never_exceeds_any_level(policy, seed, aware=True):
    """Invariant over randomised workloads: at every instant, what runs fits every edge switch,
    the core pool and the PFS; every job ends up started or rejected."""
    rng = random.Random(seed)
    cl = tree_cluster(4, 4, 300 * MB, 800 * MB, 600 * MB)
    tree = BandwidthTree.from_cluster(cl)
    rt = make_runtime(policy, io_aware=aware)
    rt.begin(cl, 0.0)
    jobs = []
    t = 0.0
    for k in range(60):
        t += rng.expovariate(1 / 20)
        wall = rng.choice([30, 60, 120, 300])
        jobs.append((t, f"w!{k}", job(rng.choice([1, 1, 2, 3, 4, 6, 8]), rng.choice([0, 20, 50, 90, 150]) * MB,
                                      walltime=wall, subtime=t), rng.uniform(0.3, 1.0) * wall))
    pending = sorted(jobs)
    ends: list[tuple[float, str]] = []
    running: dict[str, tuple[int, float]] = {}
    run_of: dict[str, float] = {}
    now = 0.0
    while pending or ends or rt.queue:
        nxt = min([p[0] for p in pending[:1]] + [e[0] for e in ends])
        now = nxt
        for e in [e for e in ends if e[0] <= now]:
            ends.remove(e)
            rt.complete(now, e[1])
            running.pop(e[1])
        while pending and pending[0][0] <= now:
            _, jid, data, run = pending.pop(0)
            rt.submit(now, jid, data)
            run_of[jid] = run
        for d in rt.step(now):
            if isinstance(d, Start):
                rate = rt.running[d.job_id].job.request.io_bandwidth_per_node
                running[d.job_id] = (d.allocation.nodes, rate)
                ends.append((now + run_of[d.job_id], d.job_id))
        edges, total = _used_bandwidth(tree, running)
        for e, used in enumerate(edges):
            assert used <= tree.edge_bw[e] * (1 + 1e-9), (now, e, used)
        assert total <= min(tree.top_bw) * (1 + 1e-9), (now, total)
        if not pending and not ends and rt.queue:
            pytest.fail(f"jobs stuck in the queue: {list(rt.queue)}")


def test_bandwidth_profile_of_running_jobs_sweeps_their_ends():
    tree = BandwidthTree.from_cluster(tree_cluster(2, 2, 100.0, 1000.0, 150.0))
    prof = BandwidthProfile.of_running(tree, 0.0, [(0b0011, 20.0, 10.0), (0b0100, 50.0, 30.0)])
    assert prof.times == [0.0, 10.0, 30.0]
    assert prof.edges == [(60.0, 50.0), (100.0, 50.0), (100.0, 100.0)]
    assert prof.top == [(910.0, 60.0), (950.0, 100.0), (1000.0, 150.0)]
    assert prof.window(5.0, 20.0) == ((60.0, 50.0), (910.0, 60.0))
    assert prof.window(10.0, 40.0) == ((100.0, 50.0), (950.0, 100.0))
    prof.add(5.0, 20.0, 0b1000, 40.0)
    assert prof.window(0.0, 100.0) == ((60.0, 10.0), (870.0, 20.0))


def test_the_invariant_catches_an_io_ignorant_scheduler():
    with pytest.raises(AssertionError):
        test_never_exceeds_any_level("fcfs-easy", 1, aware=False)


def test_burst_buffer_job_keeps_its_nodes_and_waits_for_their_bandwidth():
    """Decision (bandwidth.py): a job with burst buffer keeps the availability profile's nodes
    (its placement is made for them); when they over-allocate an edge switch it waits."""
    data = {"compute_resources": [{"id": k, "name": f"n{k}", "properties": {"edge": str(k // 2),
                                                                            "edge_bw": repr(256 * MB)}}
                                  for k in range(4)],
            "storage_resources": [{"id": 4, "name": "bb0", "properties": {"role": "storage", "bb_capacity": "1000"}},
                                  {"id": 5, "name": "pfs", "properties": {"role": "storage", "pfs": "true",
                                                                          "pfs_bw": repr(10_000 * MB)}}]}
    cl = cluster_from_simulation_begins(data)
    rt = make_runtime("fcfs-bb", io_aware=True)
    rt.begin(cl, 0.0)
    rt.submit(0.0, "w!1", job(1, 200 * MB, walltime=50))
    rt.submit(0.0, "w!2", dict(job(2, 100 * MB, walltime=50), burst_buffer=200))
    assert starts(rt.step(0.0)) == {"w!1": [0]}          # nodes 1-2: unit 0 at 200 + 100 > 256
    rt.complete(50.0, "w!1")
    assert starts(rt.step(50.0)) == {"w!2": [0, 1]}      # unit 0 at 200: fits
