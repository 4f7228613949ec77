"""Nodes of cores and GPUs as the schedulers see them (DESIGN.md "CPU+GPU machines").

On a per-core platform (compute hosts with ``resource="core"``) every Batsim compute resource
is one core; cores are grouped into nodes by their ``node`` property, a node's GPUs come from
its ``gpus`` property (Batsim does not model them). On any other platform every compute host
is a node of one core. Nodes are ordered by name with numbers compared as numbers (``node_2``
before ``node_10``): the 1-D array seed 002's AUCSCHED and SLURM's best fit scan. This is the
static machine; what is in use is the runtime's (:mod:`mrsched.schedulers.model.machine`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mrsched.errors import ProtocolError
from mrsched.schedulers.model.cluster import Cluster


def natural_key(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


@dataclass
class NodeView:
    """The static machine: per node its name, core resources (cluster indices) and GPUs."""

    names: list[str]
    cores: list[list[int]]          # node -> cluster compute indices of its cores, ascending
    gpus: list[int]
    per_core: bool = True
    node_of: dict[int, int] = field(default_factory=dict)   # cluster index -> node

    def __post_init__(self) -> None:
        if not self.node_of:
            self.node_of = {c: n for n, cs in enumerate(self.cores) for c in cs}
        self.total_cores = sum(len(c) for c in self.cores)

    @property
    def nb_nodes(self) -> int:
        return len(self.names)

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> "NodeView":
        props = cluster.properties
        ids = cluster.compute_ids
        per_core = any((props.get(rid) or {}).get("resource") == "core" for rid in ids)
        groups: dict[str, list[int]] = {}
        gpus: dict[str, int] = {}
        for k, rid in enumerate(ids):
            p = props.get(rid) or {}
            if per_core:
                if p.get("resource") != "core" or not p.get("node"):
                    raise ProtocolError(f"host '{cluster.compute_names[k]}' of a per-core platform lacks "
                                        "resource=\"core\" and a node property", event="SIMULATION_BEGINS",
                                        field="node")
                node = p["node"]
            else:
                node = cluster.compute_names[k]
            groups.setdefault(node, []).append(k)
            gpus[node] = cluster.gpus[k]
        names = sorted(groups, key=natural_key)
        return cls(names, [sorted(groups[n]) for n in names], [gpus[n] for n in names], per_core)

    @classmethod
    def simple(cls, nodes: int, cores: int, gpus: int | list[int]) -> "NodeView":
        """A test machine: ``nodes`` x ``cores`` with core indices 0.. in node order."""
        g = gpus if isinstance(gpus, list) else [gpus] * nodes
        return cls([f"node_{k}" for k in range(nodes)],
                   [list(range(k * cores, (k + 1) * cores)) for k in range(nodes)], list(g))


@dataclass(frozen=True)
class Layout:
    """Cores and GPUs per node of one job, before concrete cores are chosen."""

    per_node: tuple[tuple[int, int], ...]    # (node, cores) ascending node
    gpus_per_node: int = 0

    @property
    def nodes(self) -> list[int]:
        return [n for n, _ in self.per_node]

    @property
    def cores(self) -> int:
        return sum(c for _, c in self.per_node)
