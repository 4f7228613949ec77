"""What a generated platform contains, and its SimGrid XML rendering.

A generator builds a :class:`PlatformDescription` (hosts, links, explicit routes) and renders it
with :func:`render_xml`. Keeping the routes as data lets tests and schedulers ask "which links
does node_3 -> pfs cross?" without a SimGrid, and makes the XML a pure function of the
parameters (same parameters, same bytes).

The XML uses only standard SimGrid elements that both SimGrid 3.25 (Batsim 4.0) and 3.3x
(Batsim 4.2) accept: one ``<zone routing="Full">`` holding ``<host>`` (with ``<prop>``),
``<link>`` and ``<route>`` with ``<link_ctn>``. Full routing means SimGrid computes nothing:
every route is the listed links, so every version routes identically.

SPLITDUPLEX links are two independent halves ``<id>_UP`` / ``<id>_DOWN``; a route names a half
with ``<link_ctn id="<id>" direction="UP|DOWN"/>``. Routes are kept as the resources crossed
(``node_0_link_UP``, ``pfs_link``). A pair whose way back is not the way there reversed (always
the case through split-duplex links) is written as two ``symmetrical="NO"`` routes: SimGrid
3.25 reuses the very same halves for the reverse of a symmetrical route while 3.3x swaps UP and
DOWN (``NetZoneImpl::get_link_list_impl(..., backroute)``), so only explicit one-way routes
mean the same thing on both. Other pairs stay one symmetrical ``<route>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import quoteattr

from mrsched.errors import PlatformError, suggest
from mrsched.sums import ordered_sum

#: ``link_sharing`` values of the generators -> SimGrid sharing policy of node and cable links.
LINK_SHARING = {"splitduplex": "SPLITDUPLEX", "shared": "SHARED"}
_DIRECTIONS = ("UP", "DOWN")


@dataclass(frozen=True)
class HostSpec:
    """One SimGrid host: speed in flop/s and its ``<prop>`` values (strings, as in the XML)."""

    name: str
    speed: float
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def role(self) -> str:
        return self.properties.get("role", "compute") or "compute"


@dataclass(frozen=True)
class LinkSpec:
    """One SimGrid link: bandwidth in bytes/s, latency in seconds, sharing policy."""

    name: str
    bandwidth: float
    latency: float
    sharing: str = "SHARED"


@dataclass
class PlatformDescription:
    """Hosts, links and the explicit route (link names, src to dst) of every host pair."""

    kind: str
    parameters: dict[str, Any]
    hosts: list[HostSpec]
    links: list[LinkSpec]
    routes: dict[tuple[str, str], tuple[str, ...]]

    def __post_init__(self) -> None:
        self._hosts = {h.name: h for h in self.hosts}
        self._links = {link.name: link for link in self.links}
        for link in self.links:  # a route crosses the halves of a SPLITDUPLEX link
            if link.sharing == "SPLITDUPLEX":
                for direction in _DIRECTIONS:
                    self._links[f"{link.name}_{direction}"] = link

    def host(self, name: str) -> HostSpec:
        try:
            return self._hosts[name]
        except KeyError:
            raise PlatformError(f"no host '{name}' in the generated {self.kind} platform") from None

    def link(self, name: str) -> LinkSpec:
        """The declared link ``name``, or the SPLITDUPLEX link a half (``X_UP``/``X_DOWN``) belongs to."""
        try:
            return self._links[name]
        except KeyError:
            raise PlatformError(f"no link '{name}' in the generated {self.kind} platform",
                                hint=suggest(name, self._links)[:300]) from None

    def route(self, src: str, dst: str) -> tuple[str, ...]:
        """Resources crossed from ``src`` to ``dst``: link names, ``X_UP``/``X_DOWN`` for halves.

        A pair stored one way only is symmetrical (the other way is the same links reversed).
        """
        self.host(src)
        self.host(dst)
        if src == dst:
            return ()
        if (src, dst) in self.routes:
            return self.routes[(src, dst)]
        return tuple(reversed(self.routes[(dst, src)]))

    def route_latency(self, src: str, dst: str) -> float:
        return ordered_sum(self._links[name].latency for name in self.route(src, dst))

    def hosts_with_role(self, role: str) -> list[HostSpec]:
        return [h for h in self.hosts if h.role == role]

    def compute_hosts(self) -> list[HostSpec]:
        return self.hosts_with_role("compute")

    def storage_hosts(self) -> list[HostSpec]:
        """Burst-buffer storage hosts (role storage, not the PFS)."""
        return [h for h in self.hosts_with_role("storage") if h.properties.get("pfs") != "true"]

    def pfs_host(self) -> HostSpec | None:
        return next((h for h in self.hosts if h.properties.get("pfs") == "true"), None)

    def master_host(self) -> HostSpec | None:
        return next(iter(self.hosts_with_role("master")), None)

    def batsim_order(self) -> list[str]:
        """Host names by Batsim resource id: compute hosts in name order, then storage hosts.

        SimGrid enumerates hosts in (byte-wise) lexicographic name order, so ``node_10`` comes
        before ``node_2``; Batsim numbers compute resources first, storage after; the master
        is not a resource.
        """
        compute = sorted(h.name for h in self.compute_hosts())
        storage = sorted(h.name for h in self.hosts_with_role("storage"))
        return compute + storage

    def summary(self) -> str:
        bb = sum(int(h.properties.get("bb_capacity", 0)) for h in self.storage_hosts())
        return (f"{self.kind}: {len(self.compute_hosts())} compute, {len(self.storage_hosts())} storage "
                f"({bb / 1e9:g} GB burst buffer), pfs={'yes' if self.pfs_host() else 'no'}, "
                f"{len(self.links)} links, {len(self.routes)} routes")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description (hosts with properties, links); routes are in the XML."""
        return {
            "kind": self.kind,
            "parameters": self.parameters,
            "hosts": [{"name": h.name, "speed": h.speed, "properties": dict(h.properties)} for h in self.hosts],
            "links": [{"name": lk.name, "bandwidth": lk.bandwidth, "latency": lk.latency, "sharing": lk.sharing}
                      for lk in self.links],
            "batsim_order": self.batsim_order(),
        }


