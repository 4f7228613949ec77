"""Atomic writes and manifest completeness (what a campaign re-run trusts)."""

from __future__ import annotations

import json

import pytest

from mrsched.errors import ConfigError
from mrsched.atomic import sha256_file, stable_hash, write_atomic, write_json_atomic
from mrsched.expe.manifest import (OUTPUT_FILES, describe_outputs, is_complete, read_manifest,
                                   write_manifest)


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "sub" / "f.json"
    write_json_atomic(target, {"b": 1, "a": 2})
    write_json_atomic(target, {"a": 3})
    assert json.loads(target.read_text()) == {"a": 3}
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


def test_write_atomic_failure_keeps_old_file(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    write_atomic(target, "old")
    import os

    def boom(*a):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_hashes(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"abc")
    assert sha256_file(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert stable_hash({"a": 1, "b": [2]}) == stable_hash({"b": [2], "a": 1})
    assert stable_hash({"a": 1}) != stable_hash({"a": 2})


def test_is_complete_needs_ok_and_every_output(tmp_path):
    assert not is_complete(tmp_path) and read_manifest(tmp_path) is None
    write_manifest(tmp_path, {"status": "ok"})
    assert not is_complete(tmp_path)
    for name in OUTPUT_FILES:
        (tmp_path / name).write_text("x\n")
    assert not is_complete(tmp_path)  # outputs the manifest does not vouch for
    write_manifest(tmp_path, {"status": "ok", "outputs": describe_outputs(tmp_path)})
    assert is_complete(tmp_path)
    (tmp_path / OUTPUT_FILES[0]).write_text("y\n")  # same size, other content
    assert not is_complete(tmp_path)
    (tmp_path / OUTPUT_FILES[0]).write_text("x\n")
    assert is_complete(tmp_path)
    (tmp_path / OUTPUT_FILES[1]).unlink()
    assert not is_complete(tmp_path)
    write_manifest(tmp_path, {"status": "failed", "error": "boom"})
    assert not is_complete(tmp_path)
    (tmp_path / "manifest.json").write_text("{truncated")
    assert read_manifest(tmp_path) is None
    with pytest.raises(ConfigError):
        write_manifest(tmp_path, {"status": "running"})
