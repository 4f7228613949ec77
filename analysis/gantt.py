"""Gantt chart of one run: every executed Batsim job as rectangles over its allocated
resource ids (one rectangle per contiguous id range), from start to finish.

Our own rather than evalys': evalys 4.0.7's ``JobSet.gantt(ax=...)`` fails on its own
``bulksetattr`` (no ``ax`` attribute) and it knows nothing of I/O phases; here the phases of
one user job share its colour and are hatched by phase kind.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "++", "--", "**", "||")


def _ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for part in str(text).split():
        lo, _, hi = part.partition("-")
        out.append((int(lo), int(hi or lo)))
    return out


def plot_gantt(phases: pd.DataFrame, *, ax=None, title: str = "Gantt chart",
               label_jobs: bool | None = None, max_labels: int = 80):
    """Draw the executed rows of ``phase_table`` (or any job table with ``starting_time``,
    ``finish_time``, ``allocated_resources``) on ``ax``; return the Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Patch, Rectangle

    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    else:
        fig = ax.figure
    rows = phases[phases["starting_time"].notna() & phases["finish_time"].notna()]
    parent = rows["parent"] if "parent" in rows.columns else rows["job_id"]
    kinds = rows["phase"] if "phase" in rows.columns else pd.Series("", index=rows.index)
    parents = list(dict.fromkeys(parent))  # first-appearance order: deterministic colours
    cmap = plt.get_cmap("tab20")
    colour_of = {p: cmap(i % 20) for i, p in enumerate(parents)}
    kind_list = sorted(set(kinds) - {""})
    hatch_of = {k: _HATCHES[(i + 1) % len(_HATCHES)] for i, k in enumerate(kind_list)}
    hatch_of[""] = ""
    if label_jobs is None:
        label_jobs = len(parents) <= max_labels

    patches_by_hatch: dict[str, list] = {}
    colours_by_hatch: dict[str, list] = {}
    max_id = -1
    label_at: dict = {}  # parent -> (area, x, y): labels go on a job's largest rectangle
    for start, finish, alloc, par, kind in zip(rows["starting_time"], rows["finish_time"],
                                               rows["allocated_resources"], parent, kinds):
        width = float(finish) - float(start)
        for lo, hi in _ranges(alloc):
            max_id = max(max_id, hi)
            rect = Rectangle((float(start), lo), width, hi - lo + 1)
            patches_by_hatch.setdefault(hatch_of[kind], []).append(rect)
            colours_by_hatch.setdefault(hatch_of[kind], []).append(colour_of[par])
            area = width * (hi - lo + 1)
            if label_jobs and area > label_at.get(par, (0.0,))[0]:
                label_at[par] = (area, float(start) + width / 2, lo + (hi - lo + 1) / 2)
    for par, (_, x, y) in label_at.items():
        ax.text(x, y, str(par), ha="center", va="center", fontsize=7, clip_on=True,
                bbox={"facecolor": "white", "alpha": 0.7, "pad": 1, "edgecolor": "none"})
    for hatch, patches in patches_by_hatch.items():
        coll = PatchCollection(patches, facecolors=colours_by_hatch[hatch], edgecolors="black",
                               linewidths=0.4, hatch=hatch or None)
        ax.add_collection(coll)
    if len(rows):
        t0, t1 = float(rows["starting_time"].min()), float(rows["finish_time"].max())
        pad = max((t1 - t0) * 0.01, 1e-6)
        ax.set_xlim(t0 - pad, t1 + pad)
        ax.set_ylim(-0.2, max_id + 1.2)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("resource id")
    ax.set_title(title)
    if kind_list:
        ax.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch=hatch_of[k], label=k)
                           for k in kind_list], loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  fontsize=7, title="phase")
    if max_id >= 0 and max_id < 40:
        ax.set_yticks(np.arange(0, max_id + 1) + 0.5, [str(i) for i in range(max_id + 1)],
                      fontsize=7)
    fig.tight_layout()
    return fig
