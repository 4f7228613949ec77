"""Batsim 4.2.1's three output files, same columns and number formatting.

``_jobs.csv`` rows are written in completion order (rejections when rejected), floats with six
decimals as Batsim's ``%f``; ``_machine_states.csv`` times use C++ stream formatting (six
significant digits); ``_schedule.csv`` is one row with keys in lexicographic order.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mrsched.errors import SimulationError

BATSIM_VERSION = "4.2.1"

JOBS_COLUMNS = ("job_id", "workload_name", "profile", "submission_time",
                "requested_number_of_resources", "requested_time", "success", "final_state",
                "starting_time", "execution_time", "finish_time", "waiting_time",
                "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                "metadata")

MACHINE_STATES_COLUMNS = ("time", "nb_sleeping", "nb_switching_on", "nb_switching_off",
                          "nb_idle", "nb_computing")


@dataclass
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


def f6(x: float) -> str:
    return f"{x:.6f}"


def g6(x: float) -> str:
    """C++ ``std::ostream << double`` (precision 6, general format)."""
    return f"{x:.6g}"


def job_row(r: JobRecord) -> str:
    success = 1 if r.final_state == "COMPLETED_SUCCESSFULLY" else 0
    # one format per row (a row per job of whole traces): f"{x:.6f}" is f6(x)
    head = (f"{r.local_id},{r.workload},{r.profile},{r.submission_time:.6f},{r.res},{r.walltime:.6f},"
            f"{success},{r.final_state}")
    meta = '"' + r.metadata + '"'
    if r.starting_time is None or r.finish_time is None:
        return f"{head},,,,,,,,,{meta}"   # consumed_energy empty too, as Batsim
    start, finish, sub = r.starting_time, r.finish_time, r.submission_time
    execution = finish - start if r.runtime is None else r.runtime
    waiting = start - sub
    turnaround = finish - sub
    stretch = turnaround / execution if execution > 0 else 0.0
    return (f"{head},{start:.6f},{execution:.6f},{finish:.6f},{waiting:.6f},{turnaround:.6f},"
            f"{stretch:.6f},{r.alloc},-1.000000,{meta}")


@dataclass
class MachineStateTracker:
    """Counts of idle / computing machines over time, one row per change."""

    nb_machines: int
    computing: int = 0
    rows: list[tuple[float, int, int]] = field(default_factory=list)
    busy_area: float = 0.0
    _last_t: float = 0.0

    def change(self, t: float, delta: int) -> None:
        self.busy_area += self.computing * (t - self._last_t)
        self._last_t = t
        self.computing += delta
        # Batsim writes one row per job start / end, even several at the same time
        self.rows.append((t, self.nb_machines - self.computing, self.computing))

    def text(self) -> str:
        out = [",".join(MACHINE_STATES_COLUMNS)]
        for t, idle, comp in self.rows:
            out.append(f"{g6(t)},0,0,0,{idle},{comp}")
        return "\n".join(out) + "\n"


def schedule_row(records: list[JobRecord], *, nb_machines: int, makespan: float,
                 time_computing: float, time_idle: float, scheduling_time: float,
                 simulation_time: float) -> dict[str, str]:
    """Batsim's `_schedule.csv` values (its mean_* divide by all jobs, rejected included)."""
    finished = [r for r in records if r.starting_time is not None]
    nb_jobs = len(records)
    stretches, turnarounds, waits = [], [], []
    for r in finished:
        execution = r.finish_time - r.starting_time if r.runtime is None else r.runtime
        turnaround = r.finish_time - r.submission_time
        stretches.append(turnaround / execution if execution > 0 else 0.0)
        turnarounds.append(turnaround)
        waits.append(r.starting_time - r.submission_time)
    success = sum(1 for r in records if r.final_state == "COMPLETED_SUCCESSFULLY")
    killed = sum(1 for r in records if r.final_state in ("COMPLETED_KILLED",
                                                         "COMPLETED_WALLTIME_REACHED"))
    rejected = sum(1 for r in records if r.final_state == "REJECTED")

    def mean(values):
        return sum(values) / nb_jobs if nb_jobs else 0.0

    return {
        "batsim_version": BATSIM_VERSION,
        "consumed_joules": f6(0.0),
        "makespan": f6(makespan),
        "max_slowdown": f6(max(stretches, default=0.0)),
        "max_turnaround_time": f6(max(turnarounds, default=0.0)),
        "max_waiting_time": f6(max(waits, default=0.0)),
        "mean_slowdown": f6(mean(stretches)),
        "mean_turnaround_time": f6(mean(turnarounds)),
        "mean_waiting_time": f6(mean(waits)),
        "nb_computing_machines": str(nb_machines),
        "nb_grouped_switches": "0",
        "nb_jobs": str(nb_jobs),
        "nb_jobs_finished": str(len(finished)),
        "nb_jobs_killed": str(killed),
        "nb_jobs_rejected": str(rejected),
        "nb_jobs_success": str(success),
        "nb_machine_switches": "0",
        "scheduling_time": f6(scheduling_time),
        "simulation_time": f6(simulation_time),
        "success_rate": f6(success / nb_jobs if nb_jobs else 0.0),
        "time_computing": f6(time_computing),
        "time_idle": f6(time_idle),
        "time_sleeping": f6(0.0),
        "time_switching_off": f6(0.0),
        "time_switching_on": f6(0.0),
        "time_unavailable": f6(0.0),
    }


@contextmanager
def _replaced(path: Path):
    """Write ``path`` through a same-folder temporary renamed over it at the end: a reader, or
    a run killed while writing, sees the old file or the whole new one, never a cut one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", newline="") as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_outputs(prefix: str | Path, records: list[JobRecord], machines: MachineStateTracker,
                  schedule: dict[str, str]) -> dict[str, Path]:
    """Write ``{prefix}_jobs.csv``, ``_schedule.csv``, ``_machine_states.csv`` (each replaced
    atomically); return the paths."""
    prefix = str(prefix)
    paths = {"jobs": Path(prefix + "_jobs.csv"), "schedule": Path(prefix + "_schedule.csv"),
             "machine_states": Path(prefix + "_machine_states.csv")}
    try:
        paths["jobs"].parent.mkdir(parents=True, exist_ok=True)
        with _replaced(paths["jobs"]) as fh:
            fh.write(",".join(JOBS_COLUMNS) + "\n")
            for r in records:
                fh.write(job_row(r) + "\n")
        keys = sorted(schedule)
        with _replaced(paths["schedule"]) as fh:
            fh.write(",".join(keys) + "\n" + ",".join(schedule[k] for k in keys) + "\n")
        with _replaced(paths["machine_states"]) as fh:
            fh.write(machines.text())
    except OSError as exc:
        raise SimulationError(f"cannot write outputs: {exc.strerror}", file=exc.filename) from None
    return paths
