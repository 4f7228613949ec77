"""The jobs of a run as the server knows them: each one's state, the workloads and profiles it
comes from (static, or registered by the scheduler), and their lookups.

A job has no state until it is submitted (its ``Job`` from the workload is all there is), a
``JobState`` while it waits and runs, and once it ended and its row was written only a shared
marker (``ENDED`` or ``REJECTED``): the state of a million-job run is not held to the end, and
late events about an ended job only need to know that it ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mrsched.errors import SimulationError
from mrsched.simulator.profiles import flatten
from mrsched.simulator.workload import Job, Workload

# job states
SUBMITTED, RUNNING, DONE = "SUBMITTED", "RUNNING", "DONE"


@dataclass(slots=True)
class JobState:
    """The server's view of one job until it ends; then replaced by ENDED or REJECTED."""

    job: Job | None
    state: str = "PENDING"
    alloc: "list[int] | range" = ()   # type: ignore[assignment]  (shared, read-only)
    alloc_text: str = ""
    ncomp: int = 0               # how many of alloc's ids are compute resources
    comp_runs: list = ()         # type: ignore[assignment]  those ids as (first, last) ranges
    storage: list = ()           # type: ignore[assignment]  alloc's storage ids (Batsim's machines too)
    start: float = -1.0
    finish: float = -1.0
    final_state: str = ""
    return_code: int = 0
    metadata: str = ""
    executor: Any = None         # its executors.JobExecutor while it runs


# What stays of a job once it ended and its row was written (shared by all). Only the state
# checks of late events read them.
ENDED = JobState(None, state=DONE, final_state="COMPLETED")
REJECTED = JobState(None, state=DONE, final_state="REJECTED")


def state_text(js: JobState) -> str:
    """A job's state in an error message ("submitted", "running", "finished" ...)."""
    if js.final_state:
        return "finished" if js.final_state != "REJECTED" else "rejected"
    return {SUBMITTED: "submitted", RUNNING: "running"}.get(js.state, "not submitted yet")


class Jobs:
    """Every job of a run by id (``states``: its ``Job`` until submitted, then its
    ``JobState``, then ENDED / REJECTED), the workloads by name, and the profiles the
    scheduler registered (``--enable-dynamic-jobs``)."""

    def __init__(self, workloads: list[Workload], *, profile_reuse: bool = False):
        self.states: dict[str, JobState | Job] = {}
        self.workloads = {w.name: w for w in workloads}
        self.profile_reuse = profile_reuse
        self.dyn_profiles: dict[str, dict[str, dict]] = {}
        self._profile_users: dict[tuple[str, str], int] = {}
        self._steps_cache: dict[tuple[int, str], list] = {}
        for w in workloads:
            for j in w.jobs:
                self.states[j.id] = j

    def profiles_of(self, job: Job) -> dict[str, dict]:
        """The profiles a job's profile name is looked up in (its workload's, or the
        registered ones)."""
        wl = self.workloads.get(job.workload)
        if wl is not None and job.profile in wl.profiles:
            return wl.profiles
        return self.dyn_profiles.get(job.workload, {})

    def fits(self, j: Job, nb_compute: int) -> bool:
        """Whether a job asks for no more than the ``nb_compute`` machines (a
        ``parallel_homogeneous_total`` job runs on any number)."""
        prof = self.profiles_of(j)[j.profile]
        return j.res <= nb_compute or prof.get("type") == "parallel_homogeneous_total"

    def get(self, job_id: Any, etype: str) -> JobState:
        """The state of the job a scheduler's event names (made on demand for a job not
        submitted yet); an unknown id is the event's error."""
        js = self.states.get(job_id) if isinstance(job_id, str) else None
        if js is None:
            raise SimulationError(f"unknown job {job_id!r}", event=etype, job=str(job_id),
                                  hint="job ids look like 'w0!1'")
        if type(js) is not JobState:   # not submitted yet: its state is made on demand
            js = self.states[job_id] = JobState(js)
        return js

    def steps(self, job: Job, profiles: dict[str, dict], prof: dict) -> list[tuple[str, dict]]:
        """The leaf profiles a job runs in sequence, a composed profile unrolled (kept per
        static profile; a trace may have a profile per job, which is not kept)."""
        if prof["type"] != "composed":
            return [(job.profile, prof)]
        key = (id(profiles), job.profile)
        steps = self._steps_cache.get(key) if not job.dynamic else None
        if steps is None:
            steps = flatten(job.profile, profiles)
            if not job.dynamic:
                self._steps_cache[key] = steps
        return steps

    def use_profile(self, job: Job) -> None:
        """A registered job uses a registered profile (counted, see ``release_profile``)."""
        if job.profile in self.dyn_profiles.get(job.workload, {}):
            key = (job.workload, job.profile)
            self._profile_users[key] = self._profile_users.get(key, 0) + 1

    def release_profile(self, job: Job) -> None:
        """Without --enable-profile-reuse Batsim drops a dynamic profile once unused."""
        key = (job.workload, job.profile)
        users = self._profile_users.get(key)
        if users is None:
            return
        users -= 1
        self._profile_users[key] = users
        if users <= 0 and not self.profile_reuse:
            del self._profile_users[key]
            self.dyn_profiles.get(job.workload, {}).pop(job.profile, None)
