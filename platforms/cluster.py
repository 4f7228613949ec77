"""A flat cluster (one switch) with burst-buffer storage nodes and a PFS, for small tests.

Hosts: compute ``node_0..node_{N-1}``, storage ``bb_0..bb_{K-1}`` (``role=storage``,
``bb_capacity`` bytes), ``pfs`` (``role=storage``, ``pfs=true``) behind one shared link, and a
``master``. Every host hangs off one switch by its own link, so a route is the source's link
then the destination's link (the PFS's own link being the shared PFS link, the master's a
FATPIPE link). Compute and storage links are SPLITDUPLEX by default, as SimGrid's flat
``<cluster>`` builds its private links (``ClusterZone``: the sender's ``_UP`` half, the
receiver's ``_DOWN`` half), so opposite-direction transfers of one host do not contend and
same-direction ones do; ``link_sharing="shared"`` makes them SHARED (the former behaviour,
written as symmetrical routes). Split-duplex routes are written one way both ways (see
:mod:`mrsched.platforms.description` for why). Same explicit
Full-routing XML as the Dragonfly generator (see :mod:`mrsched.platforms.dragonfly` for why),
which keeps the file valid and identically routed on SimGrid 3.25 and 3.3x. The number of
routes grows as the square of the hosts: meant for machines up to about a thousand hosts.

Batsim ids follow the lexicographic order of names: ``bb_*`` storage, then ``node_*``
(``node_0, node_1, node_10, ...``), then ``pfs``; map names to ids explicitly.

CPU+GPU machines (seed 002, DESIGN.md "CPU+GPU machines"): ``cores=C`` writes one Batsim
compute resource per *core*, hosts ``node_K_core_0..C-1`` carrying ``resource="core"``,
``node="node_K"``, ``cores`` and ``gpus`` of their node, so that jobs never share a resource
and ``res`` is a job's core count (``node_hosts=True`` keeps the former one host per node with
a ``cores`` property). Above ``MAX_HOSTS`` hosts the platform is written with SimGrid
``<cluster>`` zones and implicit routing (see :func:`_zoned`), as real Batsim 4.2.1 loads.
"""

from __future__ import annotations

from mrsched.errors import PlatformError
from mrsched.units import parse_bandwidth, parse_size, parse_speed, parse_time
from mrsched.platforms.description import (
    GeneratedPlatform, HostSpec, LinkSpec, PlatformDescription, all_pair_routes, check_positive, half,
    format_bandwidth, format_speed, format_time, link_sharing_policy, render_xml)

MAX_HOSTS = 1200  # Full routing lists every pair: ~720k routes beyond this, too large a file


