"""Gantt chart of one run: every executed Batsim job as rectangles over its allocated
resource ids (one rectangle per contiguous id range), from start to finish.

Our own rather than evalys': evalys 4.0.7's ``JobSet.gantt(ax=...)`` fails on its own
``bulksetattr`` (no ``ax`` attribute) and it knows nothing of I/O phases; here the phases of
one user job share its colour, I/O phases are hatched by kind (compute plain), or on charts
too dense for hatching to show drawn lighter by an amount of their kind. Like evalys'
``plot_gantt`` the y range is the machine (``n_resources``), not the ids the data reaches, and
touching jobs get different colours (``job_colours``, a greedy colouring of the chart's
neighbours; evalys colours by a hash of the job id, which lets neighbours coincide).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mrsched.analysis.jobs import id_ranges
from mrsched.analysis.timeaxis import TimeAxis, number_text, time_axis

#: hatch of each I/O phase kind (seed 001's model, schedulers/execution/iophased.py); compute phases and
#: jobs that ran as themselves are plain; other kinds take the spare hatches in name order
_KIND_HATCHES = {"stage_in": "//", "checkpoint": "xx", "drain": "..", "stage_out": "\\\\"}
_SPARE_HATCHES = ("++", "oo", "--", "||", "**", "OO")

#: job colours: matplotlib's tab10 without its grey, then the light tints of five of them;
#: ``job_colours`` takes the first one no neighbour has
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5")

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
#: two rectangles closer than this share of the time span (or of the ids drawn) count as
#: neighbours: at 1,000 px, gaps under ~15 px (~10 px) do not keep same-coloured jobs apart
_TOUCH = 0.015
_TOUCH_IDS = 0.01


def _boxes(rows: pd.DataFrame, n_resources: int | None) -> tuple[list, int]:
    """(x, y, width, height, job, kind) per contiguous id range of every executed row, ids at
    or beyond ``n_resources`` (storage hosts of I/O phases) left out; and the largest id seen."""
    parent = rows["parent"] if "parent" in rows.columns else rows["job_id"]
    kinds = rows["phase"] if "phase" in rows.columns else pd.Series("", index=rows.index)
    boxes, max_id = [], -1
    for start, finish, alloc, par, kind in zip(rows["starting_time"].to_numpy(float),
                                               rows["finish_time"].to_numpy(float),
                                               rows["allocated_resources"], parent, kinds):
        for lo, hi in id_ranges(alloc):
            if n_resources is not None:
                if lo >= n_resources:
                    continue
                hi = min(hi, n_resources - 1)
            max_id = max(max_id, hi)
            boxes.append((start, lo, finish - start, hi - lo + 1, par, kind))
    return boxes, max_id


def job_colours(phases: pd.DataFrame, *, n_resources: int | None = None,
                dense_limit: int = DENSE_RECTANGLES) -> dict:
    """Job (``parent``, else ``job_id``) -> colour of ``PALETTE``: in order of first start, each
    job takes the first colour none of its neighbours has (rectangles that overlap, touch or
    nearly touch in time and ids, ``_TOUCH``), or the one they use least. Above ``dense_limit``
    rectangles (sub-pixel anyway) the palette simply cycles in start order."""
    rows = phases[phases["starting_time"].notna() & phases["finish_time"].notna()]
    rows = rows.sort_values("starting_time", kind="stable")
    boxes, _ = _boxes(rows, n_resources)
    jobs = list(dict.fromkeys(b[4] for b in boxes))
    if len(boxes) > dense_limit or not boxes:
        return {j: PALETTE[i % len(PALETTE)] for i, j in enumerate(jobs)}
    index = {j: i for i, j in enumerate(jobs)}
    x0 = np.array([b[0] for b in boxes])
    x1 = x0 + np.array([b[2] for b in boxes])
    y0 = np.array([b[1] for b in boxes], dtype=float)
    y1 = y0 + np.array([b[3] for b in boxes])
    owner = np.array([index[b[4]] for b in boxes])
    tol = _TOUCH * max(float(x1.max() - x0.min()), 1e-9)
    ytol = _TOUCH_IDS * float(n_resources if n_resources else y1.max())
    near: list[set[int]] = [set() for _ in jobs]
    for i in range(len(boxes)):
        hit = ((x0 <= x1[i] + tol) & (x0[i] <= x1 + tol) & (y0 <= y1[i] + ytol) & (y0[i] <= y1 + ytol)
               & (owner != owner[i]))
        near[owner[i]].update(owner[hit].tolist())
    colour: list[int] = []
    for j in range(len(jobs)):
        used = [colour[k] for k in near[j] if k < j]
        free = [c for c in range(len(PALETTE)) if c not in used]
        colour.append(free[0] if free else min(range(len(PALETTE)), key=used.count))
    return {job: PALETTE[colour[i]] for i, job in enumerate(jobs)}


def plot_gantt(phases: pd.DataFrame, *, ax=None, title: str | None = "Gantt chart",
               label_jobs: bool | None = None, max_labels: int = 80,
               dense_limit: int = DENSE_RECTANGLES, aggregate_limit: int = AGGREGATE_ROWS,
               n_resources: int | None = None, axis: TimeAxis | None = None,
               colours: dict | None = None, ylabel: str = "resource id", notes: dict | None = None):
    """Draw the executed rows of ``phase_table`` (or any job table with ``starting_time``,
    ``finish_time``, ``allocated_resources``) on ``ax``; return the Figure.

    The y range is ``0 .. n_resources`` (the machine's compute resources; default: the
    largest id drawn + 1), the x axis ``axis`` (default: seconds from 0 to the last finish).
    Phases of one job share its colour (``colours``, default ``job_colours``); I/O phases are
    hatched by kind, or, above ``dense_limit`` rectangles, drawn lighter, one lightness per
    kind. Up to ``max_labels`` jobs each carries its id where its largest rectangle has room.
    Above ``aggregate_limit`` executed rows the chart is the run's occupancy grid instead
    (``occupancy``: share of each time bin x id group in use), and its title says so (or,
    given ``notes``, ``notes["gantt"]``, for a caption)."""
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
    if axis is None:
        axis = time_axis(0.0, float(rows["finish_time"].max()) if len(rows) else 1.0)
        axis = TimeAxis(t0=0.0, end=axis.end, unit="s", scale=1.0)
    if len(rows) > aggregate_limit:
        return _plot_occupancy(rows, ax, title, aggregate_limit, n_resources, axis, ylabel, notes)
    boxes, max_id = _boxes(rows, n_resources)
    top = n_resources if n_resources is not None else max_id + 1
    jobs = list(dict.fromkeys(b[4] for b in boxes))
    if colours is None:
        colours = job_colours(rows, n_resources=n_resources, dense_limit=dense_limit)
    colour_of = {j: to_rgba(colours.get(j, PALETTE[i % len(PALETTE)])) for i, j in enumerate(jobs)}
    kind_list = sorted({b[5] for b in boxes} - {""})
    if label_jobs is None:
        label_jobs = len(jobs) <= max_labels

    dense = len(boxes) > dense_limit
    io_kinds = [k for k in kind_list if _is_io(k)]
    spare = iter(h for h in _SPARE_HATCHES if h not in {_KIND_HATCHES.get(k) for k in io_kinds})
    hatch_of = {k: _KIND_HATCHES.get(k) or next(spare, "/") for k in io_kinds}
    hatch_of[""] = hatch_of["compute"] = ""
    light_of = {k: _LIGHTER_STEPS[min(i, len(_LIGHTER_STEPS) - 1)] for i, k in enumerate(io_kinds)}
    groups: dict[str, list] = {}
    for box in boxes:
        groups.setdefault("" if dense else hatch_of.get(box[5], ""), []).append(box)
    for hatch, group in groups.items():
        x, y, w, h = (np.array(col, dtype=float) for col in list(zip(*group))[:4])
        x, w = axis.x(x), w / axis.scale
        verts = np.stack([np.column_stack(c) for c in ((x, y), (x + w, y), (x + w, y + h), (x, y + h))],
                         axis=1)   # (rectangles, 4 corners, xy): one array, no Patch objects
        if dense:
            faces = [_lighter(colour_of[par], light_of[kind]) if _is_io(kind) else colour_of[par]
                     for *_, par, kind in group]
            coll = PolyCollection(verts, facecolors=faces, edgecolors="none", linewidths=0)
        else:
            coll = PolyCollection(verts, facecolors=[colour_of[b[4]] for b in group],
                                  edgecolors="black", linewidths=0.3, hatch=hatch or None)
        ax.add_collection(coll)
    axis.apply(ax)
    ax.set_ylim(0, max(top, 1))
    if label_jobs and boxes:
        _label_jobs(ax, boxes, axis)
    ax.set_ylabel(ylabel)
    if title:
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
    if 0 < top <= 40:
        ax.set_yticks(np.arange(0, top) + 0.5, [str(i) for i in range(top)], fontsize=7)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    return fig


def _label_jobs(ax, boxes: list, axis: TimeAxis) -> None:
    """Each job's id on its largest rectangle, when the rectangle is wide and tall enough for
    it at the axes' size (a label wider than its job would cover the neighbours)."""
    fig = ax.figure
    pos = ax.get_position()
    width_px = pos.width * fig.get_figwidth() * fig.dpi
    height_px = pos.height * fig.get_figheight() * fig.dpi
    x_lo, x_hi = ax.get_xlim()
    y_lo, y_hi = ax.get_ylim()
    best: dict = {}
    for x, y, w, h, job, _ in boxes:
        area = w * h
        if area > best.get(job, (0.0,))[0]:
            best[job] = (area, x, y, w, h)
    for job, (_, x, y, w, h) in best.items():
        text = str(job)
        w_px = w / axis.scale / (x_hi - x_lo) * width_px
        h_px = h / (y_hi - y_lo) * height_px
        if w_px < 6.0 * len(text) + 4 or h_px < 10:
            continue
        ax.text(float(axis.x(x + w / 2)), y + h / 2, text, ha="center", va="center", fontsize=7,
                clip_on=True,
                bbox={"facecolor": "white", "alpha": 0.7, "pad": 1, "edgecolor": "none"})


