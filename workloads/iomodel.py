"""Seed 004's workload model (Sect. 3.3.2), fitted on any SWF trace and sampled for any machine.

- *User arrivals* (Dinh et al.): a user's submissions less than ``bundle`` (10) seconds apart
  form one arrival; arrivals are Poisson with one rate per period — weekday day (06:00-18:59),
  weekday night, weekend day, weekend night — and bring a number of jobs drawn from the
  trace's jobs-per-arrival distribution.
- *Sizes*: node counts binned by powers of two (bin k = [2^k, 2^(k+1))); a bin is drawn by its
  frequency, then a size inside it by the sizes seen there.
- *(time limit, elapsed)* drawn together from the trace's pairs (elapsed clipped to the limit).
- Every job asks ``io_rate`` B/s per node (004: 18 MB/s, a 64 GB checkpoint per hour).
- *True vs stated rates* (for seed 004 Ch. 4's knowledge sources, off by default): with
  ``io_spread`` > 0 each job is a resampled trace job — its user, size and (limit, elapsed)
  together, so a user's jobs keep the trace's correlation that a history-based predictor
  needs — and it really drains ``io_rate x u x j`` B/s per node, ``u`` a per-user and ``j`` a
  per-job log-normal factor of mean 1 (sigmas ``io_spread`` and ``io_jitter``), while it still
  states ``io_rate``. Such jobs carry ``user``, ``true_runtime`` (= elapsed) and
  ``true_io_bandwidth_per_node`` (``mrsched.schedulers.execution.knowledge``); with ``max_nodes`` a true
  rate is capped at ``io_rate x max_nodes / size``, so no job asks more than the widest one.

Decisions: clock times come from the header's ``UnixStartTime`` in ``TimeZoneString`` (UTC
when absent); the sample starts at the trace's first submission's clock time; the jobs of one
arrival are submitted together; sizes are scaled by ``nodes / trace nodes`` (the trace's
machine is smaller than the target, as Cab and Zin are smaller than CTS-1) and capped at
``nodes``; a job's profile is ``parallel_homogeneous`` with ``cpu = elapsed x speed`` so that
``io_model=contention`` can derive its I/O volume. Seeded: same inputs, same file.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.workloads.swf import SwfTrace, read_swf

PERIODS = ("weekday_day", "weekday_night", "weekend_day", "weekend_night")
DAY = (6, 19)          # 06:00-18:59 is day


def period_of(when: dt.datetime) -> int:
    """Index in ``PERIODS`` of a local clock time."""
    weekend = when.weekday() >= 5
    day = DAY[0] <= when.hour < DAY[1]
    return (2 if weekend else 0) + (0 if day else 1)


@dataclass
class IoWorkloadModel:
    """What Sect. 3.3.2 keeps of a trace."""

    start: dt.datetime                          # clock time of the first submission
    rates: tuple[float, ...]                    # user arrivals per second in each period
    jobs_per_arrival: tuple[np.ndarray, np.ndarray]   # values, probabilities
    sizes: np.ndarray                           # node counts of the trace's jobs (scaled later)
    limits: np.ndarray                          # (time limit, elapsed) pairs
    trace_nodes: int
    users: np.ndarray | None = None             # user id of each trace job (aligned with sizes)

    def summary(self) -> str:
        r = ", ".join(f"{p} {x * 3600:.2f}/h" for p, x in zip(PERIODS, self.rates))
        return (f"model: {len(self.sizes)} jobs on {self.trace_nodes} nodes; user arrivals {r}; "
                f"mean {float(np.dot(*self.jobs_per_arrival)):.2f} jobs per arrival")


def _clock(trace: SwfTrace):
    start = trace.header_int("UnixStartTime") or 0
    tz = dt.timezone.utc
    name = trace.header.get("TimeZoneString")
    if name:
        try:
            from zoneinfo import ZoneInfo
            tz = ZoneInfo(name.strip())
        except Exception:   # noqa: BLE001 - an unknown zone name: UTC, as documented
            tz = dt.timezone.utc
    return start, tz


def fit_model(trace: SwfTrace, *, cores_per_node: int = 1, bundle: float = 10.0) -> IoWorkloadModel:
    """Fit Sect. 3.3.2's distributions on ``trace`` (jobs with a size, a limit and a run time)."""
    sub = trace.column("submit_time")
    procs = trace.column("requested_processors").copy()
    alloc = trace.column("allocated_processors")
    procs[procs <= 0] = alloc[procs <= 0]
    limit = trace.column("requested_time")
    run = trace.column("run_time")
    user = trace.column("user_id")
    ok = (sub >= 0) & (procs > 0) & (limit > 0) & (run >= 0)
    if ok.sum() < 2:
        raise WorkloadError("too few jobs with a size, a time limit and a run time to fit the model",
                            file=trace.path)
    sub, procs, limit, run, user = sub[ok], procs[ok], limit[ok], run[ok], user[ok]
    nodes = np.ceil(procs / cores_per_node).astype(int)
    order = np.argsort(sub, kind="stable")
    # user arrivals: per user, submissions less than `bundle` s after the previous one join it
    arrivals: list[float] = []
    counts: list[int] = []
    last: dict[float, int] = {}
    prev_t: dict[float, float] = {}
    for k in order:
        u, t = user[k], sub[k]
        if u in last and t - prev_t[u] < bundle:
            counts[last[u]] += 1
        else:
            last[u] = len(arrivals)
            arrivals.append(t)
            counts.append(1)
        prev_t[u] = t
    epoch, tz = _clock(trace)
    t0, t1 = float(sub.min()), float(sub.max())
    # exposure: seconds of the trace's span in each period (hour by hour)
    exposure = [0.0] * 4
    hour = math.floor(t0 / 3600) * 3600
    while hour < t1:
        a, b = max(hour, t0), min(hour + 3600, t1)
        exposure[period_of(dt.datetime.fromtimestamp(epoch + hour, tz))] += b - a
        hour += 3600
    seen = [0] * 4
    for t in arrivals:
        seen[period_of(dt.datetime.fromtimestamp(epoch + t, tz))] += 1
    total_rate = len(arrivals) / max(t1 - t0, 1.0)
    rates = tuple(seen[p] / exposure[p] if exposure[p] > 0 else total_rate for p in range(4))
    vals, cnt = np.unique(np.array(counts), return_counts=True)
    trace_nodes = trace.header_int("MaxNodes") or 0
    if trace_nodes <= 0:
        procs_max = trace.header_int("MaxProcs") or int(procs.max())
        trace_nodes = math.ceil(procs_max / cores_per_node)
    return IoWorkloadModel(dt.datetime.fromtimestamp(epoch + t0, tz), rates, (vals, cnt / cnt.sum()), nodes,
                           np.stack([limit, np.minimum(run, limit)], axis=1), max(trace_nodes, int(nodes.max())),
                           user.astype(int))


