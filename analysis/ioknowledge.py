"""How well a scheduler anticipates future system I/O and I/O bursts (seed 004 Ch. 4, Sect. 4.2).

For a finished run and the knowledge source its policy used (``mrsched.schedulers.execution.knowledge``),
every executed job gets the estimates the scheduler had (replayed with the same source classes:
``learned`` is fed the run's completions in time order, completions at a time before the
submissions at that time, as the scheduler's rounds do), and we measure:

- per-job accuracy of the runtime and I/O-rate estimates (relative accuracy
  ``min(est, true) / max(est, true)``, 1 = exact; Decision: 004/PRIONN's "relative accuracy"
  without a formula) and their mean absolute errors;
- system I/O on a one-minute grid: *actual* = sum over running jobs of true rate x nodes (their
  demand on the PFS); *estimated* two ways, as 004's two evaluations: ``pt`` ("perfect
  turnaround": the jobs' real windows, estimated rates) and ``et`` ("estimated turnaround":
  each job over the window the scheduler reserved when it started it, ``[start, start +
  runtime estimate)``, estimated rates). Decision: 004 estimates turnaround by simulating a
  snapshot at each submission; our ``et`` is the scheduler's own view once the job starts;
- I/O bursts (Sect. 4.2.2): samples of actual system I/O above ``exp(mu + sigma)`` of the
  log-normal fitted on the non-zero samples (one standard deviation above the mean, in log
  space); an actual burst is anticipated (TP) when an estimated one lies within the window
  (5 min = +-2 samples, 60 min = +-30); sensitivity = TP / (TP + FN), precision is the share
  of estimated burst samples with an actual one within the window.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.schedulers.model.job import job_from_batsim
from mrsched.schedulers.execution.knowledge import Learned, make_source, true_rate

GRID = 60.0                     # seconds between system I/O samples
WINDOWS = {"5min": 2, "60min": 30}   # half-windows in samples


@dataclass(frozen=True)
class KnownJob:
    """An executed job: its real window and truth, and what the scheduler estimated."""

    id: str
    nb_nodes: int
    start: float
    finish: float
    true_rate: float
    est_runtime: float          # the scheduler's runtime view (capped at the walltime)
    est_rate: float

    @property
    def runtime(self) -> float:
        return self.finish - self.start


def _accuracy(est: np.ndarray, true: np.ndarray) -> np.ndarray:
    hi = np.maximum(est, true)
    lo = np.minimum(est, true)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(hi > 0, lo / np.where(hi > 0, hi, 1.0), 1.0)


def estimate_jobs(rows: Iterable[Mapping[str, str]], workload: Mapping, source_name: str = "requested",
                  noise: float = 0.3, seed: int = 0) -> list[KnownJob]:
    """The executed jobs of ``rows`` (Batsim's out_jobs.csv) with the estimates ``source_name``
    gave the scheduler; ``workload`` is the run's workload JSON."""
    source = make_source(source_name, noise, seed)
    profiles = workload.get("profiles") or {}
    by_id = {str(j["id"]): j for j in workload.get("jobs", [])}
    ran = []
    for row in rows:
        if row.get("final_state") in ("REJECTED", "NOT_SUBMITTED") or not row.get("allocated_resources"):
            continue
        jid = row["job_id"]
        raw = by_id.get(jid)
        if raw is None:
            raise WorkloadError("job of out_jobs.csv missing from the workload", job=jid)
        job = job_from_batsim(f"{row['workload_name']}!{jid}", raw, profiles)
        ran.append((job, float(row["starting_time"]), float(row["finish_time"]), float(row["submission_time"]),
                    int(row["requested_number_of_resources"])))
    estimates = {}
    if isinstance(source, Learned):
        events = [(sub, 1, k) for k, (_, _, _, sub, _) in enumerate(ran)]
        events += [(fin, 0, k) for k, (_, _, fin, _, _) in enumerate(ran)]
        for _, kind, k in sorted(events):
            job, start, fin = ran[k][:3]
            if kind == 0:
                source.observe(job, fin - start)
            else:
                estimates[k] = source.estimate(job)
    else:
        estimates = {k: source.estimate(r[0]) for k, r in enumerate(ran)}
    out = []
    for k, (job, start, fin, _, n) in enumerate(ran):
        est = estimates[k]
        wall = job.request.walltime
        run = min(max(est.runtime, 1.0), wall) if wall != math.inf else est.runtime
        out.append(KnownJob(job.id, n, start, fin, true_rate(job), run, est.rate))
    return out


def system_io(jobs: list[KnownJob], t0: float, n: int, which: str) -> np.ndarray:
    """System I/O (B/s) at ``t0 + k * GRID``: ``actual``, ``pt`` or ``et`` (module docstring)."""
    diff = np.zeros(n + 1)
    for j in jobs:
        if which == "actual":
            a, b, v = j.start, j.finish, j.true_rate * j.nb_nodes
        elif which == "pt":
            a, b, v = j.start, j.finish, j.est_rate * j.nb_nodes
        else:
            a, b, v = j.start, j.start + j.est_runtime, j.est_rate * j.nb_nodes
        i0 = min(max(math.ceil((a - t0) / GRID), 0), n)
        i1 = min(max(math.ceil((b - t0) / GRID), 0), n)
        if i1 > i0 and v:
            diff[i0] += v
            diff[i1] -= v
    return np.cumsum(diff)[:n]


def burst_threshold(actual: np.ndarray) -> float:
    """One standard deviation above the mean of the log-normal fitted on the non-zero samples."""
    pos = actual[actual > 0]
    if len(pos) < 2:
        return math.inf
    logs = np.log(pos)
    return float(math.exp(logs.mean() + logs.std()))


def _dilate(mask: np.ndarray, half: int) -> np.ndarray:
    c = np.concatenate([[0], np.cumsum(mask.astype(int))])
    n = len(mask)
    lo = np.clip(np.arange(n) - half, 0, n)
    hi = np.clip(np.arange(n) + half + 1, 0, n)
    return (c[hi] - c[lo]) > 0


def burst_scores(actual: np.ndarray, estimated: np.ndarray, threshold: float, half: int) -> tuple[float, float]:
    """(sensitivity, precision) of burst anticipation within +-``half`` samples (NaN: no burst)."""
    a = actual > threshold
    p = estimated > threshold
    sens = float((a & _dilate(p, half)).sum() / a.sum()) if a.any() else math.nan
    prec = float((p & _dilate(a, half)).sum() / p.sum()) if p.any() else math.nan
    return sens, prec


def knowledge_metrics(jobs: list[KnownJob]) -> dict[str, float]:
    """Estimate accuracies, system I/O accuracy and burst anticipation of one run."""
    if not jobs:
        return {}
    true_run = np.array([j.runtime for j in jobs])
    est_run = np.array([j.est_runtime for j in jobs])
    true_io = np.array([j.true_rate for j in jobs])
    est_io = np.array([j.est_rate for j in jobs])
    finite = np.isfinite(est_run)
    racc = _accuracy(est_run[finite], true_run[finite])
    iacc = _accuracy(est_io, true_io)
    out = {
        "runtime_accuracy_mean": float(racc.mean()) if len(racc) else math.nan,
        "runtime_accuracy_median": float(np.median(racc)) if len(racc) else math.nan,
        "runtime_mae": float(np.abs(est_run[finite] - true_run[finite]).mean()) if finite.any() else math.nan,
        "io_rate_accuracy_mean": float(iacc.mean()),
        "io_rate_mae": float(np.abs(est_io - true_io).mean()),
    }
    t0 = min(j.start for j in jobs)
    t1 = max(j.finish for j in jobs)
    n = max(int(math.ceil((t1 - t0) / GRID)), 1)
    actual = system_io(jobs, t0, n, "actual")
    thr = burst_threshold(actual)
    out["burst_threshold"] = thr
    out["burst_share"] = float((actual > thr).mean())
    for kind in ("pt", "et"):
        est = system_io(jobs, t0, n, kind)
        busy = (actual > 0) | (est > 0)
        acc = _accuracy(est[busy], actual[busy])
        out[f"sysio_accuracy_mean_{kind}"] = float(acc.mean()) if len(acc) else math.nan
        out[f"sysio_accuracy_median_{kind}"] = float(np.median(acc)) if len(acc) else math.nan
        for name, half in WINDOWS.items():
            sens, prec = burst_scores(actual, est, thr, half)
            out[f"burst_sensitivity_{name}_{kind}"] = sens
            out[f"burst_precision_{name}_{kind}"] = prec
    return out


def options_source(options: Mapping) -> tuple[str, float, int]:
    """(source, noise, seed) of a run's policy options (defaults: the policies')."""
    return (str(options.get("knowledge", "requested")), float(options.get("knowledge_noise", 0.3)),
            int(options.get("knowledge_seed", 0)))


def run_knowledge(jobs_csv: str | Path, workload: str | Path, options: Mapping) -> list[KnownJob]:
    """The executed jobs of a finished run with their estimates under the run's ``options``."""
    try:
        data = json.loads(Path(workload).read_text())
    except (OSError, ValueError) as exc:
        raise WorkloadError(f"cannot read workload: {exc}", file=str(workload)) from None
    with open(jobs_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return estimate_jobs(rows, data, *options_source(options))


_TREES: dict[str, object] = {}


def run_io_metrics(run) -> dict[str, float]:
    """Seed 004's measures of a loaded run (``mrsched.analysis.runs.Run``) on a bandwidth-tree
    platform with I/O jobs: contention (goodput, computing fractions) and knowledge ({} elsewhere)."""
    from mrsched.analysis.iocontention import run_contention, tree_of_platform
    from mrsched.analysis.runs import _jobs_csv, _paths, _resolve
    from mrsched.errors import MrschedError

    m = run.manifest
    plats, works = _paths(m.get("platform")), _paths(m.get("workload"))
    if len(plats) != 1 or len(works) != 1:
        return {}
    plat, work = _resolve(plats[0], run.path), _resolve(works[0], run.path)
    path = _jobs_csv(run.path)
    if path is None or plat is None or work is None:
        return {}
    plat = str(plat)
    if plat not in _TREES:
        try:
            _TREES[plat] = tree_of_platform(plat)
        except Exception:   # noqa: BLE001 - not a bandwidth-tree platform: no seed 004 metrics
            _TREES[plat] = None
    if _TREES[plat] is None:
        return {}
    try:
        jobs = run_knowledge(path, work, run.options)
        if not any(j.true_rate for j in jobs):
            return {}
        out = {k: v for k, v in run_contention(path, plat, work).metrics().items()}
    except MrschedError:
        return {}
    out.update(knowledge_metrics(jobs))
    return out
