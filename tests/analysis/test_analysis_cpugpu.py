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
