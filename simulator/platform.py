"""SimGrid platform XML (version 4.1) as Batsim users write it, loaded for the embedded engine.

``load_platform(path, roles=())`` returns a :class:`Platform` whose hosts, links, routes and
Batsim resource ids match what Batsim 4.2.1 on SimGrid 3.32 builds from the same file:
compute hosts first in name order, storage hosts after (name order), the master excluded.
Anything the loader does not model is refused with a :class:`PlatformError` naming the file,
line and element, rather than silently simulated differently.
"""

from __future__ import annotations

import hashlib
import math

from dataclasses import dataclass, field
import logging
import os
from pathlib import Path
from typing import Any, Iterable
import weakref
import xml.parsers.expat

from mrsched.errors import ConfigError, PlatformError, suggest
from mrsched.limits import MAX_DEPTH, property_problem
from mrsched.units import parse_bandwidth, parse_speed, parse_time
from mrsched.simulator import routing as rt
from mrsched.simulator import platform_cache
from mrsched.simulator.collector import collector_paused
from mrsched.sums import ordered_sum

logger = logging.getLogger(__name__)

#: SimGrid's implicit loopback (``network/loopback-bw`` / ``-lat`` defaults, FATPIPE).
DEFAULT_LOOPBACK_BW = 10e9
DEFAULT_LOOPBACK_LAT = 0.0
#: SimGrid's ``network/TCP-gamma`` default (bytes), used by ptask_L07's latency bound.
DEFAULT_TCP_GAMMA = 4194304.0
LOOPBACK_NAME = "__loopback__"


_ROLES = {"": "compute", "compute": "compute", "compute_node": "compute", "storage": "storage",
          "master": "master"}


@dataclass(frozen=True)
class Link:
    """A network link. SPLITDUPLEX links appear as their two SHARED halves ``X_UP``/``X_DOWN``."""

    name: str
    bandwidth: float  # bytes/s
    latency: float  # s
    sharing: str = "SHARED"  # "SHARED" | "FATPIPE"
    properties: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Host:
    """A host with its speed (flop/s per core at the initial pstate) and Batsim role."""

    name: str
    speed: float
    properties: dict = field(default_factory=dict, compare=False, hash=False)
    role: str = "compute"  # "compute" | "storage" | "master"
    cores: int = 1
    speeds: tuple = ()  # flop/s of every pstate
    pstate: int = 0
    zone: str = ""
    zone_properties: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Route:
    """The links crossed from one host to another, in order, and their summed latency."""

    links: tuple
    latency: float


class Platform:
    """A loaded platform: hosts, links, routing, and Batsim's view of the resources."""

    def __init__(self, path: str, hosts: dict[str, Host], links: dict[str, Link], root: rt.Zone,
                 netpoints: dict[str, rt.NetPoint], config: dict[str, str], master_name: str | None,
                 loopback: Link, tcp_gamma: float):
        self.path = path
        self.hosts = hosts
        self.links = links
        self.config = config
        self.loopback = loopback
        self.tcp_gamma = tcp_gamma
        self._root = root
        self._netpoints = netpoints
        self._master_name = master_name
        self._route_cache: dict[tuple[str, str], Route] = {}
        self._warned: set[tuple[str, str]] = set()
        self._compute = sorted((h for h in hosts.values() if h.role == "compute"), key=lambda h: h.name)
        self._storage = sorted((h for h in hosts.values() if h.role == "storage"), key=lambda h: h.name)

    # -- Batsim's resources ---------------------------------------------------------------------
    def compute_hosts(self) -> list[Host]:
        """Compute hosts in Batsim id order (byte-wise name order)."""
        return list(self._compute)

    def storage_hosts(self) -> list[Host]:
        """Storage hosts in Batsim id order (after the compute hosts; name order)."""
        return list(self._storage)

    def master_host(self) -> Host | None:
        """The master host (role ``master``), not a resource."""
        return None if self._master_name is None else self.hosts[self._master_name]

    def resources(self, mmax: int | None = None) -> list[Host]:
        """Hosts by Batsim resource id: the first ``mmax`` compute hosts, then storage hosts."""
        compute = self._compute
        if mmax:
            if mmax < 0 or mmax > len(compute):
                raise ConfigError(f"cannot limit the platform to {mmax} machines: "
                                  f"{self.path} has {len(compute)} compute hosts", field="mmax")
            compute = compute[:mmax]
        return list(compute) + list(self._storage)

    # -- routing ----------------------------------------------------------------------------------
    def route(self, src: str, dst: str) -> Route:
        """Links from host (or router) ``src`` to ``dst`` as SimGrid routes them."""
        key = (src, dst)
        cached = self._route_cache.get(key)
        if cached is not None:
            return cached
        a = self._netpoint(src)
        b = self._netpoint(dst)
        extra: list[float] = []
        links = self._global_links(a, b, extra)
        route = Route(tuple(links), ordered_sum(link.latency for link in links) + ordered_sum(extra))
        self._route_cache[key] = route
        return route

    def _netpoint(self, name: str) -> rt.NetPoint:
        np = self._netpoints.get(name)
        if np is None or np.kind == "zone":
            valid = [n for n, p in self._netpoints.items() if p.kind != "zone"]
            raise PlatformError(f"unknown host '{name}'", file=self.path, hint=suggest(name, valid)[:300])
        return np

    def _global_links(self, src: rt.NetPoint, dst: rt.NetPoint, extra: list[float]) -> list:
        """SimGrid ``NetZoneImpl::get_global_route``: common ancestor, gateways, recursion."""
        path_src = _zone_path(src.zone)
        path_dst = _zone_path(dst.zone)
        father = None
        while len(path_src) > 1 and len(path_dst) > 1 and path_src[-1] is path_dst[-1]:
            father = path_src.pop()
            path_dst.pop()
        src_anc, dst_anc = path_src[-1], path_dst[-1]
        if src_anc is dst_anc:
            common = src_anc
            if src.zone is not common or dst.zone is not common:
                raise PlatformError(f"cannot route from '{src.name}' to '{dst.name}': "
                                    f"zone '{common.name}' mixes hosts and sub-zones", file=self.path)
            local = common.local_route(src, dst, self)
            if local.latency:
                extra.append(local.latency)
            return list(local.links)
        common = father
        local = common.local_route(src_anc.netpoint, dst_anc.netpoint, self)
        if local.latency:
            extra.append(local.latency)
        if local.gw_src is None or local.gw_dst is None:
            raise PlatformError(f"no route from '{src.name}' to '{dst.name}': zone '{common.name}' "
                                f"has no zoneRoute from '{src_anc.name}' to '{dst_anc.name}'",
                                file=self.path, hint="add a <zoneRoute> with gw_src/gw_dst")
        links: list = []
        if src is not local.gw_src:
            links.extend(self._global_links(src, local.gw_src, extra))
        links.extend(local.links)
        if local.gw_dst is not dst:
            links.extend(self._global_links(local.gw_dst, dst, extra))
        return links

    def _warn_missing_route(self, zone, src, dst) -> None:
        key = (src.name, dst.name)
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("%s: zone '%s' (Full routing) has no route from '%s' to '%s'; "
                           "SimGrid uses an empty route (no link, no latency)", self.path, zone.name,
                           src.name, dst.name)

    def __repr__(self) -> str:
        return (f"Platform({self.path!r}, {len(self._compute)} compute, {len(self._storage)} storage, "
                f"{len(self.links)} links)")


