"""Run metrics on hand-computed schedules, and against Batsim's own _schedule.csv."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from analysis_csv import row, write_jobs

from mrsched.analysis.jobs import job_table, phase_table, read_jobs_csv
from mrsched.analysis.metrics import (
    add_job_metrics, resource_usage, run_metrics, usage_over_time,
)
from mrsched.errors import ConfigError

CAPS = {"nodes": 4, "burst_buffer": 100.0}


@pytest.fixture
def small_run(tmp_path):
    """4 nodes, 100 bytes of burst buffer. A fits, B waits for all nodes, C waits for B,
    D asks for 8 nodes and is rejected."""
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": "A", "subtime": 0, "res": 2, "profile": "p", "burst_buffer": 50},
        {"id": "B", "subtime": 0, "res": 4, "profile": "p", "burst_buffer": 20},
        {"id": "C", "subtime": 10, "res": 1, "profile": "p", "burst_buffer": 100},
        {"id": "D", "subtime": 20, "res": 8, "profile": "p", "burst_buffer": 500},
    ], "profiles": {"p": {"type": "delay", "delay": 1}}}))
    jobs = write_jobs(tmp_path / "out_jobs.csv", [
        row("A", 0, 2, 0, 100, "0-1"),
        row("B", 0, 4, 100, 1300, "0-3"),
        row("C", 10, 1, 1300, 1400, "2"),
        row("D", 20, 8, state="REJECTED"),
    ])
    return job_table(jobs, workload=wl)


def test_waiting_turnaround_and_rejected_excluded_but_counted(small_run):
    m = run_metrics(small_run, capacities=CAPS)
    assert m["n_jobs"] == 4 and m["n_executed"] == 3 and m["n_rejected"] == 1
    assert m["mean_waiting_time"] == pytest.approx((0 + 100 + 1290) / 3)  # not / 4 as Batsim
    assert m["max_waiting_time"] == 1290
    assert m["median_waiting_time"] == 100
    assert m["mean_turnaround_time"] == pytest.approx((100 + 1300 + 1390) / 3)
    assert m["makespan"] == 1400


def test_bounded_slowdown_on_both_sides_of_tau(small_run):
    jobs = add_job_metrics(small_run, tau=600).set_index("job_id")
    assert jobs.loc["A", "bounded_slowdown"] == 1.0  # 100 / max(100, 600) < 1 -> 1
    assert jobs.loc["B", "bounded_slowdown"] == pytest.approx(1300 / 1200)  # run > tau
    assert jobs.loc["C", "bounded_slowdown"] == pytest.approx(1390 / 600)  # run < tau
    assert jobs.loc["C", "slowdown"] == pytest.approx(13.9)
    assert np.isnan(jobs.loc["D", "bounded_slowdown"])
    short_tau = add_job_metrics(small_run, tau=50).set_index("job_id")
    assert short_tau.loc["C", "bounded_slowdown"] == pytest.approx(13.9)
    m = run_metrics(small_run, tau=600)
    assert m["mean_bounded_slowdown"] == pytest.approx((1 + 1300 / 1200 + 1390 / 600) / 3)
    assert m["max_bounded_slowdown"] == pytest.approx(1390 / 600)
    assert m["tau"] == 600


def test_utilisation_of_nodes_and_burst_buffer(small_run):
    m = run_metrics(small_run, capacities=CAPS)
    # node-seconds: A 2x100 + B 4x1200 + C 1x100 over 4 nodes x 1400 s
    assert m["utilisation_nodes"] == pytest.approx(5100 / 5600)
    # byte-seconds: A 50x100 + B 20x1200 + C 100x100 over 100 B x 1400 s
    assert m["utilisation_burst_buffer"] == pytest.approx(39000 / 140000)
    clipped = run_metrics(small_run, capacities=CAPS, window=(0, 700))
    assert clipped["utilisation_nodes"] == pytest.approx((200 + 4 * 600) / (4 * 700))


def test_usage_over_time_steps(small_run):
    nodes = usage_over_time(resource_usage(small_run, "nodes", capacities=CAPS))
    assert list(nodes["time"]) == [0, 100, 1300, 1400]
    assert list(nodes["used"]) == [2, 4, 1, 0]
    bb = usage_over_time(resource_usage(small_run, "burst_buffer"))
    assert list(bb["used"]) == [50, 20, 100, 0]


def test_unknown_requests_give_nan_not_zero(tmp_path):
    jobs = job_table(write_jobs(tmp_path / "out_jobs.csv", [row("1", 0, 1, 0, 10, "0")]))
    m = run_metrics(jobs, capacities={"nodes": 2, "burst_buffer": 10})
    assert m["utilisation_nodes"] == pytest.approx(0.5)
    assert np.isnan(m["utilisation_burst_buffer"])


def test_killed_and_failed_counts(tmp_path):
    jobs = job_table(write_jobs(tmp_path / "out_jobs.csv", [
        row("1", 0, 1, 0, 10, "0", state="COMPLETED_WALLTIME_REACHED"),
        row("2", 0, 1, 0, 10, "1", state="COMPLETED_KILLED"),
        row("3", 0, 1, 0, 10, "2", state="COMPLETED_FAILED"),
        row("4", 0, 1, 0, 10, "3"),
    ]))
    m = run_metrics(jobs)
    assert (m["n_killed"], m["n_walltime_reached"], m["n_failed"], m["n_success"]) == (2, 1, 1, 1)


def test_phased_job_nodes_idle_between_phases(tmp_path):
    raw = read_jobs_csv(write_jobs(tmp_path / "out_jobs.csv", [
        row("7", 0, 2, state="REJECTED", metadata="io-phased"),
        row("7.0.compute", 0, 2, 0, 10, "0-1", workload="w0-io"),
        row("7.1.compute", 10, 2, 30, 40, "0-1", workload="w0-io"),
        row("7.2.stage_out", 40, 2, 40, 50, "4", workload="w0-io"),  # id 4: a storage host
    ]))
    jobs = job_table(tmp_path / "out_jobs.csv")
    m = run_metrics(jobs, capacities={"nodes": 4}, phases=phase_table(raw))
    assert m["utilisation_nodes"] == pytest.approx((2 * 10 + 2 * 10) / (4 * 50))
    assert m["mean_waiting_time"] == 0 and m["makespan"] == 50


def test_bad_tau_is_a_config_error(small_run):
    with pytest.raises(ConfigError, match="tau"):
        run_metrics(small_run, tau=0)


@pytest.mark.parametrize("case", ["easy250", "fcfs250", "io30", "walltime"])
def test_matches_batsim_schedule_csv_without_rejections(shared_dir, case):
    """Without rejected jobs our means equal Batsim's own (6 printed decimals)."""
    run = shared_dir / "batsim-reference" / case
    with open(run / "out_schedule.csv") as f:
        ref = next(csv.DictReader(f))
    m = run_metrics(job_table(run / "out_jobs.csv"))
    assert m["n_jobs"] == int(ref["nb_jobs"])
    assert m["n_killed"] == int(ref["nb_jobs_killed"])
    assert m["makespan"] == pytest.approx(float(ref["makespan"]), abs=1e-5)
    for ours, theirs in [("mean_waiting_time", "mean_waiting_time"),
                         ("max_waiting_time", "max_waiting_time"),
                         ("mean_turnaround_time", "mean_turnaround_time"),
                         ("max_slowdown", "max_slowdown"), ("mean_slowdown", "mean_slowdown")]:
        assert m[ours] == pytest.approx(float(ref[theirs]), rel=1e-5, abs=1e-5), ours


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
@pytest.mark.parametrize("case", ["easy_bf-seed1", "filler-seed2"])
def test_node_utilisation_agrees_with_evalys(shared_dir, case):
    """evalys' load integral (it works on pandas 3) is an independent check of ours."""
    from evalys.jobset import JobSet

    path = shared_dir / "batsched-reference" / case / "out_jobs.csv"
    jobs = job_table(path)
    jobset = JobSet.from_csv(str(path))
    # evalys fails on windows between its own events (pandas 3): use its first and last
    t0, t1 = float(jobset.utilisation.index[0]), float(jobset.utilisation.index[-1])
    assert t0 == pytest.approx(jobs["starting_time"].min()) and t1 == pytest.approx(jobs["finish_time"].max())
    m = run_metrics(jobs, capacities={"nodes": 128}, window=(t0, t1))
    assert m["utilisation_nodes"] * 128 == pytest.approx(jobset.mean_utilisation(t0, t1), rel=1e-9)


def test_raw_csv_rows_work_and_non_tables_are_refused(tmp_path):
    raw = read_jobs_csv(write_jobs(tmp_path / "out_jobs.csv", [
        row("1", 0, 1, 5, 10, "0"), row("2", 0, 9, state="REJECTED")]))
    m = run_metrics(raw)
    assert (m["n_rejected"], m["mean_waiting_time"]) == (1, 5)
    import pandas as pd

    with pytest.raises(ConfigError, match="starting_time"):
        run_metrics(pd.DataFrame({"submission_time": [0.0], "final_state": ["REJECTED"]}))
