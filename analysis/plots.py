"""Comparison plots across policies (seed 001 Fig. 5-12, seed 000 Fig. 13), as matplotlib
Figures on the Agg backend; ``png_bytes`` turns one into a PNG for the report."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig, *, dpi: int = 100) -> bytes:
    """The Figure as PNG bytes; the Figure is closed (reports draw many)."""
    return figure_bytes(fig, ("png",), dpi=dpi)["png"]


#: what a report writes of every figure: PNG (embedded in the page), SVG and PDF (for papers)
FIGURE_FORMATS = ("png", "svg", "pdf")


def figure_bytes(fig, formats=FIGURE_FORMATS, *, dpi: int = 150) -> dict[str, bytes]:
    """The Figure in each of ``formats`` (PNG at ``dpi``; SVG and PDF are vector, with their
    embedded images at ``dpi``); the Figure is closed. SVG and PDF carry no creation date, so
    that the same inputs give the same files."""
    import matplotlib

    plt = _plt()
    out = {}
    meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}
    try:
        if fig.get_layout_engine() is not None and len(formats) > 1:
            fig.canvas.draw()                  # lay the figure out once, then keep it: every
            fig.set_layout_engine("none")      # format would otherwise redo constrained layout
        for fmt in formats:
            buf = io.BytesIO()
            with matplotlib.rc_context({"svg.hashsalt": "mrsched-report"}):   # stable SVG ids
                fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta.get(fmt))
            out[fmt] = buf.getvalue()
    finally:
        plt.close(fig)
    return out


def metric_label(metric: str) -> str:
    """A metric's plain name with its unit: run metrics as the report's tables name them,
    per-job ones ("waiting_time") as "Waiting time (s)"."""
    from mrsched.analysis.tables import COLUMNS, header

    if metric in COLUMNS:
        return header(metric).replace("\u00ad", "")
    text = metric.replace("_", " ")
    return text[:1].upper() + text[1:] + _unit(metric)


def boxen_plot(jobs_by_variant: dict[str, pd.DataFrame], metric: str, *, log: bool = True,
               title: str | None = None):
    """Distribution of a per-job metric (waiting time, bounded slowdown) per policy over all
    executed jobs of its runs — seed 001 Fig. 7-8 (letter-value plot)."""
    plt = _plt()
    import seaborn as sns

    frames = [pd.DataFrame({"policy": name, metric: df[metric].to_numpy(float)})
              for name, df in jobs_by_variant.items()]
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["policy", metric])
    data = data[np.isfinite(data[metric])]
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(jobs_by_variant) + 2), 4.5))
    ylabel = metric_label(metric)
    if log and (data[metric] < 0).any():
        log = False
    if log and "slowdown" not in metric:
        # zero waits are common: plot value + 1 s so that they stay on a log axis
        data = data.assign(**{metric: data[metric] + 1.0})
        ylabel = ylabel.replace(" (s)", " + 1 (s)")
    if log and (data[metric] <= 0).any() or data[metric].nunique() < 2:
        log = False
    if len(data):
        sns.boxenplot(data=data, x="policy", y=metric, hue="policy", legend=False,
                      order=list(jobs_by_variant), ax=ax, log_scale=log)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("")
    ax.set_title(title or f"{metric_label(metric)} per policy (all jobs)")
    ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    return fig


def tail_plot(jobs_by_variant: dict[str, pd.DataFrame], metric: str, *, n: int = 50,
              log: bool = True, title: str | None = None):
    """The ``n`` worst jobs of each policy, sorted worst first — seed 001 Fig. 9-10: who
    starves a tail even with a good mean."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    shown = []
    for name, df in jobs_by_variant.items():
        values = np.sort(df[metric].to_numpy(float)[np.isfinite(df[metric].to_numpy(float))])[::-1][:n]
        if values.size:
            ax.plot(np.arange(1, values.size + 1), values, marker=".", label=name)
            shown.append(values)
    if log and shown:
        _log_y(ax, np.concatenate(shown))
    else:
        _thousands(ax.yaxis)
    ax.set_xlabel("rank (1 = worst job)")
    ax.set_ylabel(metric_label(metric))
    ax.set_title(title or f"{n} worst jobs: {metric_label(metric)}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


#: a bar chart's y axis ends this far above its tallest bar or run value: an interval
#: reaching further (2 seeds: t = 12.7) is cut there and its bound written at the cut
CI_HEADROOM = 1.3


#: below this many runs per policy the whiskers are the runs' range, not t-intervals (2 runs:
#: t = 12.7, an interval ~9x wider than the two runs are apart)
MIN_RUNS_FOR_T = 4

#: whisker kind -> how a caption or title names it
WHISKERS = {"t": "95% CI", "range": "range of runs", "none": ""}


def whisker_kind(runs_per_group) -> str:
    """One kind of whisker for a whole figure or table (issue 41 item 7): ``t`` (the t-interval
    of the mean over runs) when every group of more than one run has at least
    ``MIN_RUNS_FOR_T`` runs, ``range`` (the runs' min-max) when some have fewer, ``none`` when
    every group is a single run."""
    multi = [int(n) for n in runs_per_group if n > 1]
    if not multi:
        return "none"
    return "t" if min(multi) >= MIN_RUNS_FOR_T else "range"


def ci_plot(summary: pd.DataFrame, *, label: str = "variant", title: str | None = None,
            points: dict[str, np.ndarray] | None = None, whisker: str | None = None):
    """Mean per policy with one kind of whisker for every bar — seed 001 Fig. 5-6.
    ``summary`` is ``campaign.summarise`` output (its ``ci_low`` / ``ci_high``: the
    t-interval) in the order to draw; ``points`` (label -> the runs' values) are drawn as
    dots. ``whisker``: ``t``, ``range`` (the runs' min-max, from ``points``) or ``none``;
    default ``whisker_kind`` of the groups' run counts. The axis is scaled to the bars and
    dots, not to the whiskers: one reaching further ends in an arrow with its bound beside it."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(summary) + 2), 4.5))
    x = np.arange(len(summary))
    names = [str(v) for v in summary[label]]
    mean = summary["mean"].to_numpy(float)
    dots = [np.asarray((points or {}).get(n, []), dtype=float) for n in names]
    dots = [d[np.isfinite(d)] for d in dots]
    if whisker is None:
        counts = summary["n"].to_numpy(int) if "n" in summary else [d.size for d in dots]
        whisker = whisker_kind(counts)
    if whisker == "t":
        low_b = summary["ci_low"].to_numpy(float).copy()
        high_b = summary["ci_high"].to_numpy(float).copy()
    elif whisker == "range":
        low_b = np.array([d.min() if d.size > 1 else np.nan for d in dots])
        high_b = np.array([d.max() if d.size > 1 else np.nan for d in dots])
    else:
        low_b = high_b = np.full(len(summary), np.nan)
    ax.bar(x, mean, color="tab:blue", alpha=0.7)
    tallest = max([np.nanmax(mean, initial=0.0)] + [np.nanmax(d, initial=0.0) for d in dots])
    top = CI_HEADROOM * tallest if tallest > 0 else None
    floor = min(0.0, np.nanmin(low_b, initial=0.0))
    for i, (m, lo, hi) in enumerate(zip(mean, low_b, high_b)):
        if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(m)):
            continue
        cut = top is not None and hi > top
        end = top if cut else hi
        ax.plot([i, i], [lo, end], color="black", linewidth=1.2)
        ax.plot([i - 0.12, i + 0.12], [lo, lo], color="black", linewidth=1.2)
        if cut:
            ax.plot([i], [end], marker="^", color="black", markersize=7, clip_on=False)
            ax.annotate(f"{_short(hi)}", (i, end), xytext=(6, -4), textcoords="offset points",
                        ha="left", va="top", fontsize=7)
        else:
            ax.plot([i - 0.12, i + 0.12], [hi, hi], color="black", linewidth=1.2)
    labelled = False
    for i, d in enumerate(dots):
        if d.size:
            jitter = np.linspace(-0.2, 0.2, d.size) if d.size > 1 else np.zeros(1)
            ax.plot(i + jitter, d, linestyle="none", marker="o", markersize=4,
                    markerfacecolor="white", markeredgecolor="tab:red",
                    label=None if labelled else "one run")
            labelled = True
    if top is not None:
        ax.set_ylim(floor, top)
    _thousands(ax.yaxis)
    ax.set_xticks(x, names, rotation=20, ha="right")
    metric = str(summary["metric"].iloc[0]) if len(summary) else ""
    ax.set_ylabel(metric_label(metric))
    drawn = np.isfinite(low_b) & np.isfinite(high_b)
    kind = f", {WHISKERS[whisker]}" if whisker != "none" and drawn.any() else ""
    ax.set_title(title or f"{metric_label(metric)}: mean{kind}", fontsize=10)
    if labelled:
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _thousands(axis) -> None:
    """Tick labels with thousands separators (40,000, not 40000)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"))


def _log_y(ax, values: np.ndarray, *, force_log: bool = False) -> None:
    """A log axis with labelled ticks at 1, 2 and 5 per decade (a plain log axis labels only
    powers of 10: a tail between 2e4 and 7e4 s had no label at all); linear, with labels,
    when the values span less than a decade, and symlog (linear through 0) when some are <= 0."""
    from matplotlib.ticker import LogLocator, NullFormatter, NullLocator, SymmetricalLogLocator

    axis = ax.yaxis
    lo, hi = float(np.min(values)), float(np.max(values))
    if lo > 0 and hi / lo < 10 and not force_log:
        _thousands(axis)
        return
    decades = np.log10(hi / lo) if lo > 0 else np.log10(max(hi, 1.0))
    subs = (tuple(float(k) for k in range(1, 10)) if decades < 0.7
            else (1.0, 2.0, 5.0) if decades <= 4 else (1.0,))
    if lo > 0:
        ax.set_yscale("log")
        axis.set_major_locator(LogLocator(base=10, subs=subs))
    else:
        ax.set_yscale("symlog", linthresh=1.0)   # log above 1, linear through 0
        axis.set_major_locator(SymmetricalLogLocator(base=10, linthresh=1.0, subs=subs))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())
    _thousands(axis)