def sample_workload(model: IoWorkloadModel, *, jobs: int, nodes: int, io_rate: float, seed: int = 0,
                    speed: float = 1e9, max_nodes: int | None = None, io_spread: float = 0.0,
                    io_jitter: float = 0.1) -> dict:
    """A Batsim workload of ``jobs`` jobs for a machine of ``nodes`` nodes (seeded); sizes are
    capped at ``max_nodes`` (e.g. the widest job whose bandwidth the PFS can carry); with
    ``io_spread`` > 0, true rates distinct from the stated one (module docstring)."""
    if jobs < 1 or nodes < 1:
        raise WorkloadError("jobs and nodes must be >= 1", field="jobs" if jobs < 1 else "nodes")
    if not io_spread >= 0 or not io_jitter >= 0:
        raise WorkloadError("io_spread and io_jitter must be >= 0", field="io_spread" if not io_spread >= 0
                            else "io_jitter")
    rng = np.random.default_rng(seed)
    scale = nodes / model.trace_nodes
    sizes = np.clip(np.rint(model.sizes * scale).astype(int), 1, min(nodes, max_nodes or nodes))
    bins = np.floor(np.log2(sizes)).astype(int)
    bin_ids, bin_cnt = np.unique(bins, return_counts=True)
    by_bin = {b: sizes[bins == b] for b in bin_ids}
    vals, probs = model.jobs_per_arrival
    # piecewise-constant Poisson arrivals: hour by hour from the start clock
    subtimes: list[float] = []
    t = 0.0
    clock = model.start
    while len(subtimes) < jobs:
        rate = model.rates[period_of(clock + dt.timedelta(seconds=t))]
        hour_end = (math.floor((model.start.minute * 60 + model.start.second + t) / 3600) + 1) * 3600 \
            - (model.start.minute * 60 + model.start.second)
        gap = rng.exponential(1 / rate) if rate > 0 else math.inf
        if t + gap >= hour_end:
            t = hour_end             # memoryless: redraw in the next hour at its rate
            continue
        t += gap
        k = int(rng.choice(vals, p=probs))
        subtimes.extend([round(t, 3)] * k)
    subtimes = subtimes[:jobs]
    out_jobs, profiles = [], {}
    if io_spread > 0:
        return _with_truth(model, rng, subtimes, nodes=nodes, scale=scale, io_rate=io_rate, speed=speed,
                           max_nodes=max_nodes, spread=io_spread, jitter=io_jitter, seed=seed)
    picks_bin = rng.choice(bin_ids, size=jobs, p=bin_cnt / bin_cnt.sum())
    picks_lim = rng.integers(0, len(model.limits), size=jobs)
    for i in range(jobs):
        size = int(rng.choice(by_bin[picks_bin[i]]))
        limit, elapsed = model.limits[picks_lim[i]]
        elapsed = max(float(elapsed), 1.0)
        name = f"e{int(elapsed)}" if float(elapsed).is_integer() else f"e{elapsed!r}"
        profiles.setdefault(name, {"type": "parallel_homogeneous", "cpu": elapsed * speed, "com": 0})
        out_jobs.append({"id": str(i + 1), "subtime": subtimes[i], "walltime": float(max(limit, elapsed)),
                         "res": size, "profile": name, "io_bandwidth_per_node": io_rate})
    return {"nb_res": nodes, "jobs": out_jobs, "profiles": profiles,
            "description": (f"seed 004 Sect. 3.3.2 workload model: {jobs} jobs, {nodes} nodes, "
                            f"{io_rate:g} B/s per node, seed {seed}")}


