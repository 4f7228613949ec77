"""A large Dragonfly written with SimGrid zones and implicit routing (issue 18 item 2).

Why: the explicit form (``dragonfly.py``, one ``routing="Full"`` zone) lists every host pair's
route, so its file grows as the square of the hosts (10,000 nodes: 50 million routes). Here
each chassis is one SimGrid ``<cluster>`` (its compute nodes, each with its own split-duplex
link to the chassis' router; the chassis' routers and green cables as the cluster backbone),
the burst-buffer nodes of a group sit in one zone per group, the PFS and the master in a
``frontend`` zone, and the root zone lists one ``zoneRoute`` per pair of zones (chassis
uplinks, one global "blue" link per pair of groups). The file grows as the square of the
*chassis* (10,000 nodes in 100 chassis: about 5,500 zone routes). Only forms real Batsim 4.2.1
accepted are used (``../shared/batsim-reference/cluster10k`` and ``bigcluster``: a root Full zone
of ``<cluster>`` zones and ``<zone>`` zones joined by ``zoneRoute`` through cluster routers).

What differs from the explicit form, said plainly:
- a chassis' compute nodes carry ``group`` and ``chassis`` as *cluster* properties (Batsim
  reports them per host in ``properties`` and ``zone_properties``), not ``router``: SimGrid
  gives every host of a ``<cluster>`` the same properties. Burst-buffer placement reads only
  ``group`` and ``chassis`` (nearest: same chassis, same group, anywhere), so it is unchanged;
- a storage node is not inside its chassis' fabric: it hangs off its group's storage router, so
  a node's burst-buffer traffic crosses its link, the chassis backbone and uplink, then the
  storage node's own link; inter-group traffic crosses one blue link (not SimGrid's Dragonfly
  minimal route of green, black and blue cables).
Names (``node_<rank>``, Batsim ids in host-name order) and the storage nodes chosen are the
explicit form's, so workloads and schedulers see the same machine.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import quoteattr

from mrsched.platforms.description import (
    GeneratedPlatform, HostSpec, LinkSpec, PlatformDescription, format_bandwidth, format_speed, format_time)


class ZonedDescription(PlatformDescription):
    """A platform description whose routes are computed from the zones, not stored."""

    def __init__(self, kind: str, parameters: dict[str, Any], hosts: list[HostSpec], links: list[LinkSpec],
                 zone_of: dict[str, str], zone_route, host_route):
        self.zone_of = zone_of              # host -> its zone id
        self._zone_route = zone_route       # (zone, zone) -> links between their gateways
        self._host_route = host_route       # (host, "UP" | "DOWN") -> links host <-> its gateway
        super().__init__(kind, parameters, hosts, links, {})

    def route(self, src: str, dst: str) -> tuple[str, ...]:
        """Resources crossed from ``src`` to ``dst``, as SimGrid routes the zones."""
        self.host(src)
        self.host(dst)
        if src == dst:
            return ()
        za, zb = self.zone_of[src], self.zone_of[dst]
        if za == zb:
            up, down = self._host_route(src, "UP"), self._host_route(dst, "DOWN")
            if za.startswith("chassis_"):     # one crossing of the chassis backbone
                return up + down[1:]
            return up + down
        return self._host_route(src, "UP") + self._zone_route(za, zb) + self._host_route(dst, "DOWN")

    def summary(self) -> str:
        bb = sum(int(h.properties.get("bb_capacity", 0)) for h in self.storage_hosts())
        return (f"{self.kind}: {len(self.compute_hosts())} compute, {len(self.storage_hosts())} storage "
                f"({bb / 1e9:g} GB burst buffer), pfs={'yes' if self.pfs_host() else 'no'}, "
                f"{len(self.zones)} zones (implicit routing)")


def _ranges(ranks: list[int]) -> str:
    """A SimGrid radical: ``0-7,9-16``."""
    out, lo = [], None
    for k, r in enumerate(ranks):
        if lo is None:
            lo = r
        if k + 1 == len(ranks) or ranks[k + 1] != r + 1:
            out.append(f"{lo}-{r}" if r != lo else f"{r}")
            lo = None
    return ",".join(out)


def zoned_dragonfly(topo, storage: set[int], *, bb: int, speed: float, link_bw: float, link_lat: float,
                    pfs_bw: float, pfs_lat: float, master_bw: float, master_lat: float, sharing: str,
                    params: dict[str, Any]) -> GeneratedPlatform:
    """The zoned form of the Dragonfly ``topo`` (see the module docstring)."""
    G, C, R, N = topo.G, topo.C, topo.R, topo.N
    per_chassis = R * N
    hosts: list[HostSpec] = []
    links: list[LinkSpec] = []
    zone_of: dict[str, str] = {}
    chassis_ranks: dict[int, list[int]] = {}
    storage_of_group: dict[int, list[int]] = {g: [] for g in range(G)}
    for rank in range(topo.size):
        c = topo.coords(rank)
        gc = c.group * C + c.chassis
        name = topo.name(rank)
        if rank in storage:
            storage_of_group[c.group].append(rank)
            zone_of[name] = f"storage_{c.group}"
            hosts.append(HostSpec(name, speed, {"role": "storage", "group": str(c.group), "chassis": str(gc),
                                                "router": str(gc * R + c.router), "bb_capacity": str(bb)}))
        else:
            chassis_ranks.setdefault(gc, []).append(rank)
            zone_of[name] = f"chassis_{gc}"
            hosts.append(HostSpec(name, speed, {"group": str(c.group), "chassis": str(gc)}))
    hosts.append(HostSpec("pfs", speed, {"role": "storage", "pfs": "true"}))
    hosts.append(HostSpec("master", speed, {"role": "master"}))
    zone_of["pfs"] = zone_of["master"] = "frontend"

    # links: a chassis' node links are its cluster's own (declared by the <cluster> element)
    backbone_bw = link_bw * R                      # the chassis' routers, one cable each way out
    for gc in sorted(chassis_ranks):
        for rank in chassis_ranks[gc]:
            links.append(LinkSpec(f"chassis_{gc}_link_{rank}", link_bw, link_lat, sharing))
        links.append(LinkSpec(f"chassis_{gc}_backbone", backbone_bw, 0.0))
        links.append(LinkSpec(f"chassis_{gc}_uplink", link_bw * R, link_lat))
    for g in range(G):
        for rank in storage_of_group[g]:
            links.append(LinkSpec(f"{topo.name(rank)}_link", link_bw, link_lat))
        links.append(LinkSpec(f"storage_{g}_uplink", link_bw * max(1, len(storage_of_group[g])), link_lat))
    for g1 in range(G):
        for g2 in range(g1 + 1, G):
            links.append(LinkSpec(topo.blue(g1, g2), link_bw * R, link_lat))
    links.append(LinkSpec("pfs_link", pfs_bw, pfs_lat))
    links.append(LinkSpec("master_link", master_bw, master_lat, "FATPIPE"))

    zones = ([f"chassis_{gc}" for gc in sorted(chassis_ranks)] +
             [f"storage_{g}" for g in range(G) if storage_of_group[g]] + ["frontend"])

    def group_of(zone: str) -> int | None:
        kind, _, index = zone.partition("_")
        if kind == "chassis":
            return int(index) // C
        if kind == "storage":
            return int(index)
        return None

    def uplink(zone: str) -> list[str]:
        return [] if zone == "frontend" else [f"{zone}_uplink"]

    def zone_route(a: str, b: str) -> tuple[str, ...]:
        ga, gb = group_of(a), group_of(b)
        blue = [topo.blue(ga, gb)] if ga is not None and gb is not None and ga != gb else []
        return tuple(uplink(a) + blue + list(reversed(uplink(b))))

    def host_route(host: str, direction: str) -> tuple[str, ...]:
        """Host to its zone's gateway (UP) or back (DOWN)."""
        zone = zone_of[host]
        if zone.startswith("chassis_"):
            own = f"{zone}_link_{host[len(topo.prefix):]}_{direction}" if sharing == "SPLITDUPLEX" \
                else f"{zone}_link_{host[len(topo.prefix):]}"
            return (own, f"{zone}_backbone") if direction == "UP" else (f"{zone}_backbone", own)
        if zone == "frontend":
            return ("pfs_link",) if host == "pfs" else ("master_link",)
        return (f"{host}_link",)

    desc = ZonedDescription("dragonfly", params, hosts, links, zone_of, zone_route, host_route)
    desc.zones = zones
    n_compute = len(desc.compute_hosts())
    comments = [
        f"Generated by mrsched platform dragonfly: {G} groups x {C} chassis x {R} routers x {N} nodes = "
        f"{topo.size} nodes ({n_compute} compute, {len(storage)} storage with {bb} bytes of burst buffer "
        "each), a PFS behind pfs_link and a master host.",
        "Zoned form (too many hosts for Full routing): one <cluster> per chassis (properties group and "
        "chassis), the storage nodes of each group in a zone, pfs and master in zone frontend; one "
        "zoneRoute per pair of zones (chassis uplinks, one blue link per pair of groups).",
        "Batsim ids follow the lexicographic order of host names (node_0, node_1, node_10, ...), "
        "compute hosts first, storage hosts after.",
    ]
    return GeneratedPlatform(_render(desc, topo, chassis_ranks, storage_of_group, zones, zone_route, sharing,
                                     link_bw, link_lat, backbone_bw, speed, comments), desc)