def _zone_path(zone: rt.Zone) -> list[rt.Zone]:
    path = []
    while zone is not None:
        path.append(zone)
        zone = zone.parent
    return path


# ------------------------------------------------------------------------------------------------
# XML reading with line numbers
# ------------------------------------------------------------------------------------------------
class _Elem:
    """An XML element with the line it starts on (a large platform has millions: slotted)."""

    __slots__ = ("tag", "attrib", "line", "children")

    def __init__(self, tag: str, attrib: dict, line: int):
        self.tag = tag
        self.attrib = attrib
        self.line = line
        self.children: "list[_Elem] | tuple[()]" = ()   # a list once it has one (leaves: most)


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise PlatformError(f"cannot read platform file: {exc.strerror or exc}", file=path) from None


def _read_xml(path: str, data: bytes) -> _Elem:
    # SimGrid's own XML reader takes white space before the XML declaration (Batsim's
    # properties_example.xml starts with a blank line); expat refuses it, so it is skipped
    # here and the line numbers of messages keep counting it.
    body = data.lstrip()
    skipped = data[:len(data) - len(body)].count(b"\n") if body.startswith(b"<?xml") else 0
    if skipped or body.startswith(b"<?xml"):
        data = body
    parser = xml.parsers.expat.ParserCreate()
    stack: list[_Elem] = []
    root: list[_Elem] = []
    # the attributes of <link_ctn> elements, one read-only dict per distinct set: an explicit
    # Full zone names millions of them, with a few thousand sets
    links_named: dict[tuple, dict] = {}

    def start(tag, attrs):
        if tag == "link_ctn":
            attrs = links_named.setdefault(tuple(attrs.items()), attrs)
        elem = _Elem(tag, attrs, parser.CurrentLineNumber + skipped)   # not copied: read-only
        if len(stack) >= MAX_DEPTH:
            where = f" '{attrs['id']}'" if "id" in attrs else ""
            raise PlatformError(f"<{tag}>{where} is nested {len(stack) + 1} elements deep, more than "
                                f"{MAX_DEPTH}", file=path, line=elem.line, element=tag,
                                hint="real platforms nest zones a few levels deep")
        if stack:
            parent = stack[-1]
            if parent.children:
                parent.children.append(elem)
            else:
                parent.children = [elem]
        else:
            root.append(elem)
        stack.append(elem)

    def end(tag):
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise PlatformError(f"malformed XML: {xml.parsers.expat.ErrorString(exc.code)}", file=path,
                            line=exc.lineno + skipped) from None
    finally:
        # the handlers read ``parser``: a reference cycle that would keep the whole element
        # tree for the cyclic collector (and a run freezes what exists when it starts)
        parser.StartElementHandler = parser.EndElementHandler = None
    if not root:
        raise PlatformError("empty platform file", file=path)
    return root[0]


# ------------------------------------------------------------------------------------------------
# The loader
# ------------------------------------------------------------------------------------------------
_ROUTING_KINDS = {"Vivaldi": rt.VivaldiZone, "Full": rt.FullZone, "Floyd": rt.FloydZone, "Dijkstra": rt.DijkstraZone,
                  "DijkstraCache": rt.DijkstraZone, "None": rt.EmptyZone, "Cluster": rt.StarZone}
_SHARING = ("SHARED", "FATPIPE", "SPLITDUPLEX")
_CONFIG_NUMERIC = {"network/loopback-bw", "network/loopback-lat", "network/TCP-gamma", "network/TCP_gamma"}
_CONFIG_FORBIDDEN = {"network/model", "cpu/model", "host/model", "network/optim", "cpu/optim",
                     "host/solver", "network/crosstraffic", "network/latency-factor",
                     "network/bandwidth-factor", "network/weight-S"}