def generate_cluster(*, nodes: int, storage: int = 0, bb_capacity: float | str = "40GB",
                     speed: float | str = "1Gf", link_bandwidth: float | str = "1250MBps",
                     link_latency: float | str = "50us", pfs_bandwidth: float | str = "5GBps",
                     pfs_latency: float | str = "100us", pfs: bool = True, prefix: str = "node_",
                     gpus: int = 0, cores: int = 0, link_sharing: str = "splitduplex",
                     node_hosts: bool = False) -> GeneratedPlatform:
    """A one-switch cluster of ``nodes`` compute nodes plus ``storage`` burst-buffer hosts and a PFS.

    ``cores > 0`` makes every core a host (per-core layout) unless ``node_hosts`` asks for one
    host per node with a ``cores`` property.
    """
    sharing = link_sharing_policy(link_sharing)
    check_positive(nodes, "nodes", integer=True)
    check_positive(storage, "storage", integer=True, allow_zero=True)
    check_positive(gpus, "gpus", integer=True, allow_zero=True)
    check_positive(cores, "cores", integer=True, allow_zero=True)
    per_core = bool(cores) and not node_hosts
    total = nodes * (cores if per_core else 1) + storage + int(pfs) + 1
    bb = parse_size(bb_capacity)
    check_positive(bb, "bb_capacity", allow_zero=True)
    speed_f, link_bw, link_lat = parse_speed(speed), parse_bandwidth(link_bandwidth), parse_time(link_latency)
    pfs_bw, pfs_lat = parse_bandwidth(pfs_bandwidth), parse_time(pfs_latency)
    for name, value in (("speed", speed_f), ("link_bandwidth", link_bw), ("pfs_bandwidth", pfs_bw)):
        check_positive(value, name)
    for name, value in (("link_latency", link_lat), ("pfs_latency", pfs_lat)):
        check_positive(value, name, allow_zero=True)

    params = {"nodes": nodes, "storage": storage, "bb_capacity": int(round(bb)), "speed": speed_f,
              "link_bandwidth": link_bw, "link_latency": link_lat, "pfs": pfs, "pfs_bandwidth": pfs_bw,
              "pfs_latency": pfs_lat, "prefix": prefix, "gpus": gpus, "cores": cores,
              "link_sharing": sharing.lower()}
    if per_core:
        params["layout"] = "core"
    if total > MAX_HOSTS:
        return _zoned(params, per_core, sharing)

    hosts: list[HostSpec] = []
    for k in range(nodes):
        for name, props in _compute_hosts(f"{prefix}{k}", gpus, cores, per_core):
            hosts.append(HostSpec(name, speed_f, props))
    for k in range(storage):
        hosts.append(HostSpec(f"bb_{k}", speed_f, {"role": "storage", "bb_capacity": str(int(round(bb)))}))
    if pfs:
        hosts.append(HostSpec("pfs", speed_f, {"role": "storage", "pfs": "true"}))
    hosts.append(HostSpec("master", speed_f, {"role": "master"}))

    links = [LinkSpec(f"{h.name}_link", link_bw, link_lat, sharing) for h in hosts
             if h.name not in ("pfs", "master")]
    if pfs:
        links.append(LinkSpec("pfs_link", pfs_bw, pfs_lat))
    links.append(LinkSpec("master_link", link_bw, link_lat, "FATPIPE"))

    def own_link(host: str, direction: str) -> str:
        """The sender's link UP, the receiver's DOWN (the PFS and master links have no halves)."""
        return {"pfs": "pfs_link", "master": "master_link"}.get(host) or half(f"{host}_link", direction, sharing)

    desc = PlatformDescription("cluster", params, hosts, links,
                               all_pair_routes(hosts, lambda s, d: (own_link(s, "UP"), own_link(d, "DOWN"))))
    comments = [
        f"Generated by mrsched platform cluster: {nodes} compute nodes{_core_text(cores, gpus, per_core)}, {storage} burst-buffer storage nodes "
        f"({int(round(bb))} bytes each){', a PFS behind pfs_link' if pfs else ''} and a master, on one switch.",
        "Explicit topology, Full routing: every route is listed, so SimGrid 3.25 and 3.3x route identically.",
    ]
    if sharing == "SPLITDUPLEX":
        comments.append("Host links are SPLITDUPLEX as in SimGrid's flat cluster: sender's link UP, receiver's link "
                        "DOWN, one-way routes both ways.")
    return GeneratedPlatform(render_xml(desc, comments), desc)


def _compute_hosts(node: str, gpus: int, cores: int, per_core: bool) -> list[tuple[str, dict[str, str]]]:
    """The hosts of one compute node: itself, or one host per core (DESIGN.md "CPU+GPU machines")."""
    if per_core:
        props = {"resource": "core", "node": node, "cores": str(cores), "gpus": str(gpus)}
        return [(f"{node}_core_{c}", dict(props)) for c in range(cores)]
    props = {}  # no role: Batsim's default compute node ("compute" is not a Batsim role)
    if gpus:
        props["gpus"] = str(gpus)
    if cores:
        props["cores"] = str(cores)
    return [(node, props)]


def _core_text(cores: int, gpus: int, per_core: bool) -> str:
    return f" x {cores} cores (one host per core) x {gpus} GPUs" if per_core else ""


class ZonedDescription(PlatformDescription):
    """A description whose routes are implicit (SimGrid ``<cluster>`` zones): ask the loader."""

    def route(self, src: str, dst: str) -> tuple[str, ...]:
        raise PlatformError(f"the {self.kind} platform is written with implicit routing: load it with "
                            "mrsched.simulator.platform.load_platform to follow a route")

    def summary(self) -> str:
        return super().summary().replace(", 0 routes", ", implicit routing (cluster zones)")


