"""Parsed platforms kept on disk (``platform_cache``): another process reads the entry instead
of parsing, the platform read back runs the same simulation as the parsed one, and no entry
is read for other bytes, roles or loader code; a broken entry is parsed again, the folder
stays under its bound, and ``off`` keeps nothing."""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys

import pytest

from mrsched.simulator import platform as platform_module
from mrsched.simulator import platform_cache
from mrsched.simulator.engine import simulate
from mrsched.simulator.platform import load_platform
from test_engine_support import FCFS

PLATFORM = """<?xml version="1.0"?>
<platform version="4.1"><zone id="root" routing="Full">
<host id="node_0" speed="1Gf"/><host id="node_1" speed="{speed}"/><host id="node_2" speed="1Gf"/>
{master}
<link id="l01" bandwidth="1GBps" latency="10us"/><link id="l12" bandwidth="125MBps" latency="50us"/>
<route src="node_0" dst="node_1"><link_ctn id="l01"/></route>
<route src="node_1" dst="node_2"><link_ctn id="l12"/></route>
<route src="node_0" dst="node_2"><link_ctn id="l01"/><link_ctn id="l12"/></route>
</zone></platform>
"""
MASTER = '<host id="master_host" speed="1Gf"/>'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test that keeps every file, however small."""
    where = tmp_path / "cache"
    monkeypatch.setenv(platform_cache.ENV, str(where))
    monkeypatch.setattr(platform_cache, "MIN_BYTES", 0)
    return where


def _write(path, speed="1Gf", master=MASTER):
    path.write_text(PLATFORM.format(speed=speed, master=master))
    return path


def _fresh(path, **kwargs):
    """A load as a new process would do it: nothing of this process in use."""
    gc.collect()
    platform_module._IN_USE.clear()
    return load_platform(path, **kwargs)


def _no_parse(monkeypatch):
    def refuse(self):
        raise AssertionError("parsed instead of read from the cache")
    monkeypatch.setattr(platform_module._Loader, "load", refuse)


def _describe(p):
    names = sorted(p.hosts)
    routes = {(a, b): ([link.name for link in p.route(a, b).links], p.route(a, b).latency)
              for a in names for b in names}
    return (names, [(h.name, h.speed, h.role, h.properties) for h in p.resources()],
            sorted((n, link.bandwidth, link.latency) for n, link in p.links.items()), routes)


def test_a_second_load_reads_the_entry_and_gets_the_same_platform(tmp_path, cache, monkeypatch):
    path = _write(tmp_path / "p.xml")
    parsed = _describe(_fresh(path))
    assert len(list(cache.glob(f"*{platform_cache.SUFFIX}"))) == 1
    _no_parse(monkeypatch)
    assert _describe(_fresh(path)) == parsed


def test_the_platform_read_back_runs_the_same_simulation(tmp_path, cache):
    import json

    path = _write(tmp_path / "p.xml")
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 3, "profiles": {
        "c": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 3e8}},
        "jobs": [{"id": i, "subtime": i * 0.5, "res": 1 + i % 3, "walltime": 100,
                  "profile": "c"} for i in range(6)]}))
    outputs = []
    for name in ("parsed", "read"):
        platform = _fresh(path)
        simulate(platform, [wl], FCFS(), export_prefix=tmp_path / name)
        outputs.append((tmp_path / f"{name}_jobs.csv").read_bytes())
    assert len(list(cache.iterdir())) == 1
    assert outputs[0] == outputs[1]


def test_another_process_reads_the_entry(tmp_path, cache):
    path = _write(tmp_path / "p.xml")
    _fresh(path)
    probe = (
        "import sys\n"
        "from mrsched.simulator import platform as m, platform_cache as c\n"
        "c.MIN_BYTES = 0\n"
        "def refuse(self): raise SystemExit('parsed instead of read')\n"
        "m._Loader.load = refuse\n"
        f"print(sorted(m.load_platform({str(path)!r}).hosts))\n")
    done = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True,
                          env={**os.environ, platform_cache.ENV: str(cache)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "node_0" in done.stdout


def test_other_bytes_roles_master_or_loader_code_are_parsed(tmp_path, cache, monkeypatch):
    path = _write(tmp_path / "p.xml")
    _fresh(path)
    _write(path, speed="2Gf")                              # same path, other bytes
    assert _fresh(path).hosts["node_1"].speed == 2e9
    _fresh(path, roles=["node_2:storage"])
    _fresh(path, master_host="node_0")
    platform_cache._loader_digest.cache_clear()
    monkeypatch.setattr(platform_cache, "_loader_digest", lambda: b"another loader")
    _fresh(path)
    assert len(list(cache.glob(f"*{platform_cache.SUFFIX}"))) == 5


def test_a_broken_entry_is_parsed_again_and_rewritten(tmp_path, cache):
    path = _write(tmp_path / "p.xml")
    _fresh(path)
    (entry,) = cache.glob(f"*{platform_cache.SUFFIX}")
    entry.write_bytes(entry.read_bytes()[:40])             # cut short
    assert sorted(_fresh(path).hosts) == ["master_host", "node_0", "node_1", "node_2"]
    assert platform_cache.read(entry) is not None


def test_the_missing_master_is_said_on_a_cache_hit_too(tmp_path, cache, caplog):
    path = _write(tmp_path / "p.xml", master="")
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="mrsched.simulator.engine"):
            _fresh(path)
        assert "no master host" in caplog.text
    assert len(list(cache.iterdir())) == 1


def test_off_keeps_nothing_and_small_files_are_not_kept(tmp_path, monkeypatch):
    path = _write(tmp_path / "p.xml")
    where = tmp_path / "cache"
    monkeypatch.setenv(platform_cache.ENV, "off")
    monkeypatch.setattr(platform_cache, "MIN_BYTES", 0)
    _fresh(path)
    assert not where.exists()
    monkeypatch.setenv(platform_cache.ENV, str(where))
    monkeypatch.setattr(platform_cache, "MIN_BYTES", 1 << 20)
    _fresh(path)
    assert not where.exists()


def test_the_folder_keeps_the_most_recently_read_under_its_bound(tmp_path):
    where = tmp_path / "cache"
    where.mkdir()
    for i, name in enumerate(("old", "mid", "new")):
        p = where / f"{name}{platform_cache.SUFFIX}"
        p.write_bytes(b"x" * 100)
        os.utime(p, ns=(i * 10**9, i * 10**9))
    (where / "other.txt").write_bytes(b"y" * 1000)         # not an entry: left alone
    platform_cache.trim(where, limit=250)
    assert sorted(p.name for p in where.iterdir()) == ["mid" + platform_cache.SUFFIX,
                                                        "new" + platform_cache.SUFFIX, "other.txt"]
    platform_cache.trim(where, keep=where / f"mid{platform_cache.SUFFIX}", limit=100)
    assert sorted(p.name for p in where.iterdir()) == ["mid" + platform_cache.SUFFIX, "other.txt"]


def test_without_a_home_directory_nothing_is_kept(tmp_path, monkeypatch):
    def homeless():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.delenv(platform_cache.ENV, raising=False)
    monkeypatch.setattr(platform_cache.Path, "home", staticmethod(homeless))
    monkeypatch.setattr(platform_cache, "MIN_BYTES", 0)
    assert platform_cache.folder() is None
    assert sorted(_fresh(_write(tmp_path / "p.xml")).hosts)[0] == "master_host"


def test_a_read_only_entry_is_read(tmp_path, cache, monkeypatch):
    path = _write(tmp_path / "p.xml")
    _fresh(path)

    def read_only(*args, **kwargs):
        raise PermissionError("read-only file system")
    monkeypatch.setattr(platform_cache.os, "utime", read_only)
    _no_parse(monkeypatch)
    assert "node_0" in _fresh(path).hosts


def test_a_loader_without_readable_source_keeps_nothing(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(platform_cache, "_loader_digest", lambda: None)
    assert "node_0" in _fresh(_write(tmp_path / "p.xml")).hosts
    assert not cache.exists()


def test_what_a_killed_writer_left_is_removed_once_old(tmp_path):
    where = tmp_path / "cache"
    where.mkdir()
    old = where / f".abc{platform_cache.SUFFIX}.x1y2.tmp"     # write_atomic's temporary name
    young = where / f".def{platform_cache.SUFFIX}.z3w4.tmp"   # a write under way
    for p in (old, young):
        p.write_bytes(b"partial")
    os.utime(old, (1, 1))
    platform_cache.trim(where)
    assert not old.exists() and young.exists()
