"""What a policy decides in one scheduling round (DESIGN.md "Policies").

``nodes`` are Batsim compute resource ids; ``bb`` maps each compute id to the bytes it holds on
each storage host (``{compute_id: {storage_id: bytes}}``, one storage host per node here).
The runtime turns these into EXECUTE_JOB / REJECT_JOB / CALL_ME_LATER / SET_JOB_METADATA.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Allocation:
    """Resources given to one job: node bitmask, burst-buffer bytes per storage index, counters."""

    nodes: int
    bb: tuple[int, ...] = ()                   # bytes per storage index (job total there)
    placement: Mapping[int, tuple[int, int]] = field(default_factory=dict)  # compute index -> (storage index, bytes)
    counters: tuple[float, ...] = ()           # amount per counter index

    @property
    def nb_nodes(self) -> int:
        return self.nodes.bit_count()


@dataclass(frozen=True)
class Start:
    """Start ``job_id`` now on ``nodes`` with burst buffer ``bb``."""

    job_id: str
    nodes: tuple[int, ...]
    bb: Mapping[int, Mapping[int, int]] = field(default_factory=dict)
    allocation: Any = field(default=None, compare=False, repr=False)   # the profile's Allocation


@dataclass(frozen=True)
class Reject:
    """Refuse ``job_id`` for good; ``reason`` is logged and must not be empty."""

    job_id: str
    reason: str


@dataclass(frozen=True)
class WakeUp:
    """Call the policy again at ``time`` even if nothing happens before."""

    time: float


@dataclass(frozen=True)
class Annotate:
    """Set ``job_id``'s metadata (Batsim's ``_jobs.csv`` metadata column) to ``text``: what the
    policy did about the job that the run directory must keep (one line, no ``"``)."""

    job_id: str
    text: str


@dataclass(frozen=True)
class SwitchPower:
    """Switch compute ``nodes`` (Batsim ids) to pstate ``pstate`` (SET_RESOURCE_STATE): what
    the runtime's idle-node service decides (``execution/runtime.py``), never a policy."""

    nodes: tuple[int, ...]
    pstate: int


Decision = Start | Reject | WakeUp | Annotate | SwitchPower