def _with_truth(model: IoWorkloadModel, rng, subtimes: list[float], *, nodes: int, scale: float, io_rate: float,
                speed: float, max_nodes: int | None, spread: float, jitter: float, seed: int) -> dict:
    """Jobs resampled whole from the trace (user, size, limit, elapsed), with true rates."""
    if model.users is None:
        raise WorkloadError("this model has no users: refit it to sample true rates", field="io_spread")
    users = model.users
    distinct = np.unique(users)
    # per-user factor, mean 1: log-normal with mu = -sigma^2 / 2
    ufac = dict(zip(distinct.tolist(), np.exp(rng.normal(-spread ** 2 / 2, spread, size=len(distinct)))))
    picks = rng.integers(0, len(users), size=len(subtimes))
    jfac = np.exp(rng.normal(-jitter ** 2 / 2, jitter, size=len(subtimes))) if jitter > 0 else np.ones(len(subtimes))
    cap = min(nodes, max_nodes or nodes)
    out_jobs, profiles = [], {}
    for i, k in enumerate(picks):
        size = int(min(max(round(float(model.sizes[k]) * scale), 1), cap))
        limit, elapsed = model.limits[k]
        elapsed = max(float(elapsed), 1.0)
        name = f"e{int(elapsed)}" if elapsed.is_integer() else f"e{elapsed!r}"
        profiles.setdefault(name, {"type": "parallel_homogeneous", "cpu": elapsed * speed, "com": 0})
        rate = io_rate * ufac[int(users[k])] * float(jfac[i])
        if max_nodes:
            rate = min(rate, io_rate * max_nodes / size)
        out_jobs.append({"id": str(i + 1), "subtime": subtimes[i], "walltime": float(max(limit, elapsed)),
                         "res": size, "profile": name, "io_bandwidth_per_node": io_rate,
                         "user": str(int(users[k])), "true_runtime": elapsed,
                         "true_io_bandwidth_per_node": round(rate, 3)})
    return {"nb_res": nodes, "jobs": out_jobs, "profiles": profiles,
            "description": (f"seed 004 Sect. 3.3.2 workload model: {len(out_jobs)} jobs, {nodes} nodes, "
                            f"{io_rate:g} B/s per node stated, true rates spread {spread:g} per user, "
                            f"{jitter:g} per job, seed {seed}")}


def model_workload(trace: str | Path, *, jobs: int, nodes: int, io_rate: float, seed: int = 0,
                   cores_per_node: int = 1, speed: float = 1e9, max_nodes: int | None = None,
                   io_spread: float = 0.0, io_jitter: float = 0.1) -> tuple[IoWorkloadModel, dict]:
    """``mrsched workload model``: fit on ``trace``, sample a workload."""
    model = fit_model(read_swf(trace), cores_per_node=cores_per_node)
    return model, sample_workload(model, jobs=jobs, nodes=nodes, io_rate=io_rate, seed=seed, speed=speed,
                                  max_nodes=max_nodes, io_spread=io_spread, io_jitter=io_jitter)
