"""Gantt charts: one polygon per job and contiguous id range, phases hatched by kind, and dense
charts (too many rectangles for hatching to show) drawn with I/O phases lighter instead."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mrsched.analysis.gantt import plot_gantt  # noqa: E402


def phases(n_jobs: int) -> pd.DataFrame:
    """Each job: stage_in on ids 0-1, compute on 0-1 and 4, stage_out on 0-1."""
    rows = []
    for j in range(n_jobs):
        t = 100.0 * j
        for k, (kind, alloc, dt) in enumerate((("stage_in", "0-1", 10), ("compute", "0-1 4", 50),
                                               ("stage_out", "0-1", 10))):
            rows.append({"job_id": f"{j}-{k}", "parent": str(j), "phase": kind, "starting_time": t,
                         "finish_time": t + dt, "allocated_resources": alloc})
            t += dt
    rows.append({"job_id": "never", "parent": "x", "phase": "compute", "starting_time": np.nan,
                 "finish_time": np.nan, "allocated_resources": ""})
    return pd.DataFrame(rows)


def rectangles(fig):
    out = []
    for coll in fig.axes[0].collections:
        for path, face in zip(coll.get_paths(), coll.get_facecolors()):
            (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
            out.append(((x0, y0, x1 - x0, y1 - y0), tuple(face), coll.get_hatch()))
    return out


def test_one_rectangle_per_phase_and_range_hatched_by_kind():
    fig = plot_gantt(phases(2), title="t")
    rects = rectangles(fig)
    assert len(rects) == 2 * 4        # 2 jobs x (stage_in, 2 compute ranges, stage_out)
    boxes = sorted(r[0] for r in rects)
    assert boxes[0] == (0.0, 0.0, 10.0, 2.0) and (10.0, 4.0, 50.0, 1.0) in boxes
    by_kind = {r[0][:2]: r[2] for r in rects}
    assert by_kind[(0.0, 0.0)] != by_kind[(10.0, 0.0)]    # stage_in and compute hatched apart
    assert all(h for *_, h in rects)
    assert fig.axes[0].get_ylim()[1] >= 5


def test_dense_chart_draws_io_phases_lighter_without_hatching():
    df = phases(30)
    fig = plot_gantt(df, title="t", dense_limit=50)     # 120 rectangles > 50
    rects = rectangles(fig)
    assert len(rects) == 30 * 4 and all(h is None for *_, h in rects)
    colour = {r[0][:2]: r[1] for r in rects}
    compute, stage_in = colour[(10.0, 0.0)], colour[(0.0, 0.0)]
    # the same job's colour, its I/O phase closer to white
    assert all(s >= c for s, c in zip(stage_in[:3], compute[:3])) and stage_in != compute
    lighter = tuple(c + (1 - c) * 0.45 for c in compute[:3])
    assert np.allclose(stage_in[:3], lighter)
