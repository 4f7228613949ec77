"""Gantt chart of one run: every executed Batsim job as rectangles over its allocated
resource ids (one rectangle per contiguous id range), from start to finish.

Our own rather than evalys': evalys 4.0.7's ``JobSet.gantt(ax=...)`` fails on its own
``bulksetattr`` (no ``ax`` attribute) and it knows nothing of I/O phases; here the phases of
one user job share its colour, I/O phases are hatched by kind (compute plain), or on charts
too dense for hatching to show drawn lighter by an amount of their kind.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mrsched.analysis.jobs import id_ranges

#: hatch of each I/O phase kind (seed 001's model, schedulers/iophased.py); compute phases and
#: jobs that ran as themselves are plain; other kinds take the spare hatches in name order
_KIND_HATCHES = {"stage_in": "//", "checkpoint": "xx", "drain": "..", "stage_out": "\\\\"}
_SPARE_HATCHES = ("++", "oo", "--", "||", "**", "OO")


#: above this many rectangles a chart is drawn without hatching or outlines: at that density
#: they are sub-pixel noise, and Agg rasterising hatched patches took minutes per report
DENSE_RECTANGLES = 3000
#: dense charts: an I/O phase is its job's colour this much closer to white, one step per kind
#: (in kind-name order) so that the legend's swatches differ
_LIGHTER_STEPS = (0.3, 0.5, 0.65, 0.8)
#: above this many executed Batsim rows a chart is aggregated into an occupancy grid: one
#: rectangle per row would be sub-pixel (800 px wide) and take minutes and gigabytes at
#: 1,000,000 jobs
AGGREGATE_ROWS = 50_000


def plot_gantt(phases: pd.DataFrame, *, ax=None, title: str = "Gantt chart",
               label_jobs: bool | None = None, max_labels: int = 80,
               dense_limit: int = DENSE_RECTANGLES, aggregate_limit: int = AGGREGATE_ROWS):
    """Draw the executed rows of ``phase_table`` (or any job table with ``starting_time``,
    ``finish_time``, ``allocated_resources``) on ``ax``; return the Figure. Phases of one job
    share its colour; I/O phases are hatched by kind, or, above ``dense_limit`` rectangles,
    drawn lighter, one lightness per kind (compute phases keep the plain, full colour).
    Above ``aggregate_limit`` executed rows the chart is the run's occupancy grid instead
    (``occupancy``: share of each time bin x id group in use), and its title says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch

    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    else:
        fig = ax.figure
    rows = phases[phases["starting_time"].notna() & phases["finish_time"].notna()]
    if len(rows) > aggregate_limit:
        return _plot_occupancy(rows, ax, title, aggregate_limit)
    parent = rows["parent"] if "parent" in rows.columns else rows["job_id"]
    kinds = rows["phase"] if "phase" in rows.columns else pd.Series("", index=rows.index)
    parents = list(dict.fromkeys(parent))  # first-appearance order: deterministic colours
    cmap = plt.get_cmap("tab20")
    colour_of = {p: cmap(i % 20) for i, p in enumerate(parents)}
    kind_list = sorted(set(kinds) - {""})
    if label_jobs is None:
        label_jobs = len(parents) <= max_labels

    boxes: list[tuple[float, int, float, int, object, str]] = []   # x, y, width, height, job, kind
    max_id = -1
    label_at: dict = {}  # parent -> (area, x, y): labels go on a job's largest rectangle
    for start, finish, alloc, par, kind in zip(rows["starting_time"], rows["finish_time"],
                                               rows["allocated_resources"], parent, kinds):
        width = float(finish) - float(start)
        for lo, hi in id_ranges(alloc):
            max_id = max(max_id, hi)
            boxes.append((float(start), lo, width, hi - lo + 1, par, kind))
            area = width * (hi - lo + 1)
            if label_jobs and area > label_at.get(par, (0.0,))[0]:
                label_at[par] = (area, float(start) + width / 2, lo + (hi - lo + 1) / 2)
    dense = len(boxes) > dense_limit
    for par, (_, x, y) in label_at.items():
        ax.text(x, y, str(par), ha="center", va="center", fontsize=7, clip_on=True,
                bbox={"facecolor": "white", "alpha": 0.7, "pad": 1, "edgecolor": "none"})
    io_kinds = [k for k in kind_list if _is_io(k)]
    spare = iter(h for h in _SPARE_HATCHES if h not in {_KIND_HATCHES.get(k) for k in io_kinds})
    hatch_of = {k: _KIND_HATCHES.get(k) or next(spare, "/") for k in io_kinds}
    hatch_of[""] = hatch_of["compute"] = ""
    light_of = {k: _LIGHTER_STEPS[min(i, len(_LIGHTER_STEPS) - 1)] for i, k in enumerate(io_kinds)}
    groups: dict[str, list] = {}
    for box in boxes:
        groups.setdefault("" if dense else hatch_of[box[5]], []).append(box)
    for hatch, group in groups.items():
        x, y, w, h = (np.array(col, dtype=float) for col in list(zip(*group))[:4])
        verts = np.stack([np.column_stack(c) for c in ((x, y), (x + w, y), (x + w, y + h), (x, y + h))],
                         axis=1)   # (rectangles, 4 corners, xy): one array, no Patch objects
        if dense:
            colours = [_lighter(colour_of[par], light_of[kind]) if _is_io(kind) else colour_of[par]
                       for *_, par, kind in group]
            coll = PolyCollection(verts, facecolors=colours, edgecolors="none", linewidths=0)
        else:
            coll = PolyCollection(verts, facecolors=[colour_of[b[4]] for b in group],
                                  edgecolors="black", linewidths=0.4, hatch=hatch or None)
        ax.add_collection(coll)
    if len(rows):
        t0, t1 = float(rows["starting_time"].min()), float(rows["finish_time"].max())
        pad = max((t1 - t0) * 0.01, 1e-6)
        ax.set_xlim(t0 - pad, t1 + pad)
        ax.set_ylim(-0.2, max_id + 1.2)
    ax.set_xlabel("time (s)")
    _thousands(ax.xaxis)
    ax.set_ylabel("resource id")
    ax.set_title(title)
    if kind_list:
        grey = to_rgba("0.45")
        if dense:
            handles = [Patch(facecolor=_lighter(grey, light_of[k]) if _is_io(k) else grey,
                             edgecolor="0.3", linewidth=0.5, label=k) for k in kind_list]
        else:
            handles = [Patch(facecolor="0.8", edgecolor="black", hatch=hatch_of[k] or None, label=k)
                       for k in kind_list]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7,
                  title="phase", handlelength=2.6, handleheight=1.6)
    if max_id >= 0 and max_id < 40:
        ax.set_yticks(np.arange(0, max_id + 1) + 0.5, [str(i) for i in range(max_id + 1)],
                      fontsize=7)
    fig.tight_layout()
    return fig