def _unit(metric: str) -> str:
    return " (s)" if metric.endswith("_time") or metric == "makespan" else ""


def _short(v: float) -> str:
    """A bound written beside an arrow: 73,184 -> 73.2k."""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def _natural(text: str) -> list:
    """Sort key: "seed 2" before "seed 10", "part 3/16" before "part 12/16"."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text)]


def normalised_plot(norm: pd.DataFrame, metric: str, baseline: str, *, by: str = "part",
                    title: str | None = None, xlabel: str | None = None, order: list | None = None):
    """Per workload part (or seed), each policy's value divided by the baseline's on the
    same part — seed 001 Fig. 11-12; below 1 beats the baseline. ``by`` names the column
    labelling the pairs (``campaign.pair_labels``), in natural order; policies in ``order``
    (then name order)."""
    plt = _plt()
    col = f"{metric}_norm"
    keys = sorted(norm[by].astype(str).unique(), key=_natural)
    pos = {k: i for i, k in enumerate(keys)}
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(keys) + 3), 4.5))
    present = list(norm["variant"].unique())
    variants = [v for v in (order or []) if v in present] + sorted(v for v in present if v not in (order or []))
    for j, variant in enumerate(variants):
        sub = norm[norm["variant"] == variant]
        xs = np.array([pos[str(k)] for k in sub[by]], dtype=float)
        offset = (j - (len(variants) - 1) / 2) * 0.08
        ax.plot(xs + offset, sub[col].to_numpy(float), linestyle="none", marker="o", label=variant)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    shown = [Path(k).stem if by == "workload" else k for k in keys]
    shown = [k if len(k) < 24 else "…" + k[-22:] for k in shown]
    if max((len(k) for k in shown), default=0) <= 12 and len(keys) <= 16:
        ax.set_xticks(np.arange(len(keys)), shown, fontsize=9)
    else:
        ax.set_xticks(np.arange(len(keys)), shown, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(f"{re.sub(r' [(][^)]*[)]$', '', metric_label(metric))} / {baseline}'s")
    ax.set_xlabel(by if xlabel is None else xlabel)
    ratios = norm[col].to_numpy(float)
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    _log_y(ax, np.append(ratios, 1.0), force_log=True)
    ax.set_title(title or f"{metric_label(metric)} normalised to {baseline}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def utilisation_plot(series: dict[str, pd.DataFrame], *, title: str = "utilisation over time",
                     axis=None):
    """Share of each resource in use over time (step functions from
    ``metrics.usage_over_time`` divided by capacity, in column ``fraction``) on its own
    figure, drawn as in a run's schedule figure (``schedule.draw_utilisation``: one colour per
    resource, a series of more than ``timeaxis.UTILISATION_STEPS`` steps as its mean per bin with the
    bin's range shaded, and the title says so)."""
    from mrsched.analysis.schedule import draw_utilisation
    from mrsched.analysis.timeaxis import TimeAxis, time_axis

    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 3.5))
    if axis is None:
        ends = [float(s["time"].max()) for s in series.values() if len(s)]
        axis = time_axis(0.0, max(ends, default=1.0))
        axis = TimeAxis(t0=0.0, end=axis.end, unit="s", scale=1.0)
    note = draw_utilisation(ax, series, axis)
    axis.apply(ax)
    if note:
        title += f"\naggregated: {note}"
    ax.set_title(title, fontsize=10 if note else None)
    fig.tight_layout()
    return fig


