"""studies/ioaware_knowledge_summary.py: each knowledge source's run scored with true rates."""

from __future__ import annotations

import json

import pytest

from mrsched.studies.ioaware_knowledge_summary import summarise, table
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate

MB = 1e6


def test_requested_vs_perfect_by_hand(tmp_path):
    """PFS 500 MB/s; two 1-node 10-s jobs state 100 MB/s but drain 400 and 200. On their word
    both start at 0: progressive filling gives 200 and 300 (I = 0.75 for the first), goodput
    (10 + 7.5) / 20; knowing the truth, the second waits: goodput 1, turnaround (10 + 20) / 2."""
    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=1, nodes_per_unit=4, edge_bandwidth="10GBps", core_bandwidth="10GBps",
                                    pfs_bandwidth="500MBps").xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 10}},
                              "jobs": [{"id": str(k), "subtime": 0, "walltime": 100, "res": 1, "profile": "d",
                                        "io_bandwidth_per_node": 100 * MB, "true_runtime": 10,
                                        "true_io_bandwidth_per_node": rate} for k, rate in enumerate((400 * MB, 200 * MB))]}))
    for source in ("requested", "perfect"):
        run = tmp_path / "runs" / source
        run.mkdir(parents=True)
        options = {"io_aware": True, "knowledge": source}
        simulate(plat, [wl], make_scheduler("fcfs", options), export_prefix=run / "out")
        (run / "manifest.json").write_text(json.dumps({
            "status": "ok", "policy": "fcfs", "options": options, "platform": str(plat), "workload": str(wl),
            "platform_name": "u", "workload_name": "w", "seed": 1}))
    rows = {r["variant"]: r for r in summarise(tmp_path)}
    req, per = rows["fcfs/requested"], rows["fcfs/perfect"]
    assert req["goodput"] == pytest.approx(17.5 / 20) and per["goodput"] == pytest.approx(1.0)
    assert req["mean_turnaround"] == pytest.approx(10.0, abs=1e-3)
    assert per["mean_turnaround"] == pytest.approx(15.0, abs=1e-3)
    assert req["io_rate_accuracy_mean"] == pytest.approx((0.25 + 0.5) / 2)
    assert per["io_rate_accuracy_mean"] == 1.0 and per["runtime_accuracy_mean"] == 1.0
    assert req["runtime_accuracy_mean"] == pytest.approx(0.1)          # walltime 100 for 10 s
    md = table(list(rows.values()), "w", "u")
    assert md.count("\n") == 3 and "| fcfs/perfect | 1.000 |" in md


def test_anticipation_replays_every_source_on_the_ignorant_run(tmp_path):
    from mrsched.studies.ioaware_knowledge_summary import anticipation

    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=1, nodes_per_unit=4, pfs_bandwidth="500MBps").xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 10}},
                              "jobs": [{"id": str(k), "subtime": 5 * k, "walltime": 100, "res": 1, "profile": "d",
                                        "io_bandwidth_per_node": 100 * MB, "true_runtime": 10, "user": "u",
                                        "true_io_bandwidth_per_node": 300 * MB} for k in range(6)]}))
    run = tmp_path / "runs" / "ign"
    run.mkdir(parents=True)
    simulate(plat, [wl], make_scheduler("fcfs-easy", {}), export_prefix=run / "out")
    (run / "manifest.json").write_text(json.dumps({
        "status": "ok", "policy": "fcfs-easy", "policy_label": "easy-ignorant", "options": {"io_aware": False},
        "platform": str(plat), "workload": str(wl), "platform_name": "u", "workload_name": "w", "seed": 1}))
    rows = {r["variant"]: r for r in anticipation(tmp_path)}
    assert set(rows) == {"requested", "perfect", "noisy", "learned"}
    assert rows["perfect"]["io_rate_accuracy_mean"] == 1.0
    assert rows["requested"]["io_rate_accuracy_mean"] == pytest.approx(1 / 3)
    # learned: jobs 0 and 1 run before any completion (stated rate), later ones learn 300 MB/s
    assert rows["learned"]["io_rate_accuracy_mean"] == pytest.approx((2 / 3 + 4) / 6)
