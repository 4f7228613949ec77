"""The few platform facts a workload generator needs, read from any SimGrid XML.

Generators size requests to the machine (compute nodes, host speed, burst-buffer capacity per
storage node), so they read ``<host>`` elements and ``<cluster>`` radicals with their ``role``
and ``bb_capacity`` properties (DESIGN.md "Cluster conventions"). This is not a platform
loader: routes and links are the simulator's business.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from mrsched.errors import MrschedError, WorkloadError
from mrsched.units import parse_speed


@dataclass(frozen=True)
class PlatformInfo:
    """Compute nodes (count, speed in flop/s), burst-buffer capacities per storage node, PFS."""

    path: str
    compute_nodes: int
    speed: float
    bb_capacities: tuple[int, ...] = ()
    has_pfs: bool = False
    cores: int = 1
    gpus: int = 0

    @property
    def bb_total(self) -> int:
        return int(sum(self.bb_capacities))

    @property
    def bb_per_storage_node(self) -> int:
        """Capacity of the largest storage node (0 without burst buffer)."""
        return max(self.bb_capacities, default=0)


def _radical(text: str, where: str) -> list[int]:
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            ids.extend(range(int(a), int(b) + 1))
        elif part:
            ids.append(int(part))
    return ids


def read_platform_info(path: str | Path) -> PlatformInfo:
    """Count compute hosts, their speed and storage capacities in a SimGrid platform file."""
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except OSError as exc:
        raise WorkloadError(f"cannot read platform: {exc.strerror or exc}", file=str(path)) from None
    except ET.ParseError as exc:
        raise WorkloadError(f"platform is not valid XML: {exc}", file=str(path)) from None
    compute, speeds, capacities, has_pfs, cores, gpus = 0, [], [], False, [], []
    try:
        for el in root.iter():
            if el.tag not in ("host", "cluster"):
                continue
            props = {p.get("id"): p.get("value", "") for p in el.findall("prop")}
            role = props.get("role", "") or "compute"
            count = 1
            if el.tag == "cluster":
                count = len(_radical(el.get("radical", ""), el.get("id", "")))
            if role == "compute":
                compute += count
                speeds.append(parse_speed(el.get("speed", "1f").split(",")[0]))
                cores.append(int(float(props.get("cores") or el.get("core") or 1)))
                gpus.append(int(float(props.get("gpus") or 0)))
            elif role == "storage":
                if props.get("pfs", "").lower() == "true" or (el.get("id") == "pfs" and "bb_capacity" not in props):
                    has_pfs = True
                elif "bb_capacity" in props:
                    capacities.extend([int(float(props["bb_capacity"]))] * count)
    except (ValueError, MrschedError) as exc:
        raise WorkloadError(f"cannot read host sizes: {exc}", file=str(path)) from None
    if compute == 0:
        raise WorkloadError("the platform has no compute host", file=str(path))
    return PlatformInfo(str(path), compute, speeds[0], tuple(capacities), has_pfs, max(cores), max(gpus))
