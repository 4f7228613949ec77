"""The scheduler's own decision time, charged to the simulation (issue #17, seed 004 Ch. 5).

Why: a centralized scheduler's sequential work bounds throughput (seed 004 Sect. 5.1.1,
Fig. 5.2), yet a simulated scheduler decides for free. Batsim 4.2.1 lets a reply carry a
``now`` later than its request's: the time in between is the scheduler thinking (its
request-reply actor applies each event at its own timestamp and tells the server the
scheduler is ready only at the reply's ``now``; submissions and completions meanwhile are
held for the next message). See docs/DESIGN.md, "Decision cost in simulated time".

Three modes, option ``decision_cost`` of every policy:

- ``none`` (default): replies at the request's ``now``, as before;
- ``measured``: the scheduler's own CPU time for the message (``time.process_time``) times
  ``decision_scale``; every action is stamped at the end of that time;
- a model ``per_event=S,per_job=S,per_start=S`` (any subset, units as ``parse_time``):
  ingesting one received event costs ``per_event``, deciding one queued job (started or
  rejected) ``per_job``, launching a started job ``per_start`` more. The scheduler works in
  sequence: the k-th decision of a reply is stamped when its own work is done.

A decision never takes effect before the message that caused it: every stamp is at or after
the request's ``now`` and stamps never decrease within a reply.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from mrsched.errors import ConfigError
from mrsched.schedulers.batsim.messages import stamp_reply
from mrsched.units import parse_time

__all__ = ["DecisionCost", "parse_decision_cost", "charge_reply", "NO_COST"]

_MODEL_KEYS = ("per_event", "per_job", "per_start")


@dataclass(frozen=True)
class DecisionCost:
    """How long deciding takes: ``kind`` is ``none``, ``measured`` or ``model``."""

    kind: str = "none"
    per_event: float = 0.0
    per_job: float = 0.0
    per_start: float = 0.0
    scale: float = 1.0

    @property
    def free(self) -> bool:
        """True when deciding costs nothing (replies untouched)."""
        return self.kind == "none" or (self.kind == "model" and not
                                       (self.per_event or self.per_job or self.per_start))

    def job_cost(self, started: bool) -> float:
        """Model cost of one decision on a queued job (a start adds ``per_start``)."""
        return self.per_job + (self.per_start if started else 0.0)

    def describe(self) -> str:
        if self.kind == "model":
            return ",".join(f"{k}={getattr(self, k):g}" for k in _MODEL_KEYS)
        return self.kind


NO_COST = DecisionCost()


def parse_decision_cost(text: str | None, scale: float = 1.0, *, field: str = "decision_cost") -> DecisionCost:
    """``none`` | ``measured`` | ``per_event=S,per_job=S,per_start=S`` -> :class:`DecisionCost`.

    Raises ``ConfigError`` naming the option on any other text or a negative time.
    """
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale >= 0 or scale == float("inf"):
        raise ConfigError(f"option 'decision_scale' must be a finite number >= 0, got {scale!r}",
                          field="decision_scale")
    if text is None:
        return NO_COST
    if not isinstance(text, str):
        raise ConfigError(f"option '{field}' must be text, got {text!r}", field=field)
    spec = text.strip()
    if spec in ("", "none"):
        return NO_COST
    if spec == "measured":
        return DecisionCost("measured", scale=float(scale))
    values: dict[str, float] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _MODEL_KEYS:
            raise ConfigError(f"option '{field}': '{part.strip()}' is not none, measured or "
                              f"per_event=S / per_job=S / per_start=S", field=field,
                              hint="e.g. decision_cost=per_job=0.017,per_start=0.001")
        if key in values:
            raise ConfigError(f"option '{field}': '{key}' given twice", field=field)
        try:
            seconds = parse_time(value.strip())
        except ConfigError as exc:
            raise ConfigError(f"option '{field}': {key}: {exc.message}", field=field) from None
        if not seconds >= 0 or seconds == float("inf"):
            raise ConfigError(f"option '{field}': {key} must be a finite time >= 0, got {value.strip()!r}",
                              field=field)
        values[key] = seconds
    return DecisionCost("model", scale=float(scale), **values)


def charge_reply(cost: DecisionCost, msg: dict, handle: Callable[[dict], dict],
                 latency: Callable[[], float] = lambda: 0.0) -> dict:
    """``handle(msg)`` with its decision time charged: the reply's actions restamped in
    sequence from the request's ``now`` and the reply's ``now`` set to when the work ends.

    A wake-up asked for a time the scheduler is still busy is moved just after the reply's
    ``now``, and after its message reaches Batsim's server, ``latency()`` a message (Batsim
    aborts on a CALL_ME_LATER at or before its clock; ``messages.space_wakeups``).
    """
    if cost.kind == "measured":
        t0 = time.process_time()
        reply = handle(msg)
        spent = (time.process_time() - t0) * cost.scale
    else:
        reply = handle(msg)
        spent = 0.0
    now = reply["now"]
    if cost.kind == "model":
        clock = now + cost.per_event * len(msg.get("events") or ())
        return stamp_reply(reply, clock, cost.job_cost, latency=latency())
    return stamp_reply(reply, now + spent, latency=latency())
