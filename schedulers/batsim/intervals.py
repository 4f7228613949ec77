"""Batsim interval-set strings (``"0-3 7 9-10"``) <-> ``procset.ProcSet``.

Batsim writes resource sets as closed ranges and single ids separated by spaces; the canonical
form is sorted with maximal ranges. Parsing is on the protocol's hot path (every
``JOB_COMPLETED`` and every ``EXECUTE_JOB``), hence the hand-written parser below: procset's own
``from_str`` re-merges interval by interval and is several times slower.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from procset import ProcInt, ProcSet

from mrsched.errors import ProtocolError

__all__ = ["parse_intervals", "format_intervals", "is_known_intervals", "procset_of_ids", "procset_of_runs",
           "text_of_runs"]

# Fast construction: when the parsed intervals are already canonical (the only form Batsim and
# our schedulers emit) we hand the list to the ProcSet directly instead of merging one by one.
# Guarded so that a future procset without the private list simply takes the slow path.
_FAST_BUILD = hasattr(ProcSet(), "_itvs")
_new_tuple = tuple.__new__


def _built(bounds: list[tuple[int, int]]) -> ProcSet:
    """A ProcSet holding already-checked canonical ``(lo, hi)`` bounds as its intervals
    (ProcSet() and ProcInt() would check and merge them again)."""
    ps = ProcSet.__new__(ProcSet)
    ps._itvs = [_new_tuple(ProcInt, b) for b in bounds]
    return ps


#: canonical text -> its (immutable) ProcInt list: allocations repeat across a run (every
#: JOB_COMPLETED carries one), so a repeated text costs a dict lookup and a list copy
_PARSED: dict[str, list] = {}
_PARSED_MAX = 1 << 14


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
    cached = _PARSED.get(text)
    if cached is not None:
        ps = ProcSet.__new__(ProcSet)
        ps._itvs = cached.copy()
        return ps
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
        ps = _built(itvs)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = ps._itvs.copy()
        return ps
    return ProcSet(*itvs)


#: canonical texts written by ``text_of_runs`` (a scheduler's EXECUTE_JOB allocs), bounded
_SENT: set[str] = set()


def is_known_intervals(text: Any) -> bool:
    """Whether ``text`` is a canonical interval text parsed or written earlier (so valid)."""
    return type(text) is str and (text in _SENT or text in _PARSED)


def text_of_runs(runs: list[tuple[int, int]]) -> str:
    """Canonical text of closed ranges already sorted, disjoint and non-adjacent (the runs of
    a node bitmask, ``Cluster.runs_of``), remembered for ``is_known_intervals``."""
    text = " ".join([f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in runs])
    if len(_SENT) >= _PARSED_MAX:
        _SENT.clear()
    _SENT.add(text)
    return text


def procset_of_ids(ids: Iterable[int]) -> ProcSet:
    """ProcSet of resource ids without a text round-trip (a scheduler's start: ids ascending).

    Ascending distinct non-negative ints are grouped into ranges directly; anything else goes
    through ``format_intervals``/``parse_intervals`` and their checks.
    """
    values = ids if type(ids) in (list, tuple) else list(ids)
    if not (_FAST_BUILD and values) or any(type(v) is not int for v in values) or values[0] < 0:
        return parse_intervals(format_intervals(values))
    itvs = []
    lo = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            if v <= prev:   # not ascending: the general path merges and checks
                return parse_intervals(format_intervals(values))
            itvs.append((lo, prev))
            lo = v
        prev = v
    itvs.append((lo, prev))
    return _built(itvs)


def procset_of_runs(runs: list[tuple[int, int]]) -> ProcSet:
    """ProcSet of closed ``(lo, hi)`` ranges already sorted, disjoint and non-adjacent (the
    runs of a node bitmask, ``Cluster.runs_of``): no per-id work."""
    return _built(runs) if _FAST_BUILD else ProcSet(*runs)


def format_intervals(ids: ProcSet | Iterable[int]) -> str:
    """Canonical Batsim text of a resource set: sorted, maximal ranges, single ids alone.

    Accepts a ``ProcSet`` or any iterable of non-negative ints (duplicates allowed).
    """
    if isinstance(ids, ProcSet):
        # one EXECUTE_JOB each: read the interval list directly, join a list (not a generator)
        if not _FAST_BUILD:
            return " ".join([f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in ids.intervals()])
        itvs = ids._itvs
        text = " ".join([f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in itvs])
        # the set comes back in this text (JOB_COMPLETED of an EXECUTE_JOB): parse it for free
        if text not in _PARSED:
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            _PARSED[text] = itvs.copy()
        return text
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
