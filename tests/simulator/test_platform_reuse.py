"""A platform file is loaded once while its Platform is in use in the process (a run's checks,
then the run in a forked child), and loaded again when its bytes, its roles or its master
change, or when nothing holds it any more. Loading pauses the cyclic collector."""

from __future__ import annotations

import gc

from mrsched.simulator.platform import load_platform

PLATFORM = """<?xml version="1.0"?>
<platform version="4.1"><zone id="root" routing="Full">
<host id="node_0" speed="{speed}"/><host id="node_1" speed="1Gf"/>
<host id="master_host" speed="1Gf"/>
<link id="l" bandwidth="1GBps" latency="1us"/>
<route src="node_0" dst="node_1"><link_ctn id="l"/></route>
</zone></platform>
"""


def _write(path, speed="1Gf"):
    path.write_text(PLATFORM.format(speed=speed))
    return path


def test_same_bytes_same_roles_give_the_platform_in_use(tmp_path):
    path = _write(tmp_path / "p.xml")
    first = load_platform(path)
    assert load_platform(str(path)) is first
    assert load_platform(path, roles=["node_1:storage"]) is not first
    assert load_platform(path, master_host="node_1") is not first


def test_changed_bytes_are_loaded_again(tmp_path):
    path = _write(tmp_path / "p.xml")
    first = load_platform(path)
    _write(path, speed="2Gf")          # same size, same path: only the bytes tell
    second = load_platform(path)
    assert second is not first
    assert second.hosts["node_0"].speed == 2e9 and first.hosts["node_0"].speed == 1e9


def test_a_platform_nothing_holds_is_not_kept(tmp_path):
    path = _write(tmp_path / "p.xml")
    first = load_platform(path)
    ident = id(first)
    del first
    gc.collect()
    from mrsched.simulator import platform as module

    assert all(id(p) != ident for p in module._IN_USE.values())


def test_loading_leaves_the_collector_as_it_was(tmp_path):
    path = _write(tmp_path / "p.xml")
    assert gc.isenabled()
    load_platform(path)
    assert gc.isenabled()
    gc.disable()
    try:
        load_platform(_write(tmp_path / "q.xml", speed="3Gf"))
        assert not gc.isenabled()
    finally:
        gc.enable()
