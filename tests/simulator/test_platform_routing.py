"""Routing semantics of SimGrid zones on small hand-written platforms, and loader errors."""

from __future__ import annotations

import logging

import pytest

from mrsched.errors import PlatformError
from mrsched.simulator.platform import load_platform

HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def write(tmp_path, body: str, name: str = "p.xml"):
    path = tmp_path / name
    path.write_text(HEAD + f'<platform version="4.1">\n{body}\n</platform>\n')
    return path


def names(route):
    return [link.name for link in route.links]


DIAMOND_HOSTS = """
    <host id="h1" speed="1Gf"/><host id="h2" speed="1Gf"/>
    <router id="r1"/><router id="r2"/>
    <link id="a1" bandwidth="1GBps" latency="1us"/><link id="b1" bandwidth="1GBps" latency="1us"/>
    <link id="a2" bandwidth="1GBps" latency="2us"/><link id="b2" bandwidth="1GBps" latency="2us"/>
    <host id="master_host" speed="1Gf"/>
    <link id="m" bandwidth="1GBps" latency="0"/>
"""
# routes declared through r2 first: Dijkstra's graph meets r2 first, Floyd's ids put r1 first
DIAMOND_ROUTES = """
    <route src="h1" dst="r2"><link_ctn id="a2"/></route>
    <route src="h1" dst="r1"><link_ctn id="a1"/></route>
    <route src="r2" dst="h2"><link_ctn id="b2"/></route>
    <route src="r1" dst="h2"><link_ctn id="b1"/></route>
    <route src="master_host" dst="h1"><link_ctn id="m"/></route>
"""


def test_floyd_shortest_path_ties_follow_simgrid(tmp_path):
    p = load_platform(write(tmp_path, f'<zone id="z" routing="Floyd">{DIAMOND_HOSTS}{DIAMOND_ROUTES}</zone>'))
    assert names(p.route("h1", "h2")) == ["a1", "b1"]  # equal cost: the lowest intermediate id wins
    assert names(p.route("h2", "h1")) == ["b1", "a1"]
    assert names(p.route("master_host", "h2")) == ["m", "a1", "b1"]
    assert p.route("master_host", "h2").latency == pytest.approx(2e-6)
    assert names(p.route("h1", "h1")) == ["__loopback__"]  # implicit loopback of base zones


def test_dijkstra_shortest_path_ties_follow_simgrid(tmp_path):
    for routing in ("Dijkstra", "DijkstraCache"):
        p = load_platform(write(tmp_path, f'<zone id="z" routing="{routing}">{DIAMOND_HOSTS}{DIAMOND_ROUTES}</zone>'))
        assert names(p.route("h1", "h2")) == ["a2", "b2"]  # the first relaxed neighbour keeps the tie
        assert names(p.route("master_host", "h2")) == ["m", "a2", "b2"]
        assert names(p.route("h2", "h2")) == ["__loopback__"]


def test_full_zone_implicit_loopback_and_missing_route(tmp_path, caplog):
    body = """<zone id="z" routing="Full">
      <host id="master_host" speed="1Gf"/><host id="a" speed="2Gf" core="4"/><host id="b" speed="1Gf"/>
      <link id="ab" bandwidth="100MBps" latency="10us"/>
      <route src="a" dst="b" symmetrical="NO"><link_ctn id="ab"/></route>
    </zone>"""
    p = load_platform(write(tmp_path, body))
    loop = p.route("a", "a").links
    assert [(link.name, link.bandwidth, link.latency, link.sharing) for link in loop] == [
        ("__loopback__", 10e9, 0.0, "FATPIPE")]
    assert names(p.route("a", "b")) == ["ab"]
    with caplog.at_level(logging.WARNING):
        assert p.route("b", "a").links == ()  # SimGrid: a missing Full route is empty
    assert "no route from 'b' to 'a'" in caplog.text
    assert p.hosts["a"].cores == 4 and p.hosts["a"].speed == 2e9


