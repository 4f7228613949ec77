"""The domains of the numbers read from inputs: one rule, shared by every reader (issue 43).

Times (submission times, walltimes, delays) stay below :data:`MAX_TIME`: a double resolves a
time ``t`` to ``t * 2**-52``, so below 1e9 s (31.7 years) the step is 1.2e-7 s and the sum of
a submission time, a walltime and a delay (below 3e9 s) still resolves 4.8e-7 s: the
simulation stays exact to the microsecond Batsim's outputs print (6 decimals). Beyond it a
trace of 1e308 s would run with every duration rounded away.

Host properties the schedulers read as numbers (docs/DESIGN.md "Cluster conventions") are
finite, whole where they count something, and within :data:`NUMERIC_PROPERTIES`' domain.
"""

from __future__ import annotations

import math

#: the largest submission time, walltime or delay a workload may give (seconds)
MAX_TIME = 1e9

#: how deep the elements of a platform file may nest: real platforms use a handful of levels;
#: the loader and the router walk zones recursively, so a file nested thousands deep is
#: refused by name first
MAX_DEPTH = 100

#: how deep a value inside a workload's job or profile may nest (JSON objects and lists):
#: the engine forwards it to the scheduler, whose JSON writer recurses
MAX_JSON_DEPTH = 64

#: host properties the schedulers read as numbers (DESIGN.md "Cluster conventions"), with
#: their domain: (integer?, smallest value, is the smallest allowed?)
NUMERIC_PROPERTIES = {
    "bb_capacity": (False, 0.0, True),   # bytes of burst buffer
    "gpus": (True, 0, True),
    "cores": (True, 1, True),
    "group": (True, 0, True),
    "chassis": (True, 0, True),
    "edge": (True, 0, True),
    "edge_bw": (False, 0.0, False),      # bytes/s of a bandwidth-tree level
    "node_bw": (False, 0.0, False),
    "core_bw": (False, 0.0, False),
    "pfs_bw": (False, 0.0, False),
}


def property_problem(key: str, value) -> str | None:
    """What is wrong with host property ``key`` = ``value`` (None: fine, or not a numeric
    property): finite, whole where a count is meant, and within its domain."""
    rule = NUMERIC_PROPERTIES.get(key)
    if rule is None or value is None or value == "":
        return None
    integer, low, closed = rule
    try:
        number = float(str(value).strip())
    except ValueError:
        return f"'{value}' is not a number"
    if not math.isfinite(number):
        return f"'{value}' is not a finite number"
    if integer and not number.is_integer():
        return f"'{value}' is not a whole number"
    if number < low or (number == low and not closed):
        return f"'{value}' must be {'at least' if closed else 'above'} {low:g}"
    return None


def time_problem(value) -> str | None:
    """What is wrong with a time read from an input (None: a finite number in [0, MAX_TIME])."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number of seconds, got {value!r}"
    if not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if value > MAX_TIME:
        return (f"{value!r} s is beyond {MAX_TIME:.0e} s (31.7 years), past which the clock "
                "loses the microsecond")
    return None
