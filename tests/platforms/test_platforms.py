"""Platform generators: seed 001's machine, routes, properties, bundled files, CLI."""

from __future__ import annotations

import importlib
import json
import xml.etree.ElementTree as ET

import pytest

from mrsched.cli import main
from mrsched.errors import PlatformError
from mrsched.platforms.bundled import BUNDLED, HERE, bundled_path
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.description import format_bandwidth, format_speed, format_time
from mrsched.platforms.dragonfly import generate_dragonfly, storage_ranks


@pytest.fixture(scope="module")
def df96():
    return generate_dragonfly()


def _hosts(xml: str) -> dict[str, dict[str, str]]:
    root = ET.fromstring(xml.split("\n", 2)[2])  # skip the prolog + DOCTYPE
    return {h.get("id"): {p.get("id"): p.get("value") for p in h.findall("prop")} | {"_speed": h.get("speed")}
            for h in root.iter("host")}


def test_default_dragonfly_is_seed_001_machine(df96):
    hosts = _hosts(df96.xml)
    assert len(hosts) == 110  # 108 nodes + pfs + master
    nodes = [f"node_{k}" for k in range(108)]
    assert all(n in hosts for n in nodes)
    roles = [hosts[n].get("role", "compute") for n in nodes]
    assert roles.count("compute") == 96 and roles.count("storage") == 12
    storage = [n for n in nodes if hosts[n].get("role") == "storage"]
    assert storage == [f"node_{9 * c + 8}" for c in range(12)]  # last node of each chassis
    assert {hosts[n]["bb_capacity"] for n in storage} == {"40000000000"}
    assert sorted(int(hosts[n]["chassis"]) for n in storage) == list(range(12))
    assert all(hosts[n]["_speed"] == "1Gf" for n in nodes)
    for n in nodes:
        assert {"group", "chassis", "router"} <= set(hosts[n])
        # Batsim's roles are master, compute_node, storage or none: compute hosts carry none
        assert hosts[n].get("role") in (None, "storage")
    assert hosts["node_40"]["group"] == "1" and hosts["node_40"]["chassis"] == "4" and hosts["node_40"]["router"] == "13"
    assert hosts["pfs"]["role"] == "storage" and hosts["pfs"]["pfs"] == "true" and "bb_capacity" not in hosts["pfs"]
    assert hosts["master"]["role"] == "master"
    desc = df96.description
    assert desc.link("pfs_link").bandwidth == 5e9
    assert desc.link("node_0_link").bandwidth == 1.25e9 and desc.link("node_0_link").latency == pytest.approx(50e-6)
    assert len(desc.routes) == 110 * 109 // 2


def test_batsim_id_order_is_lexicographic(df96):
    order = df96.description.batsim_order()
    assert len(order) == 109 and "master" not in order  # 96 compute + 12 storage + pfs
    assert order[:4] == ["node_0", "node_1", "node_10", "node_100"]
    assert order[95] == "node_99" and order[96:98] == ["node_107", "node_17"] and order[-1] == "pfs"


def test_routes_follow_dragonfly_minimal_routing(df96):
    d = df96.description
    assert d.route("node_0", "node_1") == ("node_0_link", "node_1_link")                 # same router
    assert d.route("node_0", "node_3") == ("node_0_link", "green_g0_c0_r0_r1", "node_3_link")   # same chassis
    assert d.route("node_0", "node_9") == ("node_0_link", "black_g0_r0_c0_c1", "node_9_link")   # across chassis
    assert d.route("node_1", "node_14") == ("node_1_link", "green_g0_c0_r0_r1", "black_g0_r1_c0_c1", "node_14_link")
    # across groups: to router 1 of group 0 (wired to group 1), blue, from router 0 of group 1
    assert d.route("node_0", "node_40") == ("node_0_link", "green_g0_c0_r0_r1", "blue_g0_g1",
                                            "green_g1_c0_r0_r1", "node_40_link")
    assert d.route("node_40", "node_0") == tuple(reversed(d.route("node_0", "node_40")))
    assert d.route_latency("node_0", "node_40") == pytest.approx(5 * 50e-6)
    # every pair's route has at most 7 links (node, green, black, blue, green, black, node)
    assert max(len(r) for r in d.routes.values()) == 7


