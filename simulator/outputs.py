"""Batsim 4.2.1's three output files, same columns and number formatting.

``_jobs.csv`` rows are written in completion order (rejections when rejected), floats with six
decimals as Batsim's ``%f``; ``_machine_states.csv`` times use C++ stream formatting (six
significant digits); ``_schedule.csv`` is one row with keys in lexicographic order.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mrsched.errors import SimulationError

BATSIM_VERSION = "4.2.1"

JOBS_COLUMNS = ("job_id", "workload_name", "profile", "submission_time",
                "requested_number_of_resources", "requested_time", "success", "final_state",
                "starting_time", "execution_time", "finish_time", "waiting_time",
                "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                "metadata")

MACHINE_STATES_COLUMNS = ("time", "nb_sleeping", "nb_switching_on", "nb_switching_off",
                          "nb_idle", "nb_computing")


@dataclass(slots=True)
class JobRecord:
    """What Batsim knows about a finished or rejected job when it writes ``_jobs.csv``."""

    local_id: str
    workload: str
    profile: str
    submission_time: float
    res: int
    walltime: float
    final_state: str            # COMPLETED_* or REJECTED
    starting_time: float | None = None
    finish_time: float | None = None
    alloc: str = ""
    metadata: str = ""
    #: Batsim's job runtime when it is not finish - start: a job that took no time is given
    #: 1e-5 s (finish_time is then start + 1e-5, and execution_time exactly 1e-5)
    runtime: float | None = None
    #: ``consumed_energy`` as Batsim prints it under ``-E`` (None: -1, energy not simulated)
    energy: str | None = None


def f6(x: float) -> str:
    return f"{x:.6f}"


def g6(x: float) -> str:
    """C++ ``std::ostream << double`` (precision 6, general format)."""
    return f"{x:.6g}"


def job_row(r: JobRecord, times: tuple | None = None) -> str:
    """``r``'s ``_jobs.csv`` row; ``times``: its ``times_of`` when the caller has them."""
    success = 1 if r.final_state == "COMPLETED_SUCCESSFULLY" else 0
    # one format per row (a row per job of whole traces): f"{x:.6f}" is f6(x)
    head = (f"{r.local_id},{r.workload},{r.profile},{r.submission_time:.6f},{r.res},{r.walltime:.6f},"
            f"{success},{r.final_state}")
    meta = '"' + r.metadata + '"'
    if r.starting_time is None or r.finish_time is None:
        return f"{head},,,,,,,,,{meta}"   # consumed_energy empty too, as Batsim
    execution, finish, waiting, turnaround, stretch = times if times is not None else times_of(r)
    return (f"{head},{r.starting_time:.6f},{execution:.6f},{finish:.6f},{waiting:.6f},"
            f"{turnaround:.6f},{stretch:.6f},{r.alloc},"
            f"{'-1.000000' if r.energy is None else r.energy},{meta}")


def times_of(r: JobRecord) -> tuple[float, float, float, float, float]:
    """A started job's execution, finish, waiting and turnaround times and stretch as Batsim
    prints them: the doubles computed directly, or Batsim's long doubles (``batsim_times``)
    for a job that took no time and where a few ulps could change the six decimals."""
    start, finish, sub = r.starting_time, r.finish_time, r.submission_time
    if r.runtime is not None:   # a job that took no time: Batsim's runtime is ``1e-5l``
        return batsim_times(start, start, sub)
    execution = finish - start
    turnaround = finish - sub
    stretch = turnaround / execution if execution > 0 else 0.0
    if _fragile(stretch) or _fragile(turnaround):   # (the others: at most one rounding)
        return batsim_times(start, finish, sub)
    return execution, finish, start - sub, turnaround, stretch


#: Batsim's runtime of a job that took no time (``1e-5l``, ``src/jobs_execution.cpp`` 559)
ZERO_RUNTIME_TEXT = "1e-5"


def batsim_times(start: float, end: float, sub: float) -> tuple[float, ...]:
    """A job's execution, finish, waiting and turnaround times and stretch as Batsim computes
    them: in long double from its start, submission and runtime (the clock at its end minus
    its start, or ``1e-5l`` when that is 0; ``src/export.cpp`` 1188-1198), then cast to
    double. The doubles computed directly print the same six decimals except within a few
    ulps of a rounding tie (``_fragile``) and for a job that took no time."""
    import numpy as np   # here: a run's parent process (mrsched run) does not load numpy

    ld = np.longdouble
    s = ld(start)
    runtime = ld(end) - s if end != start else ld(ZERO_RUNTIME_TEXT)
    finish = s + runtime
    turnaround = finish - ld(sub)
    return (float(runtime), float(finish), float(s - ld(sub)), float(turnaround),
            float(turnaround / runtime))


