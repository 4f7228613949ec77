"""One run's schedule as one figure: the Gantt chart over the machine's compute resources,
the burst buffer held by each job, the queue length and the utilisation of every resource
the run manages, stacked on one time axis (``timeaxis.TimeAxis``) so that they line up.

- Burst buffer: the run's outputs say how many bytes each job held (its request) but not on
  which storage node (the alloc-only job model sends no placement to Batsim), so each job's
  bytes are drawn where they first fit in the machine's total capacity (first fit when the
  job starts, split over free gaps when no single gap holds them): one band per job, in its
  Gantt colour, its height its bytes. Above ``gantt.DENSE_RECTANGLES`` jobs only the total in
  use is drawn.
- Queue: jobs submitted and not yet started (a rejected job leaves the queue at once).
- Utilisation: nodes, cores and GPUs (per-core platforms: ``cpugpu.run_cpugpu_series``),
  burst buffer and the PFS bandwidth asked (jobs' stated ``io_bandwidth_per_node`` x nodes
  over the PFS's bandwidth, on platforms that declare one: above 100% when an I/O-ignorant
  schedule overlaps them), each resource in its own colour.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mrsched.analysis.gantt import AGGREGATE_ROWS, DENSE_RECTANGLES, job_colours, plot_gantt
from mrsched.analysis.metrics import resource_usage, usage_over_time
from mrsched.analysis.timeaxis import (UTILISATION_BINS, UTILISATION_STEPS, TimeAxis, binned_steps,
                                      number_text, time_axis)

#: resource -> (name shown, colour): the same in every utilisation figure of the report
RESOURCES = {"nodes": ("nodes", "tab:blue"), "cores": ("cores", "tab:orange"),
             "gpus": ("GPUs", "tab:green"), "burst_buffer": ("burst buffer", "tab:purple"),
             "io_bandwidth": ("PFS bandwidth asked", "tab:red")}


def resource_name(resource: str) -> str:
    return RESOURCES.get(resource, (resource.replace("_", " "), None))[0]


def run_time_span(run) -> tuple[float, float]:
    """(first submission, last finish) of a loaded run's jobs, in simulated seconds."""
    jobs = run.jobs
    if jobs is None or not len(jobs):
        return (0.0, 1.0)
    t0 = float(jobs["submission_time"].min())
    finish = jobs["finish_time"].to_numpy(float)
    finish = finish[np.isfinite(finish)]
    t1 = float(finish.max()) if finish.size else t0 + 1.0
    return (t0 if math.isfinite(t0) else 0.0, t1)


def utilisation_series(run) -> dict[str, pd.DataFrame]:
    """Fraction of each managed resource in use over time (``time``, ``fraction`` steps):
    nodes, cores and GPUs on per-core platforms (``cpugpu``), else every capacity of the run
    whose requests are known (nodes, GPUs, burst buffer, PFS bandwidth)."""
    from mrsched.analysis.cpugpu import run_cpugpu_series

    series = run_cpugpu_series(run)
    if series:
        for resource in ("burst_buffer", "io_bandwidth"):
            series.update(_request_series(run, resource))
        return series
    for resource in run.capacities:
        series.update(_request_series(run, resource))
    return series


def _request_series(run, resource: str) -> dict[str, pd.DataFrame]:
    capacity = run.capacities.get(resource)
    if not capacity or (resource != "nodes" and resource not in run.jobs.columns):
        return {}
    step = usage_over_time(resource_usage(run.jobs, resource, capacities=run.capacities,
                                          phases=run.phases))
    return {resource: step.assign(fraction=step["used"] / float(capacity))}


