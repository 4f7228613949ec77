"""Split-duplex node links and cables: routes as SimGrid's DRAGONFLY cluster builds them, and
what it changes for I/O (opposite directions do not contend on a node link, same ones do)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from mrsched.errors import PlatformError
from mrsched.platforms.bundled import bundled_path
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.dragonfly import generate_dragonfly
from mrsched.simulator import platform as loader
from mrsched.simulator import ptask


# --- every node-to-node route equals SimGrid's own DragonflyZone's --------------------------------

def _simgrid_link_names(G: int, C: int, R: int, N: int) -> dict[str, str]:
    """SimGrid DragonflyZone's link names -> ours, rebuilt from its creation order.

    SimGrid (``DragonflyZone::generate_links``) suffixes every link with a counter taken in this
    order: node links router by router, green links chassis by chassis, black links group by
    group, then blue links; its green names repeat the chassis index of every group.
    """
    names: dict[str, str] = {}
    uid = 0
    for router in range(G * C * R):
        for node in range(N):
            names[f"local_link_from_router_{router}_to_node_{node}_{uid}"] = f"node_{router * N + node}_link"
            uid += 1
    for chassis in range(G * C):
        for a in range(R):
            for b in range(a + 1, R):
                names[f"green_link_in_chassis_{chassis % C}_between_routers_{a}_and_{b}_{uid}"] = (
                    f"green_g{chassis // C}_c{chassis % C}_r{a}_r{b}")
                uid += 1
    for g in range(G):
        for a in range(C):
            for b in range(a + 1, C):
                for r in range(R):
                    names[f"black_link_in_group_{g}_between_chassis_{a}_and_{b}_blade_{r}_{uid}"] = (
                        f"black_g{g}_r{r}_c{a}_c{b}")
                    uid += 1
    for a in range(G):
        for b in range(a + 1, G):
            names[f"blue_link_between_group_{a}_and_{b}_routers_{a * C * R + b}_and_{b * C * R + a}_{uid}"] = (
                f"blue_g{a}_g{b}")
            uid += 1
    return names


def _ours(simgrid_name: str, table: dict[str, str]) -> str:
    for suffix in ("_UP", "_DOWN"):
        if simgrid_name.endswith(suffix) and simgrid_name[:-len(suffix)] in table:
            return table[simgrid_name[:-len(suffix)]] + suffix
    return table[simgrid_name]


@pytest.mark.parametrize("shape,sharing", [
    ((3, 4, 3, 3), "splitduplex"),   # seed 001's machine
    ((3, 4, 3, 3), "shared"),
    ((2, 3, 2, 2), "splitduplex"),
    ((1, 3, 3, 1), "splitduplex"),
])
def test_node_routes_equal_simgrid_dragonfly_cluster(tmp_path, shape, sharing):
    G, C, R, N = shape
    size = G * C * R * N
    policy = {"splitduplex": "SPLITDUPLEX", "shared": "SHARED"}[sharing]
    cluster = tmp_path / "cluster.xml"
    cluster.write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1"><zone id="root" routing="Full">'
        f'<cluster id="c" topology="DRAGONFLY" topo_parameters="{G},1;{C},1;{R},1;{N}" prefix="node_" '
        f'radical="0-{size - 1}" suffix="" speed="1Gf" bw="1250MBps" lat="50us" sharing_policy="{policy}"/>'
        "<zone id=\"m\" routing=\"None\"><host id=\"master\" speed=\"1Gf\"><prop id=\"role\" value=\"master\"/>"
        "</host></zone></zone></platform>\n")
    ours = tmp_path / "ours.xml"
    ours.write_text(generate_dragonfly(groups=G, chassis=C, routers=R, nodes_per_router=N, storage_per_chassis=0,
                                       link_sharing=sharing).xml)
    simgrid = loader.load_platform(str(cluster))
    mine = loader.load_platform(str(ours))
    table = _simgrid_link_names(G, C, R, N)
    nodes = [f"node_{k}" for k in range(size)]
    for src in nodes:
        for dst in nodes:
            if src == dst:
                continue
            expected = [_ours(lk.name, table) for lk in simgrid.route(src, dst).links]
            assert [lk.name for lk in mine.route(src, dst).links] == expected, (src, dst)


# --- the XML: halves named with direction, one-way routes, shared mode as before ------------------

def test_split_duplex_xml_declares_halves_by_direction():
    xml = generate_dragonfly(groups=1, chassis=2, routers=2, nodes_per_router=1, storage_per_chassis=0).xml
    root = ET.fromstring(xml.split("\n", 2)[2])
    sharing = {lk.get("id"): lk.get("sharing_policy") for lk in root.iter("link")}
    assert sharing["node_0_link"] == sharing["green_g0_c0_r0_r1"] == sharing["black_g0_r0_c0_c1"] == "SPLITDUPLEX"
    assert sharing["pfs_link"] is None and sharing["master_link"] == "FATPIPE"  # pfs: SHARED (the default)
    routes = {(r.get("src"), r.get("dst")): r for r in root.iter("route")}
    there, back = routes[("node_0", "node_3")], routes[("node_3", "node_0")]
    assert there.get("symmetrical") == back.get("symmetrical") == "NO"
    assert [(c.get("id"), c.get("direction")) for c in there] == [
        ("node_0_link", "UP"), ("green_g0_c0_r0_r1", "UP"), ("black_g0_r1_c0_c1", "UP"), ("node_3_link", "DOWN")]
    # back: SimGrid continues from chassis 0's router after the green hop, so no black cable
    assert [(c.get("id"), c.get("direction")) for c in back] == [
        ("node_3_link", "UP"), ("green_g0_c1_r0_r1", "DOWN"), ("node_0_link", "DOWN")]
    assert routes[("pfs", "master")].get("symmetrical") is None and ("master", "pfs") not in routes


def test_shared_mode_is_the_former_symmetrical_platform():
    c = generate_cluster(nodes=3, storage=1, link_sharing="shared")
    assert "SPLITDUPLEX" not in c.xml and "direction=" not in c.xml and "symmetrical" not in c.xml
    assert len(c.description.routes) == 6 * 5 // 2
    assert c.description.route("node_0", "bb_0") == ("node_0_link", "bb_0_link")
    assert c.description.route("bb_0", "node_0") == ("bb_0_link", "node_0_link")
    d = generate_dragonfly(groups=2, chassis=1, routers=2, nodes_per_router=1, storage_per_chassis=0,
                           link_sharing="SHARED").description
    assert d.route("node_0", "node_2") == ("node_0_link", "green_g0_c0_r0_r1", "blue_g0_g1", "node_2_link")
    assert d.route("node_2", "node_0") == ("node_2_link", "blue_g0_g1", "green_g0_c0_r0_r1", "node_0_link")
    assert d.parameters["link_sharing"] == "shared"


def test_unknown_link_sharing_is_refused():
    with pytest.raises(PlatformError, match="unknown link sharing 'fullduplex'") as info:
        generate_dragonfly(link_sharing="fullduplex")
    assert info.value.field == "link_sharing" and "splitduplex" in info.value.hint
    with pytest.raises(PlatformError, match="link sharing"):
        generate_cluster(nodes=2, link_sharing="half")


# --- through the ptask model: who contends with whom ----------------------------------------------

LAT = 50e-6 + 100e-6  # node link + PFS link; node link + green + node link to the chassis' BB
GB = 1.25e9           # one second on a node link


@pytest.fixture(scope="module")
def platforms(tmp_path_factory):
    shared = tmp_path_factory.mktemp("shared") / "dragonfly96_shared.xml"
    shared.write_text(generate_dragonfly(link_sharing="shared").xml)
    return {"splitduplex": loader.load_platform(str(bundled_path("dragonfly96"))),
            "shared": loader.load_platform(str(shared))}


def _finish_times(platform, transfers: list[tuple[str, str, float]]) -> list[float]:
    """Each transfer its own ptask, all started at 0; their finish times."""
    model = ptask.PtaskModel(platform)
    tasks = [model.add({}, {(src, dst): size}, now=0.0) for src, dst, size in transfers]
    while (nxt := model.next_completion()) is not None:
        model.advance(nxt[0])
    return [t.finish for t in tasks]


@pytest.mark.parametrize("transfers,split,shared", [
    # alone: the node link's 1250 MB/s
    ([("node_0", "pfs", GB)], [1.0], [1.0]),
    # drain (node -> PFS) while a stage-in (PFS -> node) arrives: UP and DOWN halves, no contention
    ([("node_0", "pfs", GB), ("pfs", "node_0", GB)], [1.0, 1.0], [2.0, 2.0]),
    # checkpoint to the chassis' burst buffer while a stage-in arrives on the same node
    ([("node_0", "node_8", GB), ("pfs", "node_0", GB)], [1.0, 1.0], [2.0, 2.0]),
    # stage-in PFS -> BB next to a drain BB -> PFS on the storage node
    ([("pfs", "node_8", GB), ("node_8", "pfs", GB)], [1.0, 1.0], [2.0, 2.0]),
    # two writes leaving one node share its UP half
    ([("node_0", "pfs", GB), ("node_0", "pfs", GB)], [2.0, 2.0], [2.0, 2.0]),
    # two reads arriving on one node share its DOWN half
    ([("pfs", "node_0", GB), ("pfs", "node_0", GB)], [2.0, 2.0], [2.0, 2.0]),
])
def test_node_link_contention(platforms, transfers, split, shared):
    for mode, expected in (("splitduplex", split), ("shared", shared)):
        times = _finish_times(platforms[mode], transfers)
        assert times == pytest.approx([t + LAT for t in expected], rel=1e-6), mode


@pytest.mark.parametrize("mode", ["splitduplex", "shared"])
def test_pfs_link_is_shared_by_reads_and_writes(platforms, mode):
    """4 writers and 4 readers on 8 distinct nodes: 10 GB/s wanted, the SHARED PFS link gives 5."""
    writers = [(f"node_{k}", "pfs", GB) for k in (0, 1, 2, 3)]
    readers = [("pfs", f"node_{k}", GB) for k in (4, 5, 6, 7)]
    assert _finish_times(platforms[mode], writers + readers) == pytest.approx([2.0 + LAT] * 8, rel=1e-6)
    # 4 writers alone fit (5 GB/s): each at its node link's speed
    assert _finish_times(platforms[mode], writers) == pytest.approx([1.0 + LAT] * 4, rel=1e-6)
