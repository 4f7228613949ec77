"""SimGrid's netzone routing, reproduced so that routes match what Batsim simulates.

Each zone kind answers ``local_route(src, dst)`` between two of its own vertices exactly as the
SimGrid 3.32 class of the same name does (FullZone, FloydZone, DijkstraZone, EmptyZone,
StarZone for flat clusters, DragonflyZone); ``global_route`` walks the zone tree like
``NetZoneImpl::get_global_route`` (common ancestor, zoneRoute gateways, recursion). Tie-breaking
among equal-cost paths follows SimGrid's iteration orders, so contention lands on the same links.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
import heapq
from typing import Any

from mrsched.errors import PlatformError

_ULONG_MAX = 2**64 - 1


@dataclass(eq=False)
class NetPoint:
    """A routing vertex: a host, a router or a (sub)zone seen from its parent zone."""

    name: str
    kind: str  # "host" | "router" | "zone"
    zone: "Zone | None"  # englobing zone (None for the root zone's own netpoint)
    id: int = -1
    subzone: "Zone | None" = None  # for kind == "zone"


@dataclass(eq=False, slots=True)
class ZoneRoute:
    """One routing-table entry: links in order, plus gateways for zone-to-zone routes (slotted:
    an explicit Full zone of a thousand hosts holds millions)."""

    links: list
    gw_src: NetPoint | None = None
    gw_dst: NetPoint | None = None
    latency: float = 0.0  # added to the links' latencies (Vivaldi's coordinate distance)


@dataclass(eq=False)
class LinkInRoute:
    """A ``<link_ctn>``: the link, and for SPLITDUPLEX links the direction used."""

    link: Any  # Link, or SplitDuplex for a SPLITDUPLEX link named without _UP/_DOWN
    direction: str = "NONE"  # "UP" | "DOWN" | "NONE"


@dataclass(eq=False)
class SplitDuplex:
    """A SPLITDUPLEX link: two independent SHARED halves ``<id>_UP`` and ``<id>_DOWN``."""

    name: str
    up: Any
    down: Any


def resolve_links(link_list: list[LinkInRoute], backroute: bool, where: dict) -> list:
    """Concrete links of a declared route (SimGrid ``get_link_list_impl``).

    On the way back a SPLITDUPLEX link is crossed in the other direction (UP <-> DOWN); the
    caller reverses the order.
    """
    out = []
    for lir in link_list:
        link = lir.link
        if not isinstance(link, SplitDuplex):
            out.append(link)
            continue
        if lir.direction == "UP":
            out.append(link.down if backroute else link.up)
        elif lir.direction == "DOWN":
            out.append(link.up if backroute else link.down)
        else:
            raise PlatformError(f"SPLITDUPLEX link '{link.name}' is used without a direction",
                                hint=f"write <link_ctn id=\"{link.name}\" direction=\"UP\"/> (or DOWN), "
                                     f"or name a half: {link.name}_UP / {link.name}_DOWN", **where)
    return out


class Zone:
    """A netzone: its vertices, children, properties and routing mode (SimGrid RoutingMode)."""

    kind = "abstract"

    def __init__(self, name: str, parent: "Zone | None", loopback: Any, where: dict):
        self.name = name
        self.parent = parent
        self.vertices: list[NetPoint] = []
        self.children: list[Zone] = []
        self.properties: dict[str, str] = {}
        self.hierarchy = "unset"  # "base" (hosts/routers) | "recursive" (subzones)
        self.loopback = loopback  # the model's implicit __loopback__ link
        self.netpoint: NetPoint | None = None
        self.where = where  # file/line of the declaring element, for errors

    # -- construction ----------------------------------------------------------------------
    def add_vertex(self, np: NetPoint) -> NetPoint:
        np.id = len(self.vertices)
        np.zone = self
        self.vertices.append(np)
        return np

    def add_route(self, src: NetPoint | None, dst: NetPoint | None, gw_src, gw_dst,
                  link_list: list[LinkInRoute], symmetrical: bool, where: dict) -> None:
        raise PlatformError(f"zone '{self.name}' (routing {self.kind}) does not accept routes",
                            element="route", **where)

    def seal(self) -> None:
        """Called once the zone's closing tag is read (SimGrid ``do_seal``)."""

    # -- queries -----------------------------------------------------------------------------
    def local_route(self, src: NetPoint, dst: NetPoint, platform) -> ZoneRoute:
        raise NotImplementedError

    def is_component_recursive(self, np: NetPoint) -> bool:
        zone = np.zone
        while zone is not None:
            if zone is self:
                return True
            zone = zone.parent
        return False


