"""Output formatting as Batsim 4.2.1 writes it."""

from __future__ import annotations

from mrsched.simulator.outputs import JobRecord, MachineStateTracker, g6, job_row, schedule_row


def test_job_rows():
    done = JobRecord("7", "w0", "p", 1.0, 2, -1, "COMPLETED_SUCCESSFULLY", 3.0, 13.0, "0-1", "")
    assert job_row(done) == ('7,w0,p,1.000000,2,-1.000000,1,COMPLETED_SUCCESSFULLY,3.000000,'
                             '10.000000,13.000000,2.000000,12.000000,1.200000,0-1,-1.000000,""')
    rejected = JobRecord("8", "w1", "p", 5.0, 1, 60, "REJECTED", metadata="io-phased")
    assert job_row(rejected) == ('8,w1,p,5.000000,1,60.000000,0,REJECTED,,,,,,,,,'
                                 '"io-phased"')


def test_stream_style_times():
    assert [g6(x) for x in (6.0008e-05, 3.00006, 12.000045, 37.00006, 0.0)] == \
        ["6.0008e-05", "3.00006", "12", "37.0001", "0"]
    t = MachineStateTracker(4)
    t.change(1.0, 2)
    t.change(1.0, -1)
    assert t.text().splitlines()[1:] == ["1,0,0,0,2,2", "1,0,0,0,3,1"]


def test_schedule_means_include_rejected_jobs():
    recs = [JobRecord("1", "w0", "p", 0.0, 1, -1, "COMPLETED_SUCCESSFULLY", 0.0, 10.0, "0"),
            JobRecord("2", "w0", "p", 0.0, 1, -1, "REJECTED")]
    row = schedule_row(recs, nb_machines=4, makespan=10.0, time_computing=10.0, time_idle=0.0,
                       scheduling_time=0.1, simulation_time=0.2)
    assert row["mean_turnaround_time"] == "5.000000"  # Batsim divides by all jobs
    assert row["nb_jobs_rejected"] == "1" and row["success_rate"] == "0.500000"
    assert list(row) == sorted(row)


def test_outputs_replace_the_old_files_whole(tmp_path, monkeypatch):
    """A write that fails midway (disk full, kill) leaves the previous outputs as they were and
    no temporary behind; a finished write replaces them."""
    import os

    import pytest

    from mrsched.errors import SimulationError
    from mrsched.simulator import outputs

    record = JobRecord("1", "w0", "d", 0.0, 1, 10.0, "COMPLETED_SUCCESSFULLY", 0.0, 5.0, "0")
    machines = MachineStateTracker(nb_machines=1)
    prefix = tmp_path / "out"
    outputs.write_outputs(prefix, [record], machines, {"makespan": "5.000000"})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken_row(r):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs, "job_row", broken_row)
    with pytest.raises(SimulationError, match="No space left on device"):
        outputs.write_outputs(prefix, [record, record], machines, {"makespan": "9.000000"})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    monkeypatch.undo()
    outputs.write_outputs(prefix, [record, record], machines, {"makespan": "9.000000"})
    assert (tmp_path / "out_jobs.csv").read_text().count("\n") == 3
    assert sorted(os.listdir(tmp_path)) == ["out_jobs.csv", "out_machine_states.csv", "out_schedule.csv"]