def _fragile(x: float) -> bool:
    """Whether a few ulps of ``x`` could change its six decimals (it is that near a tie)."""
    y = abs(x) * 1e6
    frac = y - int(y) if y < 9e15 else 0.5
    return abs(frac - 0.5) <= y * 3.6e-15 + 1e-9


@dataclass
class MachineStateTracker:
    """Counts of idle / computing machines over time, one row per change. With a ``sink`` the
    rows go to it in chunks as they come (a row per job start and end: a whole trace's worth
    would otherwise stay in memory to the end)."""

    nb_machines: int
    computing: int = 0
    rows: list[tuple] = field(default_factory=list)   # (time, idle, computing) or -E's five counts
    sink: IO[str] | None = None
    chunk: int = 8192

    def change(self, t: float, delta: int) -> None:
        self.computing += delta
        # Batsim writes one row per job start / end, even several at the same time
        self.rows.append((t, self.nb_machines - self.computing, self.computing))
        if self.sink is not None and len(self.rows) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        """Write the rows held so far to the sink and forget them."""
        if self.rows:
            self.sink.write("".join([f"{g6(t)},0,0,0,{idle},{comp}\n"
                                     for t, idle, comp in self.rows]))
            self.rows.clear()

    def text(self) -> str:
        """The rows as out_machine_states.csv: (time, idle, computing), or with -E Batsim's
        five counts (``EnergyStateTracker``'s rows, which ``mrsched.simulate`` keeps too)."""
        out = [",".join(MACHINE_STATES_COLUMNS)]
        for row in self.rows:
            if len(row) == 3:
                t, idle, comp = row
                out.append(f"{g6(t)},0,0,0,{idle},{comp}")
            else:
                out.append(",".join([g6(row[0]), *map(str, row[1:])]))
        return "\n".join(out) + "\n"


