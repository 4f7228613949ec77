"""What the machine has in use now: the one ledger of a run (issue 40, item 2).

The runtime owns one :class:`MachineState` and nothing else counts what is busy: its compute
resources (a bitmask over cluster indices), the free burst-buffer bytes of each storage node,
and, on a per-core platform (DESIGN.md "CPU+GPU machines"), the free cores and GPUs of every
node and what each running job holds there until its walltime. :meth:`MachineState.take`
checks a start against it (busy resources, GPUs per node, burst buffer) before changing
anything; :meth:`MachineState.release` gives a job's share back when it ends. Policies read it
through :class:`MachineView` (``ctx.machine``), which has no way to change it.

GPUs are job fields Batsim does not model. On a per-core platform a job asking
``gpus_per_node`` g holds g GPUs on every node where it has cores, so two jobs may share a
node's GPUs only up to what the node has. On a platform of whole nodes a node runs one job at
a time (the busy mask), so it is enough that the job's nodes each have g GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import gt, sub
from types import MappingProxyType
from typing import Mapping

from mrsched.errors import SimulationError
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.model.nodes import NodeView


@dataclass(frozen=True)
class Holding:
    """What a running job holds on a per-core platform: its expected end (start + walltime),
    its cores per node (node, cores), ascending node, and its GPUs on each of those nodes."""

    end: float
    per_node: tuple[tuple[int, int], ...]
    gpus_per_node: int


def indices_of(mask: int) -> list[int]:
    """The set bits of ``mask``, ascending (a run of bits at a time)."""
    out: list[int] = []
    while mask > 0:
        low = mask & -mask
        above = mask + low            # the carry clears the run and sets the bit above it
        top = above & -above
        out.extend(range(low.bit_length() - 1, top.bit_length() - 1))
        mask &= ~(top - 1)
    return out


def per_core_view(cluster: Cluster) -> NodeView | None:
    """The nodes of a per-core platform (hosts with ``resource="core"``), else None."""
    props = cluster.properties
    if any((props.get(rid) or {}).get("resource") == "core" for rid in cluster.compute_ids):
        return NodeView.from_cluster(cluster)
    return None


class MachineState:
    """Busy resources, free burst-buffer bytes and, per node of a per-core platform, free
    cores and GPUs; changed only by :meth:`take` (a checked start) and :meth:`release`.

    ``owner`` starts the error of a refused start (``policy 'slurm-bf'``).
    """

    def __init__(self, cluster: Cluster, owner: str = "the scheduler"):
        self.cluster = cluster
        self.owner = owner
        self.busy = 0                                              # compute index mask
        self.bb_free: tuple[int, ...] = tuple(s.capacity for s in cluster.storage)
        self.nodes = per_core_view(cluster)                        # None: whole nodes
        cores = self.nodes.cores if self.nodes is not None else []
        self.free_count: list[int] = [len(c) for c in cores]
        self.free_gpus: list[int] = list(self.nodes.gpus) if self.nodes is not None else []
        self.total_free = sum(self.free_count)
        self.holdings: dict[str, Holding] = {}                     # per-core platforms only

    def _refuse(self, job: Job, message: str):
        raise SimulationError(f"{self.owner} {message}", job=job.id)

    def take(self, job: Job, allocation: Allocation, now: float) -> None:
        """Give ``allocation`` to ``job`` from ``now``; SimulationError naming the job, and
        nothing changed, when a resource of it is busy, a node has fewer free GPUs than the
        job asks per node, or a storage node fewer free bytes."""
        mask = allocation.nodes
        cl = self.cluster
        if mask & self.busy:
            self._refuse(job, f"starts the job on busy nodes {cl.ids_of(mask & self.busy)}")
        gpus = job.request.gpus_per_node
        view = self.nodes
        if gpus and view is None and mask & ~cl.gpu_mask(gpus):
            self._refuse(job, f"starts the job on nodes with fewer than {gpus} GPUs")
        bb = allocation.bb
        if bb:
            free = self.bb_free
            if len(bb) != len(free):
                self._refuse(job, f"gives burst buffer bytes for {len(bb)} storage nodes; the machine "
                                  f"has {len(free)}")
            if any(map(gt, bb, free)):
                s = next(s for s, (f, b) in enumerate(zip(free, bb)) if f < b)
                self._refuse(job, f"over-allocates burst buffer on storage {cl.storage[s].name}")
        if view is not None:
            per: dict[int, int] = {}
            node_of = view.node_of
            for c in indices_of(mask):
                n = node_of[c]
                per[n] = per.get(n, 0) + 1
            if gpus:
                for n in per:
                    if self.free_gpus[n] < gpus:
                        self._refuse(job, f"over-allocates GPUs on node {view.names[n]}: the job asks "
                                          f"{gpus} per node, {self.free_gpus[n]} are free")
            for n, k in per.items():
                self.free_count[n] -= k
                self.free_gpus[n] -= gpus
            self.total_free -= mask.bit_count()
            self.holdings[job.id] = Holding(now + job.request.walltime, tuple(sorted(per.items())), gpus)
        self.busy |= mask
        if bb:
            self.bb_free = tuple(map(sub, self.bb_free, bb))

    def release(self, job_id: str, allocation: Allocation) -> None:
        """A job ended: its resources, bytes, cores and GPUs are free again."""
        self.busy &= ~allocation.nodes
        if allocation.bb:
            self.bb_free = tuple(f + b for f, b in zip(self.bb_free, allocation.bb))
        held = self.holdings.pop(job_id, None)
        if held is not None:
            g = held.gpus_per_node
            for n, k in held.per_node:
                self.free_count[n] += k
                self.free_gpus[n] += g
                self.total_free += k


class MachineView:
    """A policy's read-only window on the runtime's :class:`MachineState` (``ctx.machine``):
    it sees every start of the round as soon as ``ctx.start`` made it. Lists are the state's
    own: read them, never change them (:meth:`counts` gives copies to work on)."""

    __slots__ = ("_state", "_holdings")

    def __init__(self, state: MachineState):
        self._state = state
        self._holdings = MappingProxyType(state.holdings)

    @property
    def busy(self) -> int:
        """Mask of the busy compute resources (cluster indices)."""
        return self._state.busy

    @property
    def bb_free(self) -> tuple[int, ...]:
        """Free burst-buffer bytes per storage node (``cluster.storage`` order)."""
        return self._state.bb_free

    @property
    def nodes(self) -> NodeView | None:
        """The nodes of a per-core platform (None on whole nodes)."""
        return self._state.nodes

    @property
    def free_count(self) -> list[int]:
        """Free cores per node (per-core platforms)."""
        return self._state.free_count

    @property
    def free_gpus(self) -> list[int]:
        """Free GPUs per node (per-core platforms)."""
        return self._state.free_gpus

    @property
    def total_free(self) -> int:
        return self._state.total_free

    @property
    def holdings(self) -> Mapping[str, Holding]:
        """Running job id -> what it holds per node and until when (per-core platforms)."""
        return self._holdings

    def counts(self) -> tuple[list[int], list[int]]:
        """Copies of the free cores and free GPUs per node."""
        return list(self._state.free_count), list(self._state.free_gpus)

    def free_cores(self, node: int) -> list[int]:
        """The free cores (cluster indices) of ``node``, ascending."""
        busy = self._state.busy
        return [c for c in self._state.nodes.cores[node] if not busy >> c & 1]
