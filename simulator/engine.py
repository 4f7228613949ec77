"""The embedded Batsim 4.2.1-compatible engine: one run of a scheduler on a platform and
workloads, message for message as Batsim runs it.

A run is made of parts, each with one owner, as Batsim is built:

- ``kernel.py``: SimGrid's clock, steps, sleeps, the server's mailbox and the message in flight
  (``_steps.c`` its compiled twin), the ptask_L07 executions (``ptask.py``, ``maxmin.py``);
- ``server.py``: Batsim's server (``server.cpp``), a handler per message type and the loop
  that calls the scheduler, whose replies it checks; ``submitter.py`` the static submitters;
- ``executors.py``: what runs a job (``jobs_execution.cpp``): delay, ptask, composed and
  ``usage_trace`` profiles (``profiles.py``, ``usage_trace.py``) under the walltime;
- ``machines.py``: the resources, the cost of a message, the machines' states over time;
  ``jobs.py``: the jobs' states and profiles;
- ``outputs.py``: ``_jobs.csv``, ``_schedule.csv``, ``_machine_states.csv``.

This module builds them for one run (``Engine``) and runs it (``simulate``).
"""

from __future__ import annotations

import gc
import logging
import time as _time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mrsched.simulator import kernel as _kernel
from mrsched.simulator.collector import collector_paused
from mrsched.simulator.executors import Executors
from mrsched.simulator.jobs import Jobs
from mrsched.simulator.machines import Machines, mmax_of_workloads
from mrsched.simulator.outputs import JobRecord, Recorder
from mrsched.simulator.server import Server
from mrsched.simulator.workload import Workload, load_workloads

logger = logging.getLogger(__name__)
RUN_GC_THRESHOLD = (20_000, 20, 20)  # gc thresholds during a run (see Engine.run)


@dataclass
class SimulationResult:
    """What a run produced: job records (unless the run was asked not to keep them: ``[]``),
    makespan, output paths and the message count."""

    jobs: list[JobRecord]
    makespan: float
    nb_messages: int
    scheduling_time: float
    simulation_time: float
    paths: dict[str, Path]
    transcript: list[dict] | None = None
    nb_jobs: int = 0             # jobs recorded (finished or rejected), kept or not
    schedule: dict[str, str] | None = None   # the _schedule.csv row (Batsim's text values)
    #: the _machine_states.csv rows ``(time, nb_idle, nb_computing)`` when no file took them
    machine_states: list[tuple[float, int, int]] | None = None
    #: a ``-E`` run's ``_consumed_energy.csv`` and ``_pstate_changes.csv`` texts, by suffix,
    #: when no file took them
    energy_texts: dict[str, str] | None = None


