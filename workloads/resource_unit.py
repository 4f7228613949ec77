"""What a trace's processors become on the simulated machine: nodes or cores, decided once.

SWF counts processors; after 2000 most machines hold several cores per node (LLNL Atlas: 1,152
nodes x 8 cores, every request a multiple of 8). On a platform of whole-node allocation a
job's nodes are its processors divided by the cores per node, rounded up; on a per-core
platform (one Batsim resource per core, ``resource="core"`` on its hosts) the request stays in
cores. :func:`choose_unit` picks the unit and the cores per node from, in order: the
platform's kind of host; ``--cores-per-node``; the platform's ``cores`` property; the trace
header's ``MaxProcs / MaxNodes``; else one processor per node (the pre-2000 archive traces,
e.g. KTH-SP2's 100 single-processor nodes). Its ``reason`` says which source decided, so a
conversion report never leaves the unit implicit, and every size goes through one
:meth:`ResourceUnit.size`, so units are never mixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.workloads.platform_info import PlatformInfo
from mrsched.workloads.swf import SwfTrace


@dataclass(frozen=True)
class ResourceUnit:
    """Batsim resources are ``unit`` s (``"node"`` or ``"core"``); ``resources`` of them in all."""

    unit: str
    resources: int
    cores_per_node: int
    reason: str

    @property
    def divisor(self) -> int:
        """Processors per resource: the cores of a node for nodes, 1 for cores."""
        return self.cores_per_node if self.unit == "node" else 1

    @property
    def trivial(self) -> bool:
        """One processor is one resource and the resource is a node (pre-multi-core traces)."""
        return self.unit == "node" and self.cores_per_node == 1

    def size(self, processors: np.ndarray) -> np.ndarray:
        """Resources a request of ``processors`` occupies, rounded up (2.5 processors are 3;
        whole nodes: the next whole node)."""
        whole = np.ceil(np.asarray(processors, dtype=float)).astype(np.int64)
        return -(-whole // self.divisor)

    def describe(self) -> str:
        """The report line: which unit, how processors become resources, and why."""
        if self.unit == "core":
            return f"unit: core, {self.resources} cores ({self.reason}): res = processors"
        if self.cores_per_node == 1:
            return f"unit: node, {self.resources} nodes of one processor ({self.reason}): res = processors"
        return (f"unit: node, {self.resources} nodes of {self.cores_per_node} cores ({self.reason}): "
                f"res = processors / {self.cores_per_node}, rounded up")


def header_cores_per_node(trace: SwfTrace) -> int | None:
    """``MaxProcs / MaxNodes`` of the trace header, None if either is missing."""
    procs, nodes = trace.header_int("MaxProcs"), trace.header_int("MaxNodes")
    if not procs or not nodes or procs <= 0 or nodes <= 0:
        return None
    if procs % nodes:
        raise WorkloadError(f"MaxProcs {procs} is not a multiple of MaxNodes {nodes}: the cores per node "
                            f"are unknown", file=trace.path, field="MaxProcs",
                            hint="give --cores-per-node")
    return procs // nodes


def choose_unit(trace: SwfTrace, *, platform: PlatformInfo | None = None, nodes: int | None = None,
                cores_per_node: int | None = None) -> ResourceUnit:
    """The unit, machine size and cores per node of a conversion (rules in the module docstring)."""
    if cores_per_node is not None and cores_per_node < 1:
        raise WorkloadError(f"--cores-per-node must be >= 1, got {cores_per_node}", field="cores_per_node")
    try:  # only an error where the header decides (the last rules below)
        from_header = header_cores_per_node(trace)
        header_error = None
    except WorkloadError as exc:
        from_header, header_error = None, exc
    header_text = (f"the trace header, MaxProcs {trace.header_int('MaxProcs')} / "
                   f"MaxNodes {trace.header_int('MaxNodes')}" if from_header else "")
    if platform is not None and platform.per_core:
        cpn = platform.cores
        reason = f"the platform's compute hosts are cores, resource=\"core\", {cpn} per node"
        trace_cpn = cores_per_node or from_header
        if trace_cpn and trace_cpn != cpn:
            reason += f"; the trace's machine had {trace_cpn}"
        return ResourceUnit("core", platform.compute_nodes, cpn, reason)

    if platform is not None:
        resources = platform.compute_nodes
        where = "the platform's compute hosts are nodes"
    else:
        resources = nodes or trace.header_int("MaxNodes")
        where = "no platform: resources are nodes"
        if not resources and trace.header_int("MaxProcs"):
            resources = trace.header_int("MaxProcs") // (cores_per_node or 1)
    if not resources or resources <= 0:
        raise WorkloadError("the machine size is unknown", file=trace.path,
                            hint="give --platform P.xml (or a MaxNodes header in the trace)")
    if cores_per_node is not None:
        return ResourceUnit("node", resources, cores_per_node, f"{where}; cores per node from --cores-per-node")
    if platform is not None and platform.cores_declared:
        reason = f"{where}; cores per node from its 'cores' property"
        if from_header and from_header != platform.cores:
            reason += f" (the trace's machine had {from_header})"
        return ResourceUnit("node", resources, platform.cores, reason)
    if header_error is not None:
        raise header_error
    if from_header:
        return ResourceUnit("node", resources, from_header, f"{where}; cores per node from {header_text}")
    return ResourceUnit("node", resources, 1, f"{where}; one processor per node assumed: the trace header lacks "
                                              f"MaxProcs or MaxNodes, give --cores-per-node if its nodes had more")
