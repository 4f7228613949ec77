"""``cases/diff_batsim.py`` draws cases that Batsim can run (the tool itself needs the Batsim
binary): every drawn platform and workload loads in the engine and runs to its end with the
drawn policy, and a seed always draws the same case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "cases"))
import diff_batsim  # noqa: E402

from mrsched.schedulers.registry import make_scheduler  # noqa: E402
from mrsched.simulator.engine import simulate  # noqa: E402


def _runs_to_its_end(case: dict, tmp_path: Path) -> None:
    (tmp_path / "platform.xml").write_text(case["platform"])
    (tmp_path / "workload.json").write_text(json.dumps(case["workload"]))
    policy = make_scheduler(case["policy"], dict(case["options"]))
    dynamic = "--enable-dynamic-jobs" in case.get("flags", "")
    result = simulate(tmp_path / "platform.xml", [tmp_path / "workload.json"], policy,
                      export_prefix=tmp_path / "out", energy=case["energy"], dynamic_jobs=dynamic)
    if dynamic:   # io-phased: each job ran as its registered phases
        assert result.nb_jobs > len(case["workload"]["jobs"])
    else:
        assert result.nb_jobs == len(case["workload"]["jobs"])


@pytest.mark.parametrize("seed", range(8))
def test_drawn_case_runs(seed, tmp_path):
    case = diff_batsim.draw(seed)
    assert case == diff_batsim.draw(seed)
    _runs_to_its_end(case, tmp_path)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_generated_case_runs(seed, tmp_path):
    """``--generated``: mrsched's own platform and workload generators, a burst-buffer policy
    (seed 7: an I/O-phased workload under ``filler``, ``--enable-dynamic-jobs``)."""
    case = diff_batsim.draw_generated(seed)
    assert bool(case["flags"]) == (seed == 7)
    _runs_to_its_end(case, tmp_path)
