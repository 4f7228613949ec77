"""Seed 002 Sect. 6 placement metrics: packing factor, fragmentation, spread, utilisation."""

from __future__ import annotations

import pytest
from cpugpu_helpers import run_on_small_machine

from mrsched.analysis.cpugpu import CoreMap, blocks, gpu_usage, placement_rows, seed002_metrics


def _map(nodes: int = 6, cores: int = 4) -> CoreMap:
    return CoreMap({n * cores + c: n for n in range(nodes) for c in range(cores)}, [f"node_{k}" for k in range(nodes)],
                   [cores] * nodes, [2] * nodes)


def test_placement_measures():
    cmap = _map()
    jobs = [
        # 8 cores on nodes 0 and 1: packed (2 / ceil(8/4)), one block, spread 1
        {"job_id": "a", "allocated_resources": "0-7", "submission_time": "0", "starting_time": "0",
         "execution_time": "100", "finish_time": "100"},
        # 3 cores on nodes 2, 4, 5: packing 3 / 1, two blocks, spread (5 - 2 + 1) / 3
        {"job_id": "b", "allocated_resources": "8 16 20", "submission_time": "0", "starting_time": "0",
         "execution_time": "100", "finish_time": "200"},
    ]
    rows = {r["job_id"]: r for r in placement_rows(jobs, cmap)}
    assert rows["a"]["packing_factor"] == 1 and rows["a"]["fragmentation"] == 1 and rows["a"]["spread"] == 1
    assert rows["b"]["packing_factor"] == 3 and rows["b"]["fragmentation"] == 2
    assert rows["b"]["spread"] == pytest.approx(4 / 3)
    m = seed002_metrics(jobs, cmap)
    # theoretical run time = (100 x 8 + 100 x 3) / 24 cores; run time = 200 s
    assert m["seed002_utilisation"] == pytest.approx(1100 / 24 / 200)
    assert m["fragmentation"] == 1.5
    assert blocks([5, 1, 2, 3]) == 2
    assert gpu_usage(jobs, {"a": 2}, cmap) == [(0.0, 4), (100.0, 0)]


def test_campaign_metrics_on_a_per_core_run(tmp_path):
    df = run_on_small_machine(tmp_path)
    row = df.iloc[0]
    assert row["packing_factor"] == 1.0 and row["fragmentation"] == 1.0 and row["spread"] == 1.0
    assert row["seed002_utilisation"] == pytest.approx(8 * 100 / 16 / 100)


def test_nodes_cores_and_gpus_over_time_count_gpus_per_node():
    from mrsched.analysis.cpugpu import cpugpu_series

    cmap = _map(nodes=2, cores=2)
    jobs = [  # a: 1 core of node 0 with 1 GPU, 0-10 s; b: both cores of node 1 with 2 GPUs, 5-15 s
        {"job_id": "a", "allocated_resources": "0", "starting_time": "0", "finish_time": "10"},
        {"job_id": "b", "allocated_resources": "2-3", "starting_time": "5", "finish_time": "15"},
    ]
    s = cpugpu_series(jobs, {"a": 1, "b": 2}, cmap)
    assert s["nodes"] == [(0.0, 0.5), (5.0, 1.0), (10.0, 0.5), (15.0, 0.0)]
    assert s["cores"] == [(0.0, 0.25), (5.0, 0.75), (10.0, 0.5), (15.0, 0.0)]
    # GPUs: gpus_per_node x nodes (b holds 2, not 2 x its 2 cores), out of 2 x 2
    assert s["gpus"] == [(0.0, 0.25), (5.0, 0.75), (10.0, 0.5), (15.0, 0.0)]


def test_window_halvings_are_read_from_job_metadata():
    from mrsched.analysis.cpugpu import window_halvings
    from mrsched.schedulers.policies.cpugpu import halving_metadata

    jobs = [{"metadata": halving_metadata(2, 10.0, 200, 100, 120, "node")}, {"metadata": ""},
            {"metadata": halving_metadata(1, 20.0, 50, 25, 50, "time")}, {"metadata": "rejected: too big"}]
    assert window_halvings(jobs) == 3


def test_gpu_utilisation_of_a_per_core_run_counts_each_gpu_once(tmp_path):
    import json

    from mrsched.analysis.campaign import campaign_metrics
    from mrsched.cli import main
    from mrsched.platforms.cluster import generate_cluster

    plat = tmp_path / "p.xml"
    plat.write_text(generate_cluster(nodes=4, cores=4, gpus=2, pfs=False).xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 16, "profiles": {"s": {"type": "delay", "delay": 100}},
                              "jobs": [{"id": "1", "subtime": 0, "walltime": 200, "res": 4, "nodes": 2,
                                        "cores_per_node": 2, "gpus_per_node": 2, "profile": "s"}]}))
    assert main(["run", "-p", str(plat), "-w", str(wl), "--policy", "slurm-bf", "--out", str(tmp_path / "run")]) == 0
    row = campaign_metrics(tmp_path / "run").iloc[0]
    # 2 nodes x 2 GPUs busy for the whole run out of 4 x 2 GPUs (not 2 x 4 cores' worth of 16 x 2)
    assert row["utilisation_gpus"] == pytest.approx(0.5)
    assert row["window_halvings"] == 0


def test_report_draws_nodes_cores_and_gpus_of_a_per_core_run(tmp_path):
    from mrsched.analysis.report import write_report

    run_on_small_machine(tmp_path)
    index = write_report(tmp_path / "run", tmp_path / "report")
    html = index.read_text()
    assert "(c) share of nodes, cores, GPUs in use" in html
    assert "Gantt chart: executed Batsim jobs over the machine&#x27;s 16 compute resources" in html
