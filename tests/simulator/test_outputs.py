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

    def broken_row(r, times=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs, "job_row", broken_row)
    with pytest.raises(SimulationError, match="No space left on device"):
        outputs.write_outputs(prefix, [record, record], machines, {"makespan": "9.000000"})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    monkeypatch.undo()
    outputs.write_outputs(prefix, [record, record], machines, {"makespan": "9.000000"})
    assert (tmp_path / "out_jobs.csv").read_text().count("\n") == 3
    assert sorted(os.listdir(tmp_path)) == ["out_jobs.csv", "out_machine_states.csv", "out_schedule.csv"]


def _records():
    return [JobRecord("1", "w0", "p", 0.0, 2, -1, "COMPLETED_SUCCESSFULLY", 0.5, 10.25, "0-1"),
            JobRecord("2", "w0", "p", 1.0, 1, 60, "REJECTED", metadata="why"),
            JobRecord("3", "w1", "q", 2.0, 1, 5, "COMPLETED_WALLTIME_REACHED", 3.0, 8.0, "4"),
            JobRecord("4", "w1", "q", 2.0, 1, 5, "COMPLETED_KILLED", 3.0, 3.00001, "5",
                      runtime=1e-5),
            JobRecord("5", "w0", "p", 0.1, 3, -1, "COMPLETED_SUCCESSFULLY", 7.0, 9.0, "0-2")]


def test_streamed_outputs_equal_the_whole_list_write(tmp_path):
    """Rows written as jobs end, in chunks, give the very bytes of a write from whole lists;
    the final names appear only when the run finishes (temporaries until then)."""
    from mrsched.simulator.outputs import ScheduleStats, StreamedOutputs, write_outputs

    records = _records()
    changes = [(0.5, 2), (3.0, 1), (3.0, 1), (3.00001, -1), (7.0, 3), (8.0, -1), (9.0, -3),
               (10.25, -2)]
    whole = MachineStateTracker(8)
    for t, d in changes:
        whole.change(t, d)
    schedule = schedule_row(records, nb_machines=8, makespan=10.25, time_computing=30.0,
                            time_idle=4.5, scheduling_time=0.0, simulation_time=0.0)
    write_outputs(tmp_path / "whole", records, whole, schedule)

    machines = MachineStateTracker(8, chunk=3)
    files = StreamedOutputs(tmp_path / "streamed", machines, chunk=2)
    stats = ScheduleStats()
    for (t, d), r in zip(changes, records + [None] * 3):
        machines.change(t, d)
        if r is not None:
            files.add(r)
            stats.add(r)
    assert not list(tmp_path.glob("streamed_*"))          # nothing under the final names yet
    assert len(list(tmp_path.glob(".streamed_*.tmp"))) == 2
    assert stats.row(nb_machines=8, makespan=stats.makespan, time_computing=30.0, time_idle=4.5,
                     scheduling_time=0.0, simulation_time=0.0) == schedule
    assert stats.makespan == 10.25
    files.finish(schedule)
    for suffix in ("jobs", "schedule", "machine_states"):
        assert ((tmp_path / f"streamed_{suffix}.csv").read_bytes()
                == (tmp_path / f"whole_{suffix}.csv").read_bytes()), suffix
    assert not list(tmp_path.glob(".*.tmp"))


def test_streamed_outputs_abort_leaves_the_old_files(tmp_path):
    from mrsched.simulator.outputs import StreamedOutputs, write_outputs

    write_outputs(tmp_path / "out", _records()[:1], MachineStateTracker(2), {"makespan": "1"})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    files = StreamedOutputs(tmp_path / "out", MachineStateTracker(2), chunk=1)
    files.add(_records()[1])
    files.abort()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_streamed_outputs_unwritable_folder_is_one_error(tmp_path):
    import pytest

    from mrsched.errors import SimulationError
    from mrsched.simulator.outputs import StreamedOutputs

    (tmp_path / "file").write_text("")
    with pytest.raises(SimulationError, match="cannot write outputs"):
        StreamedOutputs(tmp_path / "file" / "out", MachineStateTracker(2))


# -- Batsim's long-double times (export.cpp 1188-1198) -----------------------------------------
from fractions import Fraction  # noqa: E402

from hypothesis import given, strategies as st  # noqa: E402

from fuzzing import budget  # noqa: E402
from mrsched.simulator.outputs import batsim_times  # noqa: E402


def _ld(x: Fraction) -> Fraction:
    """x rounded to a 64-bit significand, half to even (an x87 long double), exactly."""
    if x == 0:
        return x
    sign = -1 if x < 0 else 1
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    scale = Fraction(2) ** (63 - e)
    return sign * Fraction(round(x * scale)) / scale


