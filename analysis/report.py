"""The HTML report of a campaign or a single run, laid out as the figure set of a paper
(issue 41 item 7): ``index.html`` (tables and PNG figures embedded, so that it opens
offline), ``metrics.csv`` (one row per run), ``summary.csv`` and ``summary.tex`` (the
per-policy table) and every figure as PNG, SVG and PDF under ``figures/``.

The page: the Setup (``setup.setup_rows``), the summary per policy, rejected jobs by kind,
the metrics per run, the comparison figures and one schedule figure per chosen run
(``schedule.schedule_figure``). Policies keep the campaign's order everywhere; every table
and figure has one kind of interval or whisker, named in its caption (``plots.whisker_kind``:
t-intervals from ``plots.MIN_RUNS_FOR_T`` runs per policy, the runs' range below, a bootstrap
over jobs when each policy has a single run).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mrsched.analysis.campaign import (
    baseline_variant, bootstrap_interval, by_run_id, iter_runs, match_columns, metrics_table,
    normalise, pair_labels, summarise,
)
from mrsched.analysis.gantt import AGGREGATE_ROWS
from mrsched.analysis.metrics import add_job_metrics
from mrsched.analysis.runs import Run, load_run
from mrsched.analysis.tables import (
    CSV_FLOAT, Interval, frame_html, header, summary_csv, summary_html, summary_latex,
)
from mrsched.atomic import write_atomic
from mrsched.errors import ConfigError

SUMMARY_METRICS = ("mean_waiting_time", "mean_turnaround_time", "mean_slowdown",
                   "mean_bounded_slowdown", "max_waiting_time", "max_bounded_slowdown",
                   "makespan", "utilisation_nodes", "utilisation_burst_buffer", "utilisation_gpus",
                   "utilisation_io_bandwidth", "energy_j", "mean_power_w", "peak_power_w",
                   "edp_js", "sleep_saved_j", "n_rejected", "n_killed")
# metric in a single run's job table -> the run metric its bootstrap interval is about
_PER_JOB = {"mean_waiting_time": "waiting_time", "mean_turnaround_time": "turnaround_time",
            "mean_slowdown": "slowdown", "mean_bounded_slowdown": "bounded_slowdown"}
_LOWER_IS_BETTER = ("mean_waiting_time", "mean_turnaround_time", "mean_bounded_slowdown",
                    "max_bounded_slowdown", "makespan")
#: the per-run tables' columns, by theme, in order (those with a value are shown)
RUN_TABLES = (
    ("Schedule", ("n_jobs", "n_rejected", "n_killed", "makespan", "mean_waiting_time",
                  "median_waiting_time", "max_waiting_time", "mean_bounded_slowdown",
                  "max_bounded_slowdown")),
    ("Resources", ("utilisation_nodes", "utilisation_burst_buffer", "utilisation_gpus",
                   "utilisation_io_bandwidth", "seed002_utilisation", "packing_factor",
                   "fragmentation", "spread", "window_halvings")),
    ("Energy and power", ("energy_j", "mean_power_w", "peak_power_w", "edp_js",
                          "energy_per_job_j", "energy_measured", "sleep_saved_j")),
    ("I/O on the bandwidth tree (seed 004)", (
        "goodput", "computing_fraction_min", "runtime_accuracy_mean", "io_rate_accuracy_mean",
        "sysio_accuracy_mean_et", "burst_sensitivity_5min_et", "burst_precision_5min_et")),
    ("What the runs cost", ("wall_time", "cpu_time", "peak_memory_mb")),
)
#: intervals of the summary table, by ``plots.whisker_kind``
_INTERVAL_TEXT = {
    "t": "its 95% Student-t interval over the runs (seeds / workload parts), clipped to the "
         "metric's domain (times and counts >= 0, slowdowns >= 1, utilisations 0-100%)",
    "range": "the range (lowest - highest) of the runs",
    "none": "a 95% percentile bootstrap interval of the mean over the run's jobs (2,000 "
            "resamples, seed 0), for the per-job means only",
}

_CSS = """body{font-family:sans-serif;margin:2em auto;max-width:1200px;padding:0 1.5em;
line-height:1.35;color:#222}
h1{margin-bottom:0.2em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
nav{font-size:0.9em;margin:0.5em 0 1em}nav a{margin-right:1em}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 0.4em}
td,th{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#eee;vertical-align:bottom}.n{text-align:right}
td.n{white-space:nowrap;font-variant-numeric:tabular-nums}td.id{white-space:nowrap}
.wide{overflow-x:auto}
table.setup{font-size:0.9em;width:100%}table.setup th{width:8em;vertical-align:top;text-align:left}
.ci{color:#555;font-size:0.85em}
figure{margin:1em 0 1.5em}figcaption{font-size:0.9em;max-width:60em}
img{max-width:100%;border:1px solid #ddd}
.files{font-size:0.85em}.failed{color:#a00}.note,.caption{color:#444;font-size:0.9em}
code{font-size:0.95em}
@page{margin:1.2cm}
@media print{body{max-width:none;margin:0;padding:0;font-size:9pt}nav,.files{display:none}
.wide{overflow:visible}table{font-size:6.3pt}td,th{padding:1px 2px}
img{width:auto!important;max-width:100%}figure,table,tr{page-break-inside:avoid}
h2,h3{page-break-after:avoid}}"""


class _Figures:
    """Writes every figure as PNG, SVG and PDF under ``figures/`` and embeds the PNG."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.names: list[str] = []

    def add(self, name: str, fig, caption: str) -> str:
        from mrsched.analysis.plots import FIGURE_FORMATS, figure_bytes

        width = round(float(fig.get_size_inches()[0]) * 100)   # CSS px: 100 per inch, as drawn
        data = figure_bytes(fig)
        self.directory.mkdir(parents=True, exist_ok=True)
        for fmt in FIGURE_FORMATS:
            write_atomic(self.directory / f"{name}.{fmt}", data[fmt])
        self.names.append(name)
        b64 = base64.b64encode(data["png"]).decode("ascii")
        links = " · ".join(f'<a href="figures/{html.escape(name)}.{fmt}">{fmt.upper()}</a>'
                           for fmt in FIGURE_FORMATS)
        return (f'<figure><img alt="{html.escape(name)}" style="width:{width}px" '
                f'src="data:image/png;base64,{b64}">'
                f"<figcaption>{html.escape(caption)} <span class=\"files\">[{links}]</span>"
                "</figcaption></figure>")


def _read_runs(directory: Path, tau: float, light: list[Run],
               per_job: dict[str, pd.DataFrame]) -> Iterator[Run]:
    """The runs of ``directory`` one at a time (for ``metrics_table``), keeping of each what
    the rest of the report needs: the run, whose tables ``iter_runs`` drops (``light``; a
    schedule figure reads its run again), and its executed jobs' per-job metrics
    (``per_job``, by run id): a campaign of million-job runs never holds more than one
    run's tables."""
    for run in iter_runs(directory):
        yield run
        if run.status == "ok" and run.jobs is not None:
            jobs = add_job_metrics(run.jobs, tau=tau)
            per_job[run.run_id] = jobs.loc[~jobs["rejected"], list(_PER_JOB.values())].reset_index(drop=True)
        light.append(run)


def _jobs_by_variant(runs: list[Run], per_job: dict[str, pd.DataFrame],
                     order: list[str]) -> dict[str, pd.DataFrame]:
    """Executed jobs' per-job metrics of every successful run, pooled per variant, in
    ``order``."""
    pooled: dict[str, list[pd.DataFrame]] = {}
    for run in runs:
        if run.run_id in per_job:
            pooled.setdefault(run.variant, []).append(per_job[run.run_id])
    return {v: pd.concat(pooled[v], ignore_index=True) for v in order if v in pooled}


def group_columns(metrics: pd.DataFrame) -> list[str]:
    """Summary groups: the policy variant, split by platform and workload names when a
    campaign has several (parts and seeds of one workload are pooled as samples)."""
    by = ["variant"]
    for col in ("platform_name", "workload_name"):
        if col in metrics.columns and metrics[col].astype(str).nunique() > 1:
            by.append(col)
    return by


def _ordered(df: pd.DataFrame, order: list[str], by: list[str]) -> pd.DataFrame:
    """Rows by policy in ``order``, then the other ``by`` columns in natural order."""
    from mrsched.analysis.plots import _natural

    rank = {v: i for i, v in enumerate(order)}
    keys = df.apply(lambda r: (rank.get(str(r["variant"]), len(rank)), str(r["variant"]),
                               *[_natural(str(r[c])) for c in by[1:]]), axis=1)
    return df.assign(_k=keys).sort_values("_k", kind="stable").drop(columns="_k") if len(df) else df


def summary_rows(metrics: pd.DataFrame, runs: list[Run], per_job: dict[str, pd.DataFrame],
                 by: list[str], order: list[str]) -> tuple[list[dict], list[str], str, list[str]]:
    """The per-policy summary: (rows with an ``Interval`` per metric, metrics shown, interval
    kind, notes). One kind for the whole table (``plots.whisker_kind``); a policy of a single
    run beside policies of several gets no interval."""
    from mrsched.analysis.plots import MIN_RUNS_FOR_T, whisker_kind

    ok = metrics[metrics["status"] == "ok"]
    run_of = {r.run_id: r for r in runs}
    rows: dict[tuple, dict] = {}
    groups = {}
    for key, group in ok.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        groups[key] = group
        rows[key] = {**dict(zip(by, key)), "runs": int(len(group))}
    kind = whisker_kind([r["runs"] for r in rows.values()])
    shown, any_clipped = [], False
    for metric in SUMMARY_METRICS:
        if metric not in ok.columns or not np.isfinite(ok[metric].astype(float)).any():
            continue
        shown.append(metric)
        for rec in summarise(ok, metric, by=tuple(by)).to_dict("records"):
            key = tuple(rec[c] for c in by)
            row, values = rows[key], groups[key][metric].to_numpy(float)
            values = values[np.isfinite(values)]
            cell = Interval(rec["mean"])
            if kind == "t" and values.size > 1:
                cell = Interval(rec["mean"], rec["ci_low"], rec["ci_high"], "‡" if rec["clipped"] else "")
                any_clipped |= bool(rec["clipped"])
            elif kind == "range" and values.size > 1:
                cell = Interval(rec["mean"], float(values.min()), float(values.max()))
            elif kind == "none" and metric in _PER_JOB:
                single = run_of.get(groups[key]["run_id"].iloc[0])
                if single is not None and single.run_id in per_job:
                    cell = Interval(*bootstrap_interval(per_job[single.run_id][_PER_JOB[metric]], seed=0))
            row[metric] = cell
    ordered = _ordered(pd.DataFrame([{**r, "_key": k} for k, r in rows.items()]), order, by) \
        if rows else pd.DataFrame()
    out_rows = [rows[k] for k in ordered["_key"]] if len(ordered) else []
    runs_per = sorted({r["runs"] for r in out_rows})
    notes = [f"Each cell: the mean over the runs, and below it {_INTERVAL_TEXT[kind]}."]
    if kind == "range":
        t = stats.t.ppf(0.975, max(2, min(n for n in runs_per if n > 1)) - 1)
        notes.append(f"With {', '.join(map(str, runs_per))} runs per policy a 95% t-interval "
                     f"would be {t:.1f} standard errors wide on each side: the range of the runs "
                     f"is shown instead; {MIN_RUNS_FOR_T} seeds or more give t-intervals.")
    if any_clipped:
        notes.append("‡: the t-interval crossed the domain and was clipped there.")
    if kind != "none" and 1 in runs_per:
        notes.append("A policy with a single run has no interval.")
    notes.append("Numbers: thousands separators; per column about 3 significant digits of its "
                 "largest value (0 decimals from 100 up, 1 from 10, 2 from 1, 3 below); full "
                 "precision in summary.csv and metrics.csv.")
    return out_rows, shown, kind, notes


def gantt_selection(runs: list[Run], max_gantt: int, order: list[str] | None = None) -> list[Run]:
    """The runs drawn as schedule figures: none when ``max_gantt`` is 0, else the first run of
    every policy variant (so the best policy is never left without one, whatever their
    number), then the other runs in order until ``max_gantt``; grouped by variant in
    ``order`` (default: name order)."""
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
    names = [v for v in (order or []) if v in first] + sorted(v for v in first if v not in (order or []))
    rank = {v: i for i, v in enumerate(names)}
    return sorted((r for r in drawable if id(r) in chosen), key=lambda r: (rank[r.variant], r.run_id))


def _schedule_axes(metrics: pd.DataFrame, chosen: list[Run]) -> dict[str, object]:
    """One time axis per workload file among the chosen runs (0 = its first submission, the
    end = the latest finish of its runs shown), so that the policies' schedules of one
    workload compare at a glance; by run id. Spans from ``metrics`` (``window_start``,
    ``window_end``: the chosen runs' tables are not loaded yet)."""
    from mrsched.analysis.timeaxis import time_axis

    window = metrics.set_index("run_id")[["window_start", "window_end"]] \
        if {"window_start", "window_end"} <= set(metrics.columns) else None
    spans: dict[str, list[tuple[float, float]]] = {}
    key_of = {}
    for run in chosen:
        if window is None or run.run_id not in window.index:
            continue
        a, b = (float(v) for v in window.loc[run.run_id])
        if not (np.isfinite(a) and np.isfinite(b)):
            continue
        key = str(run.manifest.get("workload") or run.run_id)
        key_of[run.run_id] = key
        spans.setdefault(key, []).append((a, b))
    axes = {k: time_axis(min(a for a, _ in v), max(b for _, b in v)) for k, v in spans.items()}
    return {rid: axes[k] for rid, k in key_of.items()}


def _run_figure(run: Run, axis, figures: _Figures, index: int) -> str:
    """A run's schedule figure (its tables read again here) and caption."""
    from mrsched.analysis.schedule import schedule_figure

    seed = run.manifest.get("seed")
    title = f"{run.variant}" + (f", seed {seed}" if seed is not None else "")
    run = load_run(run.path)
    if axis is None:
        from mrsched.analysis.schedule import run_time_span
        from mrsched.analysis.timeaxis import time_axis

        axis = time_axis(*run_time_span(run))
    fig, notes = schedule_figure(run, axis)
    nodes = int(run.capacities.get("nodes") or 0)
    what = {"gantt": f"Gantt chart: executed Batsim jobs over the machine's {nodes:,} compute "
                     "resources (the y axis is the whole machine), touching jobs in different colours"
            if nodes else "Gantt chart: executed Batsim jobs over their resource ids"}
    if notes.get("gantt"):
        what["gantt"] = (f"Gantt chart over the machine's {nodes:,} compute resources, "
                         f"{notes['gantt']} (beyond {AGGREGATE_ROWS:,} rows, rectangles would be "
                         "sub-pixel)")
    elif run.jobs is not None and len(run.jobs) <= 80:
        what["gantt"] += ", job ids where they fit"
    if "phase" in run.phases.columns and (run.phases["phase"] != "").any():
        what["gantt"] += "; I/O phases hatched (lighter on dense charts)"
    if "bb" in notes:
        what["bb"] = (f"burst buffer held: {notes['bb']} (the outputs do not record which storage "
                      "node held them); dashed: the capacity")
    what["queue"] = "jobs submitted and not yet started" + (f" ({notes['queue']})" if notes.get("queue") else "")
    if "resources" in notes:
        what["util"] = f"share of {notes['resources']} in use" + (f" ({notes['util']})" if notes.get("util") else "")
    if "power" in notes:
        what["power"] = f"the platform's power, {notes['power']}"
    panels = "; ".join(f"({letter}) {what[p]}" for letter, p in zip("abcde", notes["panels"]))
    caption = (f"Schedule of {title} (run {run.run_id}): {panels}. One time axis for all panels, "
               f"{axis.label}; the runs of one workload share it.")
    return (f'<h3>{html.escape(run.run_id)} — {html.escape(run.variant)}</h3>'
            + figures.add(f"schedule_{index:03d}", fig, caption))


def _rejections_html(runs: list[Run]) -> str:
    """Rejected jobs over every run, by kind of reason: jobs, runs and policies, one example."""
    merged: dict[str, dict] = {}
    for run in runs:
        for k in run.rejected:
            entry = merged.setdefault(k["kind"], {"jobs": 0, "runs": 0, "policies": {}, "example": ""})
            n = int(k.get("count") or 0)
            entry["jobs"] += n
            entry["runs"] += 1
            entry["policies"][run.variant] = entry["policies"].get(run.variant, 0) + n
            if not entry["example"]:
                job = f"job {k['job']} of " if k.get("job") else ""
                entry["example"] = f"{job}{run.run_id}: {k.get('example', '')}"
    if not merged:
        return ""
    frame = pd.DataFrame([{"Kind of reason": kind, "Jobs": e["jobs"], "Runs": e["runs"],
                           "Policies": ", ".join(f"{p} ({n:,})" for p, n in e["policies"].items()),
                           "Example": e["example"]}
                          for kind, e in sorted(merged.items(), key=lambda kv: (-kv[1]["jobs"], kv[0]))])
    return ("<h2 id=\"rejected\">Rejected jobs</h2>"
            + frame_html(frame)
            + '<p class="caption">Every policy rejects a job that can never run on the empty '
              "machine. A kind is the reason with its numbers named N, M, ... (the example "
              "gives them); Jobs and Runs count over all runs.</p>")


def _levels_html(runs: list[Run]) -> str:
    """``hierarchical`` runs' metrics per level (the manifest's ``levels``, summed per depth
    from ``out_hierarchy.csv``): instances, jobs routed and rejected, resource-seconds."""
    rows = [{"Run": run.run_id, "Policy": run.variant, "Depth": lv.get("depth"), "Instances": lv.get("instances"),
             "Jobs routed": lv.get("routed"), "Rejected": lv.get("rejected"),
             "Node-seconds": lv.get("node_seconds"), "Burst-buffer byte-seconds": lv.get("bb_byte_seconds")}
            for run in runs for lv in (run.manifest.get("levels") or []) if isinstance(lv, dict)]
    if not rows:
        return ""
    return ("<h2 id=\"levels\">Hierarchy levels</h2>" + frame_html(pd.DataFrame(rows))
            + '<p class="caption">Per depth of each <code>hierarchical</code> run: jobs routed to its '
              "instances and rejected by them, and what their jobs used (an instance counts its leaves' "
              "jobs); one row per instance in the run's <code>out_hierarchy.csv</code>.</p>")


def _run_keys(ok: pd.DataFrame) -> list[str]:
    """Columns naming a run in the per-run tables: the policy, the platform / workload / part
    when several, the seed when runs have one; the run id first when these do not tell the
    runs apart."""
    keys = ["variant"]
    for col in ("platform_name", "workload_name", "part"):
        if col in ok.columns and ok[col].fillna("").astype(str).nunique() > 1:
            keys.append(col)
    if "seed" in ok.columns and ok["seed"].notna().any():
        keys.append("seed")
    if len(ok) and ok[keys].astype(str).duplicated().any():
        keys.insert(0, "run_id")
    return keys


def _run_tables(ok: pd.DataFrame, order: list[str]) -> list[str]:
    """The per-run tables: the columns of ``RUN_TABLES`` that have a value, in that order, then
    the run id (its folder), cut into tables that fit the page, each repeating the columns
    naming the run; rows in policy order."""
    keys = _run_keys(ok)
    rows = _ordered(ok, order, ["variant", *[k for k in keys if k not in ("variant", "run_id")]])
    cols = [c for _, group in RUN_TABLES for c in group if c in rows.columns and rows[c].notna().any()]
    out = [frame_html(rows[keys + cols], keys=keys)]
    if "run_id" not in keys and len(rows) > 1:
        first = rows.iloc[0]
        named = ", ".join(f"{header(k).lower()} {first[k]}" for k in keys)
        out.append(f'<p class="caption">Each run\'s outputs are in <code>runs/RUN_ID/</code>, e.g. '
                   f"<code>{html.escape(str(first['run_id']))}</code> for {html.escape(named)}.</p>")
    return out


def write_report(dir: str | Path, out: str | Path | None = None, baseline: str | None = None,
                 *, tau: float = 600.0, max_gantt: int = 6, tail_n: int = 50) -> Path:
    """Write ``index.html``, ``metrics.csv``, ``summary.csv``, ``summary.tex`` and
    ``figures/`` for the campaign or run in ``dir`` into ``out`` (default ``dir/report``);
    return the path of ``index.html``. ``baseline`` (policy or variant) normalises the
    comparison figures; default: the campaign's first policy. Schedule figures:
    ``gantt_selection`` (one per policy at least, unless ``max_gantt`` is 0)."""
    from mrsched.analysis import plots
    from mrsched.analysis.setup import policy_order, read_campaign_file, setup_rows

    directory = Path(dir)
    runs: list[Run] = []
    per_job: dict[str, pd.DataFrame] = {}
    metrics = by_run_id(metrics_table(_read_runs(directory, tau, runs, per_job), tau=tau))
    runs.sort(key=lambda r: r.run_id)
    campaign = read_campaign_file(directory)
    order = policy_order(campaign, metrics["variant"].dropna())
    out_dir = Path(out) if out is not None else directory / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "metrics.csv", metrics.to_csv(index=False, float_format=CSV_FLOAT))
    figures = _Figures(out_dir / "figures")

    ok = metrics[metrics["status"] == "ok"]
    variants = [v for v in order if v in set(ok["variant"])]
    name = (campaign or {}).get("name") or (runs[0].run_id if len(runs) == 1 else directory.resolve().name)
    desc = (campaign or {}).get("description")
    body: list[str] = [f"<h1>{html.escape(str(name))}</h1>"]
    if desc:
        body.append(f"<p>{html.escape(str(desc))}</p>")
    sections = [("setup", "Setup"), ("summary", "Summary per policy"), ("rejected", "Rejected jobs"),
                ("levels", "Hierarchy levels"), ("runs", "Metrics per run"), ("comparison", "Comparison"), ("schedules", "Schedules"),
                ("files", "Files")]
    nav_at = len(body)
    body.append("<h2 id=\"setup\">Setup</h2><table class=\"setup\">"
                + "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>"
                          for k, v in setup_rows(directory, runs, campaign, order, tau=tau))
                + "</table>")

    failed = metrics[metrics["status"] != "ok"]
    if len(failed):
        # broken: a manifest unreadable, or outputs not the ones it records (cut, edited)
        title = "Failed or broken runs" if (failed["status"] == "broken").any() else "Failed runs"
        body.append(f'<h2 class="failed" id="failed">{title}</h2>')
        body.append(frame_html(failed[["run_id", "variant", "status", "error"]]))
        sections.insert(1, ("failed", title))
    warned = metrics[metrics["warnings"].astype(str) != ""]
    if len(warned):
        body.append("<h2 id=\"warnings\">Warnings</h2>")
        body.append(frame_html(warned[["run_id", "warnings"]]))
        sections.insert(1, ("warnings", "Warnings"))

    base = None
    by = group_columns(ok) if variants else ["variant"]
    if variants:
        base = baseline_variant(ok, baseline) if baseline is not None else variants[0]
        rows, shown, kind, notes = summary_rows(metrics, runs, per_job, by, order)
        keys = [*by, "runs"]
        body.append("<h2 id=\"summary\">Summary per policy</h2>")
        body.append(summary_html(rows, shown, keys))
        body.extend(f'<p class="caption">{html.escape(n)}</p>' for n in notes)
        body.append('<p class="files">Also as <a href="summary.csv">summary.csv</a> and '
                    '<a href="summary.tex">summary.tex</a> (LaTeX).</p>')
        write_atomic(out_dir / "summary.csv", summary_csv(rows, shown, keys, _INTERVAL_TEXT[kind]))
        write_atomic(out_dir / "summary.tex", summary_latex(rows, shown, keys, " ".join(notes[:2])))
    rejected = _rejections_html(runs)
    body.append(rejected)
    levels = _levels_html(runs)
    body.append(levels)

    if len(ok):
        body.append("<h2 id=\"runs\">Metrics per run</h2>")
        body.extend(_run_tables(ok, order))
        body.append('<p class="caption">Numbers as in the summary; every column at full precision '
                    'in <a href="metrics.csv">metrics.csv</a>.</p>')

    if variants:
        jobs_by_variant = _jobs_by_variant(runs, per_job, variants)
        body.append("<h2 id=\"comparison\">Comparison</h2>")
        for metric in ("mean_waiting_time", "mean_bounded_slowdown"):
            summ = summarise(ok, metric, by=tuple(by))
            summ["group"] = summ[by].astype(str).agg(" / ".join, axis=1)
            summ = _ordered(summ, order, by)
            groups = ok[by].astype(str).agg(" / ".join, axis=1)
            points = {g: ok.loc[groups == g, metric].to_numpy(float) for g in summ["group"]}
            whisker = plots.whisker_kind(summ["n"])
            what = {"t": "whiskers: the 95% t-interval of the mean over the runs, clipped to the "
                         "metric's domain; one cut by the axis ends in an arrow with its bound",
                    "range": f"whiskers: the range of the runs (fewer than {plots.MIN_RUNS_FOR_T} "
                             "runs per policy: a t-interval would say little)",
                    "none": "no whiskers: one run per policy"}[whisker]
            body.append(figures.add(
                f"ci_{metric}", plots.ci_plot(summ, label="group", points=points, whisker=whisker),
                f"{plots.metric_label(metric)}: bars are the means over runs, dots the runs; {what}."))
        for metric in ("waiting_time", "bounded_slowdown"):
            body.append(figures.add(f"boxen_{metric}", plots.boxen_plot(jobs_by_variant, metric),
                                    f"{plots.metric_label(metric)} of every executed job of the "
                                    "policy's runs: letter-value plot (the box holds the middle "
                                    "half of the jobs, each next box half of the rest); no error bars."))
            body.append(figures.add(f"tail_{metric}", plots.tail_plot(jobs_by_variant, metric, n=tail_n),
                                    f"The {tail_n} worst jobs per policy by "
                                    f"{plots.metric_label(metric).lower()}, over all its runs; no error bars."))
        if len(variants) > 1:
            match = match_columns(ok)
            for metric in ("mean_waiting_time", "mean_bounded_slowdown"):
                norm = normalise(ok, metric, base, match=match)
                labels, pair = pair_labels(norm, match)
                norm = norm.assign(_pair=labels)
                pair = pair or "run"
                body.append(figures.add(
                    f"normalised_{metric}",
                    plots.normalised_plot(norm, metric, base, by="_pair", xlabel=pair, order=variants),
                    f"{plots.metric_label(metric)} of each policy per {pair}, divided by {base}'s on "
                    f"the same {pair} (below 1: better than {base}); one dot per run, no error bars."))
            kcols = [c for c in ("mean_waiting_time", "mean_bounded_slowdown", "mean_turnaround_time",
                                 "makespan", "utilisation_nodes", "utilisation_burst_buffer",
                                 "utilisation_gpus")
                     if c in ok.columns and np.isfinite(ok[c].astype(float)).all()]
            if len(kcols) >= 3:
                means = ok.groupby("variant")[kcols].mean().reindex(variants)
                scores = plots.kiviat_scores(means, _LOWER_IS_BETTER)
                body.append(figures.add("kiviat", plots.kiviat_plot(scores),
                                        "Each policy's mean over runs per metric as a score, 1 = "
                                        "the best policy: best/value where lower is better, "
                                        "value/best for utilisations; no error bars."))
        body.append(f'<p class="note">Baseline for normalisation: {html.escape(str(base))}'
                    f'{"" if baseline is not None else " (the first policy; choose with --baseline)"}.</p>')

    gantt_runs = gantt_selection(runs, max_gantt, order)
    if gantt_runs:
        body.append("<h2 id=\"schedules\">Schedules</h2>")
        drawable = sum(1 for r in runs if r.status == "ok")
        omitted = drawable - len(gantt_runs)
        if omitted > 0:
            body.append(f'<p class="note">{len(gantt_runs)} runs shown: the first run of every '
                        f"policy, then further runs up to --max-gantt {max_gantt}; {omitted} "
                        "omitted.</p>")
        axes = _schedule_axes(metrics, gantt_runs)
        for i, run in enumerate(gantt_runs):
            body.append(_run_figure(run, axes.get(run.run_id), figures, i))

    body.append(_files_html(out_dir, figures.names, bool(variants)))
    present = {"summary": bool(variants), "rejected": bool(rejected), "levels": bool(levels), "runs": bool(len(ok)),
               "comparison": bool(variants), "schedules": bool(gantt_runs)}
    body.insert(nav_at, "<nav>" + "".join(f'<a href="#{a}">{html.escape(t)}</a>' for a, t in sections
                                          if present.get(a, True)) + "</nav>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(str(name))}: mrsched report</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(b for b in body if b) + "\n</body></html>\n")
    index = out_dir / "index.html"
    write_atomic(index, page)
    _drop_stale(out_dir, figures.names, bool(variants))
    return index


def _drop_stale(out_dir: Path, names: list[str], summary: bool) -> None:
    """Files an earlier report wrote into ``out_dir`` that this one did not (a figure of a
    policy since removed, a summary of runs since failed): left, they would pass for results."""
    keep = {f"{n}.{fmt}" for n in names for fmt in ("png", "svg", "pdf")}
    folder = out_dir / "figures"
    if folder.is_dir():
        for path in folder.iterdir():
            if path.is_file() and path.suffix in (".png", ".svg", ".pdf") and path.name not in keep:
                path.unlink()
    if not summary:
        for name in ("summary.csv", "summary.tex"):
            (out_dir / name).unlink(missing_ok=True)


def _files_html(out_dir: Path, names: list[str], summary: bool) -> str:
    items = ['<li><a href="metrics.csv">metrics.csv</a>: one row per run, every metric at full '
             "precision</li>"]
    if summary:
        items.append('<li><a href="summary.csv">summary.csv</a>, <a href="summary.tex">summary.tex'
                     "</a>: the summary per policy (LaTeX: booktabs and makecell)</li>")
    if names:
        items.append(f"<li><code>figures/</code>: {len(names):,} figures, each as PNG, SVG and PDF</li>")
    return "<h2 id=\"files\">Files</h2><ul class=\"files\">" + "".join(items) + "</ul>"


def check_tau(tau: float) -> float:
    """A CLI-level check of ``--tau`` (seconds, > 0)."""
    if not (np.isfinite(tau) and tau > 0):
        raise ConfigError(f"--tau must be a positive number of seconds, got {tau}", field="tau")
    return float(tau)
