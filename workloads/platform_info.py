"""The few platform facts a workload generator needs, read from any SimGrid XML.

Generators size requests to the machine (compute nodes, host speed, burst-buffer capacity per
storage node), so they read ``<host>`` elements and ``<cluster>`` radicals with their ``role``
and ``bb_capacity`` properties (DESIGN.md "Cluster conventions"). This is not a platform
loader: routes and links are the simulator's business.

What a compute resource is: on a whole-node platform a compute host is a node (optional
properties ``cores`` and ``gpus`` per node); on a per-core platform every compute host is ONE
core and carries ``resource="core"``, ``node`` (its node's name), ``cores`` and ``gpus`` (of that
node). A platform is per-core iff its compute hosts carry ``resource="core"``.
"""

from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from mrsched.errors import MrschedError, WorkloadError
from mrsched.limits import MAX_DEPTH, property_problem
from mrsched.units import parse_speed


@dataclass(frozen=True)
class PlatformInfo:
    """Compute resources (count, speed in flop/s), burst-buffer capacities per storage node, PFS.

    ``compute_nodes`` counts compute hosts, i.e. Batsim resources: nodes, or cores when
    ``per_core``. ``cores`` is the cores of a node (1 unless the platform says so, then
    ``cores_declared``); ``nodes`` the number of nodes either way.
    """

    path: str
    compute_nodes: int
    speed: float
    bb_capacities: tuple[int, ...] = ()
    has_pfs: bool = False
    cores: int = 1
    gpus: int = 0
    per_core: bool = False
    cores_declared: bool = False
    node_count: int | None = None

    @property
    def unit(self) -> str:
        """What one Batsim resource of this platform is: ``"node"`` or ``"core"``."""
        return "core" if self.per_core else "node"

    @property
    def nodes(self) -> int:
        if self.node_count is not None:
            return self.node_count
        return self.compute_nodes // max(self.cores, 1) if self.per_core else self.compute_nodes

    @property
    def bb_total(self) -> int:
        return int(sum(self.bb_capacities))

    @property
    def bb_per_storage_node(self) -> int:
        """Capacity of the largest storage node (0 without burst buffer)."""
        return max(self.bb_capacities, default=0)


#: route elements: what they hold is read by the simulator alone, and an explicit Full zone of
#: a thousand hosts lists a million of them
_ROUTES = frozenset({"route", "zoneRoute", "ASroute", "bypassRoute", "bypassASroute",
                     "bypassZoneRoute"})


class _WithoutRoutes:
    """An ElementTree parser target that builds a platform's tree without its routes."""

    def __init__(self):
        self._tree = ET.TreeBuilder()
        self._inside = 0            # depth inside a route element

    def start(self, tag, attrs):
        if self._inside or tag in _ROUTES:
            self._inside += 1
        else:
            self._tree.start(tag, attrs)

    def end(self, tag):
        if self._inside:
            self._inside -= 1
        else:
            self._tree.end(tag)

    def close(self):
        return self._tree.close()


def platform_tree(path: str | Path) -> ET.Element:
    """The root element of a SimGrid platform file without its routes (hosts, clusters,
    links, zones and properties are there; text and comments are not), parsed once per
    content (a report's readers share it): read-only. Raises ``OSError`` or
    ``ET.ParseError`` as ``ET.parse`` does."""
    data = Path(path).read_bytes()
    key = (os.path.abspath(path), hashlib.blake2b(data, digest_size=16).digest())
    root = _TREES.get(key)
    if root is None:
        parser = ET.XMLParser(target=_WithoutRoutes())
        parser.feed(data)
        root = parser.close()
        if len(_TREES) >= 16:
            _TREES.clear()
        _TREES[key] = root
    return root


_TREES: dict[tuple, ET.Element] = {}   # a tree without routes is small: a few kept


def parse_platform_xml(path: Path):
    """The root element of a SimGrid platform file, routes left out (``platform_tree``); one
    WorkloadError line naming the file."""
    try:
        root = platform_tree(path)
    except OSError as exc:
        raise WorkloadError(f"cannot read platform: {exc.strerror or exc}", file=str(path)) from None
    except ET.ParseError as exc:
        raise WorkloadError(f"platform is not valid XML: {exc}", file=str(path)) from None
    level, depth = [root], 1
    while level:   # breadth first: no recursion on the file's depth
        level = [child for el in level for child in el]
        depth += bool(level)
        if depth > MAX_DEPTH:
            raise WorkloadError(f"elements are nested more than {MAX_DEPTH} deep", file=str(path),
                                hint="real platforms nest zones a few levels deep")
    return root


def radical_ids(text: str) -> list[int]:
    """The ids of a ``<cluster radical="0-3,8">`` (SimGrid's comma-separated ranges)."""
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
    root = parse_platform_xml(path)
    compute, speeds, capacities, has_pfs, cores, gpus = 0, [], [], False, [], []
    kinds: set[str] = set()
    declared = False
    node_names: set[str] = set()
    try:
        for el in root.iter():
            if el.tag not in ("host", "cluster"):
                continue
            props = {p.get("id"): p.get("value", "") for p in el.findall("prop")}
            for key, value in props.items():   # the engine's loader's rule, same words
                problem = property_problem(str(key), value)
                if problem is not None:
                    raise WorkloadError(f"{el.tag} '{el.get('id')}': property '{key}' {problem}",
                                        file=str(path), element=el.tag, field=key)
            role = props.get("role", "") or "compute"
            count = 1
            if el.tag == "cluster":
                count = len(radical_ids(el.get("radical", "")))
            if role == "compute":
                compute += count
                speeds.append(parse_speed(el.get("speed", "1f").split(",")[0]))
                if not speeds[-1] > 0:   # the engine's loader refuses it too
                    raise WorkloadError(f"{el.tag} '{el.get('id')}': a compute host needs a positive "
                                        f"speed, got '{el.get('speed')}'", file=str(path), element=el.tag,
                                        field="speed")
                cores.append(int(float(props.get("cores") or el.get("core") or 1)))
                declared = declared or bool(props.get("cores") or el.get("core"))
                gpus.append(int(float(props.get("gpus") or 0)))
                kinds.add(props.get("resource", "") or "node")
                if props.get("node"):
                    node_names.add(props["node"])
            elif role == "storage":
                if props.get("pfs", "").lower() == "true" or (el.get("id") == "pfs" and "bb_capacity" not in props):
                    has_pfs = True
                elif "bb_capacity" in props:
                    capacities.extend([int(float(props["bb_capacity"]))] * count)
    except WorkloadError:
        raise
    except (ValueError, OverflowError, MrschedError) as exc:
        raise WorkloadError(f"{el.tag} '{el.get('id')}': cannot read host sizes: {exc}",
                            file=str(path), element=el.tag) from None
    if compute == 0:
        raise WorkloadError("the platform has no compute host", file=str(path))
    if len(kinds) > 1 or not kinds <= {"node", "core"}:
        raise WorkloadError(f"compute hosts mix resource kinds {sorted(kinds)}: every compute host is a node "
                            f"(no 'resource' property) or every one a core (resource=\"core\")", file=str(path))
    per_core = kinds == {"core"}
    return PlatformInfo(str(path), compute, speeds[0], tuple(capacities), has_pfs, max(cores), max(gpus),
                        per_core=per_core, cores_declared=declared,
                        node_count=len(node_names) if per_core and node_names else None)