def test_batsim_times_as_long_doubles_written_plainly():
    """The formula of export.cpp in exact rational arithmetic rounded to 64 bits at each step
    (a plain reference for numpy's long doubles), on a job that took no time (runtime 1e-5l)
    and one of 0.000123 s, both late in a run."""
    for start, end, sub in ((100000.0, 100000.0, 99999.123456789),
                            (101234.567891, 101234.568014, 101234.567891)):
        s, c, u = Fraction(start), Fraction(end), Fraction(sub)
        runtime = _ld(c - s) if end != start else _ld(Fraction(1, 100000))
        finish = _ld(s + runtime)
        turnaround = _ld(finish - u)
        want = (float(runtime), float(finish), float(_ld(s - u)), float(turnaround),
                float(_ld(turnaround / runtime)))
        assert batsim_times(start, end, sub) == want


@budget(300)
@given(st.floats(1.0, 1e7), st.floats(1e-6, 1e3), st.integers(1_000_000, 10**12))
def test_direct_doubles_print_as_long_doubles_near_ties(start, length, tie):
    """job_row prints the times computed in doubles unless a few ulps could change their six
    decimals (``_fragile``); drawn so that the stretch lies within ulps of a six-decimal tie
    (``tie`` + 0.5 millionths), the row still prints Batsim's long-double values."""
    end = start + length
    runtime = end - start
    sub = end - (tie + 0.5) * 1e-6 * runtime
    if not 0 <= sub <= start:
        return
    r = JobRecord("1", "w0", "p", sub, 1, -1.0, "COMPLETED_SUCCESSFULLY", start, end, "0")
    row = job_row(r).split(",")
    assert row[9:14] == [f"{x:.6f}" for x in batsim_times(start, end, sub)]


def _batsim_means(jobs: list[tuple[float, float, float]], nb_jobs: int) -> list[str]:
    """export.cpp 1142-1150 and 1039-1041 in exact rationals rounded to long doubles at each
    step: each started job's waiting time, turnaround and slowdown summed in order, each sum
    cast to double and divided by the number of jobs, printed with six decimals."""
    sums = [Fraction(0)] * 3
    for start, end, sub in jobs:
        s, u = Fraction(start), Fraction(sub)
        runtime = _ld(Fraction(end) - s) if end != start else _ld(Fraction(1, 100000))
        turnaround = _ld(_ld(s + runtime) - u)
        for k, x in enumerate((_ld(s - u), turnaround, _ld(turnaround / runtime))):
            sums[k] = _ld(sums[k] + x)
    return [f"{float(x) / nb_jobs:.6f}" for x in sums]


def _means_row(jobs: list[tuple[float, float, float]], rejected: int = 0) -> list[str]:
    recs = [JobRecord(str(i), "w0", "p", sub, 1, -1.0, "COMPLETED_KILLED", start,
                      end if end != start else start + 1e-5, "0",
                      runtime=1e-5 if end == start else None)
            for i, (start, end, sub) in enumerate(jobs)]
    recs += [JobRecord(f"r{i}", "w0", "p", 0.0, 1, -1.0, "REJECTED") for i in range(rejected)]
    row = schedule_row(recs, nb_machines=4, makespan=0.0, time_computing=0.0, time_idle=0.0,
                       scheduling_time=0.0, simulation_time=0.0)
    return [row[k] for k in ("mean_waiting_time", "mean_turnaround_time", "mean_slowdown")]


def test_schedule_means_as_batsim_sums_them():
    """Case ``ld_means`` (batsched ``killer2``): jobs killed a few microseconds after their
    start, hours after their submission, give slowdowns of 1e11, whose mean prints more digits
    than a double holds: the double sum was one ulp from Batsim's long double one."""
    jobs = [(13.0 + 5 * k, 13.0 + 5 * k + 1e-10 * (1 + k % 3), 8.0 + 4.2 * k) for k in range(30)]
    jobs.append((173.0, 173.0, 147.0))   # a job of no time: Batsim's runtime is 1e-5l
    assert _means_row(jobs, rejected=2) == _batsim_means(jobs, len(jobs) + 2)


@budget(200)
@given(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 1e5),
                          st.sampled_from([0.0, 1e-9, 1e-6, 1e-3, 1.0, 1e3]),
                          st.floats(0, 1)), min_size=1, max_size=12),
       st.integers(0, 3))
def test_schedule_means_print_as_batsim_long_doubles(draws, rejected):
    """Drawn jobs, from ordinary to slowdowns of 1e15: the printed means are Batsim's, whether
    the double sums are close enough (most runs) or the means are computed again."""
    jobs = []
    for sub, wait, length, frac in draws:
        start = sub + wait
        end = start + length * (1 + frac)
        jobs.append((start, end, sub))
    assert _means_row(jobs, rejected) == _batsim_means(jobs, len(jobs) + rejected)
