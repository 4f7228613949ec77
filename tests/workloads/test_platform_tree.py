"""The platform readers of generators and analysis (``platform_tree``) leave routes out and
read the same facts as from the whole tree: hosts, clusters, links and properties stay, every
kind of route goes, nested or not, and a malformed file still fails as ``ET.parse`` does."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import mrsched.analysis.capacities as capacities
import mrsched.workloads.platform_info as info
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.dragonfly import generate_dragonfly
from mrsched.workloads.cpugpu import read_machine

ROUTED = """<?xml version="1.0"?>
<platform version="4.1"><zone id="root" routing="Full">
  <host id="a" speed="1Gf"><prop id="gpus" value="2"/></host>
  <host id="b" speed="1Gf"/>
  <link id="l" bandwidth="1GBps"/>
  <route src="a" dst="b"><link_ctn id="l"/></route>
  <zone id="sub" routing="Full"><host id="c" speed="2Gf"/>
    <bypassRoute src="c" dst="c"><link_ctn id="l"/></bypassRoute></zone>
  <zoneRoute src="root" dst="sub" gw_src="a" gw_dst="c"><link_ctn id="l"/></zoneRoute>
</zone></platform>
"""


def _tags(root):
    return [el.tag for el in root.iter()]


def test_routes_are_left_out_and_the_rest_kept(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(ROUTED)
    tree = info.platform_tree(path)
    assert _tags(tree) == ["platform", "zone", "host", "prop", "host", "link", "zone", "host"]
    full = ET.parse(path).getroot()
    assert [el.attrib for el in tree.iter()] == [el.attrib for el in full.iter()
                                                 if el.tag not in info._ROUTES | {"link_ctn"}]


def test_a_malformed_file_fails_as_before(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(ROUTED.replace("</platform>", "</platfrom>"))
    with pytest.raises(ET.ParseError) as got:
        info.platform_tree(path)
    with pytest.raises(ET.ParseError) as want:
        ET.parse(path)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("make", [
    lambda: generate_dragonfly().xml,
    lambda: generate_cluster(nodes=6, storage=2, bb_capacity="20GB", gpus=2).xml,
])
def test_the_readers_read_what_the_whole_tree_gives(tmp_path, monkeypatch, make, repo_dir):
    paths = [tmp_path / "g.xml", *sorted((repo_dir / "platforms").glob("*.xml"))]
    paths[0].write_text(make())
    read = [(info.read_platform_info(p), read_machine(p), capacities._parse(p)) for p in paths]
    whole = lambda p: ET.parse(p).getroot()              # noqa: E731 (the former reader)
    monkeypatch.setattr(info, "platform_tree", whole)
    monkeypatch.setattr(capacities, "platform_tree", whole)
    assert read == [(info.read_platform_info(p), read_machine(p), capacities._parse(p))
                    for p in paths]


def test_a_file_rewritten_is_read_again_and_the_same_content_once(tmp_path, monkeypatch):
    path = tmp_path / "p.xml"
    path.write_text(ROUTED)
    first = info.platform_tree(path)
    assert info.platform_tree(path) is first                    # a report's readers share it
    path.write_text(ROUTED.replace('speed="2Gf"', 'speed="3Gf"'))   # same size, same instant
    assert info.platform_tree(path) is not first
    assert [h.get("speed") for h in info.platform_tree(path).iter("host")][-1] == "3Gf"