def _check_route_params(zone: Zone, src: NetPoint, dst: NetPoint, gw_src, gw_dst, link_list, where):
    """SimGrid ``RoutedZone::add_route_check_params``, as PlatformErrors."""
    if gw_src is None or gw_dst is None:
        if not link_list:
            raise PlatformError(f"empty route between '{src.name}' and '{dst.name}' is forbidden",
                                element="route", **where)
        for np in (src, dst):
            if np.kind == "zone":
                raise PlatformError(f"a <route> cannot start or end at zone '{np.name}'",
                                    hint="use <zoneRoute> with gw_src/gw_dst", element="route", **where)
    else:
        if src.kind != "zone" or dst.kind != "zone":
            raise PlatformError("a <zoneRoute> must connect two zones", element="zoneRoute", **where)
        if not link_list:
            raise PlatformError(f"empty zoneRoute between '{src.name}' and '{dst.name}' is forbidden",
                                element="zoneRoute", **where)
        if gw_src is gw_dst:
            raise PlatformError(f"a zoneRoute cannot go from gateway '{gw_src.name}' to itself",
                                element="zoneRoute", **where)
        for zone_np, gw, name in ((src, gw_src, "gw_src"), (dst, gw_dst, "gw_dst")):
            if gw.kind == "zone":
                raise PlatformError(f"{name} '{gw.name}' must be a host or a router, not a zone",
                                    element="zoneRoute", field=name, **where)
            if not zone_np.subzone.is_component_recursive(gw):
                raise PlatformError(f"{name} '{gw.name}' is not inside zone '{zone_np.name}'",
                                    element="zoneRoute", field=name, **where)


def _extended(zone: Zone, gw_src, gw_dst, links: list, preserve_order: bool) -> ZoneRoute:
    """SimGrid ``new_extended_route``: gateways only kept in recursive zones."""
    route = ZoneRoute(list(links) if preserve_order else list(reversed(links)))
    if zone.hierarchy == "recursive":
        route.gw_src, route.gw_dst = gw_src, gw_dst
    return route


def _store_route(zone: Zone, table: dict, src, dst, gw_src, gw_dst, link_list, symmetrical: bool,
                 where) -> None:
    """Check and store a declared route (and its reverse when ``symmetrical``) in ``table``,
    refusing a pair that is declared twice, as SimGrid does."""
    _check_route_params(zone, src, dst, gw_src, gw_dst, link_list, where)
    element = "zoneRoute" if gw_src is not None else "route"
    if (src.id, dst.id) in table:
        raise PlatformError(f"the route between '{src.name}' and '{dst.name}' already exists",
                            hint="routes are symmetrical by default", element=element, **where)
    table[(src.id, dst.id)] = _extended(zone, gw_src, gw_dst, resolve_links(link_list, False, where), True)
    if symmetrical:
        if (dst.id, src.id) in table:
            raise PlatformError(f"the route between '{dst.name}' and '{src.name}' already exists",
                                hint="do not declare the reverse path of a symmetrical route",
                                element=element, **where)
        table[(dst.id, src.id)] = _extended(zone, gw_dst, gw_src, resolve_links(link_list, True, where), False)


class FullZone(Zone):
    """Explicit routing table; a missing entry is an empty route, as in SimGrid."""

    kind = "Full"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.table: dict[tuple[int, int], ZoneRoute] = {}

    def add_route(self, src, dst, gw_src, gw_dst, link_list, symmetrical, where):
        _store_route(self, self.table, src, dst, gw_src, gw_dst, link_list,
                     symmetrical and src is not dst, where)

    def seal(self):
        if self.hierarchy == "base":
            for v in self.vertices:
                self.table.setdefault((v.id, v.id), ZoneRoute([self.loopback]))

    def local_route(self, src, dst, platform):
        entry = self.table.get((src.id, dst.id))
        if entry is None:
            platform._warn_missing_route(self, src, dst)
            return ZoneRoute([])
        return ZoneRoute(list(entry.links), entry.gw_src, entry.gw_dst)