def _is_io(kind: str) -> bool:
    return bool(kind) and kind != "compute"


def _lighter(rgba, amount: float) -> tuple[float, float, float, float]:
    r, g, b, a = rgba
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount, a)


def _plot_occupancy(rows: pd.DataFrame, ax, title: str | None, limit: int,
                    n_resources: int | None, axis: TimeAxis, ylabel: str, notes: dict | None):
    """The aggregated chart: ``occupancy`` of every executed row as an image over the machine's
    ids, the title saying what was aggregated and how."""
    from mrsched.analysis.occupancy import occupancy

    fig = ax.figure
    starts, finishes, lows, highs = [], [], [], []
    for start, finish, alloc in zip(rows["starting_time"].to_numpy(float),
                                    rows["finish_time"].to_numpy(float), rows["allocated_resources"]):
        for lo, hi in id_ranges(alloc):
            if n_resources is not None:
                if lo >= n_resources:
                    continue
                hi = min(hi, n_resources - 1)
            starts.append(start)
            finishes.append(finish)
            lows.append(lo)
            highs.append(hi)
    grid = occupancy(starts, finishes, lows, highs, n_ids=n_resources)
    t1 = grid.t0 + grid.bin_seconds * grid.busy.shape[0]
    image = ax.imshow(grid.busy.T, origin="lower", aspect="auto", cmap="viridis", vmin=0.0,
                      vmax=1.0, interpolation="nearest",
                      extent=(float(axis.x(grid.t0)), float(axis.x(t1)), 0,
                              grid.ids_per_row * grid.busy.shape[1]))
    fig.colorbar(image, ax=ax, label="share in use", pad=0.01)
    jobs = rows["parent"].nunique() if "parent" in rows.columns else len(rows)
    group = f"{grid.ids_per_row} resource ids" if grid.ids_per_row > 1 else "one resource id"
    bin_text = number_text(grid.bin_seconds)
    what = (f"aggregated: {jobs:,} jobs, {len(rows):,} executed rows (over {limit:,}); each cell "
            f"is the share of {group} x {bin_text} s in use")
    if notes is not None:
        notes["gantt"] = what
    else:
        ax.set_title(f"{title or 'Gantt chart'}\n{what}", fontsize=9)
    axis.apply(ax)
    ax.set_ylim(0, n_resources if n_resources is not None else grid.ids_per_row * grid.busy.shape[1])
    ax.set_ylabel(ylabel)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    return fig
