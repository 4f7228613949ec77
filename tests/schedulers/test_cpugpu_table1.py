"""Seed 002 Table 1 through ``mrsched run`` on Machine-L (1,024 nodes x 8 cores x 2 GPUs, one
Batsim resource per core): SLURM's best fit strands GPUs under J1 so J3 waits 1,000 s;
IPSCHED and AUCSCHED place the three jobs collectively and start them all at 0."""

from __future__ import annotations

import pytest
from cpugpu_runs import run_policy, write_platform, write_workload

TABLE1 = [
    {"id": "1", "subtime": 0, "runtime": 1000, "res": 4096, "cores": 4096},
    {"id": "2", "subtime": 0, "runtime": 1000, "res": 2048, "cores": 2048, "nodes": 512, "gpus_per_node": 2},
    {"id": "3", "subtime": 0, "runtime": 1000, "res": 2048, "cores": 2048, "nodes": 512, "gpus_per_node": 2},
]


@pytest.fixture(scope="module")
def machine_l(tmp_path_factory):
    d = tmp_path_factory.mktemp("table1")
    return d, write_platform(d / "machine_l.xml", 1024, 8, 2), write_workload(d / "t1.json", TABLE1, 8192)


def _check_requests(rows):
    # J1: 4096 cores anywhere; J2, J3: 512 nodes, 2048 cores, 2 GPUs on each node
    assert sum(rows["1"]["layout"].values()) == 4096
    for j in ("2", "3"):
        assert len(rows[j]["layout"]) == 512 and sum(rows[j]["layout"].values()) == 2048


def test_slurm_bf_strands_gpus_and_j3_waits(tmp_path, machine_l):
    d, plat, wl = machine_l
    rows = run_policy(tmp_path, plat, wl, "slurm-bf")
    start = {j: float(r["starting_time"]) for j, r in rows.items()}
    assert start["1"] == 0 and start["2"] == 0
    assert start["3"] == pytest.approx(1000, abs=0.01)
    assert max(float(r["finish_time"]) for r in rows.values()) == pytest.approx(2000, abs=0.01)
    _check_requests(rows)
    # J1 best-fit on 512 whole nodes, J2 on the other 512 (4 cores, both GPUs each)
    assert sorted(set(rows["1"]["layout"].values())) == [8] and len(rows["1"]["layout"]) == 512
    assert set(rows["2"]["layout"]).isdisjoint(rows["1"]["layout"])


@pytest.mark.parametrize("policy", ["ipsched", "aucsched"])
def test_collective_policies_start_all_three_at_once(tmp_path, machine_l, policy):
    d, plat, wl = machine_l
    rows = run_policy(tmp_path, plat, wl, policy)
    assert {j: float(r["starting_time"]) for j, r in rows.items()} == {"1": 0, "2": 0, "3": 0}
    assert max(float(r["finish_time"]) for r in rows.values()) == pytest.approx(1000)
    _check_requests(rows)
    # the GPU jobs share no node (2 + 2 GPUs > 2); J1 takes the cores left on all 1,024 nodes
    assert set(rows["2"]["layout"]).isdisjoint(rows["3"]["layout"])
    assert len(rows["1"]["layout"]) == 1024
    for node in range(1024):
        assert sum(rows[j]["layout"].get(node, 0) for j in "123") == 8