class _Loader:
    def __init__(self, path: str, data: bytes):
        self.path = path
        self.data = data
        self.hosts_raw: dict[str, dict] = {}  # name -> partial host data
        self.links: dict[str, Any] = {}  # name -> Link or SplitDuplex
        self.public_links: dict[str, Link] = {}
        self.netpoints: dict[str, rt.NetPoint] = {}
        self.zones: dict[str, rt.Zone] = {}
        self.config: dict[str, str] = {}
        self.loopback_bw = DEFAULT_LOOPBACK_BW
        self.loopback_lat = DEFAULT_LOOPBACK_LAT
        self.tcp_gamma = DEFAULT_TCP_GAMMA
        self.loopback: Link | None = None
        self.dragonfly_counter = [0]
        self.root: rt.Zone | None = None

    # -- helpers ------------------------------------------------------------------------------
    def where(self, elem: _Elem) -> dict:
        return {"file": self.path, "line": elem.line}

    def fail(self, elem: _Elem, message: str, **kwargs) -> PlatformError:
        return PlatformError(message, file=self.path, line=elem.line, element=elem.tag, **kwargs)

    def check_attrs(self, elem: _Elem, allowed: Iterable[str], required: Iterable[str] = ()):
        allowed = set(allowed)
        for name in elem.attrib:
            if name not in allowed:
                raise self.fail(elem, f"unsupported attribute '{name}'", field=name,
                                hint=suggest(name, allowed))
        for name in required:
            if not elem.attrib.get(name, "").strip() and name not in elem.attrib:
                raise self.fail(elem, f"missing attribute '{name}'", field=name)

    def quantity(self, elem: _Elem, name: str, parse, default: str | None = None) -> float:
        text = elem.attrib.get(name, default)
        if text is None:
            raise self.fail(elem, f"missing attribute '{name}'", field=name)
        owner = self.owner(elem)
        try:
            value = parse(text.strip())
        except ConfigError as exc:
            raise self.fail(elem, f"{owner}{exc.message}", field=name, hint=exc.hint) from None
        if value < 0:
            raise self.fail(elem, f"{owner}negative value '{text}'", field=name)
        return value

    @staticmethod
    def owner(elem: _Elem) -> str:
        """``host 'node_0': `` (the element's id, for messages about one of its values)."""
        ident = elem.attrib.get("id")
        return f"{elem.tag} '{ident}': " if ident else ""

    def integer(self, elem: _Elem, name: str, default: str) -> int:
        text = elem.attrib.get(name, default).strip()
        try:
            value = int(text)
        except ValueError:
            raise self.fail(elem, f"'{text}' is not an integer", field=name) from None
        if value < 0:
            raise self.fail(elem, f"negative value '{text}'", field=name)
        return value

    def sharing(self, elem: _Elem, name: str, default: str) -> str:
        value = elem.attrib.get(name, default).strip().upper()
        if value not in _SHARING:
            raise self.fail(elem, f"unsupported sharing policy '{elem.attrib.get(name)}'", field=name,
                            hint=f"supported: {', '.join(_SHARING)}")
        return value

    def props(self, elem: _Elem) -> dict[str, str]:
        out = {}
        for child in elem.children:
            if child.tag != "prop":
                continue
            self.check_attrs(child, ("id", "value"), ("id", "value"))
            key, value = child.attrib["id"], child.attrib["value"]
            problem = property_problem(key, value)
            if problem is not None:
                raise self.fail(child, f"{self.owner(elem)}property '{key}' {problem}", field=key)
            out[key] = value
        return out

    def only_children(self, elem: _Elem, allowed: Iterable[str]):
        allowed = set(allowed)
        for child in elem.children:
            if child.tag not in allowed:
                raise self.fail(child, f"<{child.tag}> is not supported inside <{elem.tag}>",
                                hint=f"allowed here: {', '.join(sorted(allowed)) or 'nothing'}")

    def unique(self, elem: _Elem, name: str, table: dict, what: str):
        if name in table or name in self.netpoints:
            raise self.fail(elem, f"{what} '{name}' is declared twice (names must be unique)", field="id")

    # -- links --------------------------------------------------------------------------------
    def new_link(self, elem: _Elem, name: str, bandwidth: float, latency: float, sharing: str,
                 properties: dict | None = None):
        if name in self.links or name in self.public_links:
            raise self.fail(elem, f"link '{name}' is declared twice", field="id")
        if not 0 < bandwidth < math.inf:
            raise self.fail(elem, f"link '{name}' needs a positive finite bandwidth", field="bandwidth")
        if not 0 <= latency < math.inf:
            raise self.fail(elem, f"link '{name}' needs a finite latency >= 0", field="latency")
        properties = dict(properties or {})
        if sharing == "SPLITDUPLEX":
            up = Link(f"{name}_UP", bandwidth, latency, "SHARED", properties)
            down = Link(f"{name}_DOWN", bandwidth, latency, "SHARED", properties)
            for half in (up, down):
                if half.name in self.public_links or half.name in self.links:
                    raise self.fail(elem, f"link '{half.name}' is declared twice", field="id")
            object.__setattr__(up, "_other_half", down)
            object.__setattr__(down, "_other_half", up)
            sd = rt.SplitDuplex(name, up, down)
            self.links[name] = sd
            self.links[up.name] = up
            self.links[down.name] = down
            self.public_links[up.name] = up
            self.public_links[down.name] = down
            return sd
        link = Link(name, bandwidth, latency, sharing, properties)
        self.links[name] = link
        self.public_links[name] = link
        return link

    # -- entry points -------------------------------------------------------------------------
    def platform(self, roles: tuple, master_host: str) -> Platform:
        """The Platform of the file (``load``, then the hosts with their roles)."""
        root = self.load()
        hosts, master = self.build_hosts(roles, master_host)
        return Platform(self.path, hosts, dict(self.public_links), root, self.netpoints,
                        self.config, master, self.loopback, self.tcp_gamma)

    def load(self) -> rt.Zone:
        top = _read_xml(self.path, self.data)
        self.data = b""            # the bytes are read: the tree is walked without them
        if top.tag != "platform":
            raise self.fail(top, "the root element must be <platform>")
        self.check_attrs(top, ("version",))
        version = top.attrib.get("version", "")
        try:
            major = float(version)
        except ValueError:
            major = 0.0
        if major < 4:
            raise self.fail(top, f"platform version '{version}' is not supported", field="version",
                            hint="write <platform version=\"4.1\"> (SimGrid's simgrid_update_xml converts old files)")
        self.only_children(top, ("config", "zone", "AS", "cluster"))
        zones = [c for c in top.children if c.tag != "config"]
        for child in top.children:
            if child.tag == "config":
                self.read_config(child)
        self.loopback = Link(LOOPBACK_NAME, self.loopback_bw, self.loopback_lat, "FATPIPE")
        if len(zones) != 1:
            raise self.fail(top, "a platform needs exactly one root <zone> (or <cluster>)")
        if zones[0].tag == "cluster":
            self.root = self.read_cluster(zones[0], None)
        else:
            self.root = self.read_zone(zones[0], None)
        return self.root

    def read_config(self, elem: _Elem):
        self.check_attrs(elem, ("id",))
        self.only_children(elem, ("prop",))
        for key, value in self.props(elem).items():
            if key in _CONFIG_FORBIDDEN:
                raise self.fail(elem, f"configuration '{key}' changes SimGrid's model, which the embedded "
                                      "engine does not simulate", field=key,
                                hint="Batsim's ptask_L07 host model forbids changing it too")
            if key in _CONFIG_NUMERIC:
                parse = {"network/loopback-bw": parse_bandwidth, "network/loopback-lat": parse_time}.get(
                    key, lambda t: float(t))
                try:
                    number = parse(value)
                except (ConfigError, ValueError):
                    raise self.fail(elem, f"cannot read '{value}'", field=key) from None
                positive = key == "network/loopback-bw"
                if not (0 < number < math.inf if positive else 0 <= number < math.inf):
                    raise self.fail(elem, f"configuration '{key}' must be a finite number "
                                          f"{'above' if positive else 'at least'} 0, got '{value}'",
                                    field=key)
                if key == "network/loopback-bw":
                    self.loopback_bw = number
                elif key == "network/loopback-lat":
                    self.loopback_lat = number
                else:
                    self.tcp_gamma = number
            self.config[key] = value

    # -- zones --------------------------------------------------------------------------------
    def make_zone(self, elem: _Elem, cls, name: str, parent: rt.Zone | None, **kwargs) -> rt.Zone:
        if name in self.zones or name in self.netpoints:
            raise self.fail(elem, f"zone '{name}' is declared twice (names must be unique)", field="id")
        zone = cls(name, parent, self.loopback, self.where(elem), **kwargs)
        np = rt.NetPoint(name, "zone", None, subzone=zone)
        zone.netpoint = np
        if parent is not None:
            if parent.hierarchy == "base":
                raise self.fail(elem, f"zone '{parent.name}' mixes hosts/routers and sub-zones",
                                hint="put the hosts in a sub-zone of their own")
            parent.hierarchy = "recursive"
            parent.add_vertex(np)
            parent.children.append(zone)
        self.zones[name] = zone
        self.netpoints[name] = np
        return zone

    def add_point(self, elem: _Elem, zone: rt.Zone, name: str, kind: str) -> rt.NetPoint:
        if zone.hierarchy == "recursive":
            raise self.fail(elem, f"zone '{zone.name}' mixes sub-zones and hosts/routers",
                            hint="put the hosts in a sub-zone of their own")
        if zone.hierarchy == "unset":
            zone.hierarchy = "base"
        np = zone.add_vertex(rt.NetPoint(name, kind, zone))
        self.netpoints[name] = np
        return np

    def read_zone(self, elem: _Elem, parent: rt.Zone | None) -> rt.Zone:
        self.check_attrs(elem, ("id", "routing"), ("id",))
        name = elem.attrib["id"]
        routing = elem.attrib.get("routing", "None")  # the DTD's default
        cls = _ROUTING_KINDS.get(routing)
        if cls is None:
            raise self.fail(elem, f"unsupported routing '{routing}'", field="routing",
                            hint=suggest(routing, _ROUTING_KINDS))
        kwargs = {"cached": routing == "DijkstraCache"} if cls is rt.DijkstraZone else {}
        zone = self.make_zone(elem, cls, name, parent, **kwargs)
        zone.properties = self.props(elem)
        allowed = {"prop", "host", "router", "link", "route", "zoneRoute", "ASroute", "zone", "AS", "cluster"}
        if routing == "Cluster":
            allowed = {"prop", "host", "router", "link", "host_link", "backbone", "cabinet"}
        self.only_children(elem, allowed)
        routes = []
        cabinets = []
        for child in elem.children:
            tag = child.tag
            if tag == "host":
                self.read_host(child, zone)
                if isinstance(zone, rt.VivaldiZone):
                    self.read_coordinates(child, zone)
            elif tag == "router":
                self.check_attrs(child, ("id", "coordinates"), ("id",))
                self.only_children(child, ())
                self.unique(child, child.attrib["id"], self.hosts_raw, "router")
                self.add_point(child, zone, child.attrib["id"], "router")
            elif tag == "link":
                self.read_link(child)
            elif tag in ("zone", "AS"):
                self.read_zone(child, zone)
            elif tag == "cluster":
                self.read_cluster(child, zone)
            elif tag in ("route", "zoneRoute", "ASroute"):
                routes.append(child)
            elif tag == "backbone":
                self.check_attrs(child, ("id", "bandwidth", "latency"), ("id", "bandwidth"))
                if zone.backbone is not None:
                    raise self.fail(child, f"zone '{name}' already has a backbone")
                zone.backbone = self.new_link(child, child.attrib["id"],
                                              self.quantity(child, "bandwidth", parse_bandwidth),
                                              self.quantity(child, "latency", parse_time, "0"), "SHARED")
            elif tag == "cabinet":
                cabinets.append(child)
            elif tag == "host_link":
                self.check_attrs(child, ("id", "up", "down"), ("id", "up", "down"))
                np = self.netpoints.get(child.attrib["id"])
                if np is None or np.zone is not zone or np.kind != "host":
                    raise self.fail(child, f"host '{child.attrib['id']}' is not a host of zone '{name}'",
                                    field="id")
                up = self.plain_link(child, child.attrib["up"], "up")
                down = self.plain_link(child, child.attrib["down"], "down")
                zone.host_links.append((np, up, down, self.where(child)))
        for child in cabinets:  # SimGrid builds them when the zone closes, after host_links
            self.read_cabinet(child, zone)
        # Routes are added once every vertex of the zone exists (SimGrid parses them in order,
        # but names must already be declared; declaring order only matters for vertex ids).
        for child in routes:
            self.read_route(child, zone)
        zone.seal()
        return zone

    def read_coordinates(self, elem: _Elem, zone: rt.VivaldiZone) -> None:
        """A Vivaldi zone's host needs ``coordinates="x y height"`` (SimGrid asserts it)."""
        text = elem.attrib.get("coordinates")
        if text is None:
            raise self.fail(elem, "a host of a Vivaldi zone needs 'coordinates'", field="coordinates",
                            hint='e.g. coordinates="0 0 0"')
        try:
            values = tuple(float(x) for x in text.split())
        except ValueError:
            values = ()
        if len(values) != 3 or not all(math.isfinite(v) for v in values):
            raise self.fail(elem, f"coordinates '{text}' must be three numbers", field="coordinates")
        zone.coords[self.netpoints[elem.attrib["id"]].id] = values

    def read_cabinet(self, elem: _Elem, zone: rt.StarZone) -> None:
        """``<cabinet>`` in a Cluster zone (SimGrid ``sg_platf_build_cabinet``): a host per radical,
        named prefix+radical+suffix, each with links ``link_<host>_UP``/``_DOWN`` to the backbone."""
        self.check_attrs(elem, ("id", "prefix", "suffix", "radical", "speed", "bw", "lat"),
                         ("id", "prefix", "suffix", "radical", "speed", "bw", "lat"))
        self.only_children(elem, ())
        speeds = self.speeds(elem, elem.attrib["speed"])
        if len(speeds) != 1:
            raise self.fail(elem, "a cabinet takes one speed", field="speed")
        bw = self.quantity(elem, "bw", parse_bandwidth)
        lat = self.quantity(elem, "lat", parse_time)
        for radical in self.radicals(elem, elem.attrib["radical"]):
            name = f"{elem.attrib['prefix']}{radical}{elem.attrib['suffix']}"
            self.unique(elem, name, self.hosts_raw, "host")
            np = self.add_point(elem, zone, name, "host")
            self.hosts_raw[name] = {"speeds": speeds, "pstate": 0, "cores": 1, "properties": {},
                                    "zone": zone, "np": np, "line": elem.line}
            up = self.new_link(elem, f"link_{name}_UP", bw, lat, "SHARED")
            down = self.new_link(elem, f"link_{name}_DOWN", bw, lat, "SHARED")
            zone.host_links.append((np, up, down, self.where(elem)))

    def plain_link(self, elem: _Elem, name: str, field_name: str):
        link = self.links.get(name)
        if link is None:
            raise self.fail(elem, f"unknown link '{name}'", field=field_name,
                            hint=suggest(name, self.links)[:300])
        if isinstance(link, rt.SplitDuplex):
            raise self.fail(elem, f"link '{name}' is SPLITDUPLEX: name one of its halves", field=field_name,
                            hint=f"{name}_UP or {name}_DOWN")
        return link

    def read_host(self, elem: _Elem, zone: rt.Zone):
        self.check_attrs(elem, ("id", "speed", "core", "pstate", "coordinates"), ("id", "speed"))
        self.only_children(elem, ("prop",))
        name = elem.attrib["id"]
        self.unique(elem, name, self.hosts_raw, "host")
        speeds = self.speeds(elem, elem.attrib["speed"])
        pstate = self.integer(elem, "pstate", "0")
        if pstate >= len(speeds):
            raise self.fail(elem, f"pstate {pstate} does not exist ({len(speeds)} speeds given)", field="pstate")
        cores = self.integer(elem, "core", "1")
        if cores < 1:
            raise self.fail(elem, "a host needs at least one core", field="core")
        np = self.add_point(elem, zone, name, "host")
        self.hosts_raw[name] = {"speeds": speeds, "pstate": pstate, "cores": cores,
                                "properties": self.props(elem), "zone": zone, "np": np, "line": elem.line}

    def speeds(self, elem: _Elem, text: str) -> tuple:
        out = []
        for part in text.split(","):
            try:
                value = parse_speed(part.strip())
            except ConfigError as exc:
                raise self.fail(elem, f"{self.owner(elem)}{exc.message}", field="speed",
                                hint=exc.hint) from None
            if value < 0:
                raise self.fail(elem, f"{self.owner(elem)}negative speed '{part}'", field="speed")
            out.append(value)
        return tuple(out)

    def read_link(self, elem: _Elem):
        self.check_attrs(elem, ("id", "bandwidth", "latency", "sharing_policy"), ("id", "bandwidth"))
        self.only_children(elem, ("prop",))
        if "," in elem.attrib["bandwidth"]:
            raise self.fail(elem, "several bandwidths (WIFI links) are not supported", field="bandwidth")
        self.new_link(elem, elem.attrib["id"], self.quantity(elem, "bandwidth", parse_bandwidth),
                      self.quantity(elem, "latency", parse_time, "0"),
                      self.sharing(elem, "sharing_policy", "SHARED"), self.props(elem))

    def read_route(self, elem: _Elem, zone: rt.Zone):
        zone_route = elem.tag in ("zoneRoute", "ASroute")
        attrs = ("src", "dst", "symmetrical") + (("gw_src", "gw_dst") if zone_route else ())
        self.check_attrs(elem, attrs, ("src", "dst") + (("gw_src", "gw_dst") if zone_route else ()))
        self.only_children(elem, ("link_ctn",))
        sym_text = elem.attrib.get("symmetrical", "YES").strip().upper()
        if sym_text not in ("YES", "NO"):
            raise self.fail(elem, f"symmetrical must be YES or NO, not '{elem.attrib['symmetrical']}'",
                            field="symmetrical")
        src = self.vertex(elem, zone, elem.attrib["src"], "src")
        dst = self.vertex(elem, zone, elem.attrib["dst"], "dst")
        gw_src = gw_dst = None
        if zone_route:
            gw_src = self.any_point(elem, elem.attrib["gw_src"], "gw_src")
            gw_dst = self.any_point(elem, elem.attrib["gw_dst"], "gw_dst")
        link_list = []
        for ctn in elem.children:
            self.check_attrs(ctn, ("id", "direction"), ("id",))
            link_id = ctn.attrib["id"]
            direction = ctn.attrib.get("direction", "NONE").strip().upper()
            if direction not in ("UP", "DOWN", "NONE"):
                raise self.fail(ctn, f"direction must be UP, DOWN or NONE, not '{ctn.attrib['direction']}'",
                                field="direction")
            link = self.links.get(link_id)
            if link is None:
                raise self.fail(ctn, f"unknown link '{link_id}'", field="id",
                                hint=suggest(link_id, self.links)[:300])
            if direction != "NONE" and not isinstance(link, rt.SplitDuplex):
                raise self.fail(ctn, f"link '{link_id}' is not SPLITDUPLEX: it has no direction {direction}",
                                field="direction")
            link_list.append(rt.LinkInRoute(link, direction))
        where = self.where(elem)
        zone.add_route(src, dst, gw_src, gw_dst, link_list, sym_text == "YES", where)

    def vertex(self, elem: _Elem, zone: rt.Zone, name: str, field_name: str) -> rt.NetPoint:
        np = self.netpoints.get(name)
        if np is None:
            names = [v.name for v in zone.vertices]
            raise self.fail(elem, f"unknown {field_name} '{name}'", field=field_name,
                            hint=suggest(name, names)[:300] if names else None)
        if np.zone is not zone:
            raise self.fail(elem, f"{field_name} '{name}' is not declared in zone '{zone.name}'",
                            field=field_name, hint="routes connect the zone's own hosts, routers or sub-zones")
        return np

    def any_point(self, elem: _Elem, name: str, field_name: str) -> rt.NetPoint:
        np = self.netpoints.get(name)
        if np is None:
            raise self.fail(elem, f"unknown {field_name} '{name}'", field=field_name,
                            hint=suggest(name, [n for n, p in self.netpoints.items() if p.kind != "zone"])[:300])
        return np

    # -- clusters -------------------------------------------------------------------------------
    def radicals(self, elem: _Elem, text: str) -> list[int]:
        out = []
        for part in text.split(","):
            bounds = part.strip().split("-")
            try:
                if len(bounds) == 1:
                    out.append(int(bounds[0]))
                elif len(bounds) == 2:
                    out.extend(range(int(bounds[0]), int(bounds[1]) + 1))
                else:
                    raise ValueError
            except ValueError:
                raise self.fail(elem, f"malformed radical '{part}'", field="radical",
                                hint="e.g. 0-511 or 1-4,6,9-11") from None
        return out

    def read_cluster(self, elem: _Elem, parent: rt.Zone | None) -> rt.Zone:
        allowed = ("id", "prefix", "suffix", "radical", "speed", "core", "bw", "lat", "sharing_policy",
                   "topology", "topo_parameters", "bb_bw", "bb_lat", "bb_sharing_policy", "loopback_bw",
                   "loopback_lat", "limiter_link", "router_id")
        self.check_attrs(elem, allowed, ("id", "prefix", "suffix", "radical", "speed", "bw", "lat"))
        self.only_children(elem, ("prop",))
        a = elem.attrib
        cid = a["id"]
        topology = a.get("topology", "FLAT").strip().upper()
        if topology not in ("FLAT", "DRAGONFLY"):
            raise self.fail(elem, f"cluster topology '{a['topology']}' is not supported", field="topology",
                            hint="supported: FLAT, DRAGONFLY")
        speeds = self.speeds(elem, a["speed"])
        cores = self.integer(elem, "core", "1")
        bw = self.quantity(elem, "bw", parse_bandwidth)
        lat = self.quantity(elem, "lat", parse_time)
        sharing = self.sharing(elem, "sharing_policy", "SPLITDUPLEX")
        loop_bw = self.quantity(elem, "loopback_bw", parse_bandwidth, "0")
        loop_lat = self.quantity(elem, "loopback_lat", parse_time, "0")
        limiter = self.quantity(elem, "limiter_link", parse_bandwidth, "0")
        props = self.props(elem)
        radicals = self.radicals(elem, a["radical"])
        host_names = [f"{a['prefix']}{i}{a['suffix']}" for i in radicals]
        router_id = a.get("router_id", "") or f"{a['prefix']}{cid}_router{a['suffix']}"
        if topology == "DRAGONFLY":
            zone = self.make_zone(elem, rt.DragonflyZone, cid, parent)
        else:
            zone = self.make_zone(elem, rt.StarZone, cid, parent)
            zone.properties = dict(props)
        nps = []
        for name, radical in zip(host_names, radicals):
            self.unique(elem, name, self.hosts_raw, "host")
            np = self.add_point(elem, zone, name, "host")
            nps.append((np, radical))
            self.hosts_raw[name] = {"speeds": speeds, "pstate": 0, "cores": cores, "properties": dict(props),
                                    "zone": zone, "np": np, "line": elem.line}
        if topology == "DRAGONFLY":
            self.build_dragonfly(elem, zone, nps, bw, lat, sharing, loop_bw, loop_lat, limiter)
        else:
            self.build_flat(elem, zone, nps, bw, lat, sharing, loop_bw, loop_lat, limiter)
        self.unique(elem, router_id, self.hosts_raw, "router")
        zone.router_np = self.add_point(elem, zone, router_id, "router")
        zone.seal()
        return zone

    def build_flat(self, elem, zone: rt.StarZone, nps, bw, lat, sharing, loop_bw, loop_lat, limiter):
        a = elem.attrib
        cid = a["id"]
        backbone = None
        bb_bw = self.quantity(elem, "bb_bw", parse_bandwidth, "0")
        bb_lat = self.quantity(elem, "bb_lat", parse_time, "0")
        if bb_bw > 0 or bb_lat > 0:
            backbone = self.new_link(elem, f"{cid}_backbone", bb_bw, bb_lat,
                                     self.sharing(elem, "bb_sharing_policy", "SHARED"))
            if isinstance(backbone, rt.SplitDuplex):
                raise self.fail(elem, "a SPLITDUPLEX backbone is not supported", field="bb_sharing_policy")
        for np, radical in nps:
            link_id = f"{cid}_link_{radical}"
            if loop_bw > 0 or loop_lat > 0:
                loop = self.new_link(elem, f"{link_id}_loopback", loop_bw, loop_lat, "FATPIPE")
                zone.set_loopback(np, [loop])
            limiter_link = None
            if limiter > 0:
                limiter_link = self.new_link(elem, f"{link_id}_limiter", limiter, 0.0, "SHARED")
            link = self.new_link(elem, link_id, bw, lat, sharing)
            up = [limiter_link] if limiter_link is not None else []
            up.append(link.up if isinstance(link, rt.SplitDuplex) else link)
            if backbone is not None:
                up.append(backbone)
            zone.set_up(np, up, True)

    def build_dragonfly(self, elem, zone: rt.DragonflyZone, nps, bw, lat, sharing, loop_bw, loop_lat, limiter):
        a = elem.attrib
        text = a.get("topo_parameters", "")
        parts = text.split(";")
        try:
            if len(parts) != 4:
                raise ValueError
            levels = [p.split(",") for p in parts[:3]]
            if any(len(level) != 2 for level in levels):
                raise ValueError
            (g, gl), (c, cl), (r, rl) = [(int(x), int(y)) for x, y in levels]
            n = int(parts[3])
        except ValueError:
            raise self.fail(elem, f"malformed Dragonfly topo_parameters '{text}'", field="topo_parameters",
                            hint="\"groups,links;chassis,links;routers,links;nodes\", e.g. \"3,1;4,1;3,1;3\"") from None
        if min(g, gl, c, cl, r, rl, n) <= 0:
            raise self.fail(elem, "Dragonfly topo_parameters must all be positive", field="topo_parameters")
        if g > r:
            raise self.fail(elem, f"Dragonfly with {g} groups needs at least {g} routers per chassis "
                                  "(SimGrid attaches the link to group n at router n)", field="topo_parameters")
        if g * c * r * n != len(nps):
            raise self.fail(elem, f"Dragonfly {text} has {g * c * r * n} nodes but radical gives {len(nps)}",
                            field="radical")
        zone.groups, zone.chassis, zone.blades, zone.nodes = g, c, r, n
        zone.blue_links, zone.black_links, zone.green_links = gl, cl, rl
        zone.split = sharing == "SPLITDUPLEX"

        def make_link(name: str, multiplicity: int):
            link = self.new_link(elem, name, bw * multiplicity, lat, sharing)
            if isinstance(link, rt.SplitDuplex):
                return link.up, link.down
            return link, link

        for index, (np, radical) in enumerate(nps):
            if loop_bw > 0 or loop_lat > 0:
                zone.loopbacks[np.id] = self.new_link(elem, f"{a['id']}_link_{radical}_loopback", loop_bw,
                                                      loop_lat, "FATPIPE")
            if limiter > 0:
                zone.limiters[np.id] = self.new_link(elem, f"{a['id']}_link_{index}_limiter", limiter, 0.0,
                                                     "SHARED")
        zone.build(make_link, self.dragonfly_counter)

    # -- hosts with roles ---------------------------------------------------------------------
    def build_hosts(self, roles: Iterable[str], master_host: str) -> tuple[dict[str, Host], str | None]:
        role_map = {master_host: "master"} if master_host else {}
        for spec in roles:
            if spec.count(":") != 1:
                raise ConfigError(f"cannot read role mapping '{spec}'", field="roles",
                                  hint="write host1,host2:role (role: master, storage or compute_node)")
            names, role = spec.split(":")
            if role.strip() not in _ROLES:
                raise ConfigError(f"unknown role '{role}' in '{spec}'", field="roles", hint=suggest(role, _ROLES))
            for name in names.split(","):
                name = name.strip()
                if name not in self.hosts_raw:
                    raise ConfigError(f"role mapping '{spec}' names unknown host '{name}'", field="roles",
                                      file=self.path, hint=suggest(name, self.hosts_raw)[:300])
                role_map[name] = role.strip()
        hosts: dict[str, Host] = {}
        master = None
        for name, raw in self.hosts_raw.items():
            props = dict(raw["properties"])
            declared = props.get("role")
            if name in role_map:
                added = role_map[name]
                # Batsim appends ("old,new"), which it then refuses unless the old one was absent
                props["role"] = added if (declared or "").strip() in ("", added) else f"{declared},{added}"
            text = props.get("role", "").strip()
            role = _ROLES.get(text)
            if role is None:
                raise PlatformError(f"host '{name}' has unknown role '{text}'", file=self.path,
                                    line=raw["line"], field="role",
                                    hint="roles: master, storage, compute_node (or empty)")
            if role == "master":
                if master is not None:
                    raise PlatformError(f"two master hosts: '{master}' and '{name}'", file=self.path,
                                        line=raw["line"], field="role")
                master = name
            if role == "compute" and not raw["speeds"][raw["pstate"]] > 0:
                # SimGrid would run its jobs forever (no progress at speed 0)
                raise PlatformError(f"compute host '{name}' has speed 0 in its pstate {raw['pstate']}",
                                    file=self.path, line=raw["line"], element="host", field="speed",
                                    hint="give it a positive speed (e.g. 1Gf), or the role master/storage")
            zone = raw["zone"]
            hosts[name] = Host(name=name, speed=raw["speeds"][raw["pstate"]], properties=props, role=role,
                               cores=raw["cores"], speeds=raw["speeds"], pstate=raw["pstate"], zone=zone.name,
                               zone_properties=_zone_properties(zone))
        return hosts, master


