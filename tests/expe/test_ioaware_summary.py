"""studies/ioaware_summary.py: pairs I/O-ignorant and I/O-aware runs and compares them."""

from __future__ import annotations

import json

import pytest

from mrsched.studies.ioaware_summary import summarise
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate

G = 1e9


def test_pairs_and_ratios(tmp_path):
    """Two 2-node jobs at 0.5 GB/s per node (10 s each) on one unit's 1 GB/s edge switch: the
    ignorant run overlaps them (goodput 0.5, both end at 10), the aware one serialises them
    (goodput 1, turnaround 10 and 20): efficiency ratio 2, turnaround ratio 15 / 10."""
    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=1, nodes_per_unit=4, edge_bandwidth="1GBps", core_bandwidth="10GBps",
                                    pfs_bandwidth="10GBps").xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 10}},
                              "jobs": [{"id": str(k), "subtime": 0, "walltime": 100, "res": 2, "profile": "d",
                                        "io_bandwidth_per_node": 0.5 * G} for k in range(2)]}))
    for aware in (False, True):
        run = tmp_path / "runs" / f"r{aware}"
        run.mkdir(parents=True)
        simulate(plat, [wl], make_scheduler("fcfs", {"io_aware": aware}), export_prefix=run / "out")
        (run / "manifest.json").write_text(json.dumps({
            "status": "ok", "policy": "fcfs", "options": {"io_aware": aware}, "platform": str(plat),
            "workload": str(wl), "platform_name": "u00", "workload_name": "w", "seed": 1}))
    rows, fractions = summarise(tmp_path)
    assert len(rows) == 1
    r = rows[0]
    assert r["goodput_ignorant"] == pytest.approx(0.5) and r["goodput_aware"] == pytest.approx(1.0)
    assert r["efficiency_ratio"] == pytest.approx(2.0)
    assert r["turnaround_ratio"] == pytest.approx(1.5, rel=1e-4)
    assert r["rejected_aware"] == 0
    assert sorted(fractions[("fcfs", "w", "u00", False)]) == pytest.approx([0.5, 0.5])
