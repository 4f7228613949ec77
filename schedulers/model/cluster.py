"""The machine as a scheduler sees it, read from SIMULATION_BEGINS (DESIGN.md "Cluster conventions").

Compute nodes are addressed internally by their *index* (0..n-1, in Batsim's id order) so that
node sets are int bitmasks; ``compute_ids[index]`` is the Batsim resource id sent on the wire —
never assume ``node_k`` has id ``k``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mrsched.errors import ProtocolError


@dataclass(frozen=True)
class StorageNode:
    """A burst-buffer storage host: Batsim id, capacity in bytes, Dragonfly coordinates."""

    id: int
    name: str
    capacity: int
    group: int | None = None
    chassis: int | None = None


@dataclass
class Cluster:
    """Compute nodes, burst-buffer storage, the PFS and per-host properties."""

    compute_ids: tuple[int, ...]
    compute_names: tuple[str, ...]
    storage: tuple[StorageNode, ...] = ()
    pfs_id: int | None = None
    gpus: tuple[int, ...] = ()                       # per compute index
    group: tuple[int | None, ...] = ()               # per compute index
    chassis: tuple[int | None, ...] = ()
    properties: dict[int, dict[str, str]] = field(default_factory=dict)   # Batsim id -> props
    counters: dict[str, float] = field(default_factory=dict)              # named capacities
    sched_config: dict[str, Any] = field(default_factory=dict)
    storage_ids: tuple[int, ...] = ()                # every storage host (BB and PFS), Batsim ids

    def __post_init__(self) -> None:
        n = len(self.compute_ids)
        if not self.gpus:
            self.gpus = (0,) * n
        if not self.group:
            self.group = (None,) * n
        if not self.chassis:
            self.chassis = (None,) * n
        self.index_of = {rid: k for k, rid in enumerate(self.compute_ids)}
        ids = self.compute_ids
        # first id when ids are consecutive (runs of the node mask are then id ranges)
        self._id_base = ids[0] if ids and all(b - a == 1 for a, b in zip(ids, ids[1:])) else None
        self._runs_memo: tuple[int, list[tuple[int, int]] | None] = (-1, None)

    @property
    def nb_nodes(self) -> int:
        return len(self.compute_ids)

    @property
    def all_nodes(self) -> int:
        """Bitmask of every compute node."""
        return (1 << len(self.compute_ids)) - 1

    def gpu_mask(self, gpus_per_node: int) -> int:
        """Bitmask of the compute nodes with at least that many GPUs."""
        if gpus_per_node <= 0:
            return self.all_nodes
        mask = 0
        for k, g in enumerate(self.gpus):
            if g >= gpus_per_node:
                mask |= 1 << k
        return mask

    def ids_of(self, mask: int) -> list[int]:
        """Batsim resource ids of a node bitmask, ascending index order."""
        base = self._id_base
        if base is not None:   # consecutive ids: the runs (kept for the start's runs_of)
            out = []
            for lo, hi in self.runs_of(mask):
                out.extend(range(lo, hi + 1))
            return out
        cid = self.compute_ids
        out: list[int] = []
        # one slice per run of set bits (a few big-int operations a run, not a step a node)
        while mask > 0:
            low = mask & -mask
            above = mask + low            # the carry clears the run and sets the bit above it
            top = above & -above
            out.extend(cid[low.bit_length() - 1:top.bit_length() - 1])
            mask &= ~(top - 1)
        return out

    def runs_of(self, mask: int, *, keep: bool = True) -> list[tuple[int, int]] | None:
        """Closed ``(first, last)`` Batsim id ranges of a node bitmask when compute ids are
        consecutive (Batsim numbers compute hosts first), else None. ``keep=False``: the
        caller asks only once (a lean start's EXECUTE_JOB text), nothing is remembered."""
        base = self._id_base
        if base is None:
            return None
        memo = self._runs_memo
        if memo[0] == mask:   # a start asks twice (its node ids, then its Batsim text)
            return memo[1].copy()
        out = []
        m = mask
        while m > 0:
            low = m & -m
            above = m + low
            top = above & -above
            out.append((base + low.bit_length() - 1, base + top.bit_length() - 2))
            m &= ~(top - 1)
        if keep:
            self._runs_memo = (mask, out.copy())
        return out

    @classmethod
    def simple(cls, nb_nodes: int, *, bb_capacity: int | list[int] = 0, gpus: int | list[int] = 0,
               counters: Mapping[str, float] | None = None) -> "Cluster":
        """A flat test machine: nodes 0..n-1, storage ids n.. with the given capacities."""
        caps = bb_capacity if isinstance(bb_capacity, list) else ([bb_capacity] if bb_capacity else [])
        storage = tuple(StorageNode(id=nb_nodes + s, name=f"bb{s}", capacity=int(c)) for s, c in enumerate(caps))
        g = tuple(gpus) if isinstance(gpus, list) else (gpus,) * nb_nodes
        return cls(compute_ids=tuple(range(nb_nodes)), compute_names=tuple(f"node{k}" for k in range(nb_nodes)),
                   storage=storage, gpus=g, counters=dict(counters or {}),
                   storage_ids=tuple(s.id for s in storage))


class NodeShares(Mapping):
    """A burst-buffer placement ``{compute index: (storage index, bytes)}`` read as Batsim ids,
    ``{compute id: {storage id: bytes}}`` (``Start.bb``), built on first read: alloc-only runs
    never read it, and on a 10,000-node machine a start would build one dict per node."""

    __slots__ = ("_cluster", "_placement", "_ids")

    def __init__(self, cluster: Cluster, placement: Mapping[int, tuple[int, int]]):
        self._cluster, self._placement, self._ids = cluster, placement, None

    def _built(self) -> dict[int, dict[int, int]]:
        if self._ids is None:
            cid, storage = self._cluster.compute_ids, self._cluster.storage
            self._ids = {cid[k]: {storage[s].id: nbytes} for k, (s, nbytes) in self._placement.items()}
        return self._ids

    def __getitem__(self, rid: int) -> dict[int, int]:
        return self._built()[rid]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._placement)

    def __repr__(self) -> str:
        return repr(self._built())


