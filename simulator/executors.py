"""What runs a job: Batsim's ``execute_job_process`` (``jobs_execution.cpp``) as a state machine.

An executor (on the allocation's first host) runs the job's profile under its walltime, then
frees the machines and posts JOB_COMPLETED to the server. A ``delay`` profile is a sleep
(``do_delay_task``), a ``usage_trace`` its ranks' phases (``usage_trace.py``), every other leaf
profile one ptask of the ptask_L07 model (``profiles.ptask_of``; ``execute_task``), a composed
profile its leaves in sequence; EXECUTE_JOB's ``additional_io_job`` is merged into the first
leaf's ptask. A walltime or a kill stops whichever of them runs.
"""

from __future__ import annotations

from typing import Any

from mrsched.simulator.jobs import DONE, JobState
from mrsched.simulator.profiles import PtaskSpec, flatten, merge, ptask_of
from mrsched.simulator.usage_trace import UsageTraceRun

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
    """Runs one job's profile on its allocation: a state machine driven by timers and ptasks.

    The walltime is Batsim's ``remaining_time`` (``execute_job_process``, ``jobs_execution.cpp``
    463: the job's walltime, -1 without one), consumed step by step as ``execute_task`` does:
    a delay sleeps its length when that is shorter than the time left, else the time left and
    the job is over (``do_delay_task``, 382-404); a parallel task is started, then waited with
    the time left as timeout (``execute_parallel_task``, ``task_execution.cpp`` 665-683: the
    timeout's sleep action is created after the task's, so a task ending in the step its
    timeout ends wins), which then loses the time the task took. A time left that rounding made
    negative means no walltime from there on, as in Batsim."""

    __slots__ = ("k", "x", "js", "host_ids", "steps", "storage_mapping", "extra", "index",
                 "step_start", "timer", "wall_timer", "ptask", "trace_run", "remaining",
                 "wait_start")

    def __init__(self, executors: Executors, js: JobState, host_ids: list[int],
                 steps: list[tuple[str, dict]], storage_mapping, extra: PtaskSpec | None):
        self.k, self.x = executors.k, executors
        self.js, self.host_ids, self.steps = js, host_ids, steps
        self.storage_mapping, self.extra = storage_mapping, extra
        self.index = 0
        self.step_start = 0.0
        self.timer = None
        self.wall_timer = None   # the timeout of the current task's wait
        self.ptask = None
        self.trace_run = None
        wt = js.job.walltime
        self.remaining = float(wt) if wt > 0 else -1.0
        self.wait_start = 0.0

    def start(self) -> None:
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
            # Batsim waits its ranks' messages with the time left as timeout, armed before the
            # ranks run (jobs_execution.cpp 327-354)
            self._arm_timeout()
            self.trace_run = UsageTraceRun(k, x.m, ranks, hosts, self.js.job.res,
                                           self.on_step_done)
            self.trace_run.start()
        elif prof["type"] == "delay":
            delay = float(prof["delay"])
            left = self.remaining
            if left < 0 or delay < left:   # do_delay_task: the whole delay
                self.timer = k.sleep(delay, self.on_delay_done)
            elif left > 0:                 # until the walltime
                self.remaining = 0.0
                self.timer = k.sleep(left, self.on_walltime)
            else:                          # sleep_for(0) is no sleep (s4u_Actor.cpp 312)
                self.on_walltime()
        elif (prof["type"] in _UNIFORM and not prof["com"] and self.host_ids is self.js.alloc
              and self.js.ncomp == len(self.host_ids) and (self.extra is None or self.index > 0)):
            # the same flops on every allocated machine, nothing else: the ptask model takes
            # the allocation's id ranges (ptask_of's flops, without a step per machine)
            cpu = float(prof["cpu"])
            if prof["type"] == "parallel_homogeneous_total":
                cpu = cpu / len(self.host_ids)
            self.ptask = k.start_ptask(None, self.on_step_done, uniform=(self.js.comp_runs, cpu))
            self._arm_timeout()
        else:
            m = self.x.m
            hosts = list(map(m.names.__getitem__, self.host_ids))
            spec = ptask_of(prof, hosts, storage_mapping=self.storage_mapping,
                            storage_names=m.storage_names, job=self.js.job.id)
            if self.extra is not None and self.index == 0:
                spec = merge(spec, self.extra)
            self.ptask = k.start_ptask(spec, self.on_step_done)
            self._arm_timeout()

    def _arm_timeout(self) -> None:
        """``wait_for(remaining)``: a sleep action of the time left (SimGrid's ``SynchroImpl``,
        ``ActivityImpl::wait_for``), none without a walltime."""
        if self.remaining >= 0:
            self.wait_start = self.k.now
            self.wall_timer = self.k.sleep(self.remaining, self.on_walltime)

    def on_delay_done(self) -> None:
        self.timer = None
        if self.remaining > 0:
            self.remaining = self.remaining - float(self.steps[self.index][1]["delay"])
        self.index += 1
        self.next_step()

    def on_step_done(self) -> None:
        self.timer = None
        self.ptask = None
        self.trace_run = None
        if self.wall_timer is not None:   # the task ended first: its timeout is dropped
            self.wall_timer.alive = False
            self.wall_timer = None
            self.remaining = self.remaining - (self.k.now - self.wait_start)
        self.index += 1
        self.next_step()

    def on_walltime(self) -> None:
        """The time left ran out. A parallel task is not cancelled: Batsim only stops waiting
        for it (``task_execution.cpp`` 670-676), so it keeps its share of the machines and
        links until the job's actor ends, once the server received its JOB_COMPLETED: SimGrid
        then cancels the actor's activities (``ActorImpl::cleanup_from_self``,
        ``src/kernel/actor/ActorImpl.cpp`` 157-190). Its end before that changes nothing."""
        self.wall_timer = self.timer = None   # the sleep that ended (a wait's or a delay's)
        zombie = self.ptask
        if zombie is not None:
            self.ptask = None
            self.k.orphan_ptask(zombie)
        self.stop()
        self.finish("COMPLETED_WALLTIME_REACHED", -1, zombie)

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
        """Batsim's progress tree for JOB_KILLED (``BatTask::compute_leaf_progress``,
        ``src/jobs.cpp`` 141-179, ``generate_task_tree``, ``src/protocol.cpp`` 337-366): a delay's
        elapsed fraction, a parallel task's ``1 - remaining ratio``, a usage trace none
        (``current_task_index`` -1); in a composed profile, the current task's tree under its
        index. Values as Batsim prints them (6 decimals)."""
        name, prof = self.steps[min(self.index, len(self.steps) - 1)]
        if prof["type"] == "delay":
            leaf = {"profile_name": name,
                    "progress": round((self.k.now - self.step_start) / float(prof["delay"]), 6)}
        elif prof["type"] == "usage_trace":
            leaf = {"profile_name": name, "current_task_index": -1}
        else:
            p = self.ptask
            remaining = getattr(p, "remaining", None) if p is not None else None
            frac = 1.0 - remaining if isinstance(remaining, (int, float)) else 0.0
            leaf = {"profile_name": name, "progress": round(frac, 6)}
        return _task_tree(self.js.job.profile, self.x.jobs.profiles_of(self.js.job), self.index,
                          leaf)

    def kill(self) -> dict:
        """Batsim's ``killer_process`` on this job (``src/jobs_execution.cpp`` 658-715): its
        progress, then a running parallel task is cancelled (its actor returns -2) or else the
        job's actors are killed (its return code stays -1, ``src/jobs.hpp`` 240); either way the
        machines are freed now and the server reports the job (the killer posts KILLING_DONE,
        not JOB_COMPLETED)."""
        prog = self.progress()
        code = -2 if self.ptask is not None else -1
        if self.wall_timer is not None:
            self.wall_timer.alive = False
            self.wall_timer = None
        self.stop()
        self.ended("COMPLETED_KILLED", code, notify=False)
        return prog

    def finish(self, state: str, code: int, zombie=None) -> None:
        if self.wall_timer is not None:
            self.wall_timer.alive = False
            self.wall_timer = None
        self.ended(state, code, notify=True, zombie=zombie)

    def ended(self, state: str, code: int, *, notify: bool, zombie=None) -> None:
        """The executor stopped (success, walltime or kill): free the machines. ``zombie``: the
        ptask a walltime left running (``on_walltime``), stopped once the server received the
        JOB_COMPLETED."""
        js = self.js
        now = self.k.now
        js.final_state = state
        js.return_code = code
        js.finish = now
        js.state = DONE
        js.executor = None
        m = self.x.m
        users = m.storage_users
        if users and js.alloc[-1] >= m.nb_compute:   # --disable-storage-sharing
            for r in js.alloc:
                if users.get(r) == js.job.id:
                    del users[r]
        m.job_ends(now, js.ncomp, js.comp_runs, js.storage)
        if notify:
            # Batsim's executor frees the machines, then posts JOB_COMPLETED; as every put in
            # a step, it is applied after all the actors woken in that step ran (kernel.py)
            if zombie is None:
                self.k.put(m.names[js.alloc[0]], "JOB_COMPLETED", js)
            else:   # the actor ends once its message is received: its task is cancelled then
                k = self.k
                k.put(m.names[js.alloc[0]], "JOB_COMPLETED", js, lambda: k.stop_ptask(zombie))


def _task_tree(name: str, profiles: dict[str, dict], index: int, leaf: dict) -> dict:
    """The progress tree of a job whose leaf number ``index`` (of ``flatten(name)``) runs:
    each composed level gives the position of the running task in its unrolled sequence
    (``iteration x len(seq) + position``, ``src/jobs_execution.cpp`` 138)."""
    prof = profiles[name]
    if prof["type"] != "composed":
        return leaf
    seq = prof["seq"]
    sizes = [len(flatten(sub, profiles)) for sub in seq]
    k = 0
    for _ in range(int(prof.get("repeat", 1))):
        for size, sub in zip(sizes, seq):
            if index < size:
                return {"profile_name": name, "current_task_index": k,
                        "current_task": _task_tree(sub, profiles, index, leaf)}
            index -= size
            k += 1
    raise AssertionError(f"task {index} past the end of profile {name}")   # pragma: no cover