def test_pfs_route_crosses_only_the_node_link_and_the_pfs_link(df96):
    d = df96.description
    for node in ("node_0", "node_8", "node_57", "node_107"):
        assert d.route(node, "pfs") == (f"{node}_link", "pfs_link")
    assert d.route_latency("node_0", "pfs") == pytest.approx(50e-6 + 100e-6)
    assert not any(name.startswith(("green", "black", "blue")) for name in d.route("node_107", "pfs"))
    assert d.route("master", "node_3") == ("master_link", "node_3_link")
    assert d.link("master_link").sharing == "FATPIPE"


def test_every_link_in_a_route_is_declared(df96):
    root = ET.fromstring(df96.xml.split("\n", 2)[2])
    links = {lk.get("id") for lk in root.iter("link")}
    hosts = {h.get("id") for h in root.iter("host")}
    pairs = set()
    for route in root.iter("route"):
        assert route.get("src") in hosts and route.get("dst") in hosts
        assert {c.get("id") for c in route.findall("link_ctn")} <= links
        pair = frozenset((route.get("src"), route.get("dst")))
        assert pair not in pairs  # symmetrical: one declaration per pair
        pairs.add(pair)
    assert root.find("zone").get("routing") == "Full"
    assert {el.tag for el in root.iter()} == {"platform", "zone", "host", "prop", "link", "route", "link_ctn"}


def test_storage_placement_options():
    assert storage_ranks(3, 4, 3, 3, storage_per_chassis=2) == sorted(
        r for c in range(12) for r in (9 * c + 7, 9 * c + 8))
    per_group = storage_ranks(3, 4, 3, 3, storage_per_chassis=None, storage_per_group=2)
    assert per_group == [8, 17, 44, 53, 80, 89]  # chassis 0 and 1 of each group
    count = storage_ranks(3, 4, 3, 3, storage_count=4)
    assert count == [8, 17, 44, 80]  # chassis 0 of groups 0, 1, 2, then chassis 1 of group 0
    assert storage_ranks(3, 4, 3, 3, storage_per_chassis=0) == []
    with pytest.raises(PlatformError, match="chassis"):
        storage_ranks(1, 1, 1, 2, storage_per_chassis=3)
    with pytest.raises(PlatformError, match="no compute node"):
        storage_ranks(1, 1, 1, 2, storage_per_chassis=2)


def test_dragonfly_parameters_scale_and_validate():
    small = generate_dragonfly(groups=2, chassis=2, routers=2, nodes_per_router=2, bb_capacity="8GB",
                               pfs_bandwidth="1GBps")
    d = small.description
    assert len(d.compute_hosts()) == 12 and len(d.storage_hosts()) == 4
    assert d.storage_hosts()[0].properties["bb_capacity"] == "8000000000"
    assert d.link("pfs_link").bandwidth == 1e9
    with pytest.raises(PlatformError, match="groups"):
        generate_dragonfly(groups=5, chassis=1, routers=3)  # a group cannot wire 4 global links
    with pytest.raises(PlatformError, match="nodes_per_router"):
        generate_dragonfly(nodes_per_router=0)
    with pytest.raises(PlatformError, match="too many"):
        generate_dragonfly(groups=9, chassis=6, routers=4, nodes_per_router=6)
    with pytest.raises(Exception, match="bandwidth"):
        generate_dragonfly(pfs_bandwidth="fast")


def test_generation_is_deterministic(df96):
    assert generate_dragonfly().xml == df96.xml


def test_cluster_generator():
    c = generate_cluster(nodes=4, storage=2, bb_capacity="10GB", pfs_bandwidth="500MBps", gpus=2)
    hosts = _hosts(c.xml)
    assert [h for h in hosts if "role" not in hosts[h]] == ["node_0", "node_1", "node_2", "node_3"]
    assert hosts["bb_1"] == {"role": "storage", "bb_capacity": "10000000000", "_speed": "1Gf"}
    assert hosts["node_0"]["gpus"] == "2"
    assert hosts["pfs"]["pfs"] == "true"
    d = c.description
    assert d.route("node_2", "bb_0") == ("node_2_link", "bb_0_link")
    assert d.route("bb_1", "pfs") == ("bb_1_link", "pfs_link")
    assert d.link("pfs_link").bandwidth == 5e8
    assert len(d.routes) == 8 * 7 // 2
    with pytest.raises(PlatformError, match="nodes"):
        generate_cluster(nodes=0)
    with pytest.raises(PlatformError, match="too many"):
        generate_cluster(nodes=5000)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_platforms_regenerate_byte_for_byte(name):
    assert bundled_path(name).read_text(encoding="utf-8") == BUNDLED[name]().xml, (
        f"{name} is stale: run `mrsched platform bundled --write`")


