"""Batsim's static job submitter (``job_submitter.cpp``, ``static_job_submitter_process``): one
actor per workload, on the master host, that hands the workload's jobs to the server at their
submission times.

It says hello, then walks the jobs in submission order (``workload.submission_order``): every
job due by its clock goes into one JOB_SUBMITTED batch; then it sleeps until the next job's
submission time and re-reads the clock after the sleep, exactly as Batsim's; when no job is
left it says bye. Each message is a put to the server, synchronous for the submitter.
"""

from __future__ import annotations

from typing import Any

from mrsched.simulator.workload import Workload, submission_order


class StaticSubmitter:
    """The submitter of one workload (``start`` posts its hello)."""

    __slots__ = ("k", "master", "name", "jobs", "i", "clock", "first_read")

    def __init__(self, kernel: Any, master: str, workload: Workload):
        self.k, self.master, self.name = kernel, master, workload.name
        self.jobs = submission_order(workload.jobs)
        self.i = 0            # the next job to submit
        self.clock = 0.0      # the time it last read
        #: with -E, ``first_read(then)`` at its first job: Batsim reads the platform's energy
        #: there (job_submitter.cpp 141-147), then the submitter goes on (``then``)
        self.first_read = None

    def start(self) -> None:
        self.k.put(self.master, "SUBMITTER_HELLO", self.name, self._woke)

    def _woke(self) -> None:
        self.clock = self.k.now
        self._step()

    def _step(self) -> None:
        if self.first_read is not None and self.i < len(self.jobs) \
                and self.jobs[self.i].subtime <= self.clock:
            read, self.first_read = self.first_read, None
            read(self._step)
            return
        jobs = self.jobs
        i = self.i
        batch = []
        while i < len(jobs):
            job = jobs[i]
            if job.subtime > self.clock:
                self.i = i
                if batch:
                    self.k.put(self.master, "JOB_SUBMITTED", batch, self._sleep)
                else:
                    self._sleep()
                return
            batch.append(job)
            i += 1
        self.i = i
        if batch:
            self.k.put(self.master, "JOB_SUBMITTED", batch, self._bye)
        else:
            self._bye()

    def _sleep(self) -> None:
        """Until the next job's submission time (from the clock read before)."""
        self.k.sleep(self.jobs[self.i].subtime - self.clock, self._woke)

    def _bye(self) -> None:
        self.k.put(self.master, "SUBMITTER_BYE", self.name)
