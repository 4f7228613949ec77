"""The HTML report of a campaign or a single run: ``index.html`` (tables and PNG figures
embedded as base64, so it opens offline) and ``metrics.csv`` (one row per run), plus the
figures as files under ``figures/`` for reuse in papers."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mrsched.analysis.campaign import (
    baseline_variant, bootstrap_interval, by_run_id, iter_runs, match_columns,
    metrics_table, normalise, pair_labels, summarise,
)
from mrsched.analysis.gantt import AGGREGATE_ROWS, plot_gantt
from mrsched.analysis.metrics import add_job_metrics, resource_usage, usage_over_time
from mrsched.analysis.runs import Run, load_run
from mrsched.analysis.tables import Interval, frame_html, summary_html
from mrsched.errors import ConfigError
from mrsched.atomic import write_atomic

SUMMARY_METRICS = ("mean_waiting_time", "mean_turnaround_time", "mean_slowdown",
                   "mean_bounded_slowdown", "max_waiting_time", "max_bounded_slowdown",
                   "makespan", "utilisation_nodes", "utilisation_burst_buffer", "utilisation_gpus",
                   "n_rejected", "n_killed")
# metric in a single run's job table -> the run metric its bootstrap interval is about
_PER_JOB = {"mean_waiting_time": "waiting_time", "mean_turnaround_time": "turnaround_time",
            "mean_slowdown": "slowdown", "mean_bounded_slowdown": "bounded_slowdown"}
_LOWER_IS_BETTER = ("mean_waiting_time", "mean_turnaround_time", "mean_bounded_slowdown",
                    "max_bounded_slowdown", "makespan")
_RUN_COLUMNS = ("run_id", "variant", "workload", "seed", "status", "n_jobs", "n_rejected",
                "n_killed", "makespan", "mean_waiting_time", "median_waiting_time",
                "max_waiting_time", "mean_bounded_slowdown", "max_bounded_slowdown",
                "utilisation_nodes", "utilisation_burst_buffer", "utilisation_gpus",
                "seed002_utilisation", "packing_factor", "fragmentation", "spread", "window_halvings",
                # seed 004 on bandwidth trees (analysis/ioknowledge.py): contention and knowledge
                "goodput", "computing_fraction_min", "runtime_accuracy_mean", "io_rate_accuracy_mean",
                "sysio_accuracy_mean_et", "burst_sensitivity_5min_et", "burst_precision_5min_et",
                "cpu_time", "peak_memory_mb")

_CSS = """body{font-family:sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}
td,th{border:1px solid #bbb;padding:2px 6px;text-align:left}
th{background:#eee;vertical-align:bottom}.n{text-align:right}
td.n{white-space:nowrap;font-variant-numeric:tabular-nums}.wide{overflow-x:auto}
.ci{color:#555;font-size:0.85em}
img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}
.failed{color:#a00}.note{color:#555;font-size:0.9em}"""


class _Figures:
    """Collects PNGs: written under ``figures/`` and embedded in the page."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.names: list[str] = []

    def add(self, name: str, fig, caption: str) -> str:
        from mrsched.analysis.plots import png_bytes

        data = png_bytes(fig)
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomic(self.directory / f"{name}.png", data)
        self.names.append(name)
        b64 = base64.b64encode(data).decode("ascii")
        return (f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{b64}">'
                f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "" if np.isnan(v) else str(v)
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.4e}"
    return str(v)


def _table(df: pd.DataFrame) -> str:
    return frame_html(df)


def _short_workloads(metrics: pd.DataFrame) -> pd.Series:
    """The workload column of the per-run table: its campaign name, else its file name (the
    full paths stay in metrics.csv)."""
    names = metrics["workload_name"].fillna("").astype(str) if "workload_name" in metrics else None
    files = metrics["workload"].fillna("").astype(str).map(
        lambda v: ";".join(Path(p).name for p in v.split(";") if p))
    return names.where(names != "", files) if names is not None else files


def _read_runs(directory: Path, tau: float, light: list[Run],
               per_job: dict[str, pd.DataFrame]) -> Iterator[Run]:
    """The runs of ``directory`` one at a time (for ``metrics_table``), keeping of each what
    the rest of the report needs: the run, whose tables ``iter_runs`` drops (``light``; a
    Gantt chart reads its run again), and its executed jobs' per-job metrics (``per_job``,
    by run id): a campaign of million-job runs never holds more than one run's tables."""
    for run in iter_runs(directory):
        yield run
        if run.status == "ok" and run.jobs is not None:
            jobs = add_job_metrics(run.jobs, tau=tau)
            per_job[run.run_id] = jobs.loc[~jobs["rejected"], list(_PER_JOB.values())].reset_index(drop=True)
        light.append(run)


def _jobs_by_variant(runs: list[Run], per_job: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Executed jobs' per-job metrics of every successful run, pooled per variant."""
    pooled: dict[str, list[pd.DataFrame]] = {}
    for run in runs:
        if run.run_id in per_job:
            pooled.setdefault(run.variant, []).append(per_job[run.run_id])
    return {v: pd.concat(pooled[v], ignore_index=True) for v in sorted(pooled)}


def _summary_table(metrics: pd.DataFrame, runs: list[Run], per_job: dict[str, pd.DataFrame],
                   by: list[str]) -> tuple[str, list[str]]:
    """Per group (``by``): the HTML summary (mean, and below it the interval, per metric) and
    its notes; t over runs clipped to the metric's domain (``‡`` where a bound was), or a
    bootstrap over jobs when a group has a single run (``*``)."""
    ok = metrics[metrics["status"] == "ok"]
    run_of = {r.run_id: r for r in runs}
    rows: dict[tuple, dict] = {}
    for key, group in ok.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rows[key] = {**dict(zip(by, key)), "runs": int(len(group)),
                     "_single": run_of.get(group["run_id"].iloc[0]) if len(group) == 1 else None}
    shown, any_clipped, min_runs = [], False, min((r["runs"] for r in rows.values()), default=0)
    for metric in SUMMARY_METRICS:
        if metric not in ok.columns or not np.isfinite(ok[metric].astype(float)).any():
            continue
        shown.append(metric)
        for rec in summarise(ok, metric, by=tuple(by)).to_dict("records"):
            row = rows[tuple(rec[c] for c in by)]
            cell = Interval(rec["mean"], rec["ci_low"], rec["ci_high"], "‡" if rec["clipped"] else "")
            any_clipped |= bool(rec["clipped"])
            single = row["_single"]
            if single is not None and single.run_id in per_job and metric in _PER_JOB:
                cell = Interval(*bootstrap_interval(per_job[single.run_id][_PER_JOB[metric]], seed=0),
                                mark="*")
            row[metric] = cell
    notes = ["Each cell: the mean, and below it its 95% interval: a Student-t interval of the "
             "mean over runs (seeds / workload parts), clipped to the metric's domain (times "
             "and counts >= 0, slowdowns >= 1, utilisations 0-100%)."]
    if any_clipped:
        notes.append("‡: the t-interval crossed the domain and was clipped there."
                     + (f" With {min_runs} runs per policy, t = {stats.t.ppf(0.975, min_runs - 1):.1f}: "
                        "such an interval says the runs disagree, run more seeds to narrow it."
                        if 1 < min_runs < 5 else ""))
    if any(r["_single"] is not None for r in rows.values()):
        notes.append("*: a single run, so a 95% percentile bootstrap of the mean over its jobs "
                     "(2000 resamples, seed 0; it stays inside the jobs' range).")
    return summary_html(list(rows.values()), shown, ["variant", *by[1:], "runs"]), notes


def group_columns(metrics: pd.DataFrame) -> list[str]:
    """Summary groups: the policy variant, split by platform and workload names when a
    campaign has several (parts and seeds of one workload are pooled as samples)."""
    by = ["variant"]
    for col in ("platform_name", "workload_name"):
        if col in metrics.columns and metrics[col].astype(str).nunique() > 1:
            by.append(col)
    return by


def _run_figures(run: Run, figures: _Figures, index: int) -> str:
    """The Gantt chart and utilisation plot of ``run``, its tables read again here."""
    run = load_run(run.path)
    parts = [f"<h3>{html.escape(run.run_id)} — {html.escape(run.variant)}</h3>"]
    parts.append(figures.add(f"gantt_{index:03d}", plot_gantt(run.phases, title=f"Gantt: {run.run_id}"),
                             f"Gantt chart of run {run.run_id} (executed Batsim jobs over "
                             "resource ids; I/O phases hatched, or lighter on dense charts; "
                             f"beyond {AGGREGATE_ROWS:,} executed rows, the share of each "
                             "time x resource cell in use)."))
    from mrsched.analysis.cpugpu import run_cpugpu_series

    series = run_cpugpu_series(run)   # per-core CPU+GPU platforms: nodes, cores and GPUs per node
    for resource, capacity in run.capacities.items() if not series else ():
        if resource != "nodes" and resource not in run.jobs.columns:
            continue
        step = usage_over_time(resource_usage(run.jobs, resource, capacities=run.capacities,
                                              phases=run.phases))
        series[resource] = step.assign(fraction=step["used"] / float(capacity))
    if series:
        from mrsched.analysis.plots import utilisation_plot

        parts.append(figures.add(f"utilisation_{index:03d}",
                                 utilisation_plot(series, title=f"utilisation: {run.run_id}"),
                                 f"Fraction of {', '.join(series)} in use over time."))
    return "\n".join(parts)


def gantt_selection(runs: list[Run], max_gantt: int) -> list[Run]:
    """The runs drawn as Gantt charts: none when ``max_gantt`` is 0, else the first run of
    every policy variant (so the best policy is never left without one, whatever their
    number), then the other runs in order until ``max_gantt`` charts; grouped by variant."""
    drawable = [r for r in runs if r.status == "ok"]      # a run loads ok only with its tables
    if max_gantt <= 0:
        return []
    first: dict[str, Run] = {}
    for run in drawable:
        first.setdefault(run.variant, run)
    chosen = set(id(r) for r in first.values())
    room = max_gantt - len(chosen)
    for run in drawable:
        if room <= 0:
            break
        if id(run) not in chosen:
            chosen.add(id(run))
            room -= 1
    order = {v: i for i, v in enumerate(sorted(first))}
    return sorted((r for r in drawable if id(r) in chosen), key=lambda r: (order[r.variant], r.run_id))


def write_report(dir: str | Path, out: str | Path | None = None, baseline: str | None = None,
                 *, tau: float = 600.0, max_gantt: int = 6, tail_n: int = 50) -> Path:
    """Write ``index.html`` and ``metrics.csv`` for the campaign or run in ``dir`` into
    ``out`` (default ``dir/report``); return the path of ``index.html``. ``baseline``
    (policy or variant) normalises the comparison figures; default: the first variant.
    Gantt charts: ``gantt_selection`` (one per policy at least, unless ``max_gantt`` is 0)."""
    from mrsched.analysis import plots

    directory = Path(dir)
    runs: list[Run] = []
    per_job: dict[str, pd.DataFrame] = {}
    metrics = by_run_id(metrics_table(_read_runs(directory, tau, runs, per_job), tau=tau))
    runs.sort(key=lambda r: r.run_id)
    out_dir = Path(out) if out is not None else directory / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "metrics.csv", metrics.to_csv(index=False))
    figures = _Figures(out_dir / "figures")

    ok = metrics[metrics["status"] == "ok"]
    variants = sorted(ok["variant"].unique())
    body: list[str] = [f"<h1>mrsched report: {html.escape(str(directory))}</h1>",
                       f"<p>{len(runs)} run(s), {len(ok)} ok, {len(runs) - len(ok)} failed; "
                       f"bounded slowdown threshold tau = {_fmt(float(tau))} s. Statistics are over "
                       "executed jobs; rejected jobs are only counted (Batsim's own mean_* in "
                       "_schedule.csv include them).</p>"]

    failed = metrics[metrics["status"] != "ok"]
    if len(failed):
        body.append('<h2 class="failed">Failed runs</h2>')
        body.append(_table(failed[["run_id", "policy", "status", "error"]]))
    warned = metrics[metrics["warnings"].astype(str) != ""]
    if len(warned):
        body.append("<h2>Warnings</h2>")
        body.append(_table(warned[["run_id", "warnings"]]))

    base = None
    if variants:
        base = baseline_variant(ok, baseline) if baseline is not None else variants[0]
        by = group_columns(ok)
        summary, notes = _summary_table(metrics, runs, per_job, by)
        body.append("<h2>Summary per policy</h2>")
        body.append(summary)
        body.extend(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    body.append("<h2>Metrics per run</h2>")
    cols = [c for c in _RUN_COLUMNS if c in metrics.columns]
    per_run = metrics[cols].assign(workload=_short_workloads(metrics)) if "workload" in cols else metrics[cols]
    body.append(_table(per_run.dropna(axis=1, how="all")))
    body.append('<p class="note">All columns are in metrics.csv.</p>')

    if variants:
        jobs_by_variant = _jobs_by_variant(runs, per_job)
        body.append("<h2>Comparison</h2>")
        for metric in ("mean_waiting_time", "mean_bounded_slowdown"):
            summ = summarise(ok, metric, by=tuple(by))
            summ["group"] = summ[by].astype(str).agg(" / ".join, axis=1)
            groups = ok[by].astype(str).agg(" / ".join, axis=1)
            points = {g: ok.loc[groups == g, metric].to_numpy(float) for g in summ["group"]}
            body.append(figures.add(
                f"ci_{metric}", plots.ci_plot(summ, label="group", points=points),
                f"{metric}: bars are means over runs, dots the runs; whiskers the 95% t-interval "
                f"clipped to the metric's domain, or, below {plots.MIN_RUNS_FOR_T} runs, the "
                "runs' range (the table keeps the t-interval); no whisker: one run; a whisker "
                "cut by the axis ends in an arrow with its bound."))
        for metric in ("waiting_time", "bounded_slowdown"):
            body.append(figures.add(f"boxen_{metric}", plots.boxen_plot(jobs_by_variant, metric),
                                    f"Distribution of {metric} over all executed jobs, per policy."))
            body.append(figures.add(f"tail_{metric}", plots.tail_plot(jobs_by_variant, metric, n=tail_n),
                                    f"The {tail_n} worst jobs per policy by {metric}."))
        if len(variants) > 1:
            match = match_columns(ok)
            for metric in ("mean_waiting_time", "mean_bounded_slowdown"):
                norm = normalise(ok, metric, base, match=match)
                labels, pair = pair_labels(norm, match)
                norm = norm.assign(_pair=labels)
                pair = pair or "run"
                body.append(figures.add(f"normalised_{metric}",
                                        plots.normalised_plot(norm, metric, base, by="_pair",
                                                              xlabel=pair),
                                        f"{metric} per {pair}, divided by {base}'s on the same {pair}."))
            kcols = [c for c in ("mean_waiting_time", "mean_bounded_slowdown", "mean_turnaround_time",
                                 "makespan", "utilisation_nodes", "utilisation_burst_buffer",
                                 "utilisation_gpus")
                     if c in ok.columns and np.isfinite(ok[c].astype(float)).all()]
            if len(kcols) >= 3:
                means = ok.groupby("variant")[kcols].mean().sort_index()
                scores = plots.kiviat_scores(means, _LOWER_IS_BETTER)
                body.append(figures.add("kiviat", plots.kiviat_plot(scores),
                                        "Kiviat chart: per metric, best/value (lower is better) or "
                                        "value/best (utilisation); 1 = best policy."))
        body.append(f'<p class="note">Baseline for normalisation: {html.escape(str(base))}'
                    f'{"" if baseline is not None else " (first policy; choose with --baseline)"}.</p>')

    gantt_runs = gantt_selection(runs, max_gantt)
    if gantt_runs:
        body.append("<h2>Schedules</h2>")
        drawable = sum(1 for r in runs if r.status == "ok")
        omitted = drawable - len(gantt_runs)
        if omitted > 0:
            body.append(f'<p class="note">{len(gantt_runs)} runs shown: the first run of every '
                        f"policy, then further runs up to --max-gantt {max_gantt}; {omitted} "
                        "omitted.</p>")
        for i, run in enumerate(gantt_runs):
            body.append(_run_figures(run, figures, i))

    page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mrsched report</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    index = out_dir / "index.html"
    write_atomic(index, page)
    return index


def check_tau(tau: float) -> float:
    """A CLI-level check of ``--tau`` (seconds, > 0)."""
    if not (np.isfinite(tau) and tau > 0):
        raise ConfigError(f"--tau must be a positive number of seconds, got {tau}", field="tau")
    return float(tau)