class FloydZone(Zone):
    """All-pairs shortest paths by link count, ties broken as SimGrid's triple loop does."""

    kind = "Floyd"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.edges: dict[tuple[int, int], ZoneRoute] = {}
        self.pred: list[list[int]] = []

    def add_route(self, src, dst, gw_src, gw_dst, link_list, symmetrical, where):
        _store_route(self, self.edges, src, dst, gw_src, gw_dst, link_list, symmetrical, where)

    def seal(self):
        import numpy as np   # only Floyd zones need it: a small run's start-up does without

        n = len(self.vertices)
        inf = np.inf  # link counts are small integers: exact in float64
        cost = np.full((n, n), inf)
        pred = np.full((n, n), -1, dtype=np.int64)
        for (a, b), route in self.edges.items():
            cost[a, b] = len(route.links)
            pred[a, b] = a
        if self.hierarchy == "base":
            for i in range(n):
                if (i, i) not in self.edges:
                    self.edges[(i, i)] = ZoneRoute([self.loopback])
                    pred[i, i] = i
                    cost[i, i] = 1
        # SimGrid's triple loop, one intermediate vertex c at a time. With non-negative costs
        # row c and column c do not change while c is the intermediate, so each pass can be
        # done on whole arrays with the same strict-improvement tie rule.
        for c in range(n):
            ac = cost[:, c:c + 1]
            cb = cost[c:c + 1, :]
            candidate = ac + cb
            better = np.isfinite(ac) & np.isfinite(cb) & (np.isinf(cost) | (candidate < cost))
            if better.any():
                cost = np.where(better, candidate, cost)
                pred = np.where(better, np.broadcast_to(pred[c:c + 1, :], (n, n)), pred)
        self.pred = pred.tolist()

    def local_route(self, src, dst, platform):
        stack = []
        cur = dst.id
        guard = 0
        while True:
            p = self.pred[src.id][cur]
            if p == -1:
                raise PlatformError(f"no route from '{src.name}' to '{dst.name}' in zone '{self.name}'",
                                    **self.where)
            stack.append(self.edges[(p, cur)])
            cur = p
            guard += 1
            if cur == src.id or guard > len(self.vertices) + 1:
                break
        result = ZoneRoute([])
        if self.hierarchy == "recursive":
            result.gw_src = stack[-1].gw_src
            result.gw_dst = stack[0].gw_dst
        prev_dst_gw = None
        while stack:
            e = stack.pop()
            if self.hierarchy == "recursive" and prev_dst_gw is not None and prev_dst_gw.name != e.gw_src.name:
                result.links.extend(platform._global_links(prev_dst_gw, e.gw_src))
            result.links.extend(e.links)
            prev_dst_gw = e.gw_dst
        return result


