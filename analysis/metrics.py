"""Per-run metrics over the user jobs of one run (docs ALGORITHMS.md "Common ground").

Waiting time = start - submit; turnaround = finish - submit; slowdown = turnaround / run
time; bounded slowdown = max(turnaround / max(run time, tau), 1) (seed 001, Sect. 4.2, tau =
10 min). Unlike Batsim's ``_schedule.csv`` ``mean_*`` (which divide by all jobs, rejected
included), every statistic here is over executed (non-rejected) jobs; rejected jobs are
only counted.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mrsched.analysis.jobs import id_ranges
from mrsched.errors import ConfigError

JOB_METRICS = ("waiting_time", "turnaround_time", "slowdown", "bounded_slowdown")
PERCENTILES = (90, 95, 99)


def add_job_metrics(jobs: pd.DataFrame, *, tau: float = 600.0) -> pd.DataFrame:
    """The job table with ``run_time``, ``slowdown`` and ``bounded_slowdown`` columns (NaN
    for rejected jobs; slowdown NaN when the run time is 0, bounded slowdown stays defined)."""
    if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
        raise ConfigError(f"tau must be a positive number of seconds, got {tau!r}", field="tau")
    missing = [c for c in ("submission_time", "starting_time", "finish_time", "final_state")
               if c not in jobs.columns]
    if missing:
        raise ConfigError(f"not a job table: missing column(s) {', '.join(missing)}",
                          field=missing[0], hint="build it with job_table(jobs_csv)")
    df = jobs.copy()
    if "rejected" not in df.columns:
        df["rejected"] = df["final_state"] == "REJECTED"
    run_time = df["finish_time"] - df["starting_time"]
    turnaround = df["finish_time"] - df["submission_time"]
    df["run_time"] = run_time
    df["waiting_time"] = df["starting_time"] - df["submission_time"]
    df["turnaround_time"] = turnaround
    with np.errstate(divide="ignore", invalid="ignore"):
        df["slowdown"] = np.where(run_time > 0, turnaround / run_time, np.nan)
        df["bounded_slowdown"] = np.maximum(turnaround / np.maximum(run_time, tau), 1.0)
    return df


def _stats(values: np.ndarray, name: str) -> dict[str, float]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        out = {f"mean_{name}": np.nan, f"median_{name}": np.nan, f"max_{name}": np.nan}
        out.update({f"p{p}_{name}": np.nan for p in PERCENTILES})
        return out
    out = {f"mean_{name}": float(values.mean()), f"median_{name}": float(np.median(values)),
           f"max_{name}": float(values.max())}
    out.update({f"p{p}_{name}": float(np.percentile(values, p)) for p in PERCENTILES})
    return out


def _compute_count(allocations, nodes_capacity: float | None) -> np.ndarray:
    """Compute nodes per allocation; ids at or beyond the compute capacity are storage hosts
    (Batsim numbers compute resources first)."""
    cap = None if nodes_capacity is None else int(np.ceil(nodes_capacity))   # first storage id
    seen: dict[str, int] = {}         # each distinct allocation parsed once
    out = np.zeros(len(allocations), dtype=float)
    for i, text in enumerate(allocations):
        if not isinstance(text, str) or not text:
            continue
        n = seen.get(text)
        if n is None:
            n = 0
            for lo, hi in id_ranges(text):
                if cap is None:
                    n += hi - lo + 1
                elif lo < cap:
                    n += min(hi, cap - 1) - lo + 1
            seen[text] = n
        out[i] = n
    return out


def resource_usage(jobs: pd.DataFrame, resource: str, *, capacities: dict | None = None,
                   phases: pd.DataFrame | None = None) -> pd.DataFrame:
    """The intervals a resource is held: ``start``, ``end``, ``amount`` per executed job.

    ``nodes`` counts allocated compute ids (from the executed Batsim rows in ``phases`` when
    given, so gaps between I/O phases are idle); any other resource is the job's request
    column (``burst_buffer`` bytes, ``gpus``...) held from its start to its finish.
    """
    capacities = capacities or {}
    if resource == "nodes":
        src = phases if phases is not None else jobs[~jobs["rejected"]]
        amount = _compute_count(src["allocated_resources"], capacities.get("nodes"))
        return pd.DataFrame({"start": src["starting_time"].to_numpy(float),
                             "end": src["finish_time"].to_numpy(float), "amount": amount})
    if resource not in jobs.columns:
        raise ConfigError(f"no request column '{resource}' in the job table", field=resource,
                          hint="attach the workload's requests (job_table(..., workload=...))")
    ran = jobs[~jobs["rejected"]]
    return pd.DataFrame({"start": ran["starting_time"].to_numpy(float),
                         "end": ran["finish_time"].to_numpy(float),
                         "amount": ran[resource].fillna(0.0).to_numpy(float)})


def usage_over_time(usage: pd.DataFrame) -> pd.DataFrame:
    """Step function of the amount in use: at ``time`` the usage becomes ``used`` (releases
    before acquisitions at equal times)."""
    if usage.empty:
        return pd.DataFrame({"time": [0.0], "used": [0.0]})
    times = np.concatenate([usage["start"].to_numpy(), usage["end"].to_numpy()])
    deltas = np.concatenate([usage["amount"].to_numpy(), -usage["amount"].to_numpy()])
    order = np.lexsort((deltas, times))
    times, deltas = times[order], deltas[order]
    used = np.cumsum(deltas)
    keep = np.append(times[1:] != times[:-1], True)  # last value at each instant
    used = used[keep]
    used[np.abs(used) < 1e-9 * max(1.0, np.abs(deltas).max())] = 0.0
    return pd.DataFrame({"time": times[keep], "used": used})


def utilisation(usage: pd.DataFrame, capacity: float, window: tuple[float, float]) -> float:
    """Used capacity-time / available capacity-time over ``window`` (clipped intervals)."""
    t0, t1 = window
    if not capacity or capacity <= 0 or not t1 > t0:
        return np.nan
    start = np.clip(usage["start"].to_numpy(float), t0, t1)
    end = np.clip(usage["end"].to_numpy(float), t0, t1)
    used = float(np.sum(usage["amount"].to_numpy(float) * (end - start)))
    return used / (capacity * (t1 - t0))


def run_metrics(jobs_df: pd.DataFrame, *, tau: float = 600.0, capacities: dict | None = None,
                phases: pd.DataFrame | None = None,
                window: tuple[float, float] | None = None) -> dict[str, float]:
    """Metrics of one run from its job table (``job_table``): counts, makespan (last finish,
    as Batsim), mean / median / max / p90 / p95 / p99 of waiting time, turnaround, slowdown
    and bounded slowdown over executed jobs, and ``utilisation_<resource>`` for every
    resource in ``capacities`` (e.g. ``{"nodes": 96, "burst_buffer": 4.8e11}``) over
    ``window`` (default: first submission to last finish)."""
    jobs = add_job_metrics(jobs_df, tau=tau)
    if "allocated_resources" not in jobs.columns:
        jobs["allocated_resources"] = ""
    ran = jobs[~jobs["rejected"]]
    state = jobs["final_state"]
    out: dict[str, float] = {
        "n_jobs": int(len(jobs)),
        "n_executed": int(len(ran)),
        "n_rejected": int(jobs["rejected"].sum()),
        "n_success": int((state == "COMPLETED_SUCCESSFULLY").sum()),
        "n_failed": int((state == "COMPLETED_FAILED").sum()),
        "n_killed": int(state.isin(("COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED")).sum()),
        "n_walltime_reached": int((state == "COMPLETED_WALLTIME_REACHED").sum()),
        "makespan": float(ran["finish_time"].max()) if len(ran) else np.nan,
        "tau": float(tau),
    }
    for name in JOB_METRICS:
        out.update(_stats(ran[name].to_numpy(float), name))
    if window is None:
        if len(ran):
            window = (float(jobs["submission_time"].min()), float(ran["finish_time"].max()))
        else:
            window = (np.nan, np.nan)
    out["window_start"], out["window_end"] = float(window[0]), float(window[1])
    for resource, capacity in (capacities or {}).items():
        if resource != "nodes" and resource not in jobs.columns:
            out[f"utilisation_{resource}"] = np.nan  # requests unknown: no silent zero
            continue
        usage = resource_usage(jobs, resource, capacities=capacities, phases=phases)
        out[f"utilisation_{resource}"] = utilisation(usage, float(capacity), window)
    return out
