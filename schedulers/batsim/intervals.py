"""Batsim interval-set strings (``"0-3 7 9-10"``) <-> ``procset.ProcSet``.

Batsim writes resource sets as closed ranges and single ids separated by spaces; the canonical
form is sorted with maximal ranges. Parsing is on the protocol's hot path (every
``JOB_COMPLETED`` and every ``EXECUTE_JOB``), hence the hand-written parser below: procset's own
``from_str`` re-merges interval by interval and is several times slower.
"""

from __future__ import annotations

from collections.abc import Iterable

from procset import ProcInt, ProcSet

from mrsched.errors import ProtocolError

__all__ = ["parse_intervals", "format_intervals"]

# Fast construction: when the parsed intervals are already canonical (the only form Batsim and
# our schedulers emit) we hand the list to the ProcSet directly instead of merging one by one.
# Guarded so that a future procset without the private list simply takes the slow path.
_FAST_BUILD = hasattr(ProcSet(), "_itvs")


def _bad(text: str, field: str | None, why: str) -> ProtocolError:
    return ProtocolError(f"invalid interval set {text!r}: {why}", field=field,
                         hint="expected ids or closed ranges separated by spaces, e.g. '0-3 7'")


def parse_intervals(text: str, *, field: str | None = None) -> ProcSet:
    """Parse ``"0-3 7"`` into ``ProcSet((0, 3), 7)``; ``""`` is the empty set.

    Non-canonical input (unsorted, overlapping, adjacent ranges) is accepted and merged.
    ``field`` only names the offending field in the error message.
    """
    if type(text) is not str:
        raise ProtocolError(f"interval set must be a string, got {type(text).__name__} "
                            f"{text!r}", field=field)
    if not text:
        return ProcSet()
    itvs = []
    canonical = True
    last = -2
    try:
        for token in text.split(" "):
            dash = token.find("-")
            if dash < 0:
                if not (token.isdigit() and token.isascii()):
                    raise ValueError(token)
                lo = hi = int(token)
            else:
                a = token[:dash]
                b = token[dash + 1:]
                # int() alone would accept '+3', ' 3', '3_0'; isdigit() alone non-ASCII digits
                if not (a.isdigit() and b.isdigit() and token.isascii()):
                    raise ValueError(token)
                lo = int(a)
                hi = int(b)
            if hi < lo:
                raise _bad(text, field, f"range '{token}' is reversed")
            if lo <= last + 1:
                canonical = False
            last = hi if hi > last else last
            itvs.append((lo, hi))
    except ValueError:
        raise _bad(text, field, "not a list of non-negative integers and ranges") from None
    if canonical and _FAST_BUILD:
        ps = ProcSet()
        ps._itvs = [ProcInt(lo, hi) for lo, hi in itvs]
        return ps
    return ProcSet(*itvs)


def format_intervals(ids: ProcSet | Iterable[int]) -> str:
    """Canonical Batsim text of a resource set: sorted, maximal ranges, single ids alone.

    Accepts a ``ProcSet`` or any iterable of non-negative ints (duplicates allowed).
    """
    if isinstance(ids, ProcSet):
        return " ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ids.intervals())
    if isinstance(ids, str):
        raise ProtocolError(f"format_intervals() takes ids, not the string {ids!r}",
                            hint="use parse_intervals() for text")
    values = []
    for v in ids:
        if type(v) is not int and not (hasattr(v, "__index__") and not isinstance(v, bool)):
            raise ProtocolError(f"resource id {v!r} is not an integer")
        v = int(v)
        if v < 0:
            raise ProtocolError(f"resource id {v} is negative")
        values.append(v)
    if not values:
        return ""
    values = sorted(set(values))
    parts = []
    start = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = v
        prev = v
    parts.append(str(start) if start == prev else f"{start}-{prev}")
    return " ".join(parts)
