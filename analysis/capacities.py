"""Resource capacities of a platform XML, for utilisation: compute nodes, burst buffer, GPUs.

Parsed minimally with ElementTree (hosts, clusters and their ``<prop>``s) so that analysis
works on any output directory without the simulator. Conventions: docs/DESIGN.md "Cluster
conventions" — role ``compute`` (or none), ``storage`` with ``bb_capacity`` bytes,
``master``; compute hosts may carry ``gpus``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from mrsched.errors import PlatformError


def _props(elem: ET.Element) -> dict[str, str]:
    return {p.get("id", ""): p.get("value", "") for p in elem.findall("prop")}


def _radical(text: str, file: str) -> list[str]:
    """SimGrid cluster radical ``0-15`` or ``0-3,8,10-11`` -> the numbers as text."""
    out: list[str] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise PlatformError(f"cannot read cluster radical '{text}'", file=file,
                                element="cluster", field="radical")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.extend(str(i) for i in range(lo, hi + 1))
    return out


def platform_hosts(path: str | Path, roles=()) -> dict[str, dict[str, str]]:
    """Host name -> properties (with ``role``), clusters expanded; ``roles`` as Batsim's
    ``-r host1,host2:role`` strings override the XML's role."""
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise PlatformError("platform file not found", file=str(path)) from None
    except ET.ParseError as exc:
        raise PlatformError(f"invalid XML: {exc}", file=str(path)) from None
    hosts: dict[str, dict[str, str]] = {}
    for elem in root.iter():
        if elem.tag == "host":
            name = elem.get("id")
            if not name:
                raise PlatformError("host without id", file=str(path), element="host", field="id")
            hosts[name] = _props(elem)
        elif elem.tag == "cluster":
            props = _props(elem)
            for num in _radical(elem.get("radical", ""), str(path)):
                hosts[f"{elem.get('prefix', '')}{num}{elem.get('suffix', '')}"] = dict(props)
    for spec in roles or ():
        names, sep, role = str(spec).rpartition(":")
        if not sep or not names or not role:
            raise PlatformError(f"cannot read role specification '{spec}'", field="roles",
                                hint="expected host1,host2:role")
        for name in names.split(","):
            if name not in hosts:
                raise PlatformError(f"role given to unknown host '{name}'", file=str(path),
                                    field="roles")
            hosts[name]["role"] = role
    return hosts


def _number(text: str, host: str, prop: str, file: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PlatformError(f"property '{prop}' must be a number, got '{text}'", file=file,
                            element=f"host {host}", field=prop) from None
    if value < 0:
        raise PlatformError(f"property '{prop}' must be >= 0, got '{text}'", file=file,
                            element=f"host {host}", field=prop)
    return value


def _is_pfs(name: str, props: dict) -> bool:
    return str(props.get("pfs", "")).lower() == "true" or name == "pfs"


def platform_capacities(path: str | Path, roles=(), bb_capacity: float | None = None) -> dict[str, float]:
    """``{"nodes": compute hosts, "burst_buffer": sum of storage bb_capacity, "gpus": sum of
    compute hosts' gpus}``; zero-capacity resources are left out. ``bb_capacity`` is what the
    run gave storage hosts that declare none (``mrsched run --bb-capacity``), the PFS aside,
    as the schedulers read it (``schedulers.runtime.with_default_bb_capacity``)."""
    hosts = platform_hosts(path, roles)
    nodes = 0
    bb = 0.0
    gpus = 0.0
    for name, props in hosts.items():
        role = props.get("role", "") or "compute"
        if role == "compute":
            nodes += 1
            if "gpus" in props:
                gpus += _number(props["gpus"], name, "gpus", str(path))
        elif role == "storage" and "bb_capacity" in props:
            bb += _number(props["bb_capacity"], name, "bb_capacity", str(path))
        elif role == "storage" and bb_capacity and not _is_pfs(name, props):
            bb += float(bb_capacity)
    caps: dict[str, float] = {"nodes": float(nodes)}
    if bb > 0:
        caps["burst_buffer"] = bb
    if gpus > 0:
        caps["gpus"] = gpus
    return caps