class DijkstraZone(Zone):
    """Shortest path by link count over the declared routes (SimGrid's graph and heap order)."""

    kind = "Dijkstra"

    def __init__(self, *args, cached: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = "DijkstraCache" if cached else "Dijkstra"
        self.graph_ids: dict[int, int] = {}  # vertex id -> graph node index (creation order)
        self.out_edges: list[list[tuple[int, ZoneRoute]]] = []
        self.edge_map: dict[tuple[int, int], ZoneRoute] = {}
        self.cache: dict[int, list[int]] = {}

    def _node(self, vid: int) -> int:
        gid = self.graph_ids.get(vid)
        if gid is None:
            gid = len(self.out_edges)
            self.graph_ids[vid] = gid
            self.out_edges.append([])
        return gid

    def _new_edge(self, src, dst, route, element, where):
        a, b = self._node(src.id), self._node(dst.id)
        if (a, b) in self.edge_map:
            raise PlatformError(f"the route from '{src.name}' to '{dst.name}' already exists",
                                hint="routes are symmetrical by default", element=element, **where)
        self.edge_map[(a, b)] = route
        self.out_edges[a].append((b, route))

    def add_route(self, src, dst, gw_src, gw_dst, link_list, symmetrical, where):
        _check_route_params(self, src, dst, gw_src, gw_dst, link_list, where)
        element = "zoneRoute" if gw_src is not None else "route"
        self._new_edge(src, dst, _extended(self, gw_src, gw_dst, resolve_links(link_list, False, where), True),
                       element, where)
        if symmetrical:
            self._new_edge(dst, src, _extended(self, gw_dst, gw_src, resolve_links(link_list, True, where), False),
                           element, where)

    def seal(self):
        if self.hierarchy == "base":
            for gid, edges in enumerate(self.out_edges):
                if not any(target == gid for target, _ in edges):
                    route = ZoneRoute([self.loopback])
                    self.edge_map[(gid, gid)] = route
                    edges.append((gid, route))

    def _predecessors(self, s: int) -> list[int]:
        pred = self.cache.get(s)
        if pred is not None:
            return pred
        n = len(self.out_edges)
        cost = [_ULONG_MAX] * n
        cost[s] = 0
        pred = [0] * n
        heap = [(cost[i], i) for i in range(n)]
        heapq.heapify(heap)
        while heap:
            _, v = heapq.heappop(heap)
            cv = cost[v]
            for u, route in self.out_edges[v]:
                # unsigned arithmetic, wrap-around included, as SimGrid computes it
                c = (len(route.links) + cv) & _ULONG_MAX
                if c < cost[u]:
                    pred[u] = v
                    cost[u] = c
                    heapq.heappush(heap, (c, u))
        self.cache[s] = pred
        return pred

    def local_route(self, src, dst, platform):
        s = self.graph_ids.get(src.id)
        d = self.graph_ids.get(dst.id)
        if s is None or d is None:
            raise PlatformError(f"no route from '{src.name}' to '{dst.name}' in zone '{self.name}'",
                                hint="no <route> mentions it", **self.where)
        result = ZoneRoute([])
        if s == d:
            edge = self.edge_map.get((s, d))
            if edge is None:
                raise PlatformError(f"no route from '{src.name}' to '{dst.name}' in zone '{self.name}'",
                                    **self.where)
            result.links = list(edge.links)
            return result
        pred = self._predecessors(s)
        segments: list[ZoneRoute] = []
        v = d
        guard = 0
        while v != s:
            edge = self.edge_map.get((pred[v], v))
            if edge is None or guard > len(self.out_edges):
                raise PlatformError(f"no route from '{src.name}' to '{dst.name}' in zone '{self.name}'",
                                    **self.where)
            segments.append(edge)
            v = pred[v]
            guard += 1
        segments.reverse()
        prev_gw_dst = None
        for e in segments:
            if self.hierarchy == "recursive" and prev_gw_dst is not None and prev_gw_dst.name != e.gw_src.name:
                result.links.extend(platform._global_links(prev_gw_dst, e.gw_src))
            result.links.extend(e.links)
            prev_gw_dst = e.gw_dst
        if self.hierarchy == "recursive":
            result.gw_src = segments[0].gw_src
            result.gw_dst = segments[-1].gw_dst
        return result


class EmptyZone(Zone):
    """routing="None": no local links; its hosts are reached only through zoneRoute gateways."""

    kind = "None"

    def add_route(self, src, dst, gw_src, gw_dst, link_list, symmetrical, where):
        raise PlatformError(f"zone '{self.name}' has routing=\"None\" and cannot hold routes",
                            hint="use Full, Floyd or Dijkstra routing to declare routes",
                            element="zoneRoute" if gw_src is not None else "route", **where)

    def local_route(self, src, dst, platform):
        return ZoneRoute([])


@dataclass(eq=False)
class StarRoute:
    links_up: list = field(default_factory=list)
    links_down: list = field(default_factory=list)
    loopback: list = field(default_factory=list)
    gateway: NetPoint | None = None


class StarZone(Zone):
    """Flat clusters (SimGrid StarZone): up links of the source, then down links of the target."""

    kind = "Cluster"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.routes: dict[int, StarRoute] = {}
        self.host_links: list[tuple[NetPoint, Any, Any, dict]] = []  # <host_link> of routing="Cluster"
        self.backbone = None

    def set_up(self, np: NetPoint, links: list, symmetrical: bool):
        route = self.routes.setdefault(np.id, StarRoute())
        route.links_up = list(links)
        if symmetrical:
            back = [_reverse_half(link) for link in links]
            route.links_down = list(reversed(back))

    def set_down(self, np: NetPoint, links: list):
        self.routes.setdefault(np.id, StarRoute()).links_down = list(links)

    def set_loopback(self, np: NetPoint, links: list):
        self.routes.setdefault(np.id, StarRoute()).loopback = list(links)

    def add_route(self, src, dst, gw_src, gw_dst, link_list, symmetrical, where):
        raise PlatformError(f"cluster zone '{self.name}' does not accept explicit <route>s",
                            hint="routes inside a cluster are implicit", element="route", **where)

    def seal(self):
        for np, up, down, where in self.host_links:
            up_links = [up] + ([self.backbone] if self.backbone is not None else [])
            down_links = ([self.backbone] if self.backbone is not None else []) + [down]
            self.set_up(np, up_links, False)
            self.set_down(np, down_links)
        for v in self.vertices:
            self.routes.setdefault(v.id, StarRoute())

    def local_route(self, src, dst, platform):
        sr = self.routes[src.id]
        dr = self.routes[dst.id]
        result = ZoneRoute([])
        seen: set[int] = set()
        if src is dst and sr.loopback:
            chain = sr.loopback
        else:
            chain = sr.links_up + dr.links_down
        for link in chain:
            if id(link) in seen:
                continue
            seen.add(id(link))
            result.links.append(link)
        result.gw_src, result.gw_dst = sr.gateway, dr.gateway
        return result


class VivaldiZone(StarZone):
    """SimGrid's VivaldiZone: a StarZone whose routes also take the coordinate distance as
    latency (``sqrt(dx^2 + dy^2) + |h_src| + |h_dst|`` milliseconds, VivaldiZone.cpp)."""

    kind = "Vivaldi"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.coords: dict[int, tuple[float, float, float]] = {}

    def local_route(self, src, dst, platform):
        result = super().local_route(src, dst, platform)
        if src.kind == "zone":
            result.gw_src = platform._netpoints.get("router_" + src.name)
            result.gw_dst = platform._netpoints.get("router_" + dst.name)
        a = self.coords.get(src.id, (0.0, 0.0, 0.0))
        b = self.coords.get(dst.id, (0.0, 0.0, 0.0))
        dist = math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) + abs(a[2]) + abs(b[2])
        result.latency = dist / 1000.0
        return result


