"""``ordered_sum``: floats added left to right, whatever the interpreter's ``sum()`` does."""

from __future__ import annotations

import math

from mrsched.sums import ordered_sum


def test_added_in_order_without_compensation():
    """0.1 + 0.2 + 0.3 in doubles, as SimGrid's latency loop adds three links: 3.12's
    compensated ``sum()`` (and ``math.fsum``) give 0.6."""
    assert ordered_sum([0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3 == 0.6000000000000001
    assert math.fsum([0.1, 0.2, 0.3]) == 0.6
    assert ordered_sum([1e16, 1.0, -1e16]) == 0.0       # (compensated: 1.0)
    assert ordered_sum(x for x in ()) == 0.0
