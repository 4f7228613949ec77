"""One error root for everything a user can get wrong (STYLE.md, httpx-like hierarchy).

Every error carries where it happened (file, line, element, job, field, event) so that the
CLI can print one clear line; third-party exceptions (zmq, json, xml) are translated at the
boundary into these.
"""

from __future__ import annotations


class MrschedError(Exception):
    """Root of all mrsched errors; ``str(err)`` is the one line the CLI prints."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 element: str | None = None, job: str | None = None, field: str | None = None,
                 event: str | None = None, hint: str | None = None):
        self.message = message
        self.file = None if file is None else str(file)
        self.line = line
        self.element = element
        self.job = job
        self.field = field
        self.event = event
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.element:
            where.append(f"element <{self.element}>")
        if self.event:
            where.append(f"event {self.event}")
        if self.job is not None:
            where.append(f"job {self.job}")
        if self.field:
            where.append(f"field '{self.field}'")
        text = f"{', '.join(where)}: {self.message}" if where else self.message
        if self.hint:
            text += f" ({self.hint})"
        return text.translate(_CONTROL)


#: control characters a user's name or value may carry into a message, written escaped so
#: that the message stays one line (a policy option named "a\nb" in a campaign file)
_CONTROL = {c: f"\\x{c:02x}" for c in range(32)} | {9: "\\t", 10: "\\n", 13: "\\r"}


class ProtocolError(MrschedError):
    """A Batsim message that is malformed or violates the v4 protocol."""


class PlatformError(MrschedError):
    """A SimGrid platform file that cannot be loaded or is not supported."""


class WorkloadError(MrschedError):
    """A workload (Batsim JSON or SWF trace) that is malformed or inconsistent."""


class ConfigError(MrschedError):
    """A bad option, policy name, campaign file or command-line value."""


class SimulationError(MrschedError):
    """The simulation cannot go on (e.g. a scheduler decision Batsim would refuse)."""


class SchedulerTimeout(MrschedError):
    """The scheduler or the engine did not answer within the configured time."""


def cut_list(names, limit: int = 30) -> str:
    """``a, b, c ... and 1,512 more``: a list of any length as part of one readable line (an
    error naming every one of 1,525 profiles is a 10 KB line nobody reads)."""
    names = [str(n) for n in names]
    rest = len(names) - limit
    if rest <= 0:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} ... and {rest:,} more"


def _natural(name: str) -> tuple:
    """``job2`` before ``job10``; split so that text and numbers alternate, always comparable."""
    import re

    return tuple(int(t) if k % 2 else t for k, t in enumerate(re.split(r"(\d+)", name)))


def suggest(name: str, valid) -> str:
    """A 'did you mean' hint: the closest valid name, then the valid names (the first 30 in
    natural order, and how many more); "none is defined" when there are none."""
    import difflib

    valid = sorted({str(v) for v in valid}, key=_natural)  # each once, whatever the caller gathered
    if not valid:
        return "none is defined"
    close = difflib.get_close_matches(name, valid, n=1)
    text = f"valid: {cut_list(valid)}"
    if close:
        text = f"did you mean '{close[0]}'? " + text
    return text