class Engine:
    """One simulation run: its parts, built from the inputs (see the module docstring)."""

    def __init__(self, platform: Any, workloads: list[Workload], scheduler: Any, *,
                 export_prefix: str | Path | None, roles=(), mmax: int | None = None,
                 dynamic_jobs: bool = False, profile_reuse: bool = False, sched_cfg: str = "",
                 compute_sharing: bool = False,
                 forward_profiles: bool = False, record_transcript: bool = False,
                 keep_records: bool = True, ack_dynamic_jobs: bool = False,
                 mmax_workload: bool = False, storage_sharing: bool = True,
                 machine_states: bool = True, redis: dict | None = None,
                 energy: bool = False):
        self.export_prefix = export_prefix
        self.machine_states = machine_states   # not --disable-machine-state-tracing
        if mmax_workload:
            mmax = mmax_of_workloads(workloads, mmax)
        if energy:   # Batsim's -E: the energy model (energy.py, energy_server.py)
            from mrsched.simulator.energy import EnergyMachines

            machine_class = EnergyMachines
        else:
            machine_class = Machines
        self.machines = machine_class(platform, roles=roles, mmax=mmax,
                                      compute_sharing=compute_sharing,
                                      compiled=_kernel._compiled_steps)
        self.jobs = Jobs(workloads, profile_reuse=profile_reuse)
        nb_compute = self.machines.nb_compute
        oversized = [j for w in workloads for j in w.jobs if not self.jobs.fits(j, nb_compute)]
        if oversized:
            first = oversized[0]
            logger.warning("%d job(s) request more than the %d compute resources (first: %s, %d "
                           "resources); Batsim loads them and leaves them to the scheduler, which "
                           "must reject them", len(oversized), nb_compute, first.id, first.res)
        self.kernel = _kernel.make_kernel(self.machines)
        options = dict(dynamic_jobs=dynamic_jobs, compute_sharing=compute_sharing,
                       sched_cfg=sched_cfg, forward_profiles=forward_profiles,
                       record_transcript=record_transcript, ack_dynamic_jobs=ack_dynamic_jobs,
                       storage_sharing=storage_sharing, redis=redis)
        self.energy = None
        if energy:
            from mrsched.simulator.energy import Energy, EnergyRecorder, load_powers
            from mrsched.simulator.energy_server import EnergyExecutors, EnergyServer

            m = self.machines
            self.energy = Energy(self.kernel, m, load_powers(m.platform, m.names))
            m.now = lambda: self.kernel.now
            self.recorder = EnergyRecorder(m.tracker, self.energy, keep_records=keep_records)
            self.server = EnergyServer(self.kernel, m, self.jobs,
                                       EnergyExecutors(self.kernel, m, self.jobs, self.energy),
                                       self.recorder, workloads, scheduler, energy=self.energy,
                                       **options)
        else:
            self.recorder = Recorder(self.machines.tracker, keep_records=keep_records)
            self.server = Server(self.kernel, self.machines, self.jobs,
                                 Executors(self.kernel, self.machines, self.jobs), self.recorder,
                                 workloads, scheduler, **options)

    def run(self) -> SimulationResult:
        # The inputs (platform, every job of the workloads) live for the whole run: frozen,
        # the garbage collector's full passes skip them. What the run allocates is mostly
        # messages freed by reference counting, or jobs and records that live to the end;
        # cycles are rare (a job's executor link is cut when it ends, a reply's actor is a plain
        # object). So the collector runs far less often: its frequent default passes over the
        # young queued jobs are a noticeable share of a delay run's CPU time.
        freeze = gc.isenabled() and gc.get_freeze_count() == 0
        threshold = gc.get_threshold()
        if freeze:
            gc.freeze()
            gc.set_threshold(max(threshold[0], RUN_GC_THRESHOLD[0]), *(
                max(a, b) for a, b in zip(threshold[1:], RUN_GC_THRESHOLD[1:])))
        if self.export_prefix is not None:
            self.recorder.open(self.export_prefix, machine_states=self.machine_states)
        try:
            return self._run()
        finally:
            self.recorder.abort()   # no-op after a finished run: its files were renamed
            if freeze:
                gc.set_threshold(*threshold)
                gc.unfreeze()

    def _run(self) -> SimulationResult:
        wall0 = _time.perf_counter()
        server, machines, recorder = self.server, self.machines, self.recorder
        server.begin()
        self.kernel.run(server.receive, server.stalled)
        makespan = recorder.stats.makespan
        sim_time = _time.perf_counter() - wall0
        energy = None
        if self.energy is not None:
            from mrsched.simulator.energy import schedule_energy

            energy = schedule_energy(self.energy, machines, (server.nb_machine_switches,
                                                             server.nb_grouped_switches))
        time_idle, time_computing = machines.state_times()
        totals = dict(nb_machines=len(machines.resources), makespan=makespan,
                      time_computing=time_computing, time_idle=time_idle,
                      scheduling_time=server.sched_time, simulation_time=sim_time,
                      energy=energy)
        streamed = recorder.files is not None
        paths = recorder.finish(**totals)
        energy_texts = recorder.texts() if self.energy is not None and not streamed else None
        return SimulationResult(jobs=recorder.records if recorder.records is not None else [],
                                makespan=makespan, nb_messages=server.nb_messages,
                                scheduling_time=server.sched_time, simulation_time=sim_time,
                                paths=paths, transcript=server.transcript,
                                nb_jobs=recorder.stats.nb_jobs,
                                schedule=recorder.stats.row(**totals),
                                machine_states=None if streamed else machines.tracker.rows,
                                energy_texts=energy_texts)


def simulate(platform: Any, workloads: Any, scheduler: Any, *, export_prefix: str | Path | None,
             roles=(), mmax: int | None = None, dynamic_jobs: bool = False,
             profile_reuse: bool = False, sched_cfg: str = "", forward_profiles: bool = False,
             record_transcript: bool = False, compute_sharing: bool = False,
             keep_records: bool = True, ack_dynamic_jobs: bool = False,
             mmax_workload: bool = False, storage_sharing: bool = True,
             machine_states: bool = True, redis: dict | None = None,
             energy: bool = False) -> SimulationResult:
    """Run one simulation; ``platform`` is a path or a loaded Platform, ``workloads`` paths or
    loaded :class:`Workload` objects (named w0, w1, ... in order). ``keep_records=False``: the
    result's ``jobs`` stays empty (rows go only to ``_jobs.csv``; memory does not grow with
    the jobs run). Batsim's flags: ``ack_dynamic_jobs`` ``--acknowledge-dynamic-jobs`` (a
    JOB_SUBMITTED for each REGISTER_JOB), ``mmax_workload`` ``--mmax-workload``,
    ``storage_sharing=False`` ``--disable-storage-sharing``, ``machine_states=False``
    ``--disable-machine-state-tracing``, ``redis`` the ``--redis-*`` values (hostname, port,
    prefix) SIMULATION_BEGINS forwards, ``energy`` ``-E`` (pstates, SET_RESOURCE_STATE, energy
    QUERY, ``_consumed_energy.csv`` and ``_pstate_changes.csv``)."""
    if isinstance(workloads, (str, Path, Workload)):
        workloads = [workloads]
    workloads = list(workloads)
    with collector_paused():   # the inputs, without cycles; Engine.run freezes them
        if workloads and not isinstance(workloads[0], Workload):
            workloads = load_workloads(workloads)
        engine = Engine(platform, workloads, scheduler, export_prefix=export_prefix, roles=roles,
                        mmax=mmax, dynamic_jobs=dynamic_jobs, profile_reuse=profile_reuse,
                        sched_cfg=sched_cfg, forward_profiles=forward_profiles,
                        record_transcript=record_transcript, compute_sharing=compute_sharing,
                        keep_records=keep_records, ack_dynamic_jobs=ack_dynamic_jobs,
                        mmax_workload=mmax_workload, storage_sharing=storage_sharing,
                        machine_states=machine_states, redis=redis, energy=energy)
    return engine.run()
