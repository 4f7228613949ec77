"""The zoned Dragonfly (large machines): routes as the engine loads them, a 10,000-node file
that stays small, coordinates a scheduler reads, and a simulation on it."""

from __future__ import annotations

import json

import pytest

from mrsched.errors import PlatformError
from mrsched.platforms.cluster import MAX_HOSTS
from mrsched.platforms.dragonfly import generate_dragonfly
from mrsched.simulator.platform import load_platform

BIG = dict(groups=4, chassis=25, routers=10, nodes_per_router=10)


@pytest.mark.parametrize("sharing", ["splitduplex", "shared"])
def test_every_route_is_the_loaders(tmp_path, sharing):
    """Seed 001's 108 nodes in the zoned form: the description's route of every host pair is
    the one the embedded SimGrid loader computes from the zones."""
    made = generate_dragonfly(form="zones", link_sharing=sharing)
    path = tmp_path / "dfz.xml"
    path.write_text(made.xml)
    platform = load_platform(path)
    desc = made.description
    names = [h.name for h in desc.hosts]
    assert set(platform.hosts) == set(names)
    for src in names:
        for dst in names:
            if src != dst:
                assert tuple(link.name for link in platform.route(src, dst).links) == desc.route(src, dst), (src, dst)
    assert desc.route("node_0", "node_1") == ("chassis_0_link_0_UP" if sharing == "splitduplex" else "chassis_0_link_0",
                                              "chassis_0_backbone",
                                              "chassis_0_link_1_DOWN" if sharing == "splitduplex" else "chassis_0_link_1")
    # another group: both chassis uplinks and the blue link between the groups
    assert desc.route("node_0", "node_40")[2:5] == ("chassis_0_uplink", "blue_g0_g1", "chassis_4_uplink")


def test_auto_form_keeps_small_machines_explicit_and_zones_large_ones():
    assert generate_dragonfly().xml == generate_dragonfly(form="explicit").xml
    assert "<cluster" not in generate_dragonfly().xml
    big = generate_dragonfly(**BIG)
    assert big.description.parameters["form"] == "zones"
    with pytest.raises(PlatformError, match="too many"):
        generate_dragonfly(**BIG, form="explicit")
    with pytest.raises(PlatformError, match="form"):
        generate_dragonfly(form="implicit")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    made = generate_dragonfly(**BIG)
    path = tmp_path_factory.mktemp("big") / "df10k.xml"
    path.write_text(made.xml)
    return made, path


def test_ten_thousand_nodes_in_a_small_file(big):
    made, path = big
    size = BIG["groups"] * BIG["chassis"] * BIG["routers"] * BIG["nodes_per_router"]
    assert size + 2 > MAX_HOSTS
    assert len(made.xml) < 3_000_000                 # explicit routes would be ~50 million
    assert made.xml.count("<zoneRoute") == 105 * 104 // 2     # 100 chassis, 4 storage zones, frontend
    platform = load_platform(path)
    assert len(platform.compute_hosts()) == 9_900 and len(platform.storage_hosts()) == 101   # + pfs
    host = platform.hosts["node_3456"]                 # group 1 (2,500 nodes a group), chassis 34
    assert host.properties["group"] == "1" and host.properties["chassis"] == "34"
    storage = platform.hosts["node_3499"]              # the chassis' last node is its burst buffer
    assert storage.role == "storage" and storage.properties["chassis"] == "34"
    assert [h.name for h in platform.compute_hosts()][:4] == ["node_0", "node_1", "node_10", "node_100"]


def test_a_simulation_on_ten_thousand_nodes_places_burst_buffer_in_the_chassis(big, tmp_path):
    """fcfs-bb on the zoned machine: jobs run, and a job's burst buffer sits on its chassis'
    storage node (the coordinates came through Batsim's cluster properties)."""
    from mrsched.schedulers.registry import make_scheduler
    from mrsched.simulator.engine import simulate

    _, path = big
    jobs = [{"id": k, "subtime": k, "walltime": 100, "res": n, "profile": "d", "burst_buffer": n * 10**9}
            for k, n in enumerate((5, 90, 2000, 1))]
    workload = {"nb_res": 9900, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 10}}}
    wpath = tmp_path / "w.json"
    wpath.write_text(json.dumps(workload))
    scheduler = make_scheduler("fcfs-bb", {})
    result = simulate(path, [wpath], scheduler, export_prefix=str(tmp_path / "out"))
    assert len(result.jobs) == 4
    runtime = scheduler.runtime
    cluster = runtime.cluster
    assert cluster.nb_nodes == 9_900 and len(cluster.storage) == 100
    assert cluster.chassis[cluster.index_of[cluster.compute_ids[0]]] is not None
    # node index 0 is node_0 (chassis 0): its nearest storage is chassis 0's
    first = runtime.profile.placer.order[0][0]
    assert cluster.storage[first].chassis == cluster.chassis[0] == 0
