"""Platform generators: seed 001's machine, routes, properties, bundled files, CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from mrsched.cli import main
from mrsched.errors import ConfigError, PlatformError
from mrsched.platforms.bundled import BUNDLED, HERE, bundled_path
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.description import format_bandwidth, format_speed, format_time
from mrsched.platforms.dragonfly import generate_dragonfly, storage_ranks
from mrsched.simulator.platform import load_platform


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
    # every ordered pair is a one-way route (split-duplex halves), but pfs <-> master (no halves)
    assert len(desc.routes) == 110 * 109 - 1 and ("master", "pfs") not in desc.routes
    assert {desc.link(f"node_{k}_link").sharing for k in range(108)} == {"SPLITDUPLEX"}
    assert {lk.sharing for lk in desc.links if lk.name.startswith(("green", "black", "blue"))} == {"SPLITDUPLEX"}
    assert desc.link("pfs_link").sharing == "SHARED" and desc.link("pfs_link").latency == pytest.approx(100e-6)
    assert desc.link("node_0_link_UP") is desc.link("node_0_link_DOWN") is desc.link("node_0_link")
    with pytest.raises(PlatformError, match="no link 'node_0_link_LEFT'"):
        desc.link("node_0_link_LEFT")


def test_batsim_id_order_is_lexicographic(df96):
    order = df96.description.batsim_order()
    assert len(order) == 109 and "master" not in order  # 96 compute + 12 storage + pfs
    assert order[:4] == ["node_0", "node_1", "node_10", "node_100"]
    assert order[95] == "node_99" and order[96:98] == ["node_107", "node_17"] and order[-1] == "pfs"


def test_routes_follow_dragonfly_minimal_routing(df96):
    d = df96.description
    # a node sends on its link's UP half and receives on its DOWN half
    assert d.route("node_0", "node_1") == ("node_0_link_UP", "node_1_link_DOWN")                 # same router
    assert d.route("node_1", "node_0") == ("node_1_link_UP", "node_0_link_DOWN")
    # cables: UP from the lower router / chassis / group to the higher, DOWN back
    assert d.route("node_0", "node_3") == ("node_0_link_UP", "green_g0_c0_r0_r1_UP", "node_3_link_DOWN")
    assert d.route("node_3", "node_0") == ("node_3_link_UP", "green_g0_c0_r0_r1_DOWN", "node_0_link_DOWN")
    assert d.route("node_0", "node_9") == ("node_0_link_UP", "black_g0_r0_c0_c1_UP", "node_9_link_DOWN")
    assert d.route("node_9", "node_0") == ("node_9_link_UP", "black_g0_r0_c0_c1_DOWN", "node_0_link_DOWN")
    assert d.route("node_1", "node_14") == ("node_1_link_UP", "green_g0_c0_r0_r1_UP", "black_g0_r1_c0_c1_UP",
                                            "node_14_link_DOWN")
    # across groups: to router 1 of group 0 (wired to group 1), blue, from router 0 of group 1
    assert d.route("node_0", "node_40") == ("node_0_link_UP", "green_g0_c0_r0_r1_UP", "blue_g0_g1_UP",
                                            "green_g1_c0_r0_r1_UP", "node_40_link_DOWN")
    # the way back crosses the same cables in reverse order, on their other halves
    assert d.route("node_40", "node_0") == ("node_40_link_UP", "green_g1_c0_r0_r1_DOWN", "blue_g0_g1_DOWN",
                                            "green_g0_c0_r0_r1_DOWN", "node_0_link_DOWN")
    # from chassis 1 of group 1 to group 0: black back to chassis 0 (DOWN), then blue DOWN
    assert d.route("node_46", "node_0") == ("node_46_link_UP", "black_g1_r0_c0_c1_DOWN", "blue_g0_g1_DOWN",
                                            "green_g0_c0_r0_r1_DOWN", "node_0_link_DOWN")
    # SimGrid's quirk inside a group: after a green hop it continues from chassis 0's router,
    # so chassis 1 -> chassis 1 (another router) crosses the chassis 0 <-> 1 black cable ...
    assert d.route("node_9", "node_12") == ("node_9_link_UP", "green_g0_c1_r0_r1_UP", "black_g0_r1_c0_c1_UP",
                                            "node_12_link_DOWN")
    assert d.route("node_12", "node_9") == ("node_12_link_UP", "green_g0_c1_r0_r1_DOWN", "black_g0_r0_c0_c1_UP",
                                            "node_9_link_DOWN")
    # ... and chassis 1 -> chassis 0 (another router) crosses no black cable at all
    assert d.route("node_9", "node_3") == ("node_9_link_UP", "green_g0_c1_r0_r1_UP", "node_3_link_DOWN")
    assert d.route_latency("node_0", "node_40") == pytest.approx(5 * 50e-6)
    # every pair's route has at most 7 links (node, green, black, blue, green, black, node)
    assert max(len(r) for r in d.routes.values()) == 7


def test_pfs_route_crosses_only_the_node_link_and_the_pfs_link(df96):
    d = df96.description
    for node in ("node_0", "node_8", "node_57", "node_107"):
        assert d.route(node, "pfs") == (f"{node}_link_UP", "pfs_link")     # writes leave on the UP half
        assert d.route("pfs", node) == ("pfs_link", f"{node}_link_DOWN")   # reads arrive on the DOWN half
    assert d.route_latency("node_0", "pfs") == pytest.approx(50e-6 + 100e-6)
    assert not any(name.startswith(("green", "black", "blue")) for name in d.route("node_107", "pfs"))
    assert d.route("master", "node_3") == ("master_link", "node_3_link_DOWN")
    assert d.route("node_3", "master") == ("node_3_link_UP", "master_link")
    assert d.route("pfs", "master") == ("pfs_link", "master_link") and d.route("master", "pfs") == ("master_link", "pfs_link")
    assert d.link("master_link").sharing == "FATPIPE"


def _declared_routes(xml: str) -> dict[tuple[str, str], list[str]]:
    """Every ordered host pair's route as SimGrid 3.25 reads the XML (no UP/DOWN swap on the way back).

    Checks on the way that each link_ctn names a declared link, with a direction exactly when
    the link is SPLITDUPLEX, and that no ordered pair is declared twice.
    """
    root = ET.fromstring(xml.split("\n", 2)[2])
    sharing = {lk.get("id"): lk.get("sharing_policy", "SHARED") for lk in root.iter("link")}
    hosts = {h.get("id") for h in root.iter("host")}
    routes: dict[tuple[str, str], list[str]] = {}
    for route in root.iter("route"):
        src, dst = route.get("src"), route.get("dst")
        assert src in hosts and dst in hosts
        crossed = []
        for ctn in route.findall("link_ctn"):
            assert ctn.get("id") in sharing
            split = sharing[ctn.get("id")] == "SPLITDUPLEX"
            assert (ctn.get("direction") in ("UP", "DOWN")) if split else ctn.get("direction") is None
            crossed.append(f"{ctn.get('id')}_{ctn.get('direction')}" if split else ctn.get("id"))
        pairs = [(src, dst)] if route.get("symmetrical") == "NO" else [(src, dst), (dst, src)]
        for pair, links in zip(pairs, (crossed, crossed[::-1])):
            assert pair not in routes, f"route {pair} declared twice"
            routes[pair] = links
    assert root.find("zone").get("routing") == "Full"
    assert {el.tag for el in root.iter()} == {"platform", "zone", "host", "prop", "link", "route", "link_ctn"}
    return routes


def test_every_link_in_a_route_is_declared(df96):
    routes = _declared_routes(df96.xml)
    hosts = [h.name for h in df96.description.hosts]
    assert set(routes) == {(a, b) for a in hosts for b in hosts if a != b}
    # read without any UP/DOWN swap (SimGrid 3.25's reading), the file gives the description's routes
    assert all(routes[pair] == list(df96.description.route(*pair)) for pair in routes)


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
        generate_dragonfly(groups=9, chassis=6, routers=4, nodes_per_router=6, form="explicit")
    with pytest.raises(ConfigError, match="cannot read bandwidth 'fast'"):
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
    # SimGrid's flat cluster: the sender's private link UP, the receiver's DOWN
    assert d.route("node_2", "bb_0") == ("node_2_link_UP", "bb_0_link_DOWN")
    assert d.route("bb_0", "node_2") == ("bb_0_link_UP", "node_2_link_DOWN")
    assert d.route("bb_1", "pfs") == ("bb_1_link_UP", "pfs_link")
    assert d.route("pfs", "bb_1") == ("pfs_link", "bb_1_link_DOWN")
    assert d.link("pfs_link").bandwidth == 5e8 and d.link("pfs_link").sharing == "SHARED"
    assert d.link("master_link").sharing == "FATPIPE" and d.link("node_3_link").sharing == "SPLITDUPLEX"
    assert len(d.routes) == 8 * 7 - 1  # all one-way, but pfs <-> master
    hosts = [h.name for h in d.hosts]
    assert _declared_routes(c.xml) == {(a, b): list(d.route(a, b)) for a in hosts for b in hosts if a != b}
    with pytest.raises(PlatformError, match="nodes"):
        generate_cluster(nodes=0)
    big = generate_cluster(nodes=5000)   # beyond Full routing: one <cluster> zone (tests/platforms/test_cpugpu_platform.py)
    assert '<cluster id="machine" prefix="node_" suffix="" radical="0-4999"' in big.xml


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
    assert 'sharing_policy="SPLITDUPLEX"' in (tmp_path / "c.xml").read_text()
    assert main(["platform", "cluster", "--nodes", "3", "--link-sharing", "shared", "-o", str(tmp_path / "s.xml")]) == 0
    assert (tmp_path / "s.xml").read_text() == generate_cluster(nodes=3, link_sharing="shared").xml
    assert main(["platform", "dragonfly", "--groups", "1", "--chassis", "2", "--routers", "2", "--nodes-per-router", "1",
                 "--link-sharing", "shared", "-o", str(tmp_path / "d.xml")]) == 0
    assert "SPLITDUPLEX" not in (tmp_path / "d.xml").read_text()
    assert main(["platform", "cluster", "--nodes", "-1", "-o", str(tmp_path / "bad.xml")]) == 2
    assert "field 'nodes'" in capsys.readouterr().err


# --- routes as the embedded simulator's loader sees them (SimGrid semantics of our XML) ---

@pytest.fixture(scope="module")
def loaded_df96():
    return load_platform(str(bundled_path("dragonfly96.xml")))


@pytest.mark.parametrize("src,dst,links", [
    ("node_0", "node_2", ["node_0_link_UP", "node_2_link_DOWN"]),
    ("node_0", "node_4", ["node_0_link_UP", "green_g0_c0_r0_r1_UP", "node_4_link_DOWN"]),
    ("node_0", "node_10", ["node_0_link_UP", "black_g0_r0_c0_c1_UP", "node_10_link_DOWN"]),
    ("node_0", "node_40", ["node_0_link_UP", "green_g0_c0_r0_r1_UP", "blue_g0_g1_UP", "green_g1_c0_r0_r1_UP",
                           "node_40_link_DOWN"]),
    ("node_40", "node_0", ["node_40_link_UP", "green_g1_c0_r0_r1_DOWN", "blue_g0_g1_DOWN", "green_g0_c0_r0_r1_DOWN",
                           "node_0_link_DOWN"]),
    ("node_5", "pfs", ["node_5_link_UP", "pfs_link"]),
    ("pfs", "node_8", ["pfs_link", "node_8_link_DOWN"]),
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


def test_loader_reads_every_route_as_the_description(loaded_df96, df96):
    """The embedded loader reads one-way routes as SimGrid 3.3x does: same halves as the description."""
    d = df96.description
    hosts = [h.name for h in d.hosts]
    for src in hosts:
        for dst in hosts:
            if src != dst:
                assert tuple(lk.name for lk in loaded_df96.route(src, dst).links) == d.route(src, dst), (src, dst)
    assert loaded_df96.links["node_0_link_UP"].sharing == "SHARED"  # a half is an independent SHARED link
    assert loaded_df96.links["pfs_link"].sharing == "SHARED"


def test_loader_resource_order_matches_description(loaded_df96, df96):
    assert [h.name for h in loaded_df96.resources()] == df96.description.batsim_order()
