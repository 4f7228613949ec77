"""Dragonfly machine with burst-buffer storage nodes and a PFS, as in seed 001 Sect. 4.1.

Defaults reproduce the Euro-Par 2021 machine: 3 groups x 4 chassis x 3 routers x 3 nodes =
108 hosts ``node_0..node_107`` (rank = ((group * chassis + chassis) * routers + router) *
nodes + node, SimGrid's Dragonfly numbering), one burst-buffer storage node per chassis (the
chassis' last node: ``node_8``, ``node_17``, ..., ``node_107``) with 40 GB each, 96 compute
nodes at 1 Gflop/s, 1250 MB/s / 50 us links, a ``pfs`` host behind one shared 5 GB/s link and a
``master`` host.

Why an explicit topology with Full routing rather than ``<cluster topology="DRAGONFLY">``:
- SimGrid >= 3.28 no longer creates the implicit ``<prefix>cluster_router`` of a Dragonfly
  cluster, so the artifact's ``zoneRoute ... gw_dst="node_cluster_router"`` (the only way to
  reach a PFS and a master outside the cluster) fails on Batsim 4.2; the usual workaround
  (a compute node as gateway) sends every PFS byte through that node's link and distorts I/O
  times; a ``routing="None"`` zone cannot carry Batsim's messages at all.
- With ``routing="Full"`` every host pair's route is listed in the file, so SimGrid 3.25 and
  3.3x (and our embedded loader) route identically by construction, with only standard
  elements (host, prop, link, route, link_ctn).
- The routes between nodes are SimGrid's own Dragonfly minimal routing
  (``DragonflyZone::get_local_route``, unchanged from 3.25 to 3.3x): node link, green link to
  the router wired to the target group, black link to chassis 0, blue link between groups
  (group i reaches group j through its router number j), then green and black links to the
  target router. We keep SimGrid's quirk: after a green hop its current router is the one of
  chassis 0, so inside a group a route from chassis c != 0 to another router crosses the black
  cable chassis 0 <-> target chassis (or none when the target is in chassis 0), and the way back
  may use other cables. Node-to-node paths are thus those the artifact's DRAGONFLY cluster
  uses; a test compares every pair with the embedded loader's DragonflyZone. (With more groups
  than routers per chassis SimGrid indexes past a router's green links; we then go through
  router ``to_group % routers`` of chassis ``to_group // routers``.)
- Node links and green/black/blue cables are SPLITDUPLEX by default, as SimGrid's
  ``<cluster>`` (``sharing_policy`` defaults to SPLITDUPLEX) builds them: each is two
  independent halves ``X_UP``/``X_DOWN``, each with the full bandwidth. As in SimGrid, a node
  sends on its link's UP half and receives on its DOWN half; a cable is crossed UP from its
  lower-numbered router (chassis, group) to the higher and DOWN the other way. So a stage-in
  (PFS -> burst buffer) and a drain (burst buffer -> PFS), or a checkpoint (node -> BB) next to
  a stage-in to that node, do not contend on a node link, as on the paper's machine; two
  transfers in the same direction do. A route crossing a half is written one way
  (``symmetrical="NO"``) and its reverse listed too: a symmetrical route's reverse keeps the
  same halves on SimGrid 3.25 but swaps them on 3.3x, so only one-way routes route identically
  on both. ``link_sharing="shared"``
  (``--link-sharing shared``) gives the former behaviour: every node link and cable SHARED, both
  directions contending.
- The PFS is reached from any host by that host's own link (UP towards the PFS, DOWN from it)
  then the PFS link, SHARED (5 GB/s, 100 us) as the artifact declares it, so all PFS traffic,
  reads and writes, shares its 5 GB/s; the master link stays FATPIPE. No Dragonfly hop. On
  SimGrid 3.25 the artifact's route to the cluster router was empty, so its I/O crossed only
  the PFS link; we add the node's own link (no node injects more than its 1250 MB/s), which is
  the one deliberate difference.

Batsim numbers resources in SimGrid's enumeration order, the lexicographic order of host
names, compute hosts first and storage hosts after: compute ids go ``node_0, node_1, node_10,
node_100, ..., node_106, node_11, ...`` (``node_107`` is storage). Schedulers must map names
(or the ``group``/``chassis``/``router`` properties) to ids, never assume ``node_k`` is id k. ``chassis`` and ``router`` are global indices (unique over the machine), so equal
``chassis`` alone means "same chassis". Storage hosts have ``role=storage`` and
``bb_capacity``; compute hosts have no ``role`` property at all, because Batsim accepts only
``master``, ``compute_node``, ``storage`` or nothing (an empty role is a compute node) and
aborts on ``role=compute``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mrsched.errors import PlatformError
from mrsched.units import parse_bandwidth, parse_size, parse_speed, parse_time
from mrsched.platforms.cluster import MAX_HOSTS

FORMS = ("auto", "explicit", "zones")
from mrsched.platforms.description import (
    GeneratedPlatform, HostSpec, LinkSpec, PlatformDescription, all_pair_routes, check_positive, half,
    link_sharing_policy, render_xml)


@dataclass(frozen=True)
class Coords:
    """Dragonfly coordinates of a node, all indices local to the level above."""

    group: int
    chassis: int
    router: int
    node: int


class _Topology:
    """Plain arithmetic on ranks, routers and links of one Dragonfly shape."""

    def __init__(self, groups: int, chassis: int, routers: int, nodes: int, prefix: str):
        self.G, self.C, self.R, self.N = groups, chassis, routers, nodes
        self.prefix = prefix

    @property
    def size(self) -> int:
        return self.G * self.C * self.R * self.N

    def coords(self, rank: int) -> Coords:
        node = rank % self.N
        router = (rank // self.N) % self.R
        chassis = (rank // (self.N * self.R)) % self.C
        group = rank // (self.N * self.R * self.C)
        return Coords(group, chassis, router, node)

    def rank(self, c: Coords) -> int:
        return ((c.group * self.C + c.chassis) * self.R + c.router) * self.N + c.node

    def name(self, rank: int) -> str:
        return f"{self.prefix}{rank}"

    # link names: one cable per pair, named from the lower index to the higher
    @staticmethod
    def green(g: int, c: int, r1: int, r2: int) -> str:
        a, b = sorted((r1, r2))
        return f"green_g{g}_c{c}_r{a}_r{b}"

    @staticmethod
    def black(g: int, r: int, c1: int, c2: int) -> str:
        a, b = sorted((c1, c2))
        return f"black_g{g}_r{r}_c{a}_c{b}"

    @staticmethod
    def blue(g1: int, g2: int) -> str:
        a, b = sorted((g1, g2))
        return f"blue_g{a}_g{b}"

    def gateway(self, group: int, to_group: int) -> tuple[int, int]:
        """(chassis, router) of ``group``'s router wired to ``to_group``: router number to_group."""
        return divmod(to_group, self.R)

    @staticmethod
    def hop(cable: str, src_index: int, dst_index: int) -> tuple[str, str]:
        """A cable crossed from its end ``src_index`` to ``dst_index``: UP from lower to higher.

        SimGrid's DragonflyZone gives the lower router (chassis, group) of a cable its ``_UP``
        half and the higher one its ``_DOWN`` half, whatever level the cable is at.
        """
        return cable, "UP" if src_index < dst_index else "DOWN"

    def router_hops(self, src: Coords, dst: Coords) -> list[tuple[str, str]]:
        """(cable, direction) between two nodes' routers: SimGrid's DragonflyZone::get_local_route.

        Green to the router wired to the target group, black to its chassis, blue; then in the
        target group green to the target router and black to the target chassis. Like SimGrid,
        after a green hop the current router is taken in chassis 0 (``routers_[group * C * R +
        blade]``): within a group, from a chassis other than 0 to another router this
        crosses the black cable of chassis 0 rather than the sender's (or skips it).
        """
        hops: list[tuple[str, str]] = []
        g, c, r = src.group, src.chassis, src.router
        if dst.group != g:
            gc, gr = self.gateway(g, dst.group)
            if r != gr:
                hops.append(self.hop(self.green(g, c, r, gr), r, gr))
                r = gr
            if c != gc:
                hops.append(self.hop(self.black(g, r, c, gc), c, gc))
                c = gc
            hops.append(self.hop(self.blue(g, dst.group), g, dst.group))
            g = dst.group
            c, r = self.gateway(dst.group, src.group)
        if dst.router != r:
            hops.append(self.hop(self.green(g, c, r, dst.router), r, dst.router))
            c, r = 0, dst.router  # SimGrid's jump to chassis 0 (see above)
        if dst.chassis != c:
            hops.append(self.hop(self.black(g, r, c, dst.chassis), c, dst.chassis))
        return hops

    def cables(self) -> list[str]:
        """Every green, black and blue cable, in a fixed order."""
        names = []
        for g in range(self.G):
            for c in range(self.C):
                for r1 in range(self.R):
                    for r2 in range(r1 + 1, self.R):
                        names.append(self.green(g, c, r1, r2))
            for r in range(self.R):
                for c1 in range(self.C):
                    for c2 in range(c1 + 1, self.C):
                        names.append(self.black(g, r, c1, c2))
        for g1 in range(self.G):
            for g2 in range(g1 + 1, self.G):
                names.append(self.blue(g1, g2))
        return names


