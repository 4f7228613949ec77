"""The occupancy grid that replaces a Gantt chart's rectangles on very large runs: exactly
the busy share of every cell, and the chart that says it is aggregated."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

from mrsched.analysis.gantt import plot_gantt  # noqa: E402
from mrsched.analysis.occupancy import occupancy  # noqa: E402


def _brute(s, f, lo, hi, grid, n_ids):
    """Busy share of each cell by direct overlap sums."""
    out = np.zeros_like(grid.busy)
    k = grid.ids_per_row
    for i in range(out.shape[0]):
        a, b = grid.t0 + i * grid.bin_seconds, grid.t0 + (i + 1) * grid.bin_seconds
        for g in range(out.shape[1]):
            x0, x1 = g * k, min((g + 1) * k, n_ids)
            t = np.clip(np.minimum(f, b) - np.maximum(s, a), 0, None)
            x = np.clip(np.minimum(hi + 1, x1) - np.maximum(lo, x0), 0, None)
            out[i, g] = (t * x).sum() / ((b - a) * (x1 - x0))
    return np.clip(out, 0, 1)


@pytest.mark.parametrize("bins, rows", [(37, 13), (10, 60), (1, 1)])
def test_occupancy_is_the_exact_busy_share_of_each_cell(bins, rows):
    rng = np.random.default_rng(bins)
    n = 200
    s = rng.uniform(0, 1000, n)
    f = s + rng.uniform(0, 200, n)
    lo = rng.integers(0, 50, n)
    hi = lo + rng.integers(0, 10, n)
    grid = occupancy(s, f, lo, hi, n_ids=60, time_bins=bins, max_rows=rows)
    assert grid.busy.shape == (bins, -(-60 // grid.ids_per_row))
    assert grid.busy == pytest.approx(_brute(s, f, lo, hi, grid, 60), abs=1e-9)


def test_one_job_fills_exactly_its_cells():
    grid = occupancy([0.0], [10.0], [2], [3], n_ids=8, time_bins=4, max_rows=4)
    assert grid.ids_per_row == 2 and grid.bin_seconds == 2.5
    assert grid.busy.tolist() == [[0.0, 1.0, 0.0, 0.0]] * 4


def _phases(n):
    t = np.arange(n, dtype=float) * 10
    return pd.DataFrame({"job_id": [str(i) for i in range(n)], "starting_time": t,
                         "finish_time": t + 25.0, "allocated_resources": [f"{i % 6}-{i % 6 + 1}" for i in range(n)]})


def test_a_chart_beyond_the_limit_is_an_occupancy_grid_that_says_so():
    df = _phases(300)
    ax = plot_gantt(df, title="Gantt: big", aggregate_limit=100).axes[0]
    images = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    assert len(images) == 1 and not any(isinstance(c, PolyCollection) for c in ax.collections)
    title = ax.get_title()
    assert title.startswith("Gantt: big\naggregated: 300 jobs, 300 executed rows (over 100)")
    grid = occupancy(df["starting_time"], df["finish_time"], np.arange(300) % 6, np.arange(300) % 6 + 1)
    assert np.asarray(images[0].get_array()) == pytest.approx(grid.busy.T)
    # below the limit: rectangles as before
    small = plot_gantt(df, title="t").axes[0]
    assert not any(isinstance(a, AxesImage) for a in small.get_children())


@pytest.mark.slow
def test_a_million_job_chart_is_drawn_aggregated(tmp_path):
    import time

    from mrsched.analysis.plots import png_bytes

    rng = np.random.default_rng(0)
    n = 1_000_000
    s = np.sort(rng.uniform(0, 3e7, n))
    lo = rng.integers(0, 1000, n)
    df = pd.DataFrame({"job_id": np.arange(n).astype(str), "starting_time": s,
                       "finish_time": s + rng.exponential(3000, n),
                       "allocated_resources": [f"{a}-{a + 3}" for a in lo]})
    t = time.perf_counter()
    data = png_bytes(plot_gantt(df, title="Gantt: 1M"))
    assert time.perf_counter() - t < 60 and data.startswith(b"\x89PNG")
