"""What runs a job: Batsim's ``execute_job_process`` (``jobs_execution.cpp``) as a state machine.

An executor (on the allocation's first host) runs the job's profile under its walltime, then
frees the machines and posts JOB_COMPLETED to the server. A ``delay`` profile is a sleep
(``do_delay_task``), a ``usage_trace`` its ranks' phases (``usage_trace.py``), every other leaf
profile one ptask of the ptask_L07 model (``profiles.ptask_of``; ``execute_task``), a composed
profile its leaves in sequence; EXECUTE_JOB's ``additional_io_job`` is merged into the first
leaf's ptask. A walltime or a kill stops whichever of them runs.
"""

from __future__ import annotations

import math
from typing import Any

from mrsched.simulator.jobs import DONE, JobState
from mrsched.simulator.profiles import PtaskSpec, merge, ptask_of
from mrsched.simulator.usage_trace import UsageTraceRun

INF = math.inf
_UNIFORM = ("parallel_homogeneous", "parallel_homogeneous_total")   # profiles of one flop count per host


class Executors:
    """What the executors of one run share: the kernel, the machines and the jobs."""

    def __init__(self, kernel: Any, machines: Any, jobs: Any):
        self.k, self.m, self.jobs = kernel, machines, jobs

    def launch(self, js: JobState, host_ids, steps: list[tuple[str, dict]], storage_mapping,
               extra: PtaskSpec | None) -> None:
        """A job's executor starts (``server_on_execute_job`` creates the actor)."""
        ex = JobExecutor(self, js, host_ids, steps, storage_mapping, extra)
        js.executor = ex
        ex.start()


