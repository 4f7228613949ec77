"""Gantt charts: one polygon per job and contiguous id range, phases hatched by kind, and dense
charts (too many rectangles for hatching to show) drawn with I/O phases lighter instead."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

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
    assert by_kind[(0.0, 0.0)] == "//" and by_kind[(60.0, 0.0)] == "\\\\"   # stage_in, stage_out
    assert by_kind[(10.0, 0.0)] is None                                  # compute is plain
    assert fig.axes[0].get_ylim()[1] >= 5


def test_dense_chart_draws_io_phases_lighter_without_hatching():
    df = phases(30)
    fig = plot_gantt(df, title="t", dense_limit=50)     # 120 rectangles > 50
    rects = rectangles(fig)
    assert len(rects) == 30 * 4 and all(h is None for *_, h in rects)
    colour = {r[0][:2]: r[1] for r in rects}
    compute, stage_in = colour[(10.0, 0.0)], colour[(0.0, 0.0)]
    stage_out = colour[(60.0, 0.0)]
    # the same job's colour, its I/O phases closer to white, by an amount of their kind
    assert all(s >= c for s, c in zip(stage_in[:3], compute[:3])) and stage_in != compute
    assert np.allclose(stage_in[:3], tuple(c + (1 - c) * 0.3 for c in compute[:3]))
    assert np.allclose(stage_out[:3], tuple(c + (1 - c) * 0.5 for c in compute[:3]))


def _legend_swatches(fig):
    legend = fig.axes[0].get_legend()
    return {t.get_text(): (tuple(p.get_facecolor()), p.get_hatch())
            for t, p in zip(legend.get_texts(), legend.get_patches())}


@pytest.mark.parametrize("dense_limit", [10_000, 50])
def test_every_phase_kind_has_its_own_legend_swatch(dense_limit):
    """Dense charts drew every I/O kind's swatch in the same light grey."""
    df = phases(30)
    kinds = ["stage_in", "checkpoint", "drain", "stage_out"]
    df["phase"] = [k if k == "compute" else kinds[i % 4] for i, k in enumerate(df["phase"])]
    swatches = _legend_swatches(plot_gantt(df, title="t", dense_limit=dense_limit))
    assert set(swatches) == {"compute", *kinds}
    assert len(set(swatches.values())) == 5, swatches
