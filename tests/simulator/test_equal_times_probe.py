"""The equal-time diagnostic (bench/probe_equal_times.py): SimGrid's running-sum arithmetic,
redone over the engine's actions, orders the `ties` and `kthties` completions as Batsim reports
them (docs/DESIGN.md, "Equal times"); these numbers are what the remaining gap is measured by."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_equal_times",
                                                  ROOT / "bench" / "probe_equal_times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _final_step(probe, shared_dir, case, lo, hi, engine_sleeps):
    acts = probe.record(shared_dir / "batsim-reference" / case)
    ids = {a["id"]: a for a in acts if a["kind"] == "ptask"}
    found = probe.replay(acts, lo, hi, engine_sleeps, out=None)
    return found[0], ids


def test_ties_time_left_follows_batsims_order(probe, shared_dir):
    """Jobs 22-25 (ptasks 12-15): source-faithful sleeps leave 24 < 23 < 22 in time left
    (Batsim: 24, 23, 22, 25) but too close to split steps; the engine's sleeps split them."""
    step, _ = _final_step(probe, shared_dir, "ties", 803.0000000005, 813.1, False)
    left = step["before"]
    assert left[14] < left[13] < left[12]
    assert sorted(step["ended"]) == [12, 13, 14] and not step["late"]
    assert 1e-14 < left[12] - left[14] < 1.3e-13   # below 1e-14 / rate (13 s job)
    acts = probe.record(shared_dir / "batsim-reference" / "ties")
    first = probe.replay(acts, 803.0000000005, 813.1, True, out=None)
    assert probe.replay(acts, 803.0000000005, 813.1, True, out=None) == first  # input kept
    step = first[0]
    assert step["ended"] == [14]
    assert step["late"][13] < step["late"][12]
    assert step["late"][13] > 1e-14 * 12


def test_kthties_time_left_follows_batsims_order(probe, shared_dir):
    """Jobs 20 and 22 (ptasks 5 and 7): job 22 has less time left (Batsim reports it first),
    by less than the 1.6e-13 s that would end job 20 one step later."""
    for engine_sleeps in (False, True):
        step, _ = _final_step(probe, shared_dir, "kthties", 5560.0001, 5562.1, engine_sleeps)
        left = step["before"]
        assert 0 < left[5] - left[7] < 1e-14 * 16
        assert sorted(step["ended"]) == [5, 7]