def _zone_properties(zone: rt.Zone) -> dict[str, str]:
    """Properties of the enclosing zones, inner ones overriding (Batsim's zone_properties)."""
    chain = _zone_path(zone)
    merged: dict[str, str] = {}
    for z in reversed(chain):
        merged.update(z.properties)
    return merged


def load_platform(path: str | os.PathLike, roles: Iterable[str] = (), *,
                  master_host: str = "master_host") -> Platform:
    """Load a SimGrid platform file as Batsim 4.2.1 does.

    ``roles`` follows Batsim's ``-r``: ``["host1,host2:storage"]``; ``master_host`` its ``-m``
    (a host of that name becomes the master, as in Batsim). A Platform is read-only: while one
    loaded from the same bytes with the same roles is still in use in this process, it is
    returned again (a run's checks, then the run in a forked child, load a file once); a
    large file's parse is kept on disk for other processes (``platform_cache``).
    """
    path = str(path)
    roles = tuple(roles)
    data = _read_bytes(path)
    digest = hashlib.blake2b(data, digest_size=16).digest()
    key = (path, roles, master_host, digest)
    platform = _IN_USE.get(key)
    if platform is not None:
        return platform
    stored = platform_cache.entry(path, roles, master_host, digest, len(data))
    with collector_paused():   # millions of elements and routes, no cycle among them
        if stored is not None and stored.is_file():
            del data           # reading the entry back needs no bytes: not both in memory
            platform = platform_cache.read(stored)
            if platform is None:   # a broken entry: parse the file, if it is still the same
                data = _read_bytes(path)
                if hashlib.blake2b(data, digest_size=16).digest() != digest:
                    return load_platform(path, roles, master_host=master_host)
        if platform is None:
            loader = _Loader(path, data)
            del data           # the loader lets its bytes go once read: not kept through
            platform = loader.platform(roles, master_host)
            if stored is not None:
                platform_cache.write(stored, platform)
    if platform.master_host() is None:
        logger.warning("%s: no master host (role 'master' or a host named '%s'); Batsim refuses such platforms",
                       path, master_host)
    _IN_USE[key] = platform
    return platform


#: the platforms loaded in this process that something still holds, by (path, roles, master
#: host, digest of the file's bytes): a changed file is loaded again
_IN_USE: "weakref.WeakValueDictionary[tuple, Platform]" = weakref.WeakValueDictionary()
