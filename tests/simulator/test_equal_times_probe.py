"""The equal-time diagnostic (bench/probe_equal_times.py) shows the engine's SimGrid steps: in
`ties` and `kthties` the jobs Batsim reports first have the least time left, and each ends in
a step of its own (docs/DESIGN.md, "Equal times")."""

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


def _ended(steps):
    return [s["ended"] for s in steps if s["ended"]]


def test_ties_steps(probe, shared_dir):
    """Jobs 22-25 (ptasks 12-15) "at 813": 24, 23, 22 one step each (Batsim's order), 25 last;
    the gaps between their times left exceed what one step can end together (1e-14 / rate)."""
    steps = probe.record(shared_dir / "batsim-reference" / "ties", 812.9, 813.1)
    assert _ended(steps) == [[14], [13], [12], [15]]
    left = steps[0]["left"]
    assert left[14] < left[13] < left[12] < left[15]
    assert left[13] - left[14] > 1e-14 * 12 and left[12] - left[13] > 1e-14 * 13
    assert all(s["delta"] < 1e-9 for s in steps[1:])   # the same instant to Batsim's print
    assert not [s for s in steps if s["solver"]]
    assert probe.record(shared_dir / "batsim-reference" / "ties", 812.9, 813.1) == steps


def test_kthties_steps(probe, shared_dir):
    """Jobs 20 and 22 (ptasks 5 and 7) "at 5562": job 22 has 1e-12 s less left, ends first."""
    steps = probe.record(shared_dir / "batsim-reference" / "kthties", 5561.9, 5562.1)
    assert _ended(steps)[:2] == [[7], [5]]
    left = steps[0]["left"]
    assert 1e-14 * 16 < left[5] - left[7] < 1e-11