def queue_steps(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(times, queued jobs from each time on): +1 at a submission, -1 at the job's start; a
    rejected job (no start) leaves the queue when it arrives. Starts before submissions at
    equal times, so that a job started at once never counts."""
    submit = jobs["submission_time"].to_numpy(float)
    start = jobs["starting_time"].to_numpy(float)
    ran = np.isfinite(start)
    keep = np.isfinite(submit)
    times = np.concatenate([submit[keep & ran], start[keep & ran]])
    deltas = np.concatenate([np.ones(int((keep & ran).sum())), -np.ones(int((keep & ran).sum()))])
    if not times.size:
        return np.array([0.0]), np.array([0.0])
    order = np.lexsort((deltas, times))
    times, counts = times[order], np.cumsum(deltas[order])
    last = np.append(times[1:] != times[:-1], True)
    return times[last], counts[last]


def bb_layout(starts, finishes, amounts, capacity: float) -> list[tuple[int, float, float, float, float]]:
    """Where each job's burst-buffer bytes are drawn: ``(job index, start, finish, offset,
    size)`` pieces in ``[0, capacity)``. At its start a job takes the lowest gap that holds all
    its bytes, else the free gaps from the lowest up; bytes beyond ``capacity`` (the run held
    more than the platform declares) go above it, where they show. Releases before starts at
    equal times."""
    starts, finishes = np.asarray(starts, float), np.asarray(finishes, float)
    amounts = np.asarray(amounts, float)
    events = []
    for i, (s, f, a) in enumerate(zip(starts, finishes, amounts)):
        if a > 0 and math.isfinite(s) and math.isfinite(f):
            events += [(s, 1, i), (f, 0, i)]
    events.sort()
    free: list[list[float]] = [[0.0, float(capacity)]]   # sorted [offset, size] gaps below capacity
    above = float(capacity)                              # next byte above the capacity
    over = 0                                             # jobs holding bytes above it
    held: dict[int, list[tuple[float, float]]] = {}
    pieces = []
    eps = 1e-9 * max(float(capacity), 1.0)
    for t, kind, i in events:
        if kind == 0:
            got = held.pop(i, [])
            if any(off >= capacity for off, _ in got):
                over -= 1
                above = float(capacity) if over == 0 else above
            for off, size in got:
                if off < capacity:
                    free.append([off, size])
            free.sort()
            merged: list[list[float]] = []
            for gap in free:
                if merged and gap[0] <= merged[-1][0] + merged[-1][1] + eps:
                    merged[-1][1] = max(merged[-1][0] + merged[-1][1], gap[0] + gap[1]) - merged[-1][0]
                else:
                    merged.append(gap)
            free = merged
            continue
        need = float(amounts[i])
        got: list[tuple[float, float]] = []
        gap = next((g for g in free if g[1] >= need - eps), None)
        if gap is not None:
            got.append((gap[0], need))
            gap[0] += need
            gap[1] -= need
        else:
            for g in free:
                take = min(g[1], need)
                if take > eps:
                    got.append((g[0], take))
                    g[0] += take
                    g[1] -= take
                    need -= take
                if need <= eps:
                    break
            if need > eps:
                got.append((above, need))
                above += need
                over += 1
        free = [g for g in free if g[1] > eps]
        held[i] = got
        pieces += [(i, float(starts[i]), float(finishes[i]), off, size) for off, size in got]
    return pieces


def _bytes_unit(capacity: float) -> tuple[str, float]:
    return ("TB", 1e12) if capacity >= 1e13 else ("GB", 1e9) if capacity >= 1e10 else ("MB", 1e6)


def _draw_bb(ax, run, axis: TimeAxis, colours: dict, dense_limit: int) -> str:
    """The burst-buffer panel; returns what it shows, for the caption."""
    from matplotlib.collections import PolyCollection

    capacity = float(run.capacities["burst_buffer"])
    unit, factor = _bytes_unit(capacity)
    jobs = run.jobs[~run.jobs["rejected"]]
    amounts = jobs["burst_buffer"].fillna(0.0).to_numpy(float)
    users = int((amounts > 0).sum())
    if users <= dense_limit:
        pieces = bb_layout(jobs["starting_time"], jobs["finish_time"], amounts, capacity)
        ids = jobs["job_id"].astype(str).to_numpy()
        if pieces:
            idx, s, f, off, size = (np.array(c) for c in zip(*pieces))
            x0, x1 = axis.x(s.astype(float)), axis.x(f.astype(float))
            y0, y1 = off.astype(float) / factor, (off + size).astype(float) / factor
            verts = np.stack([np.column_stack(c) for c in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))], axis=1)
            faces = [colours.get(ids[int(k)], "0.6") for k in idx]
            ax.add_collection(PolyCollection(verts, facecolors=faces, edgecolors="black",
                                             linewidths=0.2))
        shown = "each job's bytes as a band in its Gantt colour, placed where they first fit"
    else:
        step = usage_over_time(resource_usage(run.jobs, "burst_buffer"))
        t, used = step["time"].to_numpy(float), step["used"].to_numpy(float)
        binned = _step_area(ax, t, used / factor, axis, RESOURCES["burst_buffer"][1])
        shown = "the bytes in use (too many jobs for one band each)" + (f", {binned}" if binned else "")
    ax.set_ylim(0, max(capacity / factor, ax.get_ylim()[1]))
    ax.axhline(capacity / factor, color="0.3", linewidth=0.6, linestyle="--")
    ax.set_ylabel(f"burst buffer\n({unit})")
    ax.yaxis.set_major_formatter(_number_formatter())
    return shown


def _step_area(ax, times: np.ndarray, values: np.ndarray, axis: TimeAxis, colour) -> str | None:
    """A step function as a filled area up to ``axis.end``; beyond ``timeaxis.UTILISATION_STEPS``
    steps (a long run: every step would be a vertex of the SVG and PDF) its mean per bin with
    the bin's min-max shaded, and a note saying so."""

    if len(times) <= UTILISATION_STEPS:
        ax.fill_between(axis.x(np.append(times, axis.end)), np.append(values, values[-1:]),
                        step="post", color=colour, alpha=0.6, linewidth=0)
        return None
    edges, mean, low, high = binned_steps(times, values, UTILISATION_BINS)
    ax.stairs(mean, axis.x(edges), color=colour, fill=True, alpha=0.6)
    ax.fill_between(axis.x(edges[:-1]), low, high, step="post", color=colour, alpha=0.2, linewidth=0)
    return f"mean per bin of {number_text(edges[1] - edges[0])} s, shaded: the bin's min-max"


