"""The platform loader against real Batsim runs: every reference platform loads, and the
resource ids (compute by name, storage after, master excluded) are the ones Batsim announced."""

from __future__ import annotations

import json
import re

import pytest

from mrsched.errors import ConfigError, PlatformError
from mrsched.simulator.platform import load_platform

REFERENCE_CASES = ["batsim-reference/" + c for c in
                   ("delays", "easy250", "fcfs250", "io30", "samesubmit", "sequence", "various", "walltime")]
REFERENCE_CASES += [f"batsched-reference/{p}-seed{s}" for p in ("conservative_bf", "easy_bf", "fcfs", "filler")
                    for s in (1, 2, 3)]


def _simulation_begins(case_dir):
    with open(case_dir / "transcript.jsonl") as fh:
        first = json.loads(fh.readline())["msg"]
    return next(e["data"] for e in first["events"] if e["type"] == "SIMULATION_BEGINS")


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_resource_ids_match_batsim(shared_dir, case):
    case_dir = shared_dir / case
    platform = load_platform(case_dir / "platform.xml")
    match = re.search(r"--mmax (\d+)", (case_dir / "command.txt").read_text())
    mmax = int(match.group(1)) if match else None
    begins = _simulation_begins(case_dir)
    expected = [(r["id"], r["name"]) for r in begins["compute_resources"] + begins["storage_resources"]]
    got = [(i, h.name) for i, h in enumerate(platform.resources(mmax))]
    assert got == expected
    storage = {r["name"]: r["properties"]["role"] for r in begins["storage_resources"]}
    assert {h.name: h.properties["role"] for h in platform.storage_hosts()} == storage
    master = platform.master_host()
    assert master is not None and master.name not in {name for _, name in got}


def test_cluster512_and_its_master(shared_dir):
    platform = load_platform(shared_dir / "data/batsim-workloads/cluster512.xml")
    assert len(platform.compute_hosts()) == 512
    assert platform.master_host().name == "master_host0"  # cluster <prop role=master> applies to its host
    a0 = platform.hosts["a0"]
    assert a0.speed == 1e9 and a0.zone == "my_cluster_1"
    route = platform.route("a0", "master_host0")
    assert [link.name for link in route.links] == [
        "my_cluster_1_link_0_UP", "my_cluster_1_backbone", "backbone", "my_cluster_2_backbone",
        "my_cluster_2_link_0_DOWN"]
    assert route.latency == pytest.approx(50e-6 + 500e-6 + 500e-6 + 500e-6 + 50e-6)
    assert platform.links["backbone"].bandwidth == 1.25e9


def test_io30_routes(shared_dir):
    platform = load_platform(shared_dir / "batsim-reference/io30/platform.xml")
    to_pfs = platform.route("node_0", "pfs")
    assert [link.name for link in to_pfs.links] == ["compute_link_0_UP", "compute_backbone", "uplink", "pfs_link"]
    assert to_pfs.latency == pytest.approx(210e-6)
    back = platform.route("pfs", "node_0")
    assert [link.name for link in back.links] == ["pfs_link", "uplink", "compute_backbone", "compute_link_0_DOWN"]
    assert [link.name for link in platform.route("bb_0", "bb_1").links] == ["bb_0_link", "bb_1_link"]
    assert [link.name for link in platform.route("bb_1", "bb_0").links] == ["bb_1_link", "bb_0_link"]
    # a flat cluster without loopback goes up and down its own private link
    assert [link.name for link in platform.route("node_3", "node_3").links] == [
        "compute_link_3_UP", "compute_backbone", "compute_link_3_DOWN"]
    assert platform.links["compute_link_3_UP"].bandwidth == 1.25e9
    assert platform.hosts["pfs"].role == "storage" and platform.master_host().name == "master"


def test_small_platform_loopback_and_routes(shared_dir):
    platform = load_platform(shared_dir / "batsim-reference/various/platform.xml")
    assert platform.master_host().name == "master_host"  # by Batsim's default -m name
    assert platform.hosts["Jupiter"].speed == pytest.approx(76.296e6)
    self_route = platform.route("Fafard", "Fafard")
    assert [link.name for link in self_route.links] == ["loopback"]
    assert self_route.links[0].sharing == "FATPIPE" and self_route.latency == pytest.approx(15e-6)
    forward = [link.name for link in platform.route("Jupiter", "Bourassa").links]
    assert forward == ["9", "4", "3", "2", "0", "1", "6", "7"]
    assert [link.name for link in platform.route("Bourassa", "Jupiter").links] == forward[::-1]


def test_europar_dragonfly_best_effort(shared_dir):
    platform = load_platform(shared_dir / "data/europar2021/dragonfly96.xml")
    assert len(platform.compute_hosts()) == 108
    assert [h.name for h in platform.storage_hosts()] == ["pfs"]
    route = platform.route("node_0", "node_99")  # group 0 -> group 2, chassis 3
    assert [link.name for link in route.links] == [
        "local_link_from_router_0_to_node_0_0_UP",
        "green_link_in_chassis_0_between_routers_0_and_2_109_UP",
        "blue_link_between_group_0_and_2_routers_2_and_24_199_UP",
        "black_link_in_group_2_between_chassis_0_and_3_blade_0_186_UP",
        "local_link_from_router_33_to_node_0_99_DOWN"]
    assert route.latency == pytest.approx(5 * 50e-6)
    # loopback_bw given: a node talks to itself through its FATPIPE loopback
    assert [link.name for link in platform.route("node_7", "node_7").links] == ["cluster_link_7_loopback"]
    # the PFS hangs off the (pre-3.28) cluster router: only its own link is crossed
    assert [link.name for link in platform.route("pfs", "node_42").links] == ["link_pfs"]


def test_roles_from_command_line(shared_dir):
    path = shared_dir / "batsim-reference/various/platform.xml"
    platform = load_platform(path, roles=["Fafard,Ginette:storage"])
    assert [h.name for h in platform.storage_hosts()] == ["Fafard", "Ginette"]
    assert [h.name for h in platform.compute_hosts()] == ["Bourassa", "Jupiter"]
    assert [h.name for h in platform.resources()] == ["Bourassa", "Jupiter", "Fafard", "Ginette"]
    with pytest.raises(ConfigError, match="unknown host 'Fafardd'"):
        load_platform(path, roles=["Fafardd:storage"])
    with pytest.raises(ConfigError, match="unknown role"):
        load_platform(path, roles=["Fafard:gpu"])
    with pytest.raises(ConfigError, match="cannot read role mapping"):
        load_platform(path, roles=["Fafard"])
    with pytest.raises(ConfigError, match="200 machines"):
        load_platform(path).resources(200)
