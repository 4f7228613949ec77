"""Campaign tables: one metrics row per run, means with 95% confidence intervals per policy,
and values normalised to a baseline policy (seed 001 Fig. 5-6 and 11-12).

Intervals: over runs (seeds / workload parts) a Student-t interval of the mean, clipped to
the metric's domain (``metric_domain``: a waiting time is never negative, a utilisation never
above 1; with 2 seeds t = 12.7 stretches an interval far past both); within a single run, a
percentile bootstrap of the mean over jobs (seeded, so reproducible; it stays inside the
jobs' range, hence inside the domain, by construction).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mrsched.analysis.cpugpu import run_cpugpu_metrics
from mrsched.analysis.ioknowledge import run_io_metrics
from mrsched.analysis.metrics import run_metrics
from mrsched.analysis.power import run_energy_metrics
from mrsched.analysis.runs import Run, find_runs, load_run
from mrsched.errors import ConfigError, suggest

ID_COLUMNS = ("run_id", "policy", "variant", "options", "workload", "platform", "workload_name",
              "platform_name", "part", "seed", "status", "error", "warnings", "rejections")


def t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval of the mean, n-1 degrees of freedom. With fewer
    than two finite values the bounds are NaN (no spread to estimate)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, np.nan, np.nan)
    half = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return (mean, mean - half, mean + half)


#: run metrics that are fractions of a capacity (``utilisation_<resource>``)
_FRACTION_PREFIXES = ("utilisation_",)
#: shares of a capacity that jobs may ask beyond it: the PFS bandwidth their stated I/O
#: rates add up to (an I/O-ignorant schedule overlaps them)
_DEMANDS = ("utilisation_io_bandwidth",)
#: run metrics >= 1: turnaround >= run time, and bounded slowdown is max(..., 1)
_SLOWDOWN_NAMES = ("slowdown", "bounded_slowdown")
#: run metrics >= 0: times, counts, makespan
_NON_NEGATIVE_NAMES = ("waiting_time", "turnaround_time")


def metric_domain(metric: str) -> tuple[float, float]:
    """The closed range a run metric can take (``run_metrics`` names): utilisations in
    [0, 1] (the PFS bandwidth asked >= 0), slowdowns >= 1, times, makespan and counts >= 0;
    anything else unbounded."""
    if metric in _DEMANDS:
        return (0.0, np.inf)
    if metric.startswith(_FRACTION_PREFIXES):
        return (0.0, 1.0)
    stat, _, name = metric.partition("_")
    if stat in ("mean", "median", "max") or re.fullmatch(r"p\d+", stat):
        if name in _SLOWDOWN_NAMES:
            return (1.0, np.inf)
        if name in _NON_NEGATIVE_NAMES:
            return (0.0, np.inf)
    if metric == "makespan" or metric.startswith("n_"):
        return (0.0, np.inf)
    return (-np.inf, np.inf)


def clip_interval(metric: str, low: float, high: float) -> tuple[float, float, bool]:
    """(low, high, clipped): the interval bounds clipped to ``metric_domain(metric)``; NaN
    bounds stay NaN."""
    lo, hi = metric_domain(metric)
    new_low = low if np.isnan(low) else float(min(max(low, lo), hi))
    new_high = high if np.isnan(high) else float(max(min(high, hi), lo))
    clipped = (not np.isnan(low) and new_low != low) or (not np.isnan(high) and new_high != high)
    return new_low, new_high, bool(clipped)


def bootstrap_interval(values, *, confidence: float = 0.95, n_resamples: int = 2000,
                       seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap of the mean (resampling jobs with replacement),
    for the spread of a single run's mean."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    rng = np.random.default_rng(seed)
    # resample in blocks of ~4M draws: a 28k-job trace x 2000 resamples would need 450 MB
    block = max(1, 4_000_000 // x.size)
    means = np.concatenate([rng.choice(x, size=(min(block, n_resamples - i), x.size)).mean(axis=1)
                            for i in range(0, n_resamples, block)])
    alpha = (1 - confidence) / 2
    return (float(x.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def load_campaign(directory: str | Path) -> list[Run]:
    """Every run of a campaign (or the single run) in run-id order, job tables included
    (``iter_runs`` holds one run's at a time)."""
    runs = [load_run(p) for p in find_runs(directory)]
    return sorted(runs, key=lambda r: r.run_id)


def iter_runs(directory: str | Path) -> Iterator[Run]:
    """The runs of ``load_campaign`` one by one (in directory order: sort what they give by
    run id). A run is loaded when asked for and loses its tables (``jobs``, ``phases``) when
    the next one is: a campaign of million-job runs is read with one run's tables in memory,
    so keep what you need of a run before asking for the next."""
    for path in find_runs(directory):
        run = load_run(path)
        yield run
        run.jobs = run.phases = None


def rejections_text(kinds: list[dict]) -> str:
    """A run's rejected jobs by kind, for its metrics row: "2: asks N nodes, the machine has M
    (e.g. job 3: N = 200, M = 96); 1: ..."."""
    from mrsched.analysis.rejections import kind_example

    parts = []
    for k in kinds:
        example = kind_example(k)
        parts.append(f"{k.get('count', 0)}: {k['kind']}" + (f" (e.g. {example})" if example else ""))
    return "; ".join(parts)


def _label(value) -> str:
    paths = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in paths:
        if isinstance(v, dict):
            v = v.get("path")
        if v is not None:
            out.append(str(v))
    return ";".join(out)


def metrics_table(runs: Iterable[Run], *, tau: float = 600.0) -> pd.DataFrame:
    """One row per run: identity columns (``ID_COLUMNS``) then ``run_metrics``. Failed runs
    keep their row with status and error and NaN metrics."""
    rows = []
    for run in runs:
        m = run.manifest
        row = {
            "run_id": run.run_id, "policy": run.policy, "variant": run.variant,
            "options": json.dumps(run.options, sort_keys=True, default=str),
            "workload": _label(m.get("workload") or m.get("workloads")),
            "platform": _label(m.get("platform")),
            "workload_name": m.get("workload_name", ""), "platform_name": m.get("platform_name", ""),
            "part": m.get("part", ""), "seed": m.get("seed", np.nan),
            "status": run.status, "error": run.error, "warnings": "; ".join(run.warnings),
            "rejections": rejections_text(run.rejected),
            # what the run cost (manifest): wall seconds, CPU seconds and peak memory of the
            # embedded engine's process
            "wall_time": m.get("wall_time", np.nan), "cpu_time": m.get("cpu_time", np.nan),
            "peak_memory_mb": m.get("peak_memory_mb", np.nan),
        }
        if run.jobs is not None and run.status == "ok":
            row.update(run_metrics(run.jobs, tau=tau, capacities=run.capacities, phases=run.phases))
            row.update(run_cpugpu_metrics(run))   # seed 002 placement metrics on per-core platforms
            row.update(run_io_metrics(run))       # seed 004 contention / knowledge on bandwidth trees
            row.update(run_energy_metrics(run))   # energy and power (measured with -E, else wattage)
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ID_COLUMNS:
        if col not in df.columns:
            df[col] = pd.Series(dtype=object)
    for col in [c for c in df.columns if c.startswith("n_")] + ["seed"]:
        values = pd.to_numeric(df[col], errors="coerce")
        if values.dropna().mod(1).eq(0).all() and df[col].notna().eq(values.notna()).all():
            df[col] = values.astype("Int64")  # counts stay integers beside failed runs' blanks
    return df


def campaign_metrics(campaign_dir: str | Path, *, tau: float = 600.0) -> pd.DataFrame:
    """``metrics_table`` of every run under ``campaign_dir`` (or of the run it is), in run-id
    order, reading one run at a time."""
    return by_run_id(metrics_table(iter_runs(campaign_dir), tau=tau))


def by_run_id(metrics: pd.DataFrame) -> pd.DataFrame:
    """Rows in ``load_campaign``'s order (run id; ties keep their order)."""
    return metrics.sort_values("run_id", kind="stable").reset_index(drop=True)


def summarise(metrics: pd.DataFrame, metric: str, *, by=("variant",),
              confidence: float = 0.95, clip: bool = True) -> pd.DataFrame:
    """Per group: ``n`` runs, ``mean``, ``std`` and the t-interval ``ci_low`` / ``ci_high``
    of ``metric`` over its successful runs, clipped to ``metric_domain`` unless ``clip`` is
    False (``clipped`` says whether a bound moved); groups in sorted order."""
    if metric not in metrics.columns:
        raise ConfigError(f"unknown metric '{metric}'", field="metric",
                          hint=suggest(metric, [c for c in metrics.columns if c not in ID_COLUMNS]))
    ok = metrics[metrics["status"] == "ok"]
    rows = []
    for key, group in ok.groupby(list(by), sort=True):
        values = group[metric].to_numpy(float)
        mean, low, high = t_interval(values, confidence)
        clipped = False
        if clip:
            low, high, clipped = clip_interval(metric, low, high)
        key = key if isinstance(key, tuple) else (key,)
        finite = values[np.isfinite(values)]
        rows.append({**dict(zip(by, key)), "metric": metric, "n": int(finite.size), "mean": mean,
                     "std": float(finite.std(ddof=1)) if finite.size > 1 else np.nan,
                     "ci_low": low, "ci_high": high, "clipped": clipped,
                     "interval": "t over runs, clipped to the domain" if clip else "t over runs"})
    return pd.DataFrame(rows, columns=[*by, "metric", "n", "mean", "std", "ci_low", "ci_high",
                                       "clipped", "interval"])


def baseline_variant(metrics: pd.DataFrame, baseline: str) -> str:
    """The variant named by ``baseline``: a variant label, or a policy with one variant."""
    variants = sorted(set(metrics["variant"].dropna()))
    if baseline in variants:
        return baseline
    matching = sorted(set(metrics.loc[metrics["policy"] == baseline, "variant"]))
    if len(matching) == 1:
        return matching[0]
    if len(matching) > 1:
        raise ConfigError(f"baseline policy '{baseline}' has several variants", field="baseline",
                          hint=f"choose one of {', '.join(matching)}")
    raise ConfigError(f"unknown baseline '{baseline}'", field="baseline",
                      hint=suggest(baseline, variants + sorted(set(metrics["policy"].dropna()))))


def match_columns(metrics: pd.DataFrame) -> list[str]:
    """Columns pairing a run with its baseline run: same workload (part) and seed."""
    cols = []
    for c in ("workload", "part", "seed"):
        if c in metrics.columns and metrics[c].astype(str).nunique() > 1:
            cols.append(c)
    return cols


def normalise(metrics: pd.DataFrame, metric: str, baseline: str, *,
              match: list[str] | None = None) -> pd.DataFrame:
    """``metrics`` (successful runs) with ``<metric>_norm`` = value / the baseline's value on
    the run with the same ``match`` columns (default ``match_columns``); NaN without one."""
    base = baseline_variant(metrics, baseline)
    match = match_columns(metrics) if match is None else list(match)
    ok = metrics[metrics["status"] == "ok"].copy()
    ref = ok[ok["variant"] == base]
    if match:
        keys = ok[match].astype(str).agg("\x1f".join, axis=1)
        ref_keys = ref[match].astype(str).agg("\x1f".join, axis=1)
        lookup = dict(zip(ref_keys, ref[metric].astype(float)))
        denom = keys.map(lookup).astype(float)
    else:
        denom = pd.Series(float(ref[metric].mean()) if len(ref) else np.nan, index=ok.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok[f"{metric}_norm"] = np.where(denom > 0, ok[metric].astype(float) / denom, np.nan)
    return ok


def pair_labels(metrics: pd.DataFrame, match: list[str]) -> tuple[pd.Series, str]:
    """(label per row, axis title) naming what pairs a run with its baseline run, for people:
    ``part 3/16``, ``seed 2``; the workload only when the seeds / parts do not already
    determine it (a campaign generates one workload per seed: its file hash says nothing)."""
    shown = [c for c in match if c != "workload"]
    if "workload" in match:
        others = metrics[shown].astype(str).agg("\x1f".join, axis=1) if shown else None
        determined = others is not None and (
            metrics.assign(_k=others).groupby("_k")["workload"].nunique() <= 1).all()
        if not determined:
            shown.append("workload")
    if not shown:
        return pd.Series("all", index=metrics.index), ""

    def name(col: str, value) -> str:
        if col == "workload":
            return Path(str(value).split(";")[0]).stem
        return f"{col} {value}"

    labels = metrics[shown].apply(lambda r: ", ".join(name(c, r[c]) for c in shown), axis=1)
    return labels.astype(str), " / ".join("workload" if c == "workload" else c for c in shown)