def test_config_changes_the_loopback(tmp_path):
    body = """<config><prop id="network/loopback-bw" value="5GBps"/><prop id="network/loopback-lat" value="1us"/></config>
    <zone id="z" routing="Full"><host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/></zone>"""
    p = load_platform(write(tmp_path, body))
    assert (p.loopback.bandwidth, p.loopback.latency) == (5e9, 1e-6)
    assert p.route("a", "a").latency == 1e-6
    with pytest.raises(PlatformError, match="network/model"):
        load_platform(write(tmp_path, body.replace("network/loopback-lat", "network/model")))


def test_splitduplex_directions(tmp_path):
    body = """<zone id="z" routing="Full">
      <host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/><host id="c" speed="1Gf"/>
      <link id="x" bandwidth="1GBps" latency="5us" sharing_policy="SPLITDUPLEX"/>
      <link id="y" bandwidth="2GBps" latency="5us"/>
      <route src="a" dst="b"><link_ctn id="x" direction="UP"/><link_ctn id="y"/></route>
      <route src="a" dst="c"><link_ctn id="x_DOWN"/></route>
    </zone>"""
    p = load_platform(write(tmp_path, body))
    assert "x" not in p.links and {"x_UP", "x_DOWN"} <= set(p.links)
    assert names(p.route("a", "b")) == ["x_UP", "y"]
    assert names(p.route("b", "a")) == ["y", "x_DOWN"]  # reversed, the other half
    assert names(p.route("c", "a")) == ["x_DOWN"]  # a half named directly is a plain link
    with pytest.raises(PlatformError, match="without a direction") as err:
        load_platform(write(tmp_path, body.replace('<link_ctn id="x" direction="UP"/>', '<link_ctn id="x"/>')))
    assert err.value.line == 8


def test_nested_zones_with_gateways_and_none_zones(tmp_path):
    body = """<zone id="root" routing="Full">
      <zone id="A" routing="Full">
        <host id="h1" speed="1Gf"/><router id="ra"/>
        <link id="l1" bandwidth="1GBps" latency="1us"/>
        <route src="h1" dst="ra"><link_ctn id="l1"/></route>
      </zone>
      <zone id="B" routing="Floyd">
        <host id="h2" speed="1Gf"/><router id="rb"/><router id="rb2"/>
        <link id="l2" bandwidth="1GBps" latency="2us"/><link id="l3" bandwidth="1GBps" latency="3us"/>
        <route src="rb" dst="rb2"><link_ctn id="l2"/></route>
        <route src="rb2" dst="h2"><link_ctn id="l3"/></route>
      </zone>
      <zone id="M" routing="None"><host id="master_host" speed="0"><prop id="role" value="master"/></host></zone>
      <zone id="S" routing="None"><host id="pfs" speed="0"><prop id="role" value="storage"/></host></zone>
      <link id="ab" bandwidth="1GBps" latency="10us"/><link id="sa" bandwidth="1GBps" latency="20us"/>
      <link id="ma" bandwidth="1GBps" latency="30us" sharing_policy="FATPIPE"/>
      <zoneRoute src="A" dst="B" gw_src="ra" gw_dst="rb"><link_ctn id="ab"/></zoneRoute>
      <zoneRoute src="S" dst="A" gw_src="pfs" gw_dst="ra"><link_ctn id="sa"/></zoneRoute>
      <ASroute src="M" dst="A" gw_src="master_host" gw_dst="h1"><link_ctn id="ma"/></ASroute>
    </zone>"""
    p = load_platform(write(tmp_path, body))
    route = p.route("h1", "h2")
    assert names(route) == ["l1", "ab", "l2", "l3"]
    assert route.latency == pytest.approx(16e-6)
    assert names(p.route("h2", "h1")) == ["l3", "l2", "ab", "l1"]
    assert names(p.route("pfs", "h1")) == ["sa", "l1"]
    assert names(p.route("master_host", "h1")) == ["ma"]
    assert p.links["ma"].sharing == "FATPIPE"
    with pytest.raises(PlatformError, match="no zoneRoute from 'S' to 'B'"):  # Full routes do not compose
        p.route("pfs", "h2")
    assert [h.name for h in p.resources()] == ["h1", "h2", "pfs"]