def _number_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: number_text(v))


def draw_utilisation(ax, series: dict[str, pd.DataFrame], axis: TimeAxis) -> str | None:
    """Each resource's share in use (%) as steps in its own colour; a series of more than
    ``timeaxis.UTILISATION_STEPS`` steps as its mean per bin with the bin's range shaded. Returns
    a note on the binning, or None."""

    binned, width = [], 0.0
    for i, (name, s) in enumerate(series.items()):
        label, colour = RESOURCES.get(name, (name.replace("_", " "), f"C{i}"))
        time, pct = s["time"].to_numpy(float), 100.0 * s["fraction"].to_numpy(float)
        if len(time) <= UTILISATION_STEPS:
            ax.step(axis.x(np.append(time, axis.end)), np.append(pct, pct[-1:]), where="post",
                    label=label, color=colour, linewidth=1.0)
            continue
        edges, mean, low, high = binned_steps(time, pct, UTILISATION_BINS)
        ax.stairs(mean, axis.x(edges), color=colour, label=f"{label} (mean)")
        ax.fill_between(axis.x(edges[:-1]), low, high, step="post", color=colour, alpha=0.2,
                        linewidth=0)
        binned.append(f"{label} {len(time):,}")
        width = edges[1] - edges[0]
    top = max([105.0] + [100.0 * float(s["fraction"].max()) * 1.05 for s in series.values() if len(s)])
    ax.set_ylim(0, top)      # the PFS bandwidth asked may pass 100%: shown, not cut
    ax.set_ylabel("in use (%)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if not binned:
        return None
    return (f"mean per bin of {number_text(width)} s over {UTILISATION_BINS:,} bins, shaded: the "
            f"bin's min-max (steps: {', '.join(binned)})")


def draw_power(ax, series, axis: TimeAxis, steps=()) -> str:
    """The platform's power (W, ``power.PowerSeries``) as a filled step area, with the
    all-idle / all-busy levels of an estimate and the run's power cap when it had one
    (``steps``: (time, watts)); returns what it shows, for the caption."""
    time, watts = np.asarray(series.time, float), np.asarray(series.power, float)
    binned = _step_area(ax, time, watts, axis, "tab:brown")
    top = float(watts.max()) if watts.size else 1.0
    for level, style in ((series.idle_w, ":"), (series.busy_w, "--")):
        if math.isfinite(level):
            ax.axhline(level, color="0.4", linestyle=style, linewidth=0.7)
            top = max(top, level)
    if steps:
        t = np.array([s for s, _ in steps], float)
        w = np.array([v for _, v in steps], float)
        ax.step(axis.x(np.append(t, axis.end)), np.append(w, w[-1:]), where="post",
                color="tab:red", linewidth=1.0)
        top = max(top, float(w.max()))
    ax.set_ylim(0, top * 1.05 if top > 0 else 1.0)
    ax.set_ylabel("power\n(W)")
    ax.yaxis.set_major_formatter(_number_formatter())
    how = ("measured by the engine (-E: mean power between the energy trace's rows)"
           if series.measured else "estimated from the platform's wattage (Idle on a free "
           "machine, AllCores on a busy one); dotted: every machine idle, dashed: every machine busy")
    if steps:
        how += "; red: the power cap"
    return how + (f", {binned}" if binned else "")


def run_cap_steps(run) -> list[tuple[float, float]]:
    """A run's power cap as (time, watts) steps from its manifest's options (``power_cap``,
    ``power_cap_steps``); [] when it had none or they do not read."""
    from mrsched.errors import MrschedError
    from mrsched.schedulers.execution.power import cap_steps

    opts = run.manifest.get("options") or {}
    try:
        steps = list(cap_steps(opts.get("power_cap", 0.0), opts.get("power_cap_steps", "")))
        share = float(opts.get("power_cap_share") or 0.0)
    except (MrschedError, TypeError, ValueError):
        return []
    if steps or not share:
        return steps
    from mrsched.analysis.power import run_power

    series = run_power(run)     # the share of the estimate's all-busy level (the scheduler's peak)
    return [(0.0, share * series.busy_w)] if series is not None and math.isfinite(series.busy_w) else []


def schedule_figure(run, axis: TimeAxis | None = None, *, dense_limit: int = DENSE_RECTANGLES,
                    aggregate_limit: int = AGGREGATE_ROWS, max_labels: int = 80):
    """The stacked figure of a loaded run (``runs.load_run``) and what its panels show (for
    the caption): ``(Figure, notes)``. ``axis``: the time axis (default: the run's own)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if axis is None:
        axis = time_axis(*run_time_span(run))
    n = int(run.capacities.get("nodes") or 0) or None
    series = utilisation_series(run)
    has_bb = bool(run.capacities.get("burst_buffer")) and "burst_buffer" in run.jobs.columns \
        and bool((run.jobs["burst_buffer"].fillna(0) > 0).any())
    from mrsched.analysis.power import run_power

    power = run_power(run)
    panels = ["gantt"] + (["bb"] if has_bb else []) + ["queue"] + (["util"] if series else []) \
        + (["power"] if power is not None else [])
    heights = {"gantt": 4.0, "bb": 1.5, "queue": 1.0, "util": 1.6, "power": 1.6}
    fig = plt.figure(figsize=(11, 0.9 + sum(heights[p] for p in panels)), layout="constrained")
    grid = fig.add_gridspec(len(panels), 1, height_ratios=[heights[p] for p in panels])
    axes: dict = {}
    for k, p in enumerate(panels):
        axes[p] = fig.add_subplot(grid[k], sharex=axes.get("gantt"))
    notes = {}
    executed = int((run.phases["starting_time"].notna() & run.phases["finish_time"].notna()).sum())
    # an aggregated chart has no rectangles to colour (and 1M rows would take long to scan)
    colours = job_colours(run.phases, n_resources=n, dense_limit=dense_limit) \
        if executed <= aggregate_limit else {}
    cores = _per_core_nodes(run)
    plot_gantt(run.phases, ax=axes["gantt"], title=None, n_resources=n, axis=axis, colours=colours,
               dense_limit=dense_limit, aggregate_limit=aggregate_limit, max_labels=max_labels,
               ylabel="core (resource id)" if cores else "node (resource id)", notes=notes)
    if cores:
        for b in cores:
            axes["gantt"].axhline(b, color="0.5", linewidth=0.4)
    if "bb" in axes:
        notes["bb"] = _draw_bb(axes["bb"], run, axis, colours, dense_limit)
    times, counts = queue_steps(run.jobs)
    ax = axes["queue"]
    queue_note = _step_area(ax, times, counts, axis, "0.45")
    if queue_note:
        notes["queue"] = queue_note
    ax.set_ylim(0, max(1.0, float(counts.max()) * 1.1))
    ax.set_ylabel("queued\njobs")
    ax.yaxis.set_major_formatter(_number_formatter())
    if "util" in axes:
        notes["util"] = draw_utilisation(axes["util"], series, axis)
        notes["resources"] = ", ".join(resource_name(r) for r in series)
    if "power" in axes:
        notes["power"] = draw_power(axes["power"], power, axis, run_cap_steps(run))
    for p, ax in axes.items():
        axis.apply(ax, label=p == panels[-1])
        if p != panels[-1]:
            ax.tick_params(labelbottom=False)
            ax.set_xlabel("")
        ax.grid(axis="x", color="0.85", linewidth=0.5)
        ax.set_axisbelow(True)
    names = {"gantt": "Gantt chart", "bb": "burst buffer held per job"
             if notes.get("bb", "").startswith("each job") else "burst buffer in use",
             "queue": "queue length", "util": "utilisation", "power": "power"}
    for letter, p in zip("abcde", panels):
        axes[p].set_title(f"({letter}) {names[p]}", loc="left", fontsize=9, pad=3)
    notes["panels"] = panels
    fig.suptitle(f"{run.run_id} ({run.variant})", fontsize=10)
    return fig, notes


def _per_core_nodes(run) -> list[int]:
    """On a per-core platform, the resource ids where a new node starts (lines on the Gantt
    chart); [] elsewhere."""
    from mrsched.analysis.cpugpu import _cached_map
    from mrsched.analysis.runs import _paths, _resolve

    plats = _paths(run.manifest.get("platform"))
    plat = _resolve(plats[0], run.path) if plats else None
    cmap = _cached_map(str(plat)) if plat is not None else None
    if cmap is None:
        return []
    ids = sorted(cmap.node_of)
    return [r for a, r in zip(ids, ids[1:]) if cmap.node_of[r] != cmap.node_of[a]]