def kiviat_scores(means: pd.DataFrame, lower_is_better) -> pd.DataFrame:
    """Scores in (0, 1] per policy and metric, 1 = the best policy on that metric:
    best/value for lower-is-better metrics, value/best otherwise (seed 000 Fig. 13 plots
    normalised metrics so that a larger area is better)."""
    out = pd.DataFrame(index=means.index)
    for col in means.columns:
        v = means[col].astype(float)
        if col in lower_is_better:
            best = v[v > 0].min() if (v > 0).any() else np.nan
            out[col] = np.where(v > 0, best / v, np.where(v == 0, 1.0, np.nan))
        else:
            best = v.max()
            out[col] = v / best if best and best > 0 else np.nan
    return out


def kiviat_plot(scores: pd.DataFrame, *, title: str = "policies compared (1 = best)"):
    """Radar chart: one polygon per policy (row) over the metrics (columns) of
    ``kiviat_scores`` — seed 000 Fig. 13. The first metric points up, the others clockwise;
    each metric's name is wrapped and anchored away from the circle (left of it on the left,
    above it at the top...), the radial scale sits between two axes and the legend beside
    the chart, so that no two labels overlap."""
    import textwrap

    plt = _plt()
    labels = list(scores.columns)
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False)
    # inches: 1.2 left of the circle for names, 4.4 of circle, 1.3 right of it for names,
    # then the legend, as wide as its longest policy name
    legend_in = 0.7 + 0.075 * max((len(str(n)) for n in scores.index), default=0)
    width = 6.9 + legend_in
    fig = plt.figure(figsize=(width, 6))
    ax = fig.add_axes((1.2 / width, 0.1, 4.4 / width, 0.74), projection="polar")
    ax.set_theta_offset(np.pi / 2)
    ax.set_theta_direction(-1)
    for name, row in scores.iterrows():
        vals = np.nan_to_num(row.to_numpy(float), nan=0.0)
        ax.plot(np.append(angles, angles[0]), np.append(vals, vals[0]), label=str(name))
        ax.fill(np.append(angles, angles[0]), np.append(vals, vals[0]), alpha=0.1)
    ax.set_xticks(angles, [""] * len(labels))
    ax.set_ylim(0, 1)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["0.25", "0.5", "0.75", "1"], fontsize=7, color="0.35")
    if len(labels) > 1:
        ax.set_rlabel_position(float(np.degrees(angles[1] / 2)))   # between the first two axes
    for angle, label in zip(angles, labels):
        x, y = np.sin(angle), np.cos(angle)     # screen direction (clockwise from the top)
        ha = "left" if x > 0.2 else "right" if x < -0.2 else "center"
        va = "bottom" if y > 0.2 else "top" if y < -0.2 else "center"
        name = re.sub(r" \([^)]*\)$", "", metric_label(label))   # a score has no unit
        ax.text(angle, 1.1, textwrap.fill(name, 16), ha=ha, va=va,
                fontsize=8, clip_on=False)
    fig.suptitle(title, y=0.97)
    fig.legend(*ax.get_legend_handles_labels(), loc="center left", bbox_to_anchor=(6.9 / width, 0.5),
               fontsize=8, frameon=False)
    return fig