def _int_prop(props: Mapping[str, Any], key: str, where: str) -> int | None:
    value = props.get(key)
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0 <= number < math.inf:   # a count or bytes: finite, never negative
        raise ProtocolError(f"host property '{key}' must be an integer >= 0, got {value!r}",
                            element=where, event="SIMULATION_BEGINS", field=key) from None
    return int(number)


def parse_sched_config(text: Any) -> dict[str, Any]:
    """The ``sched-config`` string (Batsim ``--sched-cfg``) as a dict; empty when absent."""
    if text in (None, ""):
        return {}
    if isinstance(text, dict):
        return dict(text)
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"sched-config is not JSON: {exc}", event="SIMULATION_BEGINS",
                            field="sched-config") from None
    if not isinstance(value, dict):
        raise ProtocolError("sched-config must be a JSON object", event="SIMULATION_BEGINS",
                            field="sched-config")
    return value


def cluster_from_simulation_begins(data: Mapping[str, Any]) -> Cluster:
    """Read compute nodes, storage (burst buffer + PFS) and options from SIMULATION_BEGINS data."""
    compute = data.get("compute_resources")
    if compute is None:
        raise ProtocolError("missing compute_resources", event="SIMULATION_BEGINS", field="compute_resources")
    hosts = [h for h in compute if (h.get("properties") or {}).get("role", "") in ("", "compute")]
    hosts.sort(key=lambda h: int(h["id"]))
    ids, names, gpus, group, chassis, props = [], [], [], [], [], {}
    for h in hosts:
        p = dict(h.get("properties") or {})
        where = str(h.get("name", h.get("id")))
        ids.append(int(h["id"]))
        names.append(str(h.get("name", h["id"])))
        gpus.append(_int_prop(p, "gpus", where) or 0)
        group.append(_int_prop(p, "group", where))
        chassis.append(_int_prop(p, "chassis", where))
        props[int(h["id"])] = p
    storage, pfs_id, storage_ids = [], None, []
    for h in sorted(data.get("storage_resources") or [], key=lambda h: int(h["id"])):
        p = dict(h.get("properties") or {})
        where = str(h.get("name", h.get("id")))
        rid = int(h["id"])
        props[rid] = p
        storage_ids.append(rid)
        cap = _int_prop(p, "bb_capacity", where)
        if str(p.get("pfs", "")).lower() == "true" or (cap is None and h.get("name") == "pfs"):
            pfs_id = rid
            continue
        if cap is not None:
            storage.append(StorageNode(id=rid, name=where, capacity=cap,
                                       group=_int_prop(p, "group", where), chassis=_int_prop(p, "chassis", where)))
    config = data.get("config") or {}
    sched_config = parse_sched_config(config.get("sched-config"))
    counters = {}
    for name, cap in (sched_config.get("counters") or {}).items():
        try:
            counters[str(name)] = float(cap)
        except (TypeError, ValueError):
            raise ProtocolError(f"counter capacity must be a number, got {cap!r}", event="SIMULATION_BEGINS",
                                field=f"sched-config.counters.{name}") from None
    for name, cap in counters.items():
        if cap < 0 or math.isnan(cap):
            raise ProtocolError("counter capacity must be non-negative", field=f"sched-config.counters.{name}")
    return Cluster(compute_ids=tuple(ids), compute_names=tuple(names), storage=tuple(storage), pfs_id=pfs_id,
                   gpus=tuple(gpus), group=tuple(group), chassis=tuple(chassis), properties=props,
                   counters=counters, sched_config=sched_config, storage_ids=tuple(storage_ids))