def storage_ranks(groups: int, chassis: int, routers: int, nodes_per_router: int, *,
                  storage_per_chassis: int | None = 1, storage_per_group: int | None = None,
                  storage_count: int | None = None) -> list[int]:
    """Ranks of the storage nodes: a chassis' last nodes first, spread over chassis and groups.

    Exactly one of the three knobs applies (the most specific given: count, then per group,
    then per chassis). Per group k: chassis 0, 1, ... of each group in turn. A total count:
    chassis 0 of every group, then chassis 1 of every group, ... (balanced over groups).
    """
    topo = _Topology(groups, chassis, routers, nodes_per_router, "")
    per_chassis_nodes = routers * nodes_per_router

    def slot(g: int, c: int, k: int) -> int:
        if k >= per_chassis_nodes:
            raise PlatformError(f"more storage nodes than the {per_chassis_nodes} nodes of a chassis",
                                field="storage")
        return topo.rank(Coords(g, c, 0, 0)) + per_chassis_nodes - 1 - k

    ranks: list[int] = []
    if storage_count is not None:
        if storage_count < 0:
            raise PlatformError(f"storage count must be >= 0, got {storage_count}", field="storage_count")
        for i in range(storage_count):
            g = i % groups
            c = (i // groups) % chassis
            ranks.append(slot(g, c, i // (groups * chassis)))
    elif storage_per_group is not None:
        if storage_per_group < 0:
            raise PlatformError(f"storage per group must be >= 0, got {storage_per_group}",
                                field="storage_per_group")
        for g in range(groups):
            for i in range(storage_per_group):
                ranks.append(slot(g, i % chassis, i // chassis))
    else:
        k = storage_per_chassis or 0
        if k < 0:
            raise PlatformError(f"storage per chassis must be >= 0, got {k}", field="storage_per_chassis")
        for g in range(groups):
            for c in range(chassis):
                for i in range(k):
                    ranks.append(slot(g, c, i))
    if len(ranks) >= topo.size:
        raise PlatformError(f"{len(ranks)} storage nodes leave no compute node among {topo.size}",
                            field="storage")
    return sorted(ranks)


def generate_dragonfly(*, groups: int = 3, chassis: int = 4, routers: int = 3, nodes_per_router: int = 3,
                       storage_per_chassis: int | None = 1, storage_per_group: int | None = None,
                       storage_count: int | None = None, bb_capacity: float | str = "40GB",
                       speed: float | str = "1Gf", link_bandwidth: float | str = "1250MBps",
                       link_latency: float | str = "50us", pfs_bandwidth: float | str = "5GBps",
                       pfs_latency: float | str = "100us", master_bandwidth: float | str = "1250MBps",
                       master_latency: float | str = "100us", prefix: str = "node_",
                       link_sharing: str = "splitduplex", form: str = "auto") -> GeneratedPlatform:
    """Seed 001's Dragonfly (Sect. 4.1) as SimGrid XML plus its description.

    ``link_sharing``: ``splitduplex`` (SimGrid's cluster default, the artifact's machine) or
    ``shared`` (one capacity for both directions of every node link and cable).
    ``form``: ``explicit`` (one Full-routing zone listing every route, up to ``MAX_HOSTS``
    hosts), ``zones`` (a ``<cluster>`` per chassis and implicit routing, any size: see
    ``dragonfly_zones``) or ``auto`` (explicit when it fits, else zones).
    """
    sharing = link_sharing_policy(link_sharing)
    for name, value in (("groups", groups), ("chassis", chassis), ("routers", routers),
                        ("nodes_per_router", nodes_per_router)):
        check_positive(value, name, integer=True)
    if groups > chassis * routers:
        raise PlatformError(f"{groups} groups need {groups - 1} global links per group but a group has only "
                            f"{chassis * routers} routers", field="groups")
    size = groups * chassis * routers * nodes_per_router
    if form not in FORMS:
        raise PlatformError(f"unknown platform form '{form}'", field="form", hint=f"valid: {', '.join(FORMS)}")
    zoned = form == "zones" or (form == "auto" and size + 2 > MAX_HOSTS)
    if size + 2 > MAX_HOSTS and not zoned:
        raise PlatformError(f"{size} nodes is too many for an explicit Full-routing platform (limit {MAX_HOSTS - 2})",
                            field="groups", hint="Full routing lists every host pair; form='zones' writes any size")
    bb = parse_size(bb_capacity)
    check_positive(bb, "bb_capacity", allow_zero=True)
    speed_f, link_bw, link_lat = parse_speed(speed), parse_bandwidth(link_bandwidth), parse_time(link_latency)
    pfs_bw, pfs_lat = parse_bandwidth(pfs_bandwidth), parse_time(pfs_latency)
    master_bw, master_lat = parse_bandwidth(master_bandwidth), parse_time(master_latency)
    for name, value in (("speed", speed_f), ("link_bandwidth", link_bw), ("pfs_bandwidth", pfs_bw),
                        ("master_bandwidth", master_bw)):
        check_positive(value, name)
    for name, value in (("link_latency", link_lat), ("pfs_latency", pfs_lat), ("master_latency", master_lat)):
        check_positive(value, name, allow_zero=True)

    topo = _Topology(groups, chassis, routers, nodes_per_router, prefix)
    storage = set(storage_ranks(groups, chassis, routers, nodes_per_router,
                                storage_per_chassis=storage_per_chassis, storage_per_group=storage_per_group,
                                storage_count=storage_count))
    params = {"groups": groups, "chassis": chassis, "routers": routers, "nodes_per_router": nodes_per_router,
              "storage_per_chassis": storage_per_chassis, "storage_per_group": storage_per_group,
              "storage_count": storage_count, "bb_capacity": int(round(bb)), "speed": speed_f,
              "link_bandwidth": link_bw, "link_latency": link_lat, "pfs_bandwidth": pfs_bw,
              "pfs_latency": pfs_lat, "master_bandwidth": master_bw, "master_latency": master_lat,
              "prefix": prefix, "link_sharing": sharing.lower()}
    if zoned:
        from mrsched.platforms.dragonfly_zones import zoned_dragonfly
        return zoned_dragonfly(topo, storage, bb=int(round(bb)), speed=speed_f, link_bw=link_bw, link_lat=link_lat,
                               pfs_bw=pfs_bw, pfs_lat=pfs_lat, master_bw=master_bw, master_lat=master_lat,
                               sharing=sharing, params={**params, "form": "zones"})
    hosts: list[HostSpec] = []
    coords: dict[str, Coords] = {}
    for rank in range(topo.size):
        c = topo.coords(rank)
        name = topo.name(rank)
        coords[name] = c
        # compute hosts carry no role: Batsim reads an empty role as a compute node and refuses
        # "compute" (its roles are master, compute_node, storage)
        props = {"role": "storage"} if rank in storage else {}
        props.update({"group": str(c.group), "chassis": str(c.group * chassis + c.chassis),
                      "router": str((c.group * chassis + c.chassis) * routers + c.router)})
        if rank in storage:
            props["bb_capacity"] = str(int(round(bb)))
        hosts.append(HostSpec(name, speed_f, props))
    hosts.append(HostSpec("pfs", speed_f, {"role": "storage", "pfs": "true"}))
    hosts.append(HostSpec("master", speed_f, {"role": "master"}))

    links = [LinkSpec(f"{topo.name(rank)}_link", link_bw, link_lat, sharing) for rank in range(topo.size)]
    links += [LinkSpec(name, link_bw, link_lat, sharing) for name in topo.cables()]
    links.append(LinkSpec("pfs_link", pfs_bw, pfs_lat))  # SHARED, as the artifact declares it
    links.append(LinkSpec("master_link", master_bw, master_lat, "FATPIPE"))

    def route_of(src: str, dst: str) -> list[str]:
        """Node link UP (node to router), cables, node link DOWN; PFS and master by their link."""
        hops = topo.router_hops(coords[src], coords[dst]) if src in coords and dst in coords else []
        return [*own_link(src, "UP"), *(half(c, d, sharing) for c, d in hops), *own_link(dst, "DOWN")]

    def own_link(host: str, direction: str) -> list[str]:
        if host in coords:
            return [half(f"{host}_link", direction, sharing)]
        return ["pfs_link" if host == "pfs" else "master_link"]

    desc = PlatformDescription("dragonfly", params, hosts, links, all_pair_routes(hosts, route_of))
    n_compute = len(desc.compute_hosts())
    comments = [
        f"Generated by mrsched platform dragonfly: {groups} groups x {chassis} chassis x {routers} routers x "
        f"{nodes_per_router} nodes = {topo.size} nodes ({n_compute} compute, {len(storage)} storage with "
        f"{int(round(bb))} bytes of burst buffer each), a PFS behind pfs_link and a master host.",
        "Explicit topology, Full routing: every route is listed (SimGrid's Dragonfly minimal routing between "
        "nodes; node link + pfs_link to the PFS), so SimGrid 3.25 and 3.3x route identically.",
        ("Node links and cables are SPLITDUPLEX as in SimGrid's DRAGONFLY cluster: a route names the half it "
         "crosses (UP from node to router and from the lower router/chassis/group), one-way routes both ways."
         if sharing == "SPLITDUPLEX" else
         "Node links and cables are SHARED: both directions of a cable share its bandwidth."),
        "Batsim ids follow the lexicographic order of host names (node_0, node_1, node_10, ...), "
        "compute hosts first, storage hosts after.",
    ]
    return GeneratedPlatform(render_xml(desc, comments), desc)
