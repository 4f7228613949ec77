"""Sums of floats added one at a time in the order given, as C's ``s += x`` loop adds them.

Python 3.12's ``sum()`` compensates its rounding (Neumaier summation): a sum of floats there
may differ in its last bit from the same sum under 3.11, and from SimGrid's and Batsim's own
loops (a route's latency, ``RoutedZone::get_global_route``). Results must not depend on the
interpreter: sums whose bits reach an output or a decision go through :func:`ordered_sum`.
"""

from __future__ import annotations

from collections.abc import Iterable


def ordered_sum(values: Iterable[float]) -> float:
    """``values`` added left to right in doubles (0.0 when there are none)."""
    total = 0.0
    for x in values:
        total += x
    return total