def test_flat_cluster_links_props_loopback_limiter(tmp_path):
    body = """<zone id="root" routing="Full">
      <cluster id="c" prefix="n-" suffix=".x" radical="0-2,5" speed="2Gf,1Gf" core="8" bw="100MBps" lat="10us"
               bb_bw="1GBps" bb_lat="1us" bb_sharing_policy="FATPIPE" loopback_bw="5GBps" loopback_lat="2us"
               limiter_link="150MBps">
        <prop id="gpus" value="4"/>
      </cluster>
      <cluster id="d" prefix="m" suffix="" radical="0" speed="1Gf" bw="10MBps" lat="1ms" sharing_policy="SHARED"
               router_id="d-gw"/>
      <link id="cd" bandwidth="1GBps" latency="0"/>
      <zoneRoute src="c" dst="d" gw_src="n-c_router.x" gw_dst="d-gw"><link_ctn id="cd"/></zoneRoute>
    </zone>"""
    p = load_platform(write(tmp_path, body), roles=["m0:master"])
    assert sorted(h.name for h in p.compute_hosts()) == ["n-0.x", "n-1.x", "n-2.x", "n-5.x"]
    host = p.hosts["n-5.x"]
    assert (host.speed, host.speeds, host.cores) == (2e9, (2e9, 1e9), 8)
    assert host.properties == {"gpus": "4"} and host.zone_properties == {"gpus": "4"}
    assert names(p.route("n-0.x", "n-5.x")) == ["c_link_0_limiter", "c_link_0_UP", "c_backbone",
                                               "c_link_5_DOWN", "c_link_5_limiter"]
    assert p.links["c_backbone"].sharing == "FATPIPE"
    assert names(p.route("n-1.x", "n-1.x")) == ["c_link_1_loopback"]
    assert p.route("n-1.x", "n-1.x").latency == pytest.approx(2e-6)
    assert names(p.route("n-2.x", "m0")) == ["c_link_2_limiter", "c_link_2_UP", "c_backbone", "cd", "d_link_0"]
    assert p.links["d_link_0"].sharing == "SHARED"
    assert p.master_host().name == "m0"


def test_dragonfly_cluster_routing(tmp_path):
    body = """<zone id="root" routing="Full">
      <cluster id="df" topology="DRAGONFLY" topo_parameters="2,1;2,1;2,1;2" prefix="n" suffix="" radical="0-15"
               speed="1Gf" bw="10GBps" lat="1us" sharing_policy="SHARED"/>
    </zone>"""
    p = load_platform(write(tmp_path, body), roles=["n15:master"])
    # n0: group 0, chassis 0, blade 0; n13: group 1, chassis 1, blade 0, node 1
    assert names(p.route("n0", "n13")) == [
        "local_link_from_router_0_to_node_0_0",
        "green_link_in_chassis_0_between_routers_0_and_1_16",
        "blue_link_between_group_0_and_1_routers_1_and_4_24",
        "black_link_in_group_1_between_chassis_0_and_1_blade_0_22",
        "local_link_from_router_6_to_node_1_13"]
    # same router, no loopback: up and down the node link (SHARED: the same link twice)
    assert names(p.route("n0", "n1")) == ["local_link_from_router_0_to_node_0_0", "local_link_from_router_0_to_node_1_1"]
    assert p.links["blue_link_between_group_0_and_1_routers_1_and_4_24"].bandwidth == 10e9
    with pytest.raises(PlatformError, match="radical gives 15"):
        load_platform(write(tmp_path, body.replace("0-15", "0-14")))
    with pytest.raises(PlatformError, match="topo_parameters"):
        load_platform(write(tmp_path, body.replace("2,1;2,1;2,1;2", "2,1;2,1;2")))


