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


def test_batsched_cases_carry_their_platform_energy_model():
    """``--batsched --energy``: batsched's energy variants are told the drawn platform's
    switching times and energies (one flop at the switching pstate's speed, at its wattage),
    and every job has a walltime (they assert it)."""
    models = {}
    for seed in range(9100, 9106):
        case = diff_batsim.draw_batsched(seed, energy=True)
        assert case == diff_batsim.draw_batsched(seed, energy=True)
        assert case["batsched"] and case["energy"]
        assert all(job.get("walltime", -1) != -1 for job in case["workload"]["jobs"])
        m = case["options"]
        models[m["time_switch_off"], m["time_switch_on"]] = m["energy_switch_on"]
        assert (m["pstate_sleep"], m["power_sleep"], m["power_idle"]) == (2, 9.75, 95.0)
    # platform_xml's two pstate sets: 0.1f and 0.1f, 0.2f and 0.05f (125 W switching on)
    assert models == {(10.0, 10.0): 1250.0, (5.0, 20.0): 2500.0}
    generated = diff_batsim.draw_batsched(9600, energy=True, generated=True)["options"]
    # mrsched platform --sleep-wattage: Batsim's energy platforms' 6.1 s and 151.52 s
    assert (generated["pstate_sleep"], generated["time_switch_off"]) == (1, 6.1)
    assert abs(generated["time_switch_on"] - 151.52) < 1e-9


def _truncated(tmp_path: Path, lines: int) -> Path:
    """Case ``ld_means`` cut after ``lines`` transcript lines: a run whose scheduler crashed."""
    import shutil

    case = tmp_path / "cut"
    shutil.copytree(Path(diff_batsim.HERE) / "ld_means", case)
    kept = (case / "transcript.jsonl").read_text().splitlines()[:lines]
    (case / "transcript.jsonl").write_text("\n".join(kept) + "\n")
    return case


def test_a_crashed_scheduler_is_compared_until_its_crash(tmp_path):
    """A run Batsim did not end: the engine, given the replies until then, sends the messages
    Batsim sent; one Batsim message moved makes it a difference."""
    case = _truncated(tmp_path, 21)    # 11 Batsim messages, the last one unanswered
    assert diff_batsim.compare_prefix(case) is None
    lines = (case / "transcript.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["from"] == "batsim"
    last["msg"]["now"] += 1.0
    lines[-1] = json.dumps(last)
    (case / "transcript.jsonl").write_text("\n".join(lines) + "\n")
    assert "now" in diff_batsim.compare_prefix(case)


def test_an_abort_is_read_from_batsims_log(tmp_path):
    case = _truncated(tmp_path, 3)
    (case / "logs").mkdir()
    (case / "logs" / "batsim.log").write_text(
        "[0.000000] [batsim/INFO] started\n[master_host0:server:(2) 0.000000] "
        "../src/protocol.cpp:1427: [root/CRITICAL] Internal error: Workload 'dynamic' should "
        "exist.\n")
    abort = diff_batsim.refused(tmp_path, "cut")
    assert abort.endswith("Workload 'dynamic' should exist.")
    (case / "logs" / "batsim.log").write_text("[0.000000] [batsim/INFO] started\n")
    assert diff_batsim.refused(tmp_path, "cut") is None    # a crash of the scheduler instead


def test_jobs_sets_the_count_and_keeps_the_seeds_draws(monkeypatch):
    """``--jobs N``: N jobs, the seed's platform and policy unchanged, its first jobs too."""
    plain = diff_batsim.draw(10005)
    monkeypatch.setattr(diff_batsim, "JOBS", 200)
    long = diff_batsim.draw(10005)
    assert len(long["workload"]["jobs"]) == 200
    assert (long["platform"], long["policy"]) == (plain["platform"], plain["policy"])
    first = plain["workload"]["jobs"]
    assert long["workload"]["jobs"][:len(first)] == first


def test_a_finished_case_is_compared_whole(tmp_path):
    """``compare``, the check of every case Batsim finished: a recorded case is identical;
    a changed digit of Batsim's ``_jobs.csv`` is a byte-level difference naming job and column."""
    import shutil

    case = tmp_path / "whole"
    shutil.copytree(Path(diff_batsim.HERE) / "ld_means", case)
    assert diff_batsim.compare(case) == (None, [])
    jobs = case / "out_jobs.csv"
    header, first, *rest = jobs.read_text().splitlines()
    cols = header.split(",")
    row = first.split(",")
    k = cols.index("waiting_time")
    row[k] = row[k][:-1] + ("1" if row[k][-1] != "1" else "2")
    jobs.write_text("\n".join([header, ",".join(row), *rest]) + "\n")
    first_diff, exact = diff_batsim.compare(case)
    assert first_diff is None           # within the tolerated level
    assert exact and exact[0].startswith(f"job {row[cols.index('job_id')]} waiting_time:")


def test_digits_keeps_the_seeds_draws_and_adds_long_numbers(monkeypatch):
    """``--digits``: the seed's platform, policy and job shapes, its numbers with all their
    digits, and every job an extra field above 1e9 of a double's digits (16 or 17, most)."""
    plain = diff_batsim.draw(13005)
    monkeypatch.setattr(diff_batsim, "DIGITS", True)
    full = diff_batsim.draw(13005)
    assert (full["platform"], full["policy"]) == (plain["platform"], plain["policy"])
    pairs = list(zip(plain["workload"]["jobs"], full["workload"]["jobs"]))
    assert len(pairs) == len(plain["workload"]["jobs"]) == len(full["workload"]["jobs"])
    for a, b in pairs:
        assert (a["res"], a["profile"]) == (b["res"], b["profile"])
        assert 1e9 <= b["extra"] < 1e11
        assert abs(a["subtime"] - b["subtime"]) < 1e-5 * (1 + len(pairs))
    long = [b for _, b in pairs if len(repr(b["extra"]).replace(".", "")) >= 16]
    assert len(long) * 2 > len(pairs)
