"""Capacities from platform XML (DESIGN.md cluster conventions)."""

from __future__ import annotations

import pytest

from mrsched.analysis.capacities import platform_capacities
from mrsched.errors import PlatformError

XML = """<?xml version='1.0'?>
<platform version="4.1"><zone id="root" routing="Full">
  <cluster id="c" prefix="node_" radical="0-3,8" suffix="" speed="1Gf" bw="1GBps" lat="1us">
    <prop id="gpus" value="2"/>
  </cluster>
  <zone id="s" routing="Full">
    <host id="master" speed="1Gf"><prop id="role" value="master"/></host>
    <host id="pfs" speed="1Gf"><prop id="role" value="storage"/><prop id="pfs" value="true"/></host>
    <host id="bb_0" speed="1Gf"><prop id="role" value="storage"/><prop id="bb_capacity" value="40000000000"/></host>
    <host id="bb_1" speed="1Gf"><prop id="role" value="storage"/><prop id="bb_capacity" value="{bb1}"/></host>
  </zone>
</zone></platform>
"""


def test_counts_compute_hosts_burst_buffer_and_gpus(tmp_path):
    p = tmp_path / "p.xml"
    p.write_text(XML.format(bb1="20000000000"))
    caps = platform_capacities(p)
    assert caps == {"nodes": 5.0, "burst_buffer": 6e10, "gpus": 10.0}


def test_roles_override(tmp_path):
    p = tmp_path / "p.xml"
    p.write_text(XML.format(bb1="1"))
    assert platform_capacities(p, roles=["node_8,node_3:storage"])["nodes"] == 3
    with pytest.raises(PlatformError, match="unknown host 'node_9'"):
        platform_capacities(p, roles=["node_9:storage"])


def test_bad_capacity_names_host_and_property(tmp_path):
    p = tmp_path / "p.xml"
    p.write_text(XML.format(bb1="lots"))
    with pytest.raises(PlatformError) as err:
        platform_capacities(p)
    assert "bb_1" in str(err.value) and "bb_capacity" in str(err.value)


def test_reference_platforms(shared_dir):
    assert platform_capacities(shared_dir / "batsim-reference" / "io30" / "platform.xml") == {"nodes": 16}
    assert platform_capacities(shared_dir / "data" / "batsim-workloads" / "cluster512.xml")["nodes"] == 512


def test_default_capacity_for_storage_hosts_without_one(tmp_path, shared_file):
    """`mrsched run -r ... --bb-capacity 40GB` (the Euro-Par artifact's inputs): storage hosts
    named by -r get the run's capacity, the PFS none, as the schedulers count them."""
    p = shared_file("data", "europar2021", "dragonfly96.xml")
    roles = ["node_8,node_17,node_26,node_35,node_44,node_53,node_62,node_71,node_80,node_89,"
             "node_98,node_107:storage"]
    assert "burst_buffer" not in platform_capacities(p, roles)
    caps = platform_capacities(p, roles, bb_capacity=40e9)
    assert caps["burst_buffer"] == 12 * 40e9 and caps["nodes"] == 96
    q = tmp_path / "p.xml"
    q.write_text(XML.format(bb1="20000000000"))
    assert platform_capacities(q, bb_capacity=1e9)["burst_buffer"] == 6e10  # declared ones kept