def _is_io(kind: str) -> bool:
    return bool(kind) and kind != "compute"


def _lighter(rgba, amount: float) -> tuple[float, float, float, float]:
    r, g, b, a = rgba
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount, a)


def _plot_occupancy(rows: pd.DataFrame, ax, title: str, limit: int):
    """The aggregated chart: ``occupancy`` of every executed row as an image, the title saying
    what was aggregated and how."""
    import matplotlib.pyplot as plt

    from mrsched.analysis.occupancy import occupancy

    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    else:
        fig = ax.figure
    starts, finishes, lows, highs = [], [], [], []
    for start, finish, alloc in zip(rows["starting_time"].to_numpy(float),
                                    rows["finish_time"].to_numpy(float), rows["allocated_resources"]):
        for lo, hi in id_ranges(alloc):
            starts.append(start)
            finishes.append(finish)
            lows.append(lo)
            highs.append(hi)
    grid = occupancy(starts, finishes, lows, highs)
    t1 = grid.t0 + grid.bin_seconds * grid.busy.shape[0]
    image = ax.imshow(grid.busy.T, origin="lower", aspect="auto", cmap="viridis", vmin=0.0,
                      vmax=1.0, interpolation="nearest",
                      extent=(grid.t0, t1, 0, grid.ids_per_row * grid.busy.shape[1]))
    fig.colorbar(image, ax=ax, label="share in use", pad=0.01)
    jobs = rows["parent"].nunique() if "parent" in rows.columns else len(rows)
    group = f"{grid.ids_per_row} resource ids" if grid.ids_per_row > 1 else "one resource id"
    ax.set_title(f"{title}\naggregated: {jobs:,} jobs, {len(rows):,} executed rows (over "
                 f"{limit:,}); each cell is the share of {group} x {grid.bin_seconds:,.0f} s in use",
                 fontsize=9)
    ax.set_xlabel("time (s)")
    _thousands(ax.xaxis)
    ax.set_ylabel("resource id")
    fig.tight_layout()
    return fig


def _thousands(axis) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"))