def test_explicit_dragonfly_with_routers_full_and_floyd(tmp_path):
    """The platform generator's style: hosts, routers and links spelled out, Full or Floyd."""
    links = "".join(f'<link id="{n}" bandwidth="1250MBps" latency="50us"/>' for n in
                    ["l0", "l1", "l2", "l3", "g0", "g1", "blue", "lp"])
    hosts = "".join(f'<host id="n{i}" speed="1Gf"><prop id="group" value="{i // 2}"/></host>' for i in range(4))
    hosts += '<host id="pfs" speed="1Gf"><prop id="role" value="storage"/><prop id="pfs" value="true"/></host>'
    hosts += '<host id="master_host" speed="1Gf"/>' + "".join(f'<router id="r{i}"/>' for i in range(4))
    edges = [("n0", "r0", "l0"), ("n1", "r1", "l1"), ("n2", "r2", "l2"), ("n3", "r3", "l3"), ("r0", "r1", "g0"),
             ("r2", "r3", "g1"), ("r1", "r2", "blue"), ("pfs", "r0", "lp")]
    floyd = "".join(f'<route src="{a}" dst="{b}"><link_ctn id="{link}"/></route>' for a, b, link in edges)
    p = load_platform(write(tmp_path, f'<zone id="z" routing="Floyd">{links}{hosts}{floyd}</zone>'))
    assert names(p.route("n0", "n3")) == ["l0", "g0", "blue", "g1", "l3"]
    assert names(p.route("n3", "pfs")) == ["l3", "g1", "blue", "g0", "lp"]
    assert p.route("n0", "n3").latency == pytest.approx(250e-6)
    full = floyd + '<route src="n0" dst="n3"><link_ctn id="l0"/><link_ctn id="g0"/><link_ctn id="blue"/>' \
                   '<link_ctn id="g1"/><link_ctn id="l3"/></route>'
    p_full = load_platform(write(tmp_path, f'<zone id="z" routing="Full">{links}{hosts}{full}</zone>', "full.xml"))
    assert names(p_full.route("n3", "n0")) == ["l3", "g1", "blue", "g0", "l0"]
    assert p_full.storage_hosts()[0].properties["pfs"] == "true"


