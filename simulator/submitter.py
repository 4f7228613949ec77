"""Batsim's static job submitter (``job_submitter.cpp``, ``static_job_submitter_process``): one
actor per workload, on the master host, that hands the workload's jobs to the server at their
submission times.

It says hello, then walks the jobs in submission order (``workload.submission_order``): every
job due by the clock it read goes into one JOB_SUBMITTED batch; a job later than that reading
sends the batch, then the submitter sleeps ``subtime - reading`` (subtracted in long double,
``_ld_sub``) and takes that job **whatever the clock now says** (``job_submitter.cpp``
81-155): the clock, a running sum of steps, may wake it a hair before the submission time,
and the next job of the same time is then later than the new reading, so it goes in a message
of its own after another (tiny) sleep. When no job is left it says bye. Each message is a put
to the server, synchronous for the submitter.
"""

from __future__ import annotations

import math
from typing import Any

from mrsched.simulator.workload import Workload, submission_order


def _ld_sub(a: float, b: float) -> float:
    """``static_cast<double>(a - b)`` of two doubles subtracted as x86 long doubles (64-bit
    significand), as Batsim computes its submitter's sleeps (``job_submitter.cpp`` 117): the
    double difference unless that one was rounded, then the exact difference rounded to 64
    bits and again to 53 (the two roundings may differ from one)."""
    d = a - b
    if d + b == a and a - d == b:   # exact (Sterbenz, or a plain case): both ways agree
        return d
    # exactly: a and b are integers over powers of two, so a - b is n / 2**k
    na, da = a.as_integer_ratio()
    nb, db = b.as_integer_ratio()
    k = max(da, db).bit_length() - 1
    n = (na << (k - da.bit_length() + 1)) - (nb << (k - db.bit_length() + 1))
    sign = -1 if n < 0 else 1
    n = abs(n)
    extra = n.bit_length() - 64      # keep 64 significant bits, rounding to nearest even
    if extra > 0:
        q, r = n >> extra, n & ((1 << extra) - 1)
        half = 1 << (extra - 1)
        if r > half or (r == half and q & 1):
            q += 1
        n, k = q, k - extra
    return sign * math.ldexp(float(n), -k)   # float(n) rounds to nearest even: 53 bits


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
        self.k.sleep(_ld_sub(self.jobs[self.i].subtime, self.clock), self._slept)

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
