"""``simulator/unordered.py``: libstdc++'s ``unordered_map`` order, as Batsim walks its profiles.

The order Batsim lists a workload's profiles in SIMULATION_BEGINS is its map's: every recorded
Batsim run gives it (the profiles it keeps, in that order)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
from pathlib import Path

import pytest

from mrsched.simulator.unordered import PRIMES, iteration_order, kept_profiles

CASES = Path(__file__).resolve().parent / "cases"


def _runs(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if (d / "transcript.jsonl").is_file()
                  and (d / "workload.json").is_file())


def _check_order(run: Path) -> None:
    workload = json.loads((run / "workload.json").read_text())
    first = json.loads((run / "transcript.jsonl").read_text().split("\n", 1)[0])
    begins = first["msg"]["events"][0]["data"]
    profiles = workload.get("profiles", {})
    kept = kept_profiles(profiles, [j["profile"] for j in workload["jobs"]])
    want = [name for name in iteration_order(profiles) if name in kept]
    assert list(begins["profiles"].get("w0", {})) == want


@pytest.mark.parametrize("run", _runs(CASES), ids=lambda p: p.name)
def test_recorded_profile_order(run):
    _check_order(run)


def test_shared_recorded_profile_orders(shared_dir):
    runs = _runs(shared_dir / "batsim-reference") + _runs(shared_dir / "batsched-reference")
    assert len(runs) >= 30
    for run in runs:
        _check_order(run)


def test_unused_composed_profile_releases_what_comes_after_it():
    """c0 (no job) names p0 and p1; q0 (job 0) names p1. Walking the map, c0 is dropped, and
    with it p0 if the walk reaches p0 after c0, else p0 stays (it was owned by c0 then)."""
    profiles = {"p0": {"type": "delay", "delay": 1}, "p1": {"type": "delay", "delay": 2},
                "c0": {"type": "composed", "seq": ["p0", "p1"]},
                "q0": {"type": "composed", "seq": ["p1"]}}
    order = iteration_order(profiles)
    kept = kept_profiles(profiles, ["q0"])
    assert "c0" not in kept and {"q0", "p1"} <= kept
    assert ("p0" in kept) == (order.index("p0") < order.index("c0"))


def test_prime_table_is_the_system_libstdcxx_one():
    """The table, against the libstdc++ of this machine when it has one (Batsim's)."""
    name = ctypes.util.find_library("stdc++")
    if name is None:
        pytest.skip("no libstdc++ on this machine: the recorded orders above stand for it")
    table = (ctypes.c_ulong * len(PRIMES)).in_dll(ctypes.CDLL(name),
                                                  "_ZNSt8__detail12__prime_listE")
    assert tuple(table) == PRIMES
