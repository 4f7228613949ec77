"""Batsim interval-set strings (``"0-3 7 9-10"``): the one place that reads and writes them.

Batsim writes resource sets as closed ranges and single ids separated by spaces; the canonical
form is sorted with maximal ranges. Parsing is on the protocol's hot path (every
``JOB_COMPLETED`` and every ``EXECUTE_JOB``), hence the hand-written parsers below: procset's own
``from_str`` re-merges interval by interval and is several times slower.

Two readers, one per side of the wire:

- the scheduler side reads what Batsim sends into a ``procset.ProcSet`` (``parse_intervals``,
  strict: single spaces, ASCII digits);
- the embedded engine reads what a scheduler sends in ``EXECUTE_JOB`` (``read_alloc``,
  ``parse_ids``) as Batsim 4.2.1 does (``IntervalSet::from_string_hyphen``: any run of spaces
  between tokens, ``std::stoi`` numbers), into the allocation's ids and their ranges, with
  errors naming the event, the job and the field.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import chain, compress
from operator import lt as _lt, ne
from typing import Any

from procset import ProcInt, ProcSet

from mrsched.errors import ProtocolError

__all__ = ["parse_intervals", "format_intervals", "is_known_intervals", "procset_of_ids", "procset_of_runs",
           "text_of_runs", "read_alloc", "parse_ids", "canonical_runs", "runs_of_ids", "format_runs",
           "RunIds"]

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


#: canonical texts written by ``text_of_runs`` (a scheduler's EXECUTE_JOB allocs) -> their
#: ranges, bounded: the engine of the same process reads such a text back (``read_alloc``)
#: without parsing it again; the ranges are shared, read-only
_SENT: dict[str, list[tuple[int, int]]] = {}


def is_known_intervals(text: Any) -> bool:
    """Whether ``text`` is a canonical interval text parsed or written earlier (so valid)."""
    return type(text) is str and (text in _SENT or text in _PARSED)


def text_of_runs(runs: list[tuple[int, int]]) -> str:
    """Canonical text of closed ranges already sorted, disjoint and non-adjacent (the runs of
    a node bitmask, ``Cluster.runs_of``), remembered with its ranges for ``read_alloc``. The
    ranges are kept, not copied: the caller hands them over. Ranges that are not canonical
    are written as given and not remembered (``read_alloc`` then parses the text)."""
    if len(runs) == 1:
        lo, hi = runs[0]
        text = f"{lo}-{hi}" if lo != hi else str(lo)
        canonical = 0 <= lo <= hi
    else:
        text = " ".join([f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in runs])
        prev = -2
        canonical = bool(runs)
        for lo, hi in runs:
            if not prev + 1 < lo <= hi:
                canonical = False
                break
            prev = hi
    if canonical:
        if len(_SENT) >= _PARSED_MAX:
            _SENT.clear()
        _SENT[text] = runs
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


# --------------------------------------------------------------------------------------------
# The engine side: EXECUTE_JOB's resource sets (one read per allocation text, hot path)

def parse_ids(text: Any, *, job: str | None, field: str = "alloc",
              event: str = "EXECUTE_JOB") -> list[int]:
    """``"0-3 7"`` -> ``[0, 1, 2, 3, 7]`` (sorted, unique; unsorted or overlapping input is
    merged). Not a non-empty string, or not ids and closed ranges: a ProtocolError naming
    ``event``, ``job`` and ``field``."""
    if not isinstance(text, str) or not text.strip():
        raise ProtocolError(f"'{field}' must be a non-empty interval set string, got {text!r}",
                            event=event, job=job, field=field)
    # fast paths: canonical text (sorted, disjoint), which schedulers normally send
    if "-" not in text:
        try:
            out = list(map(int, text.split()))
        except ValueError:
            out = []
        if out and out[0] >= 0 and all(map(_lt, out, out[1:])):
            return out
    out = []
    prev = -1
    try:
        for token in text.split():
            lo, sep, hi = token.partition("-")
            a = int(lo)
            b = int(hi) if sep else a
            if a <= prev or b < a:
                break
            out.extend(range(a, b + 1))
            prev = b
        else:
            if out:
                return out
    except ValueError:
        pass
    ids: set[int] = set()
    try:
        for token in text.split():
            lo, sep, hi = token.partition("-")
            if sep:
                a, b = int(lo), int(hi)
                if a > b or a < 0:
                    raise ValueError(token)
                ids.update(range(a, b + 1))
            else:
                a = int(lo)
                if a < 0:
                    raise ValueError(token)
                ids.add(a)
    except ValueError:
        raise ProtocolError(f"invalid interval set {text!r}", event=event, job=job,
                            field=field, hint="expected e.g. '0-3 7'") from None
    return sorted(ids)


def runs_of_ids(ids: list[int]) -> list[tuple[int, int]]:
    """Sorted unique ids -> their maximal ``(first, last)`` ranges."""
    n = len(ids)
    if ids[-1] - ids[0] == n - 1:   # one range (sorted, unique): no walk over the ids
        return [(ids[0], ids[-1])]
    # where an id is not the previous one plus one, found in C (wide allocations)
    cuts = list(compress(range(1, n), map(ne, ids[1:], map((1).__add__, ids))))
    return [(ids[a], ids[b - 1]) for a, b in zip([0] + cuts, cuts + [n])]


def format_runs(runs: list[tuple[int, int]]) -> str:
    """Maximal ranges -> Batsim's canonical text (nothing remembered, unlike ``text_of_runs``)."""
    return " ".join([f"{lo}-{hi}" if hi != lo else str(lo) for lo, hi in runs])


