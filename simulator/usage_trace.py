"""Batsim's ``usage_trace`` profiles: each rank replays a file of CPU-usage phases.

Batsim 4.2.1 (``profiles.cpp``, ``jobs_execution.cpp``): the profile's ``trace`` file (relative
to the workload file) lists one rank file per line (relative to the trace file). Rank ``i``
runs on the allocation's host ``i mod res``; each line ``<rank> m_usage <usage> <flops>`` of its
file is one parallel task on ``max(round(usage * cores), 1)`` copies of that host, each
computing ``flops`` (so the host's CPU shares it with whatever else runs there, each copy
bounded by one core). When its file is done, a rank sends a 4-byte message to the job's first
host, whose actor receives them one at a time; the job ends when the last one arrived.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from mrsched.errors import WorkloadError
from mrsched.simulator.profiles import PtaskSpec

#: bytes of a rank's termination message (jobs_execution.cpp: ``mbox->put(rank, 4)``)
TERMINATION_BYTES = 4.0

Phase = tuple[float, float]   # (usage in [0, 1], flops per used core)


def load_usage_trace(trace: str, workload_file: str, profile: str) -> list[list[Phase]]:
    """The phases of every rank of a ``usage_trace`` profile (Batsim's checks, one line each)."""
    element = f"profile {profile}"
    path = Path(workload_file).parent / trace
    try:
        names = path.read_text().splitlines()
    except OSError as exc:
        raise WorkloadError(f"'trace' {trace!r} cannot be read ({exc.strerror or exc})",
                            file=workload_file, element=element, field="trace") from None
    ranks: list[list[Phase]] = []
    for name in names:
        rank_path = path.parent / name.rstrip()
        try:
            lines = rank_path.read_text().splitlines()
        except OSError as exc:
            raise WorkloadError(f"rank file {str(rank_path)!r} cannot be read "
                                f"({exc.strerror or exc})", file=workload_file, element=element,
                                field="trace") from None
        phases: list[Phase] = []
        for lineno, line in enumerate(lines, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            try:
                if len(parts) != 4 or parts[1] != "m_usage":
                    raise ValueError
                usage, flops = float(parts[2]), float(parts[3])
            except ValueError:
                raise WorkloadError(f"{rank_path}:{lineno}: expected '<rank> m_usage <usage> "
                                    f"<flops>', got {line.strip()!r}", file=workload_file,
                                    element=element, field="trace") from None
            if not (math.isfinite(usage) and 0.0 <= usage <= 1.0):
                raise WorkloadError(f"{rank_path}:{lineno}: invalid usage read: {usage:g} not in "
                                    "[0,1]", file=workload_file, element=element, field="trace")
            if not (math.isfinite(flops) and flops >= 0.0):
                raise WorkloadError(f"{rank_path}:{lineno}: invalid flops read: {flops:g} not "
                                    "positive and finite", file=workload_file, element=element,
                                    field="trace")
            phases.append((usage, flops))
        ranks.append(phases)
    if not ranks:
        raise WorkloadError(f"'trace' {trace!r} lists no rank file", file=workload_file,
                            element=element, field="trace")
    return ranks


class UsageTraceRun:
    """One ``usage_trace`` step of a job: its ranks' phases, then the termination messages.
    ``kernel`` runs them (``kernel.py``), ``machines`` gives the hosts' cores and the
    messages' times (``machines.py``)."""

    def __init__(self, kernel: Any, machines: Any, ranks: list[list[Phase]], hosts: list[str],
                 res: int, on_done: Callable[[], None]):
        self.k, self.m, self.ranks, self.on_done = kernel, machines, ranks, on_done
        self.rank_host = [hosts[i % res] for i in range(len(ranks))]
        self.receiver = hosts[0]
        self.next_phase = [0] * len(ranks)
        self.ptasks: dict[int, object] = {}      # rank -> its running phase
        self.queue: list[int] = []               # ranks whose message waits for the receiver
        self.receiving = False
        self.received = 0
        self.timer = None
        self.stopped = False

    def start(self) -> None:
        for rank in range(len(self.ranks)):
            self._next(rank)

    def _next(self, rank: int) -> None:
        if self.stopped:
            return
        self.ptasks.pop(rank, None)
        k = self.next_phase[rank]
        phases = self.ranks[rank]
        if k >= len(phases):
            self._send(rank)
            return
        self.next_phase[rank] = k + 1
        usage, flops = phases[k]
        host = self.rank_host[rank]
        cores = self.m.platform.hosts[host].cores
        copies = max(round(usage * cores), 1)   # at least one core, or flops cannot be used
        spec = PtaskSpec(flops={host: flops}, bytes={}, hosts=(host,))
        self.ptasks[rank] = self.k.start_ptask(spec, lambda: self._next(rank),
                                               copies={host: copies})

    def _send(self, rank: int) -> None:
        self.queue.append(rank)
        if not self.receiving:
            self._receive()

    def _receive(self) -> None:
        if not self.queue:
            self.receiving = False
            return
        rank = self.queue.pop(0)
        self.receiving = True
        dt = self.m.comm_time(self.rank_host[rank], self.receiver, TERMINATION_BYTES)
        self.timer = self.k.at(self.k.now + dt, self._arrived)

    def _arrived(self) -> None:
        self.timer = None
        self.received += 1
        if self.received == len(self.ranks):
            self.receiving = False
            self.on_done()
        else:
            self._receive()

    def stop(self) -> None:
        """A walltime or a kill: the ranks' phases and messages stop here."""
        self.stopped = True
        for p in self.ptasks.values():
            self.k.stop_ptask(p)
        self.ptasks.clear()
        if self.timer is not None:
            self.timer.alive = False
            self.timer = None
