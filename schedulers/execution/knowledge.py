"""Where a scheduler's runtime and I/O-rate knowledge comes from (seed 004 Ch. 4, Sect. 4.1-4.2).

004 Ch. 3 assumes perfect knowledge of each job's I/O; Ch. 4 replaces it by predictions
(PRIONN). Here the source is a policy option, ``knowledge``:

- ``requested`` (default): the walltime and the job's stated ``io_bandwidth_per_node``, i.e.
  what every policy used before this option existed; nothing is touched.
- ``perfect``: the job's true run time and true I/O rate (job fields ``true_runtime`` and
  ``true_io_bandwidth_per_node``, see below).
- ``noisy``: the truth times a seeded log-normal factor ``exp(N(0, knowledge_noise))``, drawn
  per job from ``(knowledge_seed, job id)`` so that it does not depend on the order of events.
- ``learned``: an online history per user, in the spirit of Tsafrir et al. (the predictor 004
  Sect. 4.1 cites as [102], there the mean of the user's last two jobs): the run time is the
  mean of the last ``LAST`` observed run times of the user's jobs with the same walltime (else
  of any of the user's jobs), the I/O rate the mean of the user's last ``LAST`` observed rates;
  fitted only on jobs that finished before the prediction; without history, the requested
  values. Decision: ``LAST`` = 5 and the (user, walltime) key were chosen on the KTH-SP2 model
  workload (runtime accuracy 0.52 vs 0.44 for the user's last two, 0.48 for walltimes).

Where the truth comes from without breaking the protocol: Batsim forwards each job's workload
object verbatim on JOB_SUBMITTED (``json_description``, as it does for ``burst_buffer``), so a
workload can carry ``true_runtime`` (s) and ``true_io_bandwidth_per_node`` (B/s per node) beside
the stated ``walltime`` and ``io_bandwidth_per_node`` (``mrsched workload model --io-spread``
writes them). Batsim itself ignores them: it still runs the profile and kills at the walltime.
A job without ``true_io_bandwidth_per_node`` uses its stated rate truly; ``perfect``/``noisy``
need ``true_runtime`` (or a ``delay`` profile) and refuse a job without it.

How the policies use it: the runtime applies it for every policy that declares the ``io``
service. At a job's first round the job the policy sees is replaced by one whose ``request``
(the scheduler's own view, never sent to Batsim) has ``walltime`` = the runtime estimate (capped
at the walltime: Batsim kills there) and ``io_bandwidth_per_node`` = the rate estimate. Backfilling
windows, reservations and the I/O-aware bandwidth profile then follow the estimate, as in
Tsafrir's backfilling (the walltime stays the kill time). A job that outlives its estimate is
held by the runtime as any overrunning job (``OVERRUN_HOLD``). The estimate is made once, at
the job's first round, from what is known then; ``learned`` observes a job at the first round
after it ended (run time = that round's time - its start).
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from mrsched.errors import ConfigError, WorkloadError
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.model.params import KNOWLEDGE

TRUE_RUNTIME = "true_runtime"
TRUE_RATE = "true_io_bandwidth_per_node"
#: jobs of a history that ``learned`` averages (Tsafrir et al.: the last two; module docstring)
LAST = 5


def stated_rate(job: Job) -> float:
    """The rate the job states (its workload's ``io_bandwidth_per_node``)."""
    raw = job.fields.get("io_bandwidth_per_node") if job.fields else None
    return float(raw) if raw else 0.0


def stated_walltime(job: Job) -> float:
    """The walltime of the workload (INF when none), whatever the scheduler's view says."""
    raw = job.fields.get("walltime") if job.fields else None
    if raw is None or not isinstance(raw, (int, float)) or raw <= 0:
        return math.inf
    return float(raw)


def _non_negative(job: Job, field: str, raw: Any) -> float:
    """A workload's truth field as a number, or one error line naming the job and field."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise WorkloadError(f"expected a number, got {raw!r}", job=job.id, field=field) from None
    if not value >= 0:
        raise WorkloadError(f"expected a non-negative number, got {raw!r}", job=job.id, field=field)
    return value


def true_rate(job: Job) -> float:
    """The rate the job really uses: ``true_io_bandwidth_per_node``, else its stated rate."""
    raw = job.fields.get(TRUE_RATE) if job.fields else None
    if raw is None:
        return stated_rate(job) if job.fields else job.request.io_bandwidth_per_node
    return _non_negative(job, TRUE_RATE, raw)


def true_runtime(job: Job) -> float:
    """The job's real run time: ``true_runtime``, else its ``delay`` profile's delay."""
    raw = job.fields.get(TRUE_RUNTIME) if job.fields else None
    if raw is None and job.profile_data and job.profile_data.get("type") == "delay":
        raw = job.profile_data.get("delay")
    if raw is None:
        raise WorkloadError("this knowledge source needs the job's true run time", job=job.id,
                            field=TRUE_RUNTIME, hint="write it with `mrsched workload model --io-spread ...`")
    return _non_negative(job, TRUE_RUNTIME, raw)


def user_of(job: Job) -> str:
    """The job's user (workload field ``user``; jobs without one share the user '')."""
    raw = job.fields.get("user") if job.fields else None
    return "" if raw is None else str(raw)


@dataclass(frozen=True)
class Estimate:
    """What a source tells the scheduler about one job."""

    runtime: float      # seconds (INF: unknown, e.g. no walltime)
    rate: float         # bytes/s per node


class Requested:
    """Walltime and stated rate: the user's word (today's behaviour)."""

    name = "requested"

    def estimate(self, job: Job) -> Estimate:
        return Estimate(stated_walltime(job), stated_rate(job))

    def observe(self, job: Job, runtime: float) -> None:
        """Nothing is learned."""


class Perfect(Requested):
    """The truth (004 Ch. 3's assumption)."""

    name = "perfect"

    def estimate(self, job: Job) -> Estimate:
        return Estimate(true_runtime(job), true_rate(job))


class Noisy(Requested):
    """The truth times ``exp(N(0, spread))``, one draw per job and quantity, seeded by
    ``(seed, job id)``: reproducible and independent of the order jobs are seen in."""

    name = "noisy"

    def __init__(self, spread: float, seed: int = 0):
        self.spread = spread
        self.seed = seed

    def factors(self, job_id: str) -> tuple[float, float]:
        import numpy as np   # only a noisy-estimate run needs it

        rng = np.random.default_rng([self.seed, zlib.crc32(job_id.encode())])
        a, b = rng.normal(0.0, self.spread, size=2)
        return math.exp(a), math.exp(b)

    def estimate(self, job: Job) -> Estimate:
        fr, fio = self.factors(job.id)
        return Estimate(true_runtime(job) * fr, true_rate(job) * fio)


class Learned(Requested):
    """History of finished jobs: the mean of the last ``last`` run times of the user's jobs
    with the same walltime (else of the user's jobs) and of the user's last ``last`` true I/O
    rates (observed when each job finished); the requested values without history."""

    name = "learned"

    def __init__(self, last: int = LAST):
        self.last = last
        self.runtimes: dict[Any, deque] = {}     # (user, walltime) and user -> last run times
        self.rates: dict[str, deque] = {}
        self.seen: set[str] = set()        # ids observed (the never-sees-the-future test reads it)

    def estimate(self, job: Job) -> Estimate:
        user = user_of(job)
        run = self.runtimes.get((user, stated_walltime(job))) or self.runtimes.get(user)
        rate = self.rates.get(user)
        return Estimate(sum(run) / len(run) if run else stated_walltime(job),
                        sum(rate) / len(rate) if rate else stated_rate(job))

    def observe(self, job: Job, runtime: float) -> None:
        user = user_of(job)
        for key in ((user, stated_walltime(job)), user):
            self.runtimes.setdefault(key, deque(maxlen=self.last)).append(runtime)
        # the I/O a finished job did is measured (e.g. by the burst buffer's drain counters)
        self.rates.setdefault(user, deque(maxlen=self.last)).append(true_rate(job))
        self.seen.add(job.id)


def make_source(name: str, noise: float = 0.3, seed: int = 0) -> Requested:
    """The source of a ``knowledge`` option value."""
    if name == "requested":
        return Requested()
    if name == "perfect":
        return Perfect()
    if name == "noisy":
        return Noisy(noise, seed)
    if name == "learned":
        return Learned()
    raise ConfigError(f"unknown knowledge source {name!r}", field="knowledge", hint=", ".join(KNOWLEDGE))


class KnowledgeTracker:
    """The runtime's knowledge across rounds: the source's estimate of each new job, and the
    ended jobs fed back to the source (before any new job of the same round is estimated)."""

    def __init__(self, source: Requested, tree=None):
        self.source = source
        self.tree = tree                        # the bandwidth tree (io_aware): estimates stay feasible
        self.jobs: dict[str, Job] = {}          # estimated, not ended yet
        self.estimates: dict[str, Estimate] = {}

    def _feasible_rate(self, rate: float, nodes: int) -> float:
        """Decision: a prediction never makes a job unrunnable on the tree (a real scheduler
        clamps a prediction; it does not refuse a job for it)."""
        tree = self.tree
        if tree is None or not rate:
            return rate
        return min(rate, tree.node_bw, min(tree.top_bw) / nodes)

    def observe(self, job_id: str, runtime: float) -> None:
        """A job this tracker estimated ended after running ``runtime`` seconds."""
        job = self.jobs.pop(job_id, None)
        if job is not None:
            self.source.observe(job, runtime)

    def estimate(self, job: Job) -> Job:
        """The job as the policy sees it: its request holds the source's estimates. A new
        ``Job`` (the submitted one is not changed); the same one when already estimated."""
        if job.id in self.jobs:
            return job
        est = self.source.estimate(job)
        req = job.request
        wall = min(max(est.runtime, 1.0), req.walltime) if req.has_walltime else req.walltime
        self.estimates[job.id] = est
        seen = replace(job, request=replace(req, walltime=wall,
                                            io_bandwidth_per_node=self._feasible_rate(est.rate, req.nodes)))
        self.jobs[job.id] = seen
        return seen


def make_tracker(options, policy: str, tree=None) -> KnowledgeTracker | None:
    """The tracker of a run's ``knowledge`` options (None for ``requested``: nothing to do)."""
    if options.knowledge == "requested":
        return None
    if options.job_model != "alloc-only":
        raise ConfigError(f"policy '{policy}': knowledge '{options.knowledge}' needs job_model=alloc-only "
                          "(io-phased phases take their walltime from the scheduler's view)", field="knowledge")
    source = make_source(options.knowledge, options.knowledge_noise, options.knowledge_seed)
    return KnowledgeTracker(source, tree if options.io_aware else None)
