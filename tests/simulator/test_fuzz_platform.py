"""Fuzz (issue 43 item 6): the engine's platform loader and the generators' platform reader
over generated SimGrid XML (near-valid platforms with fuzzed values, attributes, elements and
depth; raw bytes). Invariant (tests/fuzzing.py): a clean error naming the file and element or
field, or a platform whose every number is finite and in its domain."""

from __future__ import annotations

import math
from xml.sax.saxutils import quoteattr

from hypothesis import given, strategies as st

from fuzzing import budget, clean
from mrsched.simulator.platform import load_platform
from mrsched.workloads.platform_info import read_platform_info

VALUE = st.one_of(
    st.sampled_from(["1Gf", "0", "-1", "1e400f", "inf", "nan", "1e300Ef", "abc", "", "1,2", "1Gf,0f",
                     "10GBps", "50us", "1e999", "-4", "2.5", "40000000000", "1e400Bps", "0f"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-10, 10**12).map(str),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6))
GOOD = st.sampled_from(["1Gf", "2Gf,1Gf", "10GBps", "50us", "0", "1", "40000000000", "3"])
PROPS = ["role", "bb_capacity", "gpus", "cores", "group", "chassis", "edge", "node_bw", "pfs_bw",
         "wattage_per_state", "pfs", "resource", "node"]
ROLES = st.sampled_from(["", "storage", "master", "compute_node", "login"])


@st.composite
def host(draw, name):
    attrs = {"id": name, "speed": draw(GOOD | GOOD | VALUE)}
    for key in draw(st.lists(st.sampled_from(["core", "pstate", "core", "pstate", "coordinates", "bogus"]),
                             max_size=2)):
        attrs[key] = draw(GOOD | VALUE)
    props = "".join(f"<prop id={quoteattr(k)} value={quoteattr(draw(ROLES if k == 'role' else GOOD | VALUE))}/>"
                    for k in draw(st.lists(st.sampled_from(PROPS), max_size=3, unique=True)))
    return f"<host {' '.join(f'{k}={quoteattr(v)}' for k, v in attrs.items())}>{props}</host>"


@st.composite
def platform_text(draw):
    names = [f"h{i}" for i in range(draw(st.integers(1, 4)))]
    body = "".join(draw(host(n)) for n in names)
    body += '<host id="master" speed="1Gf"><prop id="role" value="master"/></host>'
    links = []
    for i in range(draw(st.integers(0, 3))):
        attrs = {"id": f"l{i}", "bandwidth": draw(GOOD | VALUE), "latency": draw(GOOD | VALUE),
                 "sharing_policy": draw(st.sampled_from(["SHARED", "FATPIPE", "SPLITDUPLEX", "WIFI"]))}
        links.append(f"l{i}")
        body += f"<link {' '.join(f'{k}={quoteattr(v)}' for k, v in attrs.items())}/>"
    everyone = names + ["master"]
    for _ in range(draw(st.integers(0, 4))):
        src, dst = draw(st.sampled_from(everyone)), draw(st.sampled_from(everyone + ["ghost"]))
        ctn = "".join(f'<link_ctn id="{draw(st.sampled_from(links + ["nope"]))}"/>'
                      for _ in range(draw(st.integers(0, 2))))
        body += f'<route src="{src}" dst="{dst}">{ctn}</route>'
    if draw(st.booleans()):
        body += (f'<cluster id="c" prefix="n" suffix="" radical={quoteattr(draw(st.sampled_from(["0-3", "0-x", "5-1", "0-2,4"])))} '
                 f'speed={quoteattr(draw(GOOD | VALUE))} bw={quoteattr(draw(GOOD | VALUE))} '
                 f'lat={quoteattr(draw(GOOD | VALUE))}/>')
    routing = draw(st.sampled_from(["Full", "Floyd", "None", "Dijkstra", "Vivaldi", "Bogus"]))
    depth = draw(st.sampled_from([0, 0, 0, 1, 2, 50, 97, 98, 150]))   # 98: one too deep
    config = ""
    if draw(st.booleans()):
        key = draw(st.sampled_from(["network/loopback-bw", "network/loopback-lat", "network/TCP-gamma",
                                    "network/model", "other"]))
        config = f'<config><prop id="{key}" value={quoteattr(draw(GOOD | VALUE))}/></config>'
    inner = f'<zone id="root" routing="{routing}">{body}</zone>'
    for i in range(depth):
        inner = f'<zone id="z{i}" routing="Full">{inner}</zone>'
    return f'<?xml version="1.0"?>\n<platform version="4.1">{config}{inner}</platform>\n'


def _check(path):
    platform = clean(load_platform, path)
    if platform is not None:
        for h in platform.hosts.values():
            assert all(0 <= s < math.inf for s in h.speeds) and h.cores >= 1
            assert h.role != "compute" or h.speed > 0
        for link in platform.links.values():
            assert 0 < link.bandwidth < math.inf and 0 <= link.latency < math.inf
        for name in list(platform.hosts)[:3]:   # routing works or says why
            clean(platform.route, name, "master")
    info = clean(read_platform_info, path)
    if info is not None:
        assert info.compute_nodes >= 1 and 0 <= info.speed < math.inf
        assert all(0 <= c < math.inf for c in info.bb_capacities)


@budget(150)
@given(platform_text())
def test_fuzz_platform_xml(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("p") / "p.xml"
    path.write_text(text)
    _check(path)


@budget(60)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_fuzz_platform_bytes(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("p") / "p.xml"
    path.write_bytes(raw)
    _check(path)