def _zoned(params: dict, per_core: bool, sharing: str) -> GeneratedPlatform:
    """A machine above ``MAX_HOSTS`` hosts, written with SimGrid ``<cluster>`` zones.

    Why: Full routing lists every host pair (millions of routes for Machine-L's 8,192 core
    hosts). Per-core: one ``<cluster>`` per node (its ``<prop>``s are the node's, which SimGrid
    gives every host of the cluster, as the ``bigcluster`` reference shows Batsim reports them),
    each joined by its own uplink to a ``services`` zone (storage, PFS, master) in a Dijkstra
    root zone: a star, so a route is known without listing node pairs. Node hosts: one
    ``<cluster>`` for the whole machine and a Full root with one zoneRoute, as the
    ``cluster10k`` reference (both formats are the ones real Batsim 4.2.1 accepted).
    """
    nodes, cores, gpus, prefix = params["nodes"], params["cores"], params["gpus"], params["prefix"]
    speed, bw, lat = params["speed"], params["link_bandwidth"], params["link_latency"]
    hosts: list[HostSpec] = []
    links: list[LinkSpec] = []
    cl_sharing = "" if sharing == "SPLITDUPLEX" else f' sharing_policy="{sharing}"'
    attrs = (f'speed="{format_speed(speed)}" bw="{format_bandwidth(bw)}" lat="{format_time(lat)}"{cl_sharing}')
    body: list[str] = []
    routes: list[str] = []
    if per_core:
        for k in range(nodes):
            node = f"{prefix}{k}"
            body.append(f'    <cluster id="{node}" prefix="{node}_core_" suffix="" radical="0-{cores - 1}" '
                        f'{attrs} router_id="{node}_router">')
            for key, value in (("resource", "core"), ("node", node), ("cores", str(cores)), ("gpus", str(gpus))):
                body.append(f'      <prop id="{key}" value="{value}"/>')
            body.append("    </cluster>")
            for name, props in _compute_hosts(node, gpus, cores, True):
                hosts.append(HostSpec(name, speed, props))
            links.append(LinkSpec(f"{node}_uplink", bw, lat))
            routes.append(f'    <zoneRoute src="{node}" dst="services" gw_src="{node}_router" '
                          f'gw_dst="services_router"><link_ctn id="{node}_uplink"/></zoneRoute>')
        root = "Dijkstra"
    else:
        props = _compute_hosts("x", gpus, cores, False)[0][1]
        body.append(f'    <cluster id="machine" prefix="{prefix}" suffix="" radical="0-{nodes - 1}" {attrs} '
                    f'router_id="machine_router"' + (">" if props else "/>"))
        if props:
            body.extend(f'      <prop id="{key}" value="{value}"/>' for key, value in props.items())
            body.append("    </cluster>")
        hosts.extend(HostSpec(f"{prefix}{k}", speed, dict(props)) for k in range(nodes))
        links.append(LinkSpec("machine_uplink", bw * nodes, lat))
        routes.append('    <zoneRoute src="machine" dst="services" gw_src="machine_router" '
                      'gw_dst="services_router"><link_ctn id="machine_uplink"/></zoneRoute>')
        root = "Full"
    service_hosts = [HostSpec(f"bb_{k}", speed, {"role": "storage", "bb_capacity": str(params["bb_capacity"])})
                     for k in range(params["storage"])]
    if params["pfs"]:
        service_hosts.append(HostSpec("pfs", speed, {"role": "storage", "pfs": "true"}))
    service_hosts.append(HostSpec("master", speed, {"role": "master"}))
    hosts.extend(service_hosts)
    service_links = [LinkSpec(f"{h.name}_link", bw, lat) for h in service_hosts if h.name not in ("pfs", "master")]
    if params["pfs"]:
        service_links.append(LinkSpec("pfs_link", params["pfs_bandwidth"], params["pfs_latency"]))
    service_links.append(LinkSpec("master_link", bw, lat, "FATPIPE"))
    links.extend(service_links)

    out = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           f"<!-- Generated by mrsched platform cluster: {nodes} compute nodes{_core_text(cores, gpus, per_core)}, "
           f"{params['storage']} burst-buffer storage nodes, {'a PFS, ' if params['pfs'] else ''}a master. -->",
           "<!-- Implicit routing: SimGrid <cluster> zones joined to a services zone (storage, PFS, master); "
           "no host pair is listed. -->",
           '<platform version="4.1">', f'  <zone id="root" routing="{root}">']
    out.extend(body)
    out.append('    <zone id="services" routing="Full">')
    for h in service_hosts:
        out.append(f'      <host id="{h.name}" speed="{format_speed(h.speed)}">'
                   + "".join(f'<prop id="{k}" value="{v}"/>' for k, v in h.properties.items()) + "</host>")
    out.append('      <router id="services_router"/>')
    for lk in service_links:
        pol = "" if lk.sharing == "SHARED" else f' sharing_policy="{lk.sharing}"'
        out.append(f'      <link id="{lk.name}" bandwidth="{format_bandwidth(lk.bandwidth)}" '
                   f'latency="{format_time(lk.latency)}"{pol}/>')
    for h in service_hosts:
        link = {"pfs": "pfs_link", "master": "master_link"}.get(h.name, f"{h.name}_link")
        out.append(f'      <route src="services_router" dst="{h.name}"><link_ctn id="{link}"/></route>')
    out.append("    </zone>")
    for lk in links:
        if lk.name.endswith("_uplink"):
            out.append(f'    <link id="{lk.name}" bandwidth="{format_bandwidth(lk.bandwidth)}" '
                       f'latency="{format_time(lk.latency)}"/>')
    out.extend(routes)
    out.append("  </zone>")
    out.append("</platform>")
    desc = ZonedDescription("cluster", params, hosts, links, {})
    return GeneratedPlatform("\n".join(out) + "\n", desc)