class JobExecutor:
    """Runs one job's profile on its allocation: a state machine driven by timers and ptasks."""

    __slots__ = ("k", "x", "js", "host_ids", "steps", "storage_mapping", "extra", "index",
                 "step_start", "timer", "wall_timer", "ptask", "trace_run", "deadline")

    def __init__(self, executors: Executors, js: JobState, host_ids: list[int],
                 steps: list[tuple[str, dict]], storage_mapping, extra: PtaskSpec | None):
        self.k, self.x = executors.k, executors
        self.js, self.host_ids, self.steps = js, host_ids, steps
        self.storage_mapping, self.extra = storage_mapping, extra
        self.index = 0
        self.step_start = 0.0
        self.timer = None
        self.wall_timer = None
        self.ptask = None
        self.trace_run = None
        wt = js.job.walltime
        self.deadline = self.k.now + wt if wt > 0 else INF

    def start(self) -> None:
        if self.deadline < INF:
            steps = self.steps
            # a lone delay that ends strictly before the walltime never meets it: no timer
            # (at equal times the walltime timer, armed first, would fire first: kept)
            # (durations compared, as Batsim's do_delay_task: far in the future, at 1e300 s,
            # now + delay == now + walltime, yet the delay is the shorter and ends the job)
            if not (len(steps) == 1 and steps[0][1]["type"] == "delay"
                    and float(steps[0][1]["delay"]) < self.js.job.walltime):
                # the timeout Batsim waits the job's task with (wait_for(walltime))
                self.wall_timer = self.k.sleep(self.js.job.walltime, self.on_walltime)
        self.next_step()

    def next_step(self) -> None:
        k = self.k
        if self.index >= len(self.steps):
            self.finish("COMPLETED_SUCCESSFULLY", 0)
            return
        name, prof = self.steps[self.index]
        self.step_start = k.now
        if prof["type"] == "usage_trace":
            x = self.x
            ranks = x.jobs.workloads[self.js.job.workload].traces[name]
            hosts = list(map(x.m.names.__getitem__, self.host_ids))
            self.trace_run = UsageTraceRun(k, x.m, ranks, hosts, self.js.job.res,
                                           self.on_step_done)
            self.trace_run.start()
        elif prof["type"] == "delay":
            delay = float(prof["delay"])
            end = k.now + delay
            # (no walltime timer armed: a lone delay shorter than the walltime, see start)
            if end <= self.deadline or (self.wall_timer is None and self.index == 0):
                self.timer = k.sleep(delay, self.on_step_done)   # do_delay_task: sleep_for
            # else: the walltime timer fires first
        elif (prof["type"] in _UNIFORM and not prof["com"] and self.host_ids is self.js.alloc
              and self.js.ncomp == len(self.host_ids) and (self.extra is None or self.index > 0)):
            # the same flops on every allocated machine, nothing else: the ptask model takes
            # the allocation's id ranges (ptask_of's flops, without a step per machine)
            cpu = float(prof["cpu"])
            if prof["type"] == "parallel_homogeneous_total":
                cpu = cpu / len(self.host_ids)
            self.ptask = k.start_ptask(None, self.on_step_done, uniform=(self.js.comp_runs, cpu))
        else:
            m = self.x.m
            hosts = list(map(m.names.__getitem__, self.host_ids))
            spec = ptask_of(prof, hosts, storage_mapping=self.storage_mapping,
                            storage_names=m.storage_names, job=self.js.job.id)
            if self.extra is not None and self.index == 0:
                spec = merge(spec, self.extra)
            self.ptask = k.start_ptask(spec, self.on_step_done)

    def on_step_done(self) -> None:
        self.timer = None
        self.ptask = None
        self.trace_run = None
        self.index += 1
        self.next_step()

    def on_walltime(self) -> None:
        self.wall_timer = None
        self.stop()
        self.finish("COMPLETED_WALLTIME_REACHED", -1)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.alive = False
            self.timer = None
        if self.ptask is not None:
            self.k.stop_ptask(self.ptask)
            self.ptask = None
        if self.trace_run is not None:
            self.trace_run.stop()
            self.trace_run = None

    def progress(self) -> dict:
        """Batsim's progress tree for JOB_KILLED."""
        name, prof = self.steps[min(self.index, len(self.steps) - 1)]
        if prof["type"] == "delay":
            d = float(prof["delay"])
            frac = (self.k.now - self.step_start) / d if d > 0 else 1.0
        else:
            frac = 0.0
            p = self.ptask
            remaining = getattr(p, "remaining", None) if p is not None else None
            if isinstance(remaining, (int, float)):
                frac = 1.0 - remaining  # PtaskModel keeps the fraction of work left
        leaf = {"profile_name": name, "progress": min(max(frac, 0.0), 1.0)}
        top = self.js.job.profile
        if self.x.jobs.profiles_of(self.js.job)[top]["type"] == "composed":
            return {"profile_name": top, "current_task_index": self.index, "current_task": leaf}
        return leaf

    def kill(self) -> dict:
        """Batsim's ``killer_process``: the job stops where it is, its machines are freed (the
        killer posts KILLING_DONE, not JOB_COMPLETED); its progress tree."""
        prog = self.progress()
        if self.wall_timer is not None:
            self.wall_timer.alive = False
            self.wall_timer = None
        self.stop()
        self.ended("COMPLETED_KILLED", -2, notify=False)
        return prog

    def finish(self, state: str, code: int) -> None:
        if self.wall_timer is not None:
            self.wall_timer.alive = False
            self.wall_timer = None
        self.ended(state, code, notify=True)

    def ended(self, state: str, code: int, *, notify: bool) -> None:
        """The executor stopped (success, walltime or kill): free the machines."""
        js = self.js
        now = self.k.now
        js.final_state = state
        js.return_code = code
        js.finish = now
        js.state = DONE
        js.executor = None
        m = self.x.m
        m.job_ends(now, js.start, js.ncomp, js.comp_runs)
        if notify:
            # Batsim's executor frees the machines, then posts JOB_COMPLETED; as every put in
            # a step, it is applied after all the actors woken in that step ran (kernel.py)
            self.k.put(m.names[js.alloc[0]], "JOB_COMPLETED", js)