def _render(desc: ZonedDescription, topo, chassis_ranks, storage_of_group, zones, zone_route, sharing,
            link_bw, link_lat, backbone_bw, speed, comments) -> str:
    out = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">']
    for line in comments:
        out.append(f"<!-- {line.replace('--', '- -')} -->")
    out.append('<platform version="4.1">')
    out.append('  <zone id="root" routing="Full">')
    C = topo.C
    policy = "" if sharing == "SPLITDUPLEX" else f' sharing_policy="{sharing}"'
    for gc in sorted(chassis_ranks):
        out.append(f'    <cluster id="chassis_{gc}" prefix={quoteattr(topo.prefix)} suffix="" '
                   f'radical="{_ranges(chassis_ranks[gc])}" speed="{format_speed(speed)}" '
                   f'bw="{format_bandwidth(link_bw)}" lat="{format_time(link_lat)}"{policy} '
                   f'bb_bw="{format_bandwidth(backbone_bw)}" bb_lat="0" router_id="chassis_{gc}_router">')
        out.append(f'      <prop id="group" value="{gc // C}"/>')
        out.append(f'      <prop id="chassis" value="{gc}"/>')
        out.append("    </cluster>")
    for g, ranks in storage_of_group.items():
        if not ranks:
            continue
        out.append(f'    <zone id="storage_{g}" routing="Full">')
        for rank in ranks:
            h = desc.host(topo.name(rank))
            out.append(f'      <host id={quoteattr(h.name)} speed="{format_speed(h.speed)}">')
            for key, value in h.properties.items():
                out.append(f"        <prop id={quoteattr(key)} value={quoteattr(value)}/>")
            out.append("      </host>")
        out.append(f'      <router id="storage_{g}_router"/>')
        for rank in ranks:
            _link(out, desc.link(f"{topo.name(rank)}_link"), "      ")
        for k, rank in enumerate(ranks):
            name = topo.name(rank)
            out.append(f'      <route src="storage_{g}_router" dst={quoteattr(name)}>'
                       f'<link_ctn id={quoteattr(name + "_link")}/></route>')
            for other in ranks[k + 1:]:
                dst = topo.name(other)
                out.append(f'      <route src={quoteattr(name)} dst={quoteattr(dst)}><link_ctn id='
                           f'{quoteattr(name + "_link")}/><link_ctn id={quoteattr(dst + "_link")}/></route>')
        out.append("    </zone>")
    out.append('    <zone id="frontend" routing="Full">')
    for name in ("pfs", "master"):
        h = desc.host(name)
        out.append(f'      <host id="{name}" speed="{format_speed(h.speed)}">')
        for key, value in h.properties.items():
            out.append(f"        <prop id={quoteattr(key)} value={quoteattr(value)}/>")
        out.append("      </host>")
    out.append('      <router id="frontend_router"/>')
    _link(out, desc.link("pfs_link"), "      ")
    _link(out, desc.link("master_link"), "      ")
    out.append('      <route src="frontend_router" dst="pfs"><link_ctn id="pfs_link"/></route>')
    out.append('      <route src="frontend_router" dst="master"><link_ctn id="master_link"/></route>')
    out.append('      <route src="pfs" dst="master"><link_ctn id="pfs_link"/><link_ctn id="master_link"/></route>')
    out.append("    </zone>")
    for lk in desc.links:
        if lk.name.endswith("_uplink") or lk.name.startswith("blue_"):
            _link(out, lk, "    ")
    for i, a in enumerate(zones):
        for b in zones[i + 1:]:
            inner = "".join(f"<link_ctn id={quoteattr(name)}/>" for name in zone_route(a, b))
            out.append(f'    <zoneRoute src="{a}" dst="{b}" gw_src="{a}_router" gw_dst="{b}_router">'
                       f"{inner}</zoneRoute>")
    out.append("  </zone>")
    out.append("</platform>")
    return "\n".join(out) + "\n"


def _link(out: list[str], lk: LinkSpec, indent: str) -> None:
    sharing = "" if lk.sharing == "SHARED" else f' sharing_policy="{lk.sharing}"'
    out.append(f'{indent}<link id={quoteattr(lk.name)} bandwidth="{format_bandwidth(lk.bandwidth)}" '
               f'latency="{format_time(lk.latency)}"{sharing}/>')