class ScheduleStats:
    """The ``_schedule.csv`` aggregates, fed one record at a time as jobs end. Batsim sums each
    job's waiting time, turnaround and slowdown in long double (``src/export.cpp`` 1142-1150,
    its job's times are long doubles) and divides the sum, cast to double, by the number of
    jobs (1039-1041). The sums here are doubles in record order, with a bound of their distance
    to Batsim's: when that bound could change a printed digit (a mean of 1e9 or more prints
    more digits than a double holds), the means are computed again as Batsim does, from the
    start, end and submission times kept per started job (``_means_as_batsim``)."""

    def __init__(self) -> None:
        self.nb_jobs = self.success = self.killed = self.rejected = 0
        # per started (finished) job: start, end (its start for one that took no time),
        # submission
        self.starts, self.ends, self.subs = array("d"), array("d"), array("d")
        self.sums = [0.0, 0.0, 0.0]     # waiting, turnaround, stretch: doubles in order
        self.maxima = [0.0, 0.0, 0.0]   # (Batsim's maxima start at 0)
        #: whether a waiting time was negative (else no value is: each sum is its values'
        #: sum of magnitudes, which the bound of ``means`` needs)
        self.signed = False
        self.makespan = 0.0   # latest finish time (0 without any)

    def add(self, r: JobRecord) -> tuple | None:
        """Count ``r``; its ``times_of`` (None for a job that never started), which its
        ``_jobs.csv`` row reuses."""
        self.nb_jobs += 1
        state = r.final_state
        if state == "COMPLETED_SUCCESSFULLY":
            self.success += 1
        elif state in ("COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED"):
            self.killed += 1
        elif state == "REJECTED":
            self.rejected += 1
        if r.finish_time is not None and r.finish_time > self.makespan:
            self.makespan = r.finish_time
        if r.starting_time is None:
            return None
        times = times_of(r)
        self.starts.append(r.starting_time)
        self.ends.append(r.starting_time if r.runtime is not None else r.finish_time)
        self.subs.append(r.submission_time)
        _, _, wait, turnaround, stretch = times
        sums, maxima = self.sums, self.maxima
        sums[0] += wait
        sums[1] += turnaround
        sums[2] += stretch
        if wait > maxima[0]:
            maxima[0] = wait
        if turnaround > maxima[1]:
            maxima[1] = turnaround
        if stretch > maxima[2]:
            maxima[2] = stretch
        if wait < 0.0:   # (a job started a hair before its subtime: then so may the others)
            self.signed = True
        return times

    def means(self) -> tuple[float, float, float]:
        """Mean waiting time, turnaround and stretch over all jobs as Batsim prints them."""
        n = self.nb_jobs
        if not n:
            return 0.0, 0.0, 0.0
        if self.signed:
            return self._means_as_batsim()
        out = [total / n for total in self.sums]
        for m in out:
            # the double sum's rounding, the per-job values' own (a few ulps each), Batsim's
            # long double sum and casts: all below this bound of |m - Batsim's mean| (values
            # of one sign: the sum is the sum of their magnitudes, n * m)
            bound = (1.001 * len(self.starts) + 16) * 2.0 ** -53 * m
            if f6(m - bound) != f6(m + bound):
                return self._means_as_batsim()
        return out[0], out[1], out[2]

    def _means_as_batsim(self) -> tuple[float, float, float]:
        """The means computed as Batsim does: long double times, sums in record order."""
        import numpy as np   # here: most runs never need it (a run's start-up does without)

        ld = np.longdouble
        s = np.frombuffer(self.starts, dtype=np.float64).astype(ld)
        e = np.frombuffer(self.ends, dtype=np.float64).astype(ld)
        sub = np.frombuffer(self.subs, dtype=np.float64).astype(ld)
        runtime = np.where(e != s, e - s, ld(ZERO_RUNTIME_TEXT))
        turnaround = (s + runtime) - sub
        # np.cumsum adds in order (not pairwise): its last item is Batsim's running sum
        return tuple(float(np.cumsum(x)[-1]) / self.nb_jobs if len(x) else 0.0
                     for x in (s - sub, turnaround, turnaround / runtime))

    def row(self, *, nb_machines: int, makespan: float, time_computing: float, time_idle: float,
            scheduling_time: float, simulation_time: float,
            energy: dict[str, str] | None = None) -> dict[str, str]:
        """Batsim's `_schedule.csv` values (its mean_* divide by all jobs, rejected included);
        ``energy``: the values a ``-E`` run sets (consumed energy, switches, time per state)."""
        nb_jobs = self.nb_jobs
        mean_wait, mean_turnaround, mean_stretch = self.means()
        max_wait, max_turnaround, max_stretch = self.maxima

        row = {
            "batsim_version": BATSIM_VERSION,
            "consumed_joules": f6(0.0),
            "makespan": f6(makespan),
            "max_slowdown": f6(max_stretch),
            "max_turnaround_time": f6(max_turnaround),
            "max_waiting_time": f6(max_wait),
            "mean_slowdown": f6(mean_stretch),
            "mean_turnaround_time": f6(mean_turnaround),
            "mean_waiting_time": f6(mean_wait),
            "nb_computing_machines": str(nb_machines),
            "nb_grouped_switches": "0",
            "nb_jobs": str(nb_jobs),
            "nb_jobs_finished": str(len(self.starts)),
            "nb_jobs_killed": str(self.killed),
            "nb_jobs_rejected": str(self.rejected),
            "nb_jobs_success": str(self.success),
            "nb_machine_switches": "0",
            "scheduling_time": f6(scheduling_time),
            "simulation_time": f6(simulation_time),
            "success_rate": f6(self.success / nb_jobs if nb_jobs else 0.0),
            "time_computing": f6(time_computing),
            "time_idle": f6(time_idle),
            "time_sleeping": f6(0.0),
            "time_switching_off": f6(0.0),
            "time_switching_on": f6(0.0),
            "time_unavailable": f6(0.0),
        }
        if energy:
            row.update(energy)
        return row


def schedule_row(records: list[JobRecord], *, nb_machines: int, makespan: float,
                 time_computing: float, time_idle: float, scheduling_time: float,
                 simulation_time: float) -> dict[str, str]:
    """Batsim's `_schedule.csv` values of a whole record list (see ScheduleStats)."""
    stats = ScheduleStats()
    for r in records:
        stats.add(r)
    return stats.row(nb_machines=nb_machines, makespan=makespan, time_computing=time_computing,
                     time_idle=time_idle, scheduling_time=scheduling_time,
                     simulation_time=simulation_time)


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _write_error(exc: OSError) -> SimulationError:
    return SimulationError(f"cannot write outputs: {exc.strerror}", file=exc.filename)