def canonical_runs(text: str) -> list[tuple[int, int]] | None:
    """The ranges of a canonical interval text (what schedulers normally send: sorted,
    disjoint, non-adjacent, as Batsim writes it), read token by token, not id by id; None
    for any other text (``parse_ids`` then reads and checks it)."""
    runs = []
    prev = -2
    try:
        for token in text.split(" "):
            lo, sep, hi = token.partition("-")
            a = int(lo)
            b = int(hi) if sep else a
            if a <= prev + 1 or b < a:
                return None
            runs.append((a, b))
            prev = b
    except ValueError:
        return None
    return runs if format_runs(runs) == text else None


def read_alloc(text: Any, *, job: str | None,
               field: str = "alloc") -> tuple["list[int] | range | RunIds", str, list]:
    """An EXECUTE_JOB resource set -> ``(ids, canonical text, ranges)``. A canonical text with
    ranges is read range by range and its ids are a ``range`` (one range) or a ``RunIds`` (no
    list of every id); any other text goes through ``parse_ids`` (a list). Errors as
    ``parse_ids``'s."""
    runs = _SENT.get(text) if type(text) is str else None
    if runs is None and type(text) is str and "-" in text:
        runs = canonical_runs(text)
    if runs is not None:
        ids = range(runs[0][0], runs[0][1] + 1) if len(runs) == 1 else RunIds(runs)
        return ids, text, runs
    ids = parse_ids(text, job=job, field=field)
    runs = runs_of_ids(ids)
    canonical = format_runs(runs)
    return ids, text if canonical == text else canonical, runs


class RunIds:
    """The resource ids of an allocation given as sorted disjoint ranges ``(first, last)``, read
    from the ranges (``len``, an index, iteration, membership) rather than held one by one: a
    wide job of a 10,000-node machine names ~1,000 ids, which a list would build and free per
    allocation read. A one-range allocation is a plain ``range``."""

    __slots__ = ("runs", "_ends")

    def __init__(self, runs: list[tuple[int, int]]):
        self.runs = runs
        ends, n = [], 0
        for lo, hi in runs:
            n += hi + 1 - lo
            ends.append(n)
        self._ends = ends       # ids in the ranges up to and including each one

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, k: int) -> int:
        runs = self.runs
        if runs:   # the first and the last id (the engine asks them of every allocation)
            if k == 0:
                return runs[0][0]
            if k == -1:
                return runs[-1][1]
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"index {k} of an allocation of {n} resources")
        r = bisect_right(self._ends, k)
        return self.runs[r][1] + 1 - (self._ends[r] - k)

    def __iter__(self):
        return chain.from_iterable(range(lo, hi + 1) for lo, hi in self.runs)

    def __contains__(self, rid: object) -> bool:
        if type(rid) is not int:
            return False
        r = bisect_left(self.runs, (rid + 1,)) - 1
        return r >= 0 and rid <= self.runs[r][1]

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (RunIds, list, range)) else NotImplemented

    def __repr__(self) -> str:
        return f"RunIds({self.runs!r})"
