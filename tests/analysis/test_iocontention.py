"""Seed 004's contention model (Sect. 3.3.4) on hand-worked examples."""

from __future__ import annotations

import pytest

from mrsched.analysis.iocontention import IoJob, contention, interference, progressive_filling, tree_of_platform
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.schedulers.model.cluster import Cluster

G = 1e9


def tree(units=2, per_unit=4, edge=1 * G, core=10 * G, pfs=2 * G, node=100 * G) -> BandwidthTree:
    n = units * per_unit
    props = {k: {"edge": str(k // per_unit), "edge_bw": repr(edge), "node_bw": repr(node)} for k in range(n)}
    props[n] = {"role": "storage", "pfs": "true", "pfs_bw": repr(pfs), "core_bw": repr(core)}
    cl = Cluster(compute_ids=tuple(range(n)), compute_names=tuple(f"n{k}" for k in range(n)), pfs_id=n,
                 properties=props)
    return BandwidthTree.from_cluster(cl)


@pytest.mark.parametrize("peak, requests, expected", [
    (10.0, [2.0, 6.0, 6.0], [2.0, 4.0, 4.0]),        # small request satisfied, the rest split evenly
    (10.0, [3.0, 1.0, 2.0], [3.0, 1.0, 2.0]),        # under capacity: everyone served, order kept
    (9.0, [5.0, 1.0, 5.0, 5.0], [8 / 3, 1.0, 8 / 3, 8 / 3]),
    (4.0, [], []),
])
def test_progressive_filling(peak, requests, expected):
    assert progressive_filling(peak, requests) == pytest.approx(expected)


def test_interference_takes_the_worst_level_of_each_job():
    """Edge 0 carries A and B (1 GB/s each, peak 1): 0.5 each; the PFS (peak 2) carries three
    1 GB/s jobs: 2/3 each; so I_A = I_B = 0.5 (edge), I_C = 2/3 (PFS)."""
    t = tree()
    a, b, c = (IoJob("A", 0b0011, 0.5 * G, 0, 10), IoJob("B", 0b1100, 0.5 * G, 0, 10),
               IoJob("C", 0b110000, 0.5 * G, 0, 10))
    assert interference(t, [a, b, c]) == pytest.approx({"A": 0.5, "B": 0.5, "C": 2 / 3})
    assert interference(t, [a, c]) == pytest.approx({"A": 1.0, "C": 1.0})
    assert interference(t, [a, IoJob("quiet", 0b1100, 0.0, 0, 10)]) == {"A": 1.0, "quiet": 1.0}


def test_goodput_of_a_small_schedule():
    """A [0,10) and B [0,20) on unit 0, C [5,15) on unit 1 (rates as above):
    [0,5) I_A = I_B = 0.5; [5,10) also I_C = 2/3; [10,20) no contention.
    A computes 5 of 10 s, B 15 of 20, C 5 x 2/3 + 5 = 8.33 of 10;
    goodput = (2x5 + 2x15 + 2x8.33) / (2x10 + 2x20 + 2x10) = 0.7083; contended 10 of 20 s."""
    t = tree()
    res = contention(t, [IoJob("A", 0b0011, 0.5 * G, 0, 10), IoJob("B", 0b1100, 0.5 * G, 0, 20),
                         IoJob("C", 0b110000, 0.5 * G, 5, 15)])
    got = {j.id: j.t_computing for j in res.jobs}
    assert got == pytest.approx({"A": 5.0, "B": 15.0, "C": 5 * 2 / 3 + 5})
    assert {j.id: j.t_io for j in res.jobs} == pytest.approx({"A": 5.0, "B": 5.0, "C": 5 / 3})
    m = res.metrics()
    assert m["goodput"] == pytest.approx((10 + 30 + 2 * (10 / 3 + 5)) / 80)
    assert m["computing_fraction_min"] == pytest.approx(0.5)
    assert m["computing_fraction_max"] == pytest.approx(10 / 3 / 10 + 0.5)
    assert m["jobs_contended"] == 3
    assert m["time_contended_share"] == pytest.approx(0.5)


def test_no_contention_means_full_goodput():
    res = contention(tree(pfs=100 * G, edge=100 * G), [IoJob("A", 0b1111, G, 0, 10), IoJob("B", 0b11110000, G, 3, 8)])
    assert res.metrics()["goodput"] == 1.0 and res.metrics()["jobs_contended"] == 0


def test_tree_of_a_generated_platform(tmp_path):
    p = tmp_path / "t.xml"
    p.write_text(generate_iotree(units=3, nodes_per_unit=4, underprovision=0.3).xml)
    t, index_of = tree_of_platform(p)
    assert t.edge_of == (0,) * 4 + (1,) * 4 + (2,) * 4
    assert t.edge_bw == (216 * G,) * 3 and t.top_bw == (432 * G, 49 * G) and t.node_bw == 12.5 * G
    assert index_of == {k: k for k in range(12)}


def test_a_run_scored_from_its_files(tmp_path, capsys):
    """The analysis CLI on a real embedded-engine run: two 1 GB/s jobs on one 1 GB/s edge switch."""
    import csv
    import json

    from mrsched.analysis.iocontention import main
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate

    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=2, nodes_per_unit=4, edge_bandwidth="1GBps", core_bandwidth="10GBps",
                                    pfs_bandwidth="2GBps").xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 8, "profiles": {"d": {"type": "delay", "delay": 10}},
                              "jobs": [{"id": str(k), "subtime": 0, "walltime": 100, "res": 2, "profile": "d",
                                        "io_bandwidth_per_node": 0.5 * G} for k in range(2)]}))
    run = tmp_path / "run"
    run.mkdir()
    simulate(plat, [wl], make_scheduler("fcfs", {}), export_prefix=run / "out")
    assert main([str(run), str(plat), str(wl)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["goodput"] == pytest.approx(0.5) and metrics["jobs_contended"] == 2
    with open(run / "io_contention.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["t_computing"]) for r in rows] == pytest.approx([5.0, 5.0])
    assert main([str(tmp_path), str(plat), str(wl)]) == 2
    assert "not a finished run directory" in capsys.readouterr().err


def test_a_run_is_scored_with_the_true_rates(tmp_path):
    """The jobs state 0.5 GB/s (contention on the 1 GB/s switch) but really drain 0.25: none."""
    import json

    from mrsched.analysis.iocontention import run_contention
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate

    plat = tmp_path / "p.xml"
    plat.write_text(generate_iotree(units=2, nodes_per_unit=4, edge_bandwidth="1GBps", core_bandwidth="10GBps",
                                    pfs_bandwidth="2GBps").xml)
    jobs = [{"id": str(k), "subtime": 0, "walltime": 100, "res": 2, "profile": "d", "io_bandwidth_per_node": 0.5 * G}
            for k in range(2)]
    for rate, goodput in ((None, 0.5), (0.25 * G, 1.0)):
        if rate is not None:
            for j in jobs:
                j["true_io_bandwidth_per_node"] = rate
        wl = tmp_path / "w.json"
        wl.write_text(json.dumps({"nb_res": 8, "profiles": {"d": {"type": "delay", "delay": 10}}, "jobs": jobs}))
        run = tmp_path / f"run{goodput}"
        run.mkdir()
        simulate(plat, [wl], make_scheduler("fcfs", {}), export_prefix=run / "out")
        assert run_contention(run / "out_jobs.csv", plat, wl).goodput == pytest.approx(goodput)