def _reverse_half(link):
    """The other direction of a SPLITDUPLEX half (used by symmetric StarZone routes)."""
    other = getattr(link, "_other_half", None)
    return other if other is not None else link


class DragonflyZone(Zone):
    """SimGrid's Dragonfly cluster with minimal routing (``DragonflyZone::get_local_route``).

    Routers are numbered group-major; router ``n`` of each group carries the blue (global)
    link to group ``n``. Node ``r`` has coordinates from ``rankId_to_coords``.
    """

    kind = "Dragonfly"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.groups = self.chassis = self.blades = self.nodes = 0
        self.blue_links = self.black_links = self.green_links = 1  # parallel links per level
        self.split = True
        self.router_np: NetPoint | None = None
        self.loopbacks: dict[int, Any] = {}
        self.limiters: dict[int, Any] = {}
        # per router index: my_nodes, green, black, blue
        self.my_nodes: list[list] = []
        self.green: list[list] = []
        self.black: list[list] = []
        self.blue: list = []

    def coords(self, rank: int) -> tuple[int, int, int, int]:
        per_group = self.chassis * self.blades * self.nodes
        g, rank = divmod(rank, per_group)
        c, rank = divmod(rank, self.blades * self.nodes)
        b, n = divmod(rank, self.nodes)
        return g, c, b, n

    def _router_coords(self, index: int) -> tuple[int, int, int]:
        g, rest = divmod(index, self.chassis * self.blades)
        c, b = divmod(rest, self.blades)
        return g, c, b

    def router_index(self, g: int, c: int, b: int) -> int:
        return g * (self.chassis * self.blades) + c * self.blades + b

    def build(self, make_link, counter: list[int]) -> None:
        """Create every router-to-router and node link, named as SimGrid names them."""
        n_routers = self.groups * self.chassis * self.blades
        per_link = 2 if self.split else 1
        self.my_nodes = [[None] * (per_link * self.nodes) for _ in range(n_routers)]
        self.green = [[None] * self.blades for _ in range(n_routers)]
        self.black = [[None] * self.chassis for _ in range(n_routers)]
        self.blue = [None] * n_routers
        for i in range(n_routers):
            for j in range(0, per_link * self.nodes, per_link):
                up, down = make_link(f"local_link_from_router_{i}_to_node_{j // per_link}_{counter[0]}", 1)
                self.my_nodes[i][j] = up
                if self.split:
                    self.my_nodes[i][j + 1] = down
                counter[0] += 1
        for i in range(self.groups * self.chassis):
            for j in range(self.blades):
                for k in range(j + 1, self.blades):
                    up, down = make_link(f"green_link_in_chassis_{i % self.chassis}_between_routers_{j}_and_{k}"
                                         f"_{counter[0]}", self.green_links)
                    self.green[i * self.blades + j][k] = up
                    self.green[i * self.blades + k][j] = down
                    counter[0] += 1
        for i in range(self.groups):
            for j in range(self.chassis):
                for k in range(j + 1, self.chassis):
                    for b in range(self.blades):
                        up, down = make_link(f"black_link_in_group_{i}_between_chassis_{j}_and_{k}_blade_{b}"
                                             f"_{counter[0]}", self.black_links)
                        self.black[i * self.blades * self.chassis + j * self.blades + b][k] = up
                        self.black[i * self.blades * self.chassis + k * self.blades + b][j] = down
                        counter[0] += 1
        for i in range(self.groups):
            for j in range(i + 1, self.groups):
                ri = i * self.blades * self.chassis + j
                rj = j * self.blades * self.chassis + i
                up, down = make_link(f"blue_link_between_group_{i}_and_{j}_routers_{ri}_and_{rj}_{counter[0]}",
                                     self.blue_links)
                self.blue[ri] = up
                self.blue[rj] = down
                counter[0] += 1

    def local_route(self, src, dst, platform):
        result = ZoneRoute([])
        # Routes to or from the zone's router are empty (SimGrid < 3.28 behaviour, best effort).
        if src.kind != "host" or dst.kind != "host":
            return result
        if src is dst and src.id in self.loopbacks:
            result.links.append(self.loopbacks[src.id])
            return result
        per_link = 2 if self.split else 1
        mg, mc, mb, mn = self.coords(src.id)
        tg, tc, tb, tn = self.coords(dst.id)
        my_router = self.router_index(mg, mc, mb)
        target_router = self.router_index(tg, tc, tb)
        cur = my_router
        links = result.links
        if src.id in self.limiters:
            links.append(self.limiters[src.id])
        links.append(self.my_nodes[my_router][mn * per_link])
        if target_router != my_router:
            # Same hops and index arithmetic as SimGrid (including its jump to chassis 0).
            if self._router_coords(cur)[0] != tg:
                if self._router_coords(cur)[2] != tg:
                    links.append(self.green[cur][tg])
                    cur = self.router_index(mg, mc, tg)
                if self._router_coords(cur)[1] != 0:
                    links.append(self.black[cur][0])
                    cur = mg * (self.chassis * self.blades) + tg
                links.append(self.blue[cur])
                cur = tg * (self.chassis * self.blades) + mg
            if self._router_coords(cur)[2] != tb:
                links.append(self.green[cur][tb])
                cur = tg * (self.chassis * self.blades) + tb
            if self._router_coords(cur)[1] != tc:
                links.append(self.black[cur][tc])
        links.append(self.my_nodes[target_router][tn * per_link + per_link - 1])
        if dst.id in self.limiters:
            links.append(self.limiters[dst.id])
        return result
