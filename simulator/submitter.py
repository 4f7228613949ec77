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
    from fractions import Fraction

    x = Fraction(a) - Fraction(b)
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    scale = Fraction(2) ** (63 - e)      # 64 significant bits: x * scale in [2^63, 2^64)
    q = x * scale
    n, r = divmod(q.numerator, q.denominator)
    twice = 2 * r
    if twice > q.denominator or (twice == q.denominator and n & 1):
        n += 1
    return sign * float(Fraction(n) / scale)   # float() rounds to nearest even: 53 bits


class StaticSubmitter:
    """The submitter of one workload (``start`` posts its hello)."""

    __slots__ = ("k", "master", "name", "jobs", "i", "clock")

    def __init__(self, kernel: Any, master: str, workload: Workload):
        self.k, self.master, self.name = kernel, master, workload.name
        self.jobs = submission_order(workload.jobs)
        self.i = 0            # the next job to submit
        self.clock = 0.0      # the time it last read

    def start(self) -> None:
        self.k.put(self.master, "SUBMITTER_HELLO", self.name, self._greeted)

    def _greeted(self) -> None:
        self.clock = self.k.now
        self._step([])

    def _woke(self) -> None:
        """The sleep for the next job ended: that job is taken, whatever the clock says."""
        self.clock = self.k.now
        i = self.i
        self.i = i + 1
        self._step([self.jobs[i]])

    def _step(self, batch: list) -> None:
        jobs = self.jobs
        i = self.i
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
        self.k.sleep(_ld_sub(self.jobs[self.i].subtime, self.clock), self._woke)

    def _bye(self) -> None:
        self.k.put(self.master, "SUBMITTER_BYE", self.name)
