"""Reading Batsim jobs CSVs, folding I/O-phased sub-jobs, and job requests from workloads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from analysis_csv import row, write_jobs

from mrsched.analysis.jobs import (
    fold_subjobs, format_intervals, id_ranges, job_table, phase_table, read_jobs_csv,
    workload_requests,
)
from mrsched.errors import MrschedError, WorkloadError


def test_reads_reference_run_and_keeps_batsim_times(shared_dir):
    table = job_table(shared_dir / "batsim-reference" / "io30" / "out_jobs.csv")
    assert len(table) == 30
    job1 = table.set_index("job_id").loc["1"]
    assert job1["starting_time"] == pytest.approx(20.0)
    assert job1["finish_time"] == pytest.approx(40.00013)
    assert job1["waiting_time"] == pytest.approx(0.0)
    assert job1["nb_allocated"] == 8
    assert table["killed"].sum() == 2  # two COMPLETED_WALLTIME_REACHED
    assert not table["rejected"].any()


def test_rejected_rows_have_nan_times(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [
        row("1", 0, 2, 0, 10, "0-1"),
        row("2", 5, 64, state="REJECTED"),
    ])
    table = job_table(csv).set_index("job_id")
    assert bool(table.loc["2", "rejected"])
    assert np.isnan(table.loc["2", "waiting_time"])
    assert np.isnan(table.loc["2", "starting_time"])
    assert table.loc["1", "turnaround_time"] == 10


def test_folds_io_phases_into_parent(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [
        row("7", 100, 2, state="REJECTED", metadata="io-phased"),
        row("7.0.stage_in", 110, 2, 120, 130, "10-11", workload="w0-io"),
        row("7.1.compute", 130, 2, 130, 200, "0-1", workload="w0-io"),
        row("7.2.checkpoint", 200, 2, 200, 210, "0-1 10", workload="w0-io"),
        row("7.3.stage_out", 210, 2, 215, 250, "10-11", state="COMPLETED_FAILED", workload="w0-io"),
        row("8", 100, 1, 100, 150, "3"),
    ])
    table = fold_subjobs(read_jobs_csv(csv))
    assert list(table["job_id"]) == ["7", "8"]
    job = table.set_index("job_id").loc["7"]
    assert job["submission_time"] == 100  # the parent's, not the first phase's
    assert job["starting_time"] == 120  # first phase start
    assert job["finish_time"] == 250  # last phase finish
    assert job["waiting_time"] == 20
    assert job["turnaround_time"] == 150
    assert job["final_state"] == "COMPLETED_FAILED"  # worst phase state
    assert not job["rejected"]
    assert job["n_phases"] == 4
    assert job["allocated_resources"] == "0-1 10-11"
    assert job["requested_number_of_resources"] == 2
    phases = phase_table(read_jobs_csv(csv))
    assert list(phases.loc[phases["parent"] == "7", "phase"]) == [
        "stage_in", "compute", "checkpoint", "stage_out"]
    assert list(phases.loc[phases["parent"] == "8", "phase"]) == [""]


def test_fold_worst_state_is_killed_over_walltime(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [
        row("a", 0, 1, state="REJECTED", metadata="io-phased"),
        row("a.0.compute", 0, 1, 0, 5, "0", state="COMPLETED_WALLTIME_REACHED", workload="w0-io"),
        row("a.1.compute", 5, 1, 5, 6, "0", state="COMPLETED_KILLED", workload="w0-io"),
    ])
    job = fold_subjobs(read_jobs_csv(csv)).iloc[0]
    assert job["final_state"] == "COMPLETED_KILLED" and bool(job["killed"])


def test_dotted_ids_outside_io_workload_are_not_folded(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [
        row("1.0.x", 0, 1, 0, 5, "0"),
        row("1", 0, 1, 0, 5, "1"),
    ])
    assert len(fold_subjobs(read_jobs_csv(csv))) == 2


def test_interval_sets_are_read_by_the_protocol_parser():
    """Issue 40: analysis had its own interval-set parser; the wire format has one reader."""
    import mrsched.analysis.jobs as jobs_mod
    from mrsched.schedulers.batsim import intervals

    assert jobs_mod.parse_intervals is intervals.parse_intervals
    assert id_ranges("0-3 7 9-10") == [(0, 3), (7, 7), (9, 10)]
    assert format_intervals([10, 9, 7, 3, 2, 1, 0]) == "0-3 7 9-10"
    assert id_ranges("") == []


def test_a_bad_allocation_names_file_line_job_and_field(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [row("1", 0, 2, 0, 10, "0-1"),
                                                 row("2", 0, 2, 0, 10, "3-1")])
    with pytest.raises(WorkloadError) as err:
        read_jobs_csv(csv)
    text = str(err.value)
    assert "out_jobs.csv:3" in text and "job 2" in text and "allocated_resources" in text
    assert "'3-1'" in text and "reversed" in text


def test_requests_from_job_field_and_europar_profile(tmp_path):
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 0, "res": 2, "profile": "p", "burst_buffer": 5e9, "gpus_per_node": 2},
        {"id": "w0!2", "subtime": 0, "res": 3, "profile": "q", "walltime": 60},
        {"id": 3, "subtime": 0, "res": 1, "profile": "r"},
    ], "profiles": {"p": {"type": "delay", "delay": 1},
                    "q": {"type": "parallel_homogeneous", "cpu": 1, "com": 0, "bb": 1e9},
                    "r": {"type": "delay", "delay": 1}}}))
    req = workload_requests(wl).set_index("job_id")
    assert req.loc["1", "burst_buffer"] == 5e9
    assert req.loc["2", "burst_buffer"] == 3e9  # bb per node x res
    assert req.loc["3", "burst_buffer"] == 0
    assert req.loc["2", "walltime"] == 60 and np.isnan(req.loc["1", "walltime"])
    csv = write_jobs(tmp_path / "out_jobs.csv", [row("1", 0, 2, 0, 5, "0-1"), row("2", 0, 3, 5, 9, "0-2")])
    table = job_table(csv, workload=wl).set_index("job_id")
    assert table.loc["1", "gpus"] == 4  # gpus_per_node x nodes
    assert table.loc["2", "burst_buffer"] == 3e9


def test_missing_column_names_file_and_field(tmp_path):
    bad = tmp_path / "bad_jobs.csv"
    bad.write_text("job_id,workload_name\n1,w0\n")
    with pytest.raises(WorkloadError) as err:
        read_jobs_csv(bad)
    assert "bad_jobs.csv" in str(err.value) and "submission_time" in str(err.value)


def test_non_number_names_line_job_and_field(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [row("1", 0, 2, 0, 10, "0-1"),
                                                 row("2", 0, 2, 0, 10, "0-1").replace(",10.000000,", ",ten,", 1)])
    with pytest.raises(WorkloadError) as err:
        read_jobs_csv(csv)
    text = str(err.value)
    assert ":3" in text and "job 2" in text and "execution_time" in text


def test_unknown_state_and_missing_file_are_clear_errors(tmp_path):
    csv = write_jobs(tmp_path / "out_jobs.csv", [row("1", 0, 2, 0, 10, "0-1", state="DONE")])
    with pytest.raises(WorkloadError, match="unknown final state 'DONE'"):
        read_jobs_csv(csv)
    with pytest.raises(MrschedError, match="not found"):
        read_jobs_csv(tmp_path / "nope_jobs.csv")


def test_bad_workload_request_is_reported(tmp_path):
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"jobs": [{"id": 4, "res": 1, "burst_buffer": -5}]}))
    with pytest.raises(WorkloadError) as err:
        workload_requests(wl)
    assert "job 4" in str(err.value) and "burst_buffer" in str(err.value)


def test_id_counts_and_the_workload_header(tmp_path):
    from mrsched.analysis.jobs import id_counts, workload_header

    assert list(id_counts(["0-3 7", "", "0-3 7", "5"])) == [5, 0, 5, 1]
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "x", "generator": {"command": "synthetic", "jobs": 1},
                                "nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"}],
                                "profiles": {"p": {"type": "delay", "delay": 1}}}))
    assert workload_header(path) == {"name": "x", "generator": {"command": "synthetic", "jobs": 1},
                                     "nb_res": 4}
    with pytest.raises(WorkloadError, match="not found"):
        workload_header(tmp_path / "gone.json")
