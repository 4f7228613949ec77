"""IPSCHED's MILP (seed 002 Eqs. 1-7 over node classes), requests and priorities."""

from __future__ import annotations

import pytest

from mrsched.errors import WorkloadError
from mrsched.schedulers.optim.ipmodel import node_classes, solve_window
from mrsched.schedulers.policies.priority import job_priority
from mrsched.schedulers.model.cores import core_request
from mrsched.schedulers.registry import make_policy, policy_parameters


def test_table1_window_selects_all_three_jobs():
    reqs = [core_request("1", {"res": 4096}),
            core_request("2", {"res": 2048, "nodes": 512, "gpus_per_node": 2}),
            core_request("3", {"res": 2048, "nodes": 512, "gpus_per_node": 2})]
    out = solve_window([3.0, 2.0, 1.0], reqs, [8] * 1024, [2] * 1024)
    assert out.status == "optimal" and sorted(out.layouts) == [0, 1, 2]
    assert out.result.variables < 20      # one node class: 3 x (y, z) + 3 s


def test_packing_term_prefers_fewer_nodes():
    # 16 cores on 4 empty 8-core nodes: 2 nodes, never more (c_j = nodes / 2|N|)
    out = solve_window([1.0], [core_request("a", {"res": 16})], [8] * 4, [0] * 4)
    assert len(out.layouts[0].per_node) == 2


def test_priority_decides_when_not_everything_fits():
    reqs = [core_request("a", {"res": 6}), core_request("b", {"res": 6})]
    out = solve_window([1.0, 5.0], reqs, [8], [0])
    assert sorted(out.layouts) == [1]
    # priority-cores weighs by cores: the bigger job wins against a slightly higher priority
    reqs = [core_request("a", {"res": 2}), core_request("b", {"res": 8})]
    out = solve_window([1.5 * 2, 1.0 * 8], reqs, [8], [0])
    assert sorted(out.layouts) == [1]


def test_gpu_capacity_and_cores_per_node():
    free, gpus = [8, 8, 3], [2, 1, 2]
    reqs = [core_request("a", {"res": 8, "nodes": 2, "cores_per_node": 4, "gpus_per_node": 2}),
            core_request("b", {"res": 4, "nodes": 1, "cores_per_node": 4, "gpus_per_node": 1})]
    out = solve_window([2.0, 1.0], reqs, free, gpus)
    # only nodes 0 and 2 have 2 GPUs, node 2 lacks 4 cores: job a cannot run; b runs
    assert sorted(out.layouts) == [1]
    assert out.layouts[1].per_node[0][1] == 4
    assert node_classes(free, gpus) == {(8, 2): [0], (8, 1): [1], (3, 2): [2]}


def test_requests_from_job_fields():
    assert core_request("j", {"res": 16}).kind == 1
    r = core_request("j", {"res": 16, "nodes": 4})
    assert (r.kind, r.nodes_min, r.nodes_max) == (2, 4, 4)
    r = core_request("j", {"res": 16, "cores_per_node": 4, "gpus_per_node": 1})
    assert (r.kind, r.nodes_min, r.cores_per_node, r.gpus_per_node) == (3, 4, 4, 1)
    r = core_request("j", {"res": 16, "nodes_min": 2, "nodes_max": 3})
    assert (r.kind, r.nodes_min, r.nodes_max) == (1, 2, 3)
    with pytest.raises(WorkloadError, match="cores .12. must equal res .16."):
        core_request("j", {"res": 16, "cores": 12})
    with pytest.raises(WorkloadError, match="nodes x cores_per_node"):
        core_request("j", {"res": 16, "nodes": 3, "cores_per_node": 4})
    with pytest.raises(WorkloadError, match="not a multiple"):
        core_request("j", {"res": 10, "cores_per_node": 4})


def test_priorities():
    assert job_priority("basic", 0, 0, 8, 100, 64) > job_priority("basic", 1, 0, 8, 100, 64)
    # multifactor: +1 per minute, size with the same weight (max age 7 days = 10080 minutes)
    p0 = job_priority("multifactor", 0, 0.0, 32, 0.0, 64)
    assert p0 == pytest.approx(1 + 10080 * 0.5)
    assert job_priority("multifactor", 0, 0.0, 32, 600.0, 64) == pytest.approx(p0 + 10)


def test_policy_knobs():
    params = policy_parameters("ipsched")
    assert params["window"] == 200 and params["objective"] == "priority" and params["period"] == 5.0
    assert policy_parameters("aucsched")["max_bids_per_job"] == 4
    assert policy_parameters("slurm-bf")["reservations"] == 1
    with pytest.raises(Exception, match="objective"):
        make_policy("ipsched", objective="cores")


