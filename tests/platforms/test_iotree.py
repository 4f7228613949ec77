"""``mrsched platform iotree``: seed 004's CTS-1 bandwidth tree as SimGrid zones."""

from __future__ import annotations

import pytest

from mrsched.errors import PlatformError
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.simulator.platform import load_platform

G = 1e9


def test_cts1_default(tmp_path):
    p = generate_iotree()
    assert p.nb_nodes == 3888 and p.units == 24
    assert (p.edge_bw, p.core_bw, p.pfs_bw) == (216 * G, 432 * G, 70 * G)
    path = tmp_path / "cts1.xml"
    path.write_text(p.xml)
    plat = load_platform(str(path))           # 3,888 hosts: zones and implicit routing
    assert len(plat.compute_hosts()) == 3888
    route = [link.name for link in plat.route("su23_n161", "pfs").links]
    assert route == ["su23_link_161_UP", "su23_backbone", "core", "pfs_link"]
    assert plat.links["core"].bandwidth == 432 * G and plat.links["su23_backbone"].bandwidth == 216 * G


@pytest.mark.parametrize("under, pfs", [(0.0, 70 * G), (0.1, 63 * G), (0.2, 56 * G), (0.3, 49 * G)])
def test_underprovisioning(under, pfs):
    assert generate_iotree(units=1, nodes_per_unit=2, underprovision=under).pfs_bw == pytest.approx(pfs)


def test_tree_visible_to_schedulers(tmp_path):
    """SIMULATION_BEGINS host properties (as the engine sends them) give the scheduler the tree."""
    from mrsched.schedulers.model.cluster import cluster_from_simulation_begins

    path = tmp_path / "t.xml"
    path.write_text(generate_iotree(units=3, nodes_per_unit=4, edge_bandwidth="2GBps",
                                    core_bandwidth="3GBps", pfs_bandwidth="2.5GBps").xml)
    plat = load_platform(str(path))
    compute = [{"id": k, "name": h.name, "properties": dict(h.properties)} for k, h in enumerate(plat.compute_hosts())]
    storage = [{"id": 12, "name": "pfs", "properties": dict(plat.storage_hosts()[0].properties)}]
    tree = BandwidthTree.from_cluster(cluster_from_simulation_begins({"compute_resources": compute,
                                                                      "storage_resources": storage}))
    assert tree.edge_of == (0,) * 4 + (1,) * 4 + (2,) * 4
    assert tree.edge_bw == (2 * G,) * 3 and tree.top_bw == (3 * G, 2.5 * G)


@pytest.mark.parametrize("kw, field", [({"units": 0}, "units"), ({"underprovision": 1.0}, "underprovision"),
                                       ({"edge_bandwidth": "0GBps"}, "edge_bandwidth")])
def test_bad_parameters(kw, field):
    with pytest.raises(PlatformError) as err:
        generate_iotree(**kw)
    assert err.value.field == field


def test_cli(tmp_path, capsys):
    from mrsched.cli import main

    out = tmp_path / "p.xml"
    assert main(["platform", "iotree", "--units", "2", "--nodes-per-unit", "3", "--underprovision", "0.3",
                 "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == \
        f"wrote {out}: iotree: 6 compute nodes in 2 units; edge 216GBps, core 432GBps, PFS 49GBps"
    assert load_platform(str(out)).links["pfs_link"].bandwidth == 49 * G
    assert main(["platform", "iotree", "--underprovision", "2", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'underprovision' must be in [0, 1), got 2.0" in err
