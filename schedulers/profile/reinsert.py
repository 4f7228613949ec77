"""Conservative backfilling's one primitive: put a job's reservation back at its earliest
start from now (batsched ``conservative_bf``: on every early end each queued job is taken out
and re-inserted, never later than before).

The answer is that of ``earliest_start(request, None, now)`` after ``old`` is released, found
with less work:

- ``old`` was the earliest fit when made, and since then capacity only grew inside the
  windows released since (the profile's release log), so a start ``t < old.start`` can only
  have become feasible if ``[t, t + walltime)`` meets one of them. When none reaches past
  ``now``, ``old`` stands as it is, not even released.
- Otherwise only the starts those windows can have opened are searched, and no later than
  ``old.start``; when none fits, ``old`` is put back on the same resources.
- The search itself uses the profile's memoised ``earliest_fit`` when the request allows
  (``fit_spec``; a burst-buffer allocation then comes as a ``Fit``, placed in full only
  when the job starts), else ``earliest_start`` (named counters, bandwidth).

``tests/schedulers/conservative_reference.py`` states the plain algorithm; the two must
decide alike on random workloads.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.model.job import Request

INF = math.inf


class Slot(NamedTuple):
    """Where a job goes: its ``start`` and ``allocation``; ``reservation`` holds it from then
    on, or is None when the start is now (the caller starts the job)."""

    start: float
    allocation: Allocation
    reservation: object | None


def reinsert(profile, old, request: Request, now: float, tag: str) -> Slot | None:
    """``old`` (a reservation of this job in ``profile``, or None for a new job) replaced by
    the job's earliest start from ``now``; None when no start can be planned (an endless job
    holds what it needs)."""
    if old is None:
        return _placed(profile, _earliest(profile, request, now), request, now, tag)
    span = None
    if old.start > now:             # a due reservation must be started: always re-examined
        span = _horizon(profile, old, request.walltime)
        if span is not None and span[1] <= now:
            return Slot(old.start, old.allocation, old)     # nothing it overlaps was freed
    if span is not None:
        spec = profile.fit_spec(request)
        a = old.allocation
        if spec is not None and not spec[2] and not a.bb and not a.counters:
            return _nodes_only(profile, old, spec, span, request, now, tag)
    profile.release(old)
    if span is None:
        return _placed(profile, _earliest(profile, request, now), request, now, tag)
    lo, horizon = span
    found = _earliest(profile, request, max(now, lo), min(old.start, horizon))
    if found is None or found[0] >= old.start and horizon <= old.start:
        if found is None or _same(profile, found[1], old.allocation):
            return Slot(old.start, old.allocation, profile.reserve(old.start, old.end, old.allocation, tag=tag))
    return _placed(profile, found, request, now, tag)


def _nodes_only(profile, old, spec: tuple, span: tuple[float, float], request: Request, now: float,
               tag: str) -> Slot | None:
    """``reinsert``'s search for a job of nodes only, made before ``old`` is released: the
    same answer (``fit_released_nodes``: its nodes counted free, nothing released), so that a
    job that stays where it was is renewed in place (``renew``: the profile as release then
    reserve leave it) and only a job that moves is released."""
    lo, horizon = span
    found = profile.fit_released_nodes(spec, now if now > lo else lo, old)
    a = old.allocation
    if found is None or found[0] > (old.start if old.start < horizon else horizon):
        return Slot(old.start, a, profile.renew_in_place(old, a, tag))
    start, alloc = found
    if start >= old.start and horizon <= old.start and _same(profile, alloc, a):
        return Slot(old.start, a, profile.renew_in_place(old, a, tag))
    if start > now:     # the same window on the same nodes is renewed, any other taken anew
        end = start + request.walltime
        if start == old.start and end == old.end and alloc.nodes == a.nodes and end > start:
            return Slot(start, alloc, profile.renew_in_place(old, alloc, tag))
        return Slot(start, alloc, profile.renew(old, start, end, alloc, tag))
    profile.release(old)
    return Slot(start, profile.allocation(alloc), None)


def _placed(profile, found, request: Request, now: float, tag: str) -> Slot | None:
    if found is None:
        return None
    start, alloc = found
    if start <= now:
        return Slot(start, profile.allocation(alloc), None)
    return Slot(start, alloc, profile.reserve(start, start + request.walltime, alloc, tag=tag))


def _earliest(profile, request: Request, not_before: float, not_after: float = INF):
    """``profile.earliest_start(request, None, not_before, not_after=not_after)``: the same
    start and allocation, from the memoised ``earliest_fit`` when it serves the request."""
    spec = profile.fit_spec(request)
    if spec is None:
        return profile.earliest_start(request, None, not_before, not_after=not_after)
    found = profile.earliest_fit(spec, not_before)
    return None if found is None or found[0] > not_after else found


def _same(profile, a, b) -> bool:
    """Whether two allocations ``_earliest`` returned are equal in full (nodes, bytes per
    storage node and per-node placement): two ``Fit`` of one placement may differ in the free
    space they were placed on."""
    if a == b:
        return True
    return a.nodes == b.nodes and a.bb == b.bb and profile.allocation(a) == profile.allocation(b)


def _horizon(profile, old, walltime: float) -> tuple[float, float] | None:
    """The range of starts the windows released since ``old`` was made can have opened:
    ``(lowest a - walltime, highest b)`` over them (an upper bound of b: a wider range only
    searches more); ``(inf, -inf)`` when none starts before ``old``'s end; None when the
    history is unknown (the job is then searched from now)."""
    span = profile.released_span(old.log_pos)
    if span is None:
        return None
    lo, hi = span
    if lo >= old.start + walltime:
        return INF, -INF
    return lo - walltime, hi
