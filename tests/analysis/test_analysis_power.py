"""Energy and power of runs (analysis/power.py): measured from the engine's -E trace, estimated
from the platform's wattage otherwise, and the two agreeing where they must."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mrsched.analysis import load_run
from mrsched.analysis.campaign import metrics_table
from mrsched.analysis.power import (ENERGY_METRICS, PowerSeries, job_energy, read_energy_trace,
                                    run_energy_metrics, run_power)
from mrsched.cli import main

CASE = Path(__file__).parents[1] / "simulator" / "cases" / "sleeper"   # 7 hosts, 30:100 W


def _workload(tmp_path: Path, delay: bool) -> Path:
    wl = json.loads((CASE / "workload.json").read_text())
    wl["jobs"] = [j for j in wl["jobs"]
                  if (wl["profiles"][j["profile"]]["type"] == "delay") == delay]
    path = tmp_path / ("delay.json" if delay else "cpu.json")
    path.write_text(json.dumps(wl))
    return path


def _run(tmp_path: Path, workload: Path, name: str, *extra: str, platform=CASE / "platform.xml"):
    out = tmp_path / name
    assert main(["run", "-p", str(platform), "-w", str(workload), "--policy", "fcfs",
                 "-o", str(out), *extra]) == 0
    return load_run(out)


def _schedule(run) -> dict:
    with open(Path(run.path) / "out_schedule.csv") as fh:
        return next(csv.DictReader(fh))


def test_measured_energy_is_batsims_consumed_joules(tmp_path):
    """With -E, the energy over the window (first submission to last completion) is what
    Batsim's _schedule.csv reports, and each job's energy its consumed_energy."""
    run = _run(tmp_path, CASE / "workload.json", "e", "--energy")
    m = run_energy_metrics(run)
    assert m["energy_measured"] == 1.0
    assert m["energy_j"] == pytest.approx(float(_schedule(run)["consumed_joules"]), abs=1e-5)
    span = float(run.jobs["finish_time"].max() - run.jobs["submission_time"].min())
    assert m["mean_power_w"] == pytest.approx(m["energy_j"] / span)
    assert m["edp_js"] == pytest.approx(m["energy_j"] * span)
    assert 7 * 30 <= m["peak_power_w"] <= 7 * 100
    with open(Path(run.path) / "out_jobs.csv") as fh:
        batsim = {r["job_id"]: float(r["consumed_energy"]) for r in csv.DictReader(fh)}
    got = job_energy(run)
    assert dict(zip(got["job_id"], got["energy_j"])) == pytest.approx(batsim)


def test_the_estimate_is_the_measure_for_jobs_that_load_their_cores(tmp_path):
    """parallel_homogeneous jobs (com 0) load their hosts' cores fully: SimGrid charges
    AllCores, as the wattage estimate does; the same energy, peak and per-job energies."""
    wl = _workload(tmp_path, delay=False)
    measured = run_energy_metrics(_run(tmp_path, wl, "e", "--energy"))
    estimated = run_energy_metrics(_run(tmp_path, wl, "n"))
    assert estimated["energy_measured"] == 0.0
    for key in ("energy_j", "mean_power_w", "peak_power_w", "edp_js", "energy_per_job_j"):
        assert estimated[key] == pytest.approx(measured[key], rel=1e-12), key


def test_delay_jobs_draw_idle_in_simgrid_but_busy_in_the_estimate(tmp_path):
    """A delay job puts no load on a CPU: SimGrid charges its hosts Idle (30 W here); the
    estimate charges AllCores (100 W), i.e. 70 W more per host per second of job."""
    wl = _workload(tmp_path, delay=True)
    run_e = _run(tmp_path, wl, "e", "--energy")
    measured = run_energy_metrics(run_e)
    estimated = run_energy_metrics(_run(tmp_path, wl, "n"))
    jobs = run_e.jobs
    host_seconds = float(((jobs["finish_time"] - jobs["starting_time"])
                          * jobs["requested_number_of_resources"]).sum())
    assert estimated["energy_j"] - measured["energy_j"] == pytest.approx(70 * host_seconds)
    assert measured["peak_power_w"] == pytest.approx(7 * 30)


def test_without_wattage_there_is_no_power(tmp_path, shared_dir):
    """A platform without wattage_per_state: no estimate, no energy metrics."""
    case = shared_dir / "batsim-reference" / "delays"
    out = tmp_path / "run"
    assert main(["run", "-p", str(case / "platform.xml"), "-w", str(case / "workload.json"),
                 "--policy", "fcfs", "-o", str(out)]) == 0
    run = load_run(out)
    assert run_power(run) is None and run_energy_metrics(run) == {}
    assert job_energy(run).empty


def test_a_power_step_function_integrates_and_peaks():
    s = PowerSeries(np.array([0.0, 10.0, 20.0]), np.array([100.0, 300.0, 50.0]), measured=False)
    assert s.energy(0, 10) == 1000.0
    assert s.energy(5, 15) == 500 + 1500
    assert s.energy(15, 30) == 1500 + 500          # the last value holds after the last time
    assert s.peak(0, 10) == 100.0 and s.peak(0, 10.5) == 300.0 and s.peak(20, 25) == 50.0


def test_the_energy_trace_as_power(shared_dir):
    """energysleep's trace: its energy at the last row, and its power as Batsim's epower."""
    path = shared_dir / "batsim-reference" / "energysleep" / "out_consumed_energy.csv"
    series = read_energy_trace(path)
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    last = float(rows[-1]["time"])
    assert series.energy(0, last) == pytest.approx(float(rows[-1]["energy"]), abs=1e-6)
    epowers = [float(r["epower"]) for r in rows if r["epower"] != "NA"]
    assert series.peak(0, last) == pytest.approx(max(epowers), abs=1e-5)
    assert series.measured and math.isnan(series.idle_w)


def test_campaign_metrics_carry_energy(tmp_path):
    _run(tmp_path, CASE / "workload.json", "runs/a", "--energy")
    _run(tmp_path, CASE / "workload.json", "runs/b")
    table = metrics_table(load_run(p) for p in sorted((tmp_path / "runs").iterdir()))
    assert set(ENERGY_METRICS) <= set(table.columns)
    assert list(table["energy_measured"]) == [1.0, 0.0]
    assert (table["energy_j"] > 0).all()


def test_the_schedule_figure_has_a_power_panel(tmp_path):
    """The power panel sits under utilisation on the run's time axis, measured or estimated;
    a platform without wattage gets none."""
    from mrsched.analysis.schedule import schedule_figure

    for name, extra, word in (("e", ("--energy",), "measured"), ("n", (), "estimated")):
        run = _run(tmp_path, CASE / "workload.json", name, *extra)
        fig, notes = schedule_figure(run)
        assert notes["panels"][-1] == "power" and notes["power"].startswith(word)
        ax = fig.axes[notes["panels"].index("power")]
        assert ax.get_title(loc="left").endswith("power")
        assert ax.get_xlim() == fig.axes[0].get_xlim()       # shared time axis


def test_wattage_and_sleep_states_read_one_load_of_the_platform(monkeypatch):
    """A report reads the machines' wattage and their sleep states from one platform load."""
    import mrsched.simulator.platform as platform
    from mrsched.analysis import power

    sleeper = Path(__file__).parents[1] / "simulator" / "cases" / "sleeper" / "platform.xml"
    loads, real = [], platform.load_platform
    monkeypatch.setattr(platform, "load_platform", lambda *a, **k: loads.append(a) or real(*a, **k))
    for cached in (power._machine_powers, power._wattage, power._sleep_wattage):
        cached.cache_clear()
    path, mtime = str(sleeper.resolve()), sleeper.stat().st_mtime_ns
    watts = power._wattage(path, mtime, (), None, 1.0)
    assert power._sleep_wattage(path, mtime, (), None) == (30.0, 9.75, 200.996721311, 425.1743849)
    assert len(loads) == 1
    assert watts.n_compute == 7 and list(watts.idle) == [30.0] * 7 and list(watts.busy) == [100.0] * 7