class StreamedOutputs:
    """The three output files of a run, written while it runs: a ``_jobs.csv`` row as each job
    ends, machine-state rows in chunks, ``_schedule.csv`` at the end. Each goes to a temporary
    beside its final name, renamed over it by :meth:`finish` (a reader, or a run killed
    midway, sees the old file or the whole new one); :meth:`abort` drops the temporaries."""

    def __init__(self, prefix: str | Path, machines: MachineStateTracker, *, chunk: int = 4096,
                 machine_states: bool = True):
        prefix = str(prefix)
        self.chunk = chunk   # _jobs.csv rows handed to the file at a time
        self.paths = {"jobs": Path(prefix + "_jobs.csv"),
                      "schedule": Path(prefix + "_schedule.csv")}
        if machine_states:   # not Batsim's --disable-machine-state-tracing (export.cpp 37)
            self.paths["machine_states"] = Path(prefix + "_machine_states.csv")
        self.machines = machines
        self._tmp = {k: _temporary(p) for k, p in self.paths.items()}
        self._jobs: IO[str] | None = None
        self._states: IO[str] | None = None
        self._pending: list[str] = []
        try:
            self.paths["jobs"].parent.mkdir(parents=True, exist_ok=True)
            self._jobs = open(self._tmp["jobs"], "w", newline="")
            self._jobs.write(",".join(JOBS_COLUMNS) + "\n")
            if machine_states:
                self._states = open(self._tmp["machine_states"], "w", newline="")
                self._states.write(",".join(MACHINE_STATES_COLUMNS) + "\n")
        except OSError as exc:
            self.abort()
            raise _write_error(exc) from None
        machines.sink = self._states if machine_states else _Discard()

    def add(self, record: JobRecord, times: tuple | None = None) -> None:
        """One ``_jobs.csv`` row (rows are handed to the file in chunks); ``times`` as
        ``job_row``'s."""
        pending = self._pending
        pending.append(job_row(record, times))
        if len(pending) >= self.chunk:
            self._flush_jobs()

    def _flush_jobs(self) -> None:
        if self._pending:
            try:
                self._jobs.write("\n".join(self._pending) + "\n")
            except OSError as exc:
                self.abort()
                raise _write_error(exc) from None
            self._pending.clear()

    def finish(self, schedule: dict[str, str]) -> dict[str, Path]:
        """Complete the files and rename each over its final name; return the paths."""
        try:
            self._flush_jobs()
            self.machines.flush()
            self.machines.sink = None
            keys = sorted(schedule)
            with open(self._tmp["schedule"], "w", newline="") as fh:
                fh.write(",".join(keys) + "\n" + ",".join(schedule[k] for k in keys) + "\n")
            self._jobs.close()
            if self._states is not None:
                self._states.close()
            for key in self.paths:
                os.replace(self._tmp[key], self.paths[key])
        except OSError as exc:
            raise _write_error(exc) from None
        finally:
            self.abort()
        return self.paths

    def abort(self) -> None:
        """Close and remove whatever temporaries are left (a failed run leaves none)."""
        self.machines.sink = None
        for fh in (self._jobs, self._states):
            if fh is not None:
                try:
                    fh.close()
                except OSError:
                    pass
        for tmp in self._tmp.values():
            try:
                tmp.unlink(missing_ok=True)
            except OSError:   # its folder cannot hold it: nothing was written there
                pass


class _Discard:
    """Where machine-state rows go when they are not written."""

    @staticmethod
    def write(_text: str) -> None:
        pass


class Recorder:
    """Where a run's ended jobs go: ``_schedule.csv``'s aggregates (``stats``), the output
    files while the run goes (after ``open``), and the records kept for the run's result
    (``records``, unless ``keep_records`` is False: then None)."""

    def __init__(self, tracker: MachineStateTracker, *, keep_records: bool = True):
        self.stats = ScheduleStats()
        self.tracker = tracker
        self.files: StreamedOutputs | None = None
        self.records: list[JobRecord] | None = [] if keep_records else None

    def open(self, prefix: str | Path, *, machine_states: bool = True) -> None:
        """Write the files ``{prefix}_*.csv`` while the run goes (``machine_states=False``:
        no ``_machine_states.csv``, Batsim's ``--disable-machine-state-tracing``)."""
        self.files = StreamedOutputs(prefix, self.tracker, machine_states=machine_states)

    def add(self, record: JobRecord) -> None:
        """A job ended (or was rejected): its row."""
        times = self.stats.add(record)
        if self.files is not None:
            self.files.add(record, times)
        if self.records is not None:
            self.records.append(record)

    def finish(self, **totals: float) -> dict[str, Path]:
        """The run is over: ``_schedule.csv`` from the aggregates and ``totals``
        (``ScheduleStats.row``'s arguments), every file in place; their paths ({} when none
        were written)."""
        if self.files is None:
            return {}
        paths = self.files.finish(self.stats.row(**totals))
        self.files = None
        return paths

    def abort(self) -> None:
        """The run failed: no file is written (no-op after ``finish``)."""
        if self.files is not None:
            self.files.abort()


def write_outputs(prefix: str | Path, records: list[JobRecord], machines: MachineStateTracker,
                  schedule: dict[str, str]) -> dict[str, Path]:
    """Write ``{prefix}_jobs.csv``, ``_schedule.csv``, ``_machine_states.csv`` (each replaced
    atomically) from whole lists; return the paths."""
    rows = list(machines.rows)
    files = StreamedOutputs(prefix, machines)
    try:
        for r in records:
            files.add(r)
        return files.finish(schedule)
    except OSError as exc:
        files.abort()
        raise _write_error(exc) from None
    except BaseException:
        files.abort()
        raise
    finally:
        machines.rows[:] = rows
