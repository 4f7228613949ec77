"""The time axis of a run's figures: one origin, one end and one unit for its Gantt chart,
burst-buffer, queue and utilisation panels, so that they line up (issue 41 item 7).

The axis starts at 0 = the run's first submission (a trace part submits from its own
offset: a chart of part 3/16 would otherwise start at 1e6 s) and ends at the latest finish;
its unit follows the span: seconds up to 3 hours, hours up to 3 days, days beyond, with
ticks on steps natural for the unit (hours by 1, 2, 3, 4, 6, 12...) and the report's number
format (thousands separators, no offset, no scientific notation). A series of too many steps
is drawn as per-bin aggregates (``binned_steps``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: (unit, seconds per unit, largest span shown in it, tick steps within a decade)
UNITS = (("s", 1.0, 3 * 3600.0, (1, 2, 2.5, 5, 10)),
         ("h", 3600.0, 3 * 86400.0, (1, 2, 3, 4, 6, 10)),
         ("d", 86400.0, math.inf, (1, 2, 5, 7, 10)))


def number_text(v: float) -> str:
    """A tick label in the report's number format: 20,000 (not 20000 or 2e4), 0.5, 12."""
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if v != 0 else "0"


@dataclass(frozen=True)
class TimeAxis:
    """Simulated time ``t0`` is drawn at 0, ``end`` at the right edge, in ``unit`` (``scale``
    seconds each); ``shifted``: whether ``t0`` is not the simulation's 0 (the label says so)."""

    t0: float = 0.0
    end: float = 1.0
    unit: str = "s"
    scale: float = 1.0

    @property
    def shifted(self) -> bool:
        return self.t0 != 0.0

    @property
    def label(self) -> str:
        where = "time since the first submission" if self.shifted else "time"
        return f"{where} ({self.unit})"

    @property
    def right(self) -> float:
        """The right edge in axis units."""
        return (self.end - self.t0) / self.scale

    def x(self, t):
        """Simulated seconds (a number or an array) -> axis units."""
        return (t - self.t0) / self.scale

    def apply(self, ax, *, label: bool = True) -> None:
        """Limits 0 .. ``right``, ticks natural for the unit, labels in the report's format."""
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        steps = next(s for u, _, _, s in UNITS if u == self.unit)
        ax.set_xlim(0.0, self.right)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=10, steps=list(steps), min_n_ticks=3))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: number_text(v)))
        if label:
            ax.set_xlabel(self.label)


def time_axis(t0: float, t1: float) -> TimeAxis:
    """The axis from ``t0`` to ``t1`` (simulated seconds), its unit chosen by the span."""
    t0 = float(t0) if math.isfinite(t0) else 0.0
    t1 = float(t1) if math.isfinite(t1) and t1 > t0 else t0 + 1.0
    span = t1 - t0
    unit, scale = next((u, s) for u, s, top, _ in UNITS if span <= top)
    return TimeAxis(t0=t0, end=t1, unit=unit, scale=scale)


#: above this many steps in a series the utilisation plot shows per-bin aggregates instead
UTILISATION_STEPS = 20_000
UTILISATION_BINS = 1_000


def binned_steps(time: np.ndarray, value: np.ndarray, bins: int) -> tuple[np.ndarray, ...]:
    """A step function (``value[i]`` on ``[time[i], time[i+1])``, the last one to its own
    time) cut in ``bins`` equal bins: their edges and each bin's time-weighted mean, minimum
    and maximum (the steps that overlap it)."""
    time, value = np.asarray(time, float), np.asarray(value, float)
    edges = np.linspace(time[0], time[-1], bins + 1)
    area = np.concatenate([[0.0], np.cumsum(value[:-1] * np.diff(time))])   # integral at each step
    mean = np.diff(np.interp(edges, time, area)) / np.diff(edges)
    first = np.searchsorted(time, edges[:-1], side="right") - 1      # step in force at a bin's start
    last = np.searchsorted(time, edges[1:], side="left") - 1         # last step starting inside it
    idx = np.empty(2 * bins, dtype=np.intp)
    idx[0::2], idx[1::2] = first, np.maximum(last, first) + 1         # value[first:last + 1]
    padded = np.append(value, value[-1])                              # so that last + 1 is an index
    low = np.minimum.reduceat(padded, idx)[0::2]
    high = np.maximum.reduceat(padded, idx)[0::2]
    return edges, mean, low, high
