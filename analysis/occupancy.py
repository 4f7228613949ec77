"""Occupancy grid of a schedule: the share of each cell (a time bin x a group of resource
ids) that executed jobs kept busy. It stands in for a Gantt chart when a run has too many
jobs to draw one rectangle each (a 1,000,000-job run): exact, whatever the number of jobs,
in time linear in the number of rectangles and memory linear in the grid.

Each rectangle [s, f) x [lo, hi + 1) covers a cell by the product of its overlaps on both
axes. Its covered area up to a point (e, x) is T(e) I(x) with T(e) = clamp(e - s, 0, f - s) =
(e - s)[s < e] - (e - f)[f < e], and I(x) likewise from lo and hi + 1; expanding the product
gives four corner terms of the form sign (e - a)(x - b)[a < e][b < x], so that four 2-D
prefix sums (of sign, sign b, sign a, sign a b) give the covered area at every grid corner,
and differences of corners the area inside every cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Occupancy:
    """``busy[i, g]``: share (0-1) of time bin i x id group g in use; bins of ``bin_seconds``
    from ``t0``, groups of ``ids_per_row`` consecutive resource ids from id 0."""

    busy: np.ndarray
    t0: float
    bin_seconds: float
    ids_per_row: int
    n_ids: int


def occupancy(starts, finishes, lows, highs, *, n_ids: int | None = None, time_bins: int = 800,
              max_rows: int = 400) -> Occupancy:
    """The occupancy grid of rectangles [starts, finishes) x [lows, highs] (inclusive ids):
    ``time_bins`` bins over first start to last finish, resource ids grouped so that there
    are at most ``max_rows`` rows."""
    s = np.asarray(starts, dtype=float)
    f = np.asarray(finishes, dtype=float)
    lo = np.asarray(lows, dtype=float)
    hi1 = np.asarray(highs, dtype=float) + 1.0
    n_ids = int(hi1.max()) if n_ids is None and hi1.size else int(n_ids or 0)
    t0 = float(s.min()) if s.size else 0.0
    t1 = float(f.max()) if f.size else 1.0
    bin_seconds = (t1 - t0) / time_bins if t1 > t0 else 1.0
    per_row = max(1, -(-n_ids // max_rows))
    rows = max(1, -(-n_ids // per_row))
    # grid units: one time bin, one id group (keeps the products small: exact to ~1e-9)
    ts, tf = (s - t0) / bin_seconds, (f - t0) / bin_seconds
    xl, xh = lo / per_row, hi1 / per_row
    sums = [np.zeros((time_bins + 2, rows + 2)) for _ in range(4)]   # sign, sign b, sign a, sign ab
    for a, b, sign in ((ts, xl, 1.0), (ts, xh, -1.0), (tf, xl, -1.0), (tf, xh, 1.0)):
        # [a < e] holds from grid edge ceil-above a on: edge index = number of edges <= a
        ie = np.clip(np.floor(a).astype(np.int64) + 1, 0, time_bins + 1)
        ix = np.clip(np.floor(b).astype(np.int64) + 1, 0, rows + 1)
        for acc, w in zip(sums, (sign, sign * b, sign * a, sign * a * b)):
            np.add.at(acc, (ie, ix), np.broadcast_to(w, a.shape))
    k0, kb, ka, kab = (np.cumsum(np.cumsum(acc, axis=0), axis=1)[: time_bins + 1, : rows + 1]
                       for acc in sums)
    e = np.arange(time_bins + 1, dtype=float)[:, None]
    x = np.arange(rows + 1, dtype=float)[None, :]
    area = e * x * k0 - e * kb - x * ka + kab        # covered area below and left of each corner
    cells = area[1:, 1:] - area[:-1, 1:] - area[1:, :-1] + area[:-1, :-1]
    width = np.minimum(per_row, n_ids - np.arange(rows) * per_row) / per_row   # last group may be short
    busy = np.clip(cells / width[None, :], 0.0, 1.0)
    return Occupancy(busy=busy, t0=t0, bin_seconds=bin_seconds, ids_per_row=per_row, n_ids=n_ids)