@dataclass(frozen=True)
class GeneratedPlatform:
    """A generator's result: the XML text and the description it renders."""

    xml: str
    description: PlatformDescription


def _number(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def format_speed(flops: float) -> str:
    """``1e9`` -> ``1Gf`` (exact SI prefixes only, else plain flop/s)."""
    return _with_prefix(flops, "f")


def format_bandwidth(bps: float) -> str:
    """``1.25e9`` -> ``1250MBps``."""
    return _with_prefix(bps, "Bps")


def format_time(seconds: float) -> str:
    """``5e-5`` -> ``50us``; whole microseconds when possible, else seconds."""
    if seconds == 0:
        return "0s"
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        scaled = round(seconds / factor, 9)
        if scaled >= 1 and abs(scaled - round(scaled)) < 1e-9:
            return f"{int(round(scaled))}{unit}"
    return f"{_number(seconds)}s"


def _with_prefix(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        scaled = value / factor
        if scaled >= 1 and abs(scaled - round(scaled)) < 1e-9 * max(1.0, scaled):
            return f"{int(round(scaled))}{prefix}{unit}"
    if abs(value - round(value)) < 1e-9:
        return f"{int(round(value))}{unit}"
    return f"{_number(value)}{unit}"


def render_xml(desc: PlatformDescription, comments: list[str] = ()) -> str:
    """The SimGrid XML of ``desc``: hosts, links, then one symmetrical route per host pair."""
    out = ["<?xml version='1.0'?>",
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">']
    for line in comments:
        out.append(f"<!-- {line.replace('--', '- -')} -->")
    out.append('<platform version="4.1">')
    out.append('  <zone id="root" routing="Full">')
    for h in desc.hosts:
        head = f'    <host id={quoteattr(h.name)} speed="{format_speed(h.speed)}"'
        if not h.properties:
            out.append(head + "/>")
            continue
        out.append(head + ">")
        for key, value in h.properties.items():
            out.append(f"      <prop id={quoteattr(key)} value={quoteattr(str(value))}/>")
        out.append("    </host>")
    for lk in desc.links:
        sharing = "" if lk.sharing == "SHARED" else f' sharing_policy="{lk.sharing}"'
        out.append(f'    <link id={quoteattr(lk.name)} bandwidth="{format_bandwidth(lk.bandwidth)}" '
                   f'latency="{format_time(lk.latency)}"{sharing}/>')
    for (src, dst), links in desc.routes.items():
        inner = "".join(_link_ctn(desc, name) for name in links)
        one_way = ' symmetrical="NO"' if (dst, src) in desc.routes else ""
        out.append(f'    <route src="{src}" dst="{dst}"{one_way}>{inner}</route>')
    out.append("  </zone>")
    out.append("</platform>")
    return "\n".join(out) + "\n"


def _link_ctn(desc: PlatformDescription, name: str) -> str:
    """``<link_ctn>`` of one crossed resource: a SPLITDUPLEX half is its link plus a direction."""
    base, _, direction = name.rpartition("_")
    if direction in _DIRECTIONS and base in desc._links and desc._links[base].sharing == "SPLITDUPLEX":
        return f'<link_ctn id={quoteattr(base)} direction="{direction}"/>'
    return f"<link_ctn id={quoteattr(name)}/>"


def half(link: str, direction: str, sharing: str) -> str:
    """The resource a route crosses on ``link`` going ``direction`` (``UP``/``DOWN``)."""
    return f"{link}_{direction}" if sharing == "SPLITDUPLEX" else link


def link_sharing_policy(link_sharing: str) -> str:
    """SimGrid policy for a generator's ``link_sharing`` knob (``splitduplex`` or ``shared``)."""
    key = str(link_sharing).strip().lower()
    if key not in LINK_SHARING:
        raise PlatformError(f"unknown link sharing '{link_sharing}'", field="link_sharing",
                            hint=suggest(key, LINK_SHARING))
    return LINK_SHARING[key]


def all_pair_routes(hosts: list[HostSpec], route_of) -> dict[tuple[str, str], tuple[str, ...]]:
    """Every host pair's route, in host declaration order (``route_of(src, dst)``).

    ``(src, dst)`` is always stored; ``(dst, src)`` only when it is not ``(src, dst)`` reversed,
    which makes the pair two one-way routes in the XML.
    """
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    names = [h.name for h in hosts]
    for i, src in enumerate(names):
        for dst in names[i + 1:]:
            there = tuple(route_of(src, dst))
            back = tuple(route_of(dst, src))
            routes[(src, dst)] = there
            if back != there[::-1]:
                routes[(dst, src)] = back
    return routes


def check_positive(value: float, name: str, *, integer: bool = False, allow_zero: bool = False) -> None:
    """Refuse a non-positive (or non-integer) generator parameter with a clear PlatformError."""
    bad = value < 0 if allow_zero else value <= 0
    if integer and (not isinstance(value, int) or isinstance(value, bool)):
        raise PlatformError(f"'{name}' must be an integer, got {value!r}", field=name)
    if bad:
        raise PlatformError(f"'{name}' must be {'>= 0' if allow_zero else '> 0'}, got {value!r}", field=name)