def test_bundled_path_unknown_name():
    with pytest.raises(PlatformError, match="did you mean 'dragonfly96.xml'"):
        bundled_path("dragonfly69")
    assert bundled_path("cluster16") == HERE / "cluster16.xml"


def test_unit_formatting():
    assert format_speed(1e9) == "1Gf" and format_speed(1.5e9) == "1500Mf"
    assert format_bandwidth(1.25e9) == "1250MBps" and format_bandwidth(5e9) == "5GBps"
    assert format_time(50e-6) == "50us" and format_time(1e-4) == "100us" and format_time(0) == "0s"
    assert format_time(2.0) == "2s"


def test_cli_writes_platform_and_description(tmp_path, capsys):
    out, desc = tmp_path / "df.xml", tmp_path / "df.json"
    assert main(["platform", "dragonfly", "--groups", "2", "--chassis", "2", "--routers", "2",
                 "--nodes-per-router", "2", "--storage-count", "3", "--bb-capacity", "20GB",
                 "-o", str(out), "--describe", str(desc)]) == 0
    assert "13 compute, 3 storage" in capsys.readouterr().out
    assert out.read_text() == generate_dragonfly(groups=2, chassis=2, routers=2, nodes_per_router=2,
                                                 storage_per_chassis=None, storage_count=3,
                                                 bb_capacity="20GB").xml
    info = json.loads(desc.read_text())
    assert info["kind"] == "dragonfly" and len(info["hosts"]) == 18
    assert main(["platform", "cluster", "--nodes", "3", "--storage", "1", "-o", str(tmp_path / "c.xml")]) == 0
    assert main(["platform", "cluster", "--nodes", "-1", "-o", str(tmp_path / "bad.xml")]) == 2
    assert "field 'nodes'" in capsys.readouterr().err


# --- routes as the embedded simulator's loader sees them (SimGrid semantics of our XML) ---

def _loader():
    try:
        return importlib.import_module("mrsched.simulator.platform")
    except ImportError as exc:  # the simulator area is built in parallel
        pytest.skip(f"mrsched.simulator.platform is not importable yet ({exc})")


@pytest.fixture(scope="module")
def loaded_df96():
    module = _loader()
    return module.load_platform(str(bundled_path("dragonfly96.xml")))


@pytest.mark.parametrize("src,dst,links", [
    ("node_0", "node_2", ["node_0_link", "node_2_link"]),
    ("node_0", "node_4", ["node_0_link", "green_g0_c0_r0_r1", "node_4_link"]),
    ("node_0", "node_10", ["node_0_link", "black_g0_r0_c0_c1", "node_10_link"]),
    ("node_0", "node_40", ["node_0_link", "green_g0_c0_r0_r1", "blue_g0_g1", "green_g1_c0_r0_r1", "node_40_link"]),
    ("node_40", "node_0", ["node_40_link", "green_g1_c0_r0_r1", "blue_g0_g1", "green_g0_c0_r0_r1", "node_0_link"]),
    ("node_5", "pfs", ["node_5_link", "pfs_link"]),
    ("pfs", "node_8", ["pfs_link", "node_8_link"]),
])
def test_loader_routes(loaded_df96, src, dst, links):
    route = loaded_df96.route(src, dst)
    assert [lk.name for lk in route.links] == links
    n_cables = len(links)
    expected_latency = 100e-6 + (n_cables - 1) * 50e-6 if "pfs_link" in links else n_cables * 50e-6
    assert route.latency == pytest.approx(expected_latency)


def test_loader_hosts_and_roles(loaded_df96):
    p = loaded_df96
    assert len(p.compute_hosts()) == 96
    names = [h.name if hasattr(h, "name") else h for h in p.storage_hosts()]
    assert "pfs" in names and "node_8" in names
    assert p.hosts["node_8"].properties["bb_capacity"] == "40000000000"
    assert p.links["pfs_link"].bandwidth == pytest.approx(5e9)


def test_loader_resource_order_matches_description(loaded_df96, df96):
    assert [h.name for h in loaded_df96.resources()] == df96.description.batsim_order()