@pytest.mark.parametrize("body, line, element, text", [
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"></zone>', 4, None, "malformed XML"),
    ('<zone id="z" routing="Full">\n<trace id="t" periodicity="1"/></zone>', 5, "trace", "not supported inside <zone>"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf" availability_file="x"/></zone>', 4, "host",
     "unsupported attribute 'availability_file'"),
    ('<zone id="z" routing="Vivaldi"><host id="h" speed="1Gf"/></zone>', 4, "host", "needs 'coordinates'"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gz"/></zone>', 4, "host", "unknown unit"),
    ('<zone id="z" routing="Full"><host id="a" speed="0f"/></zone>', 4, "host", "host 'a' has speed 0"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf, 0f" pstate="1"/></zone>', 4, "host",
     "host 'a' has speed 0 in its pstate 1"),
    ('<zone id="z" routing="Full"><link id="l" bandwidth="1GBps" sharing_policy="WIFI"/></zone>', 4, "link",
     "unsupported sharing policy"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>\n'
     '<route src="a" dst="b"><link_ctn id="nope"/></route></zone>', 5, "link_ctn", "unknown link 'nope'"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/><link id="l" bandwidth="1"/>\n'
     '<route src="a" dst="b"><link_ctn id="l"/></route>\n<route src="b" dst="a"><link_ctn id="l"/></route></zone>',
     6, None, "already exists"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"/><host id="a" speed="1Gf"/></zone>', 4, "host",
     "declared twice"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"/><zone id="y" routing="Full"/></zone>', 4, "zone",
     "mixes hosts"),
    ('<zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-x" speed="1Gf" bw="1GBps" '
     'lat="0"/></zone>', 4, "cluster", "malformed radical"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"><prop id="role" value="login"/></host></zone>', 4, None,
     "unknown role 'login'"),
])
def test_bad_platforms_are_refused_with_location(tmp_path, body, line, element, text):
    path = write(tmp_path, body)
    with pytest.raises(PlatformError) as err:
        load_platform(path)
    assert text in str(err.value)
    assert err.value.file == str(path) and err.value.line == line
    if element:
        assert err.value.element == element and f"<{element}>" in str(err.value)


def test_missing_file_and_old_version(tmp_path):
    with pytest.raises(PlatformError, match="cannot read platform file"):
        load_platform(tmp_path / "absent.xml")
    path = tmp_path / "old.xml"
    path.write_text('<platform version="3"><AS id="a" routing="Full"/></platform>')
    with pytest.raises(PlatformError, match="version '3' is not supported"):
        load_platform(path)


def test_unknown_host_in_route_query(tmp_path):
    p = load_platform(write(tmp_path, '<zone id="z" routing="Full"><host id="alpha" speed="1Gf"/></zone>'))
    with pytest.raises(PlatformError, match="unknown host 'alpah'.*did you mean 'alpha'"):
        p.route("alpah", "alpha")


def test_cluster_zone_with_host_links_and_backbone(tmp_path):
    body = """<zone id="root" routing="Full"><prop id="site" value="lyon"/>
      <zone id="c" routing="Cluster"><prop id="rack" value="r1"/>
        <host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
        <router id="c-gw"/>
        <link id="la" bandwidth="1GBps" latency="1us" sharing_policy="SPLITDUPLEX"/>
        <link id="lb" bandwidth="1GBps" latency="1us" sharing_policy="SPLITDUPLEX"/>
        <host_link id="a" up="la_UP" down="la_DOWN"/><host_link id="b" up="lb_UP" down="lb_DOWN"/>
        <backbone id="bb" bandwidth="10GBps" latency="2us"/>
      </zone>
    </zone>"""
    p = load_platform(write(tmp_path, body))
    assert names(p.route("a", "b")) == ["la_UP", "bb", "lb_DOWN"]
    assert p.route("a", "b").latency == pytest.approx(4e-6)
    assert names(p.route("b", "c-gw")) == ["lb_UP", "bb"]
    assert p.hosts["a"].zone_properties == {"site": "lyon", "rack": "r1"}
    with pytest.raises(PlatformError, match="SPLITDUPLEX: name one of its halves"):
        load_platform(write(tmp_path, body.replace('up="la_UP"', 'up="la"')))


def _floyd_by_the_book(zone):
    """SimGrid's FloydZone::do_seal, literally (the reference for the vectorised version)."""
    n = len(zone.vertices)
    inf = 2**64 - 1
    cost = [[inf] * n for _ in range(n)]
    pred = [[-1] * n for _ in range(n)]
    for (a, b), route in zone.edges.items():
        cost[a][b] = len(route.links)
        pred[a][b] = a
    for c in range(n):
        for a in range(n):
            for b in range(n):
                if cost[a][c] < inf and cost[c][b] < inf and (
                        cost[a][b] == inf or cost[a][c] + cost[c][b] < cost[a][b]):
                    cost[a][b] = cost[a][c] + cost[c][b]
                    pred[a][b] = pred[c][b]
    return pred


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_floyd_matches_simgrid_triple_loop_on_random_graphs(tmp_path, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    n_hosts, n_routers = 12, 28
    parts = [f'<host id="h{i}" speed="1Gf"/>' for i in range(n_hosts)] + ['<host id="master_host" speed="1Gf"/>']
    parts += [f'<router id="r{i}"/>' for i in range(n_routers)]
    edges = {(f"h{i}", f"r{rng.integers(n_routers)}") for i in range(n_hosts)} | {("master_host", "r0")}
    for i in range(n_routers):
        for j in rng.integers(n_routers, size=2):
            if j != i and (f"r{j}", f"r{i}") not in edges:
                edges.add((f"r{i}", f"r{j}"))
    for k, (a, b) in enumerate(sorted(edges)):
        lat = int(rng.integers(1, 4))
        parts.append(f'<link id="l{k}" bandwidth="1GBps" latency="{lat}us"/>')
        parts.append(f'<route src="{a}" dst="{b}"><link_ctn id="l{k}"/></route>')
    p = load_platform(write(tmp_path, '<zone id="z" routing="Floyd">' + "".join(parts) + "</zone>"))
    zone = p._root
    assert _floyd_by_the_book(zone) == zone.pred
    assert len(p.route("h0", "h1").links) >= 2