@pytest.mark.parametrize("policy, target", [("ipsched", "mrsched.schedulers.policies.ipsched.solve_window"),
                                            ("aucsched", "mrsched.schedulers.policies.aucsched.winner_determination")])
def test_a_stopped_milp_halves_the_window_and_the_run_directory_says_so(tmp_path, monkeypatch, policy, target):
    import csv
    import importlib

    from cpugpu_runs import write_platform, write_workload

    from mrsched.analysis.cpugpu import window_halvings
    from mrsched.schedulers.optim.auction import AuctionOutcome
    from mrsched.schedulers.optim.ipmodel import IpOutcome
    from mrsched.schedulers.optim.milp import MilpResult
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate

    module, name = target.rsplit(".", 1)
    real = getattr(importlib.import_module(module), name)
    calls = []

    def first_times_out(*args, **kwargs):   # the first MILP hits its node limit without an incumbent
        calls.append(1)
        if len(calls) == 1:
            res = MilpResult("limit", None, 0.0, 10, 10, 5.0, nodes=500, stopped_by="nodes")
            return IpOutcome("limit", result=res) if policy == "ipsched" else AuctionOutcome("limit", result=res)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, first_times_out)
    plat = write_platform(tmp_path / "p.xml", 4, 4, 2)
    jobs = [{"id": str(k), "subtime": 0, "runtime": 100, "res": 4} for k in range(1, 4)]
    wl = write_workload(tmp_path / "w.json", jobs, 16)
    simulate(str(plat), [str(wl)], make_scheduler(policy, {"window": 4}), export_prefix=str(tmp_path / "out"))
    with open(tmp_path / "out_jobs.csv", newline="") as fh:
        rows = {r["job_id"]: r for r in csv.DictReader(fh)}
    # the first MILP (window 4, holding the 3 jobs) hit its node limit: the window is halved to
    # 2, so the next round (still at 0) starts jobs 1 and 2 only, and job 3 waits one period
    assert rows["1"]["metadata"] == "window halved 1x (last at t=0.000 by the node limit: 4 -> 2 jobs; 3 were in it)"
    assert [float(rows[j]["starting_time"]) for j in "123"] == [0.0, 0.0, 5.0]
    assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in rows.values())
    assert window_halvings(rows.values()) == 1


@pytest.mark.parametrize("policy, target", [("ipsched", "mrsched.schedulers.policies.ipsched.solve_window"),
                                            ("aucsched", "mrsched.schedulers.policies.aucsched.winner_determination")])
@pytest.mark.parametrize("on_timeout, starts", [("incumbent", [0.0, 0.0, 0.0]), ("nothing", [0.0, 0.0, 5.0])])
def test_on_timeout_starts_the_incumbent_or_nothing(tmp_path, monkeypatch, policy, target, on_timeout, starts):
    """A MILP that hits its limit holding an answer for all 3 jobs: ``incumbent`` starts them at
    once; ``nothing`` (seed 002 Sect. 3.1) starts none that round, and the next round (still at 0)
    solves the halved window of 2, so job 3 waits one period."""
    import csv
    import dataclasses
    import importlib

    from cpugpu_runs import write_platform, write_workload

    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate

    module, name = target.rsplit(".", 1)
    real = getattr(importlib.import_module(module), name)
    calls = []

    def first_times_out_with_an_answer(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(1)
        if len(calls) > 1:
            return out
        return dataclasses.replace(out, status="limit", result=dataclasses.replace(out.result, stopped_by="time"))

    monkeypatch.setattr(target, first_times_out_with_an_answer)
    plat = write_platform(tmp_path / "p.xml", 4, 4, 2)
    jobs = [{"id": str(k), "subtime": 0, "runtime": 100, "res": 4} for k in range(1, 4)]
    wl = write_workload(tmp_path / "w.json", jobs, 16)
    simulate(str(plat), [str(wl)], make_scheduler(policy, {"window": 4, "on_timeout": on_timeout}),
             export_prefix=str(tmp_path / "out"))
    with open(tmp_path / "out_jobs.csv", newline="") as fh:
        rows = {r["job_id"]: r for r in csv.DictReader(fh)}
    assert [float(rows[j]["starting_time"]) for j in "123"] == starts
    assert rows["1"]["metadata"] == "window halved 1x (last at t=0.000 by the time limit: 4 -> 2 jobs; 3 were in it)"
