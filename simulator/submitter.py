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

    __slots__ = ("k", "master", "name", "jobs", "i", "clock", "batch", "first_read")

    def __init__(self, kernel: Any, master: str, workload: Workload):
        self.k, self.master, self.name = kernel, master, workload.name
        self.jobs = submission_order(workload.jobs)
        self.i = 0            # the next job to submit
        self.clock = 0.0      # the time it last read
        self.batch: list = []   # the jobs due, not posted yet
        #: with -E, ``first_read(then)`` once its first job is due: Batsim reads the platform's
        #: energy there (job_submitter.cpp 141-147), then the submitter goes on (``then``)
        self.first_read = None

    def start(self) -> None:
        self.k.put(self.master, "SUBMITTER_HELLO", self.name, self._hello)

    def _hello(self) -> None:
        self.clock = self.k.now
        self._loop()

    def _loop(self) -> None:
        """Batsim's loop over the jobs: every job due by the clock joins the batch; the first
        job not due posts the batch and sleeps until its time."""
        jobs, i, batch = self.jobs, self.i, self.batch
        n = len(jobs)
        while i < n:
            if jobs[i].subtime > self.clock:
                self.i = i
                self.batch = []
                if batch:
                    self.k.put(self.master, "JOB_SUBMITTED", batch, self._sleep)
                else:
                    self._sleep()
                return
            batch.append(jobs[i])
            i += 1
            if self.first_read is not None:
                self.i = i
                read, self.first_read = self.first_read, None
                read(self._loop)
                return
        self.i = i
        self.batch = []
        if batch:
            self.k.put(self.master, "JOB_SUBMITTED", batch, self._bye)
        else:
            self._bye()

    def _sleep(self) -> None:
        """Until the next job's submission time (from the clock read before)."""
        self.k.sleep(self.jobs[self.i].subtime - self.clock, self._slept)

    def _slept(self) -> None:
        """The job it slept for is due, whatever the clock says: Batsim reads the clock and adds
        that job without comparing again (a clock a rounding short of the submission time sends
        it alone, the next ones of the same time after one more tiny sleep)."""
        self.clock = self.k.now
        self.batch.append(self.jobs[self.i])
        self.i += 1
        if self.first_read is not None:
            read, self.first_read = self.first_read, None
            read(self._loop)
            return
        self._loop()

    def _bye(self) -> None:
        self.k.put(self.master, "SUBMITTER_BYE", self.name)
