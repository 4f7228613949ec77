"""``io_model=contention``: jobs' I/O as additional_io_job ptasks, stretched on the tree's links."""

from __future__ import annotations

import json

import pytest

from mrsched.errors import ConfigError
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate

G = 1e9


def workload(tmp_path, jobs):
    """Jobs (res, rate B/s per node, cpu flops per node, subtime); profile per cpu amount."""
    wl = {"nb_res": 8, "jobs": [], "profiles": {}}
    for k, (res, rate, cpu, sub) in enumerate(jobs):
        name = f"c{int(cpu)}"
        wl["profiles"][name] = {"type": "parallel_homogeneous", "cpu": cpu, "com": 0}
        wl["jobs"].append({"id": str(k), "subtime": sub, "walltime": 1000, "res": res, "profile": name,
                           "io_bandwidth_per_node": rate})
    path = tmp_path / "w.json"
    path.write_text(json.dumps(wl))
    return path


def run(tmp_path, jobs, policy="fcfs", **options):
    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=2, nodes_per_unit=4, edge_bandwidth="1GBps", core_bandwidth="10GBps",
                                    pfs_bandwidth="2GBps", node_bandwidth="100GBps", latency="0us").xml)
    res = simulate(plat, [workload(tmp_path, jobs)], make_scheduler(policy, options), export_prefix=None,
                   record_transcript=True)
    return {r.local_id: (r.starting_time, r.finish_time) for r in res.jobs}, res


def test_two_level_stretch_matches_hand_computation(tmp_path):
    """A and B (2 nodes each) share unit 0's edge switch (1 GB/s), C (2 nodes) is alone on unit 1;
    every node asks 0.5 GB/s for T = 10 s (1e10 flops at 1 Gf/s: 5e9 bytes per node).
    ptask_L07 max-min on the ptasks' rates rho (share of the task done per second):
    edge 0: 1e10 (rho_A + rho_B) <= 1e9 -> rho_A = rho_B = 0.05; then C rises alone:
    PFS 1e10 (0.05 + 0.05 + rho_C) <= 2e9 -> rho_C <= 0.1, host 1e10 rho_C <= 1e9 -> 0.1.
    So C takes 10 s; A and B take 1 / 0.05 = 20 s (stretch 2 = 1 / I with I = 0.5)."""
    got, res = run(tmp_path, [(2, 0.5 * G, 1e10, 0), (2, 0.5 * G, 1e10, 0), (2, 0.5 * G, 1e10, 0)],
                   io_model="contention")
    assert {r.local_id: r.alloc for r in res.jobs} == {"0": "0-1", "1": "2-3", "2": "4-5"}
    assert got["0"] == pytest.approx((0.0, 20.0), abs=1e-4)
    assert got["1"] == pytest.approx((0.0, 20.0), abs=1e-4)
    assert got["2"] == pytest.approx((0.0, 10.0), abs=1e-4)


def test_without_the_io_model_jobs_keep_their_length(tmp_path):
    got, res = run(tmp_path, [(2, 0.5 * G, 1e10, 0), (2, 0.5 * G, 1e10, 0)])
    assert got["0"] == pytest.approx((0.0, 10.0), abs=1e-4)
    starts = [e for m in res.transcript if m["from"] == "scheduler" for e in m["msg"]["events"]
              if e["type"] == "EXECUTE_JOB"]
    assert starts and all("additional_io_job" not in e["data"] for e in starts)


def test_the_execute_job_carries_the_io_ptask(tmp_path):
    _, res = run(tmp_path, [(2, 0.5 * G, 1e10, 0), (1, 0.0, 1e9, 0)], io_model="contention")
    starts = {e["data"]["job_id"]: e["data"] for m in res.transcript if m["from"] == "scheduler"
              for e in m["msg"]["events"] if e["type"] == "EXECUTE_JOB"}
    io = starts["w0!0"]["additional_io_job"]
    assert starts["w0!0"]["alloc"] == "0-1" and io["alloc"] == "0-1 8"
    assert io["profile"]["type"] == "parallel" and io["profile"]["cpu"] == [0.0] * 3
    assert io["profile"]["com"] == [0, 0, 5e9, 0, 0, 5e9, 0, 0, 0]
    assert set(starts["w0!1"]) == {"job_id", "alloc"}      # no I/O: a plain start


def test_io_aware_prevents_the_stretch(tmp_path):
    """The same jobs under io_aware fcfs: B waits for A (edge 0 cannot carry both), nobody stretches."""
    got, _ = run(tmp_path, [(2, 0.5 * G, 1e10, 0), (2, 0.5 * G, 1e10, 0), (2, 0.5 * G, 1e10, 0)],
                 io_model="contention", io_aware=True)
    for start, finish in got.values():
        assert finish - start == pytest.approx(10.0, abs=1e-4)
    assert sorted(got.values())[-1][1] == pytest.approx(20.0, abs=1e-4)   # PFS 2 GB/s: two at a time


def test_io_model_and_io_phased_exclude_each_other():
    with pytest.raises(ConfigError, match="choose one"):
        make_scheduler("fcfs-bb", {"io_model": "contention", "job_model": "io-phased"})


def test_same_run_through_mrsched_serve(tmp_path):
    """``mrsched run --engine batsim --batsim "mrsched simulate"``: the scheduler served over
    ZeroMQ sends the same EXECUTE_JOBs, so the jobs stretch the same."""
    import csv
    import shlex
    import sys

    from mrsched.cli import main

    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=2, nodes_per_unit=4, edge_bandwidth="1GBps", core_bandwidth="10GBps",
                                    pfs_bandwidth="2GBps", node_bandwidth="100GBps", latency="0us").xml)
    wl = workload(tmp_path, [(2, 0.5 * G, 1e10, 0)] * 3)
    batsim = shlex.join([sys.executable, "-m", "mrsched.cli", "simulate"])
    assert main(["run", "-p", str(plat), "-w", str(wl), "--policy", "fcfs", "--option", "io_model=contention",
                 "--out", str(tmp_path / "r"), "--engine", "batsim", "--batsim", batsim, "--timeout", "120"]) == 0
    with open(tmp_path / "r" / "out_jobs.csv", newline="") as fh:
        got = {r["job_id"]: float(r["finish_time"]) for r in csv.DictReader(fh)}
    assert got == pytest.approx({"0": 20.0, "1": 20.0, "2": 10.0}, abs=1e-4)


def test_the_io_volume_is_the_true_rate_not_the_estimate():
    """The ptask carries what the job really writes: its true rate when the workload gives one,
    whatever the scheduler's view (knowledge) says."""
    from mrsched.schedulers.execution.ioptask import io_volume_per_node
    from mrsched.schedulers.model.job import job_from_batsim

    prof = {"c": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}}
    stated = job_from_batsim("w!1", {"subtime": 0, "walltime": 100, "res": 1, "profile": "c",
                                     "io_bandwidth_per_node": 0.5 * G}, prof)
    true = job_from_batsim("w!2", {"subtime": 0, "walltime": 100, "res": 1, "profile": "c",
                                   "io_bandwidth_per_node": 0.5 * G, "true_io_bandwidth_per_node": 0.2 * G}, prof)
    assert io_volume_per_node(stated, 1e9) == 5e9
    assert io_volume_per_node(true, 1e9) == 2e9
    from dataclasses import replace
    true.request = replace(true.request, io_bandwidth_per_node=9 * G)     # a scheduler's estimate
    assert io_volume_per_node(true, 1e9) == 2e9
