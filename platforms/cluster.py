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
"""

from __future__ import annotations

from mrsched.errors import PlatformError
from mrsched.units import parse_bandwidth, parse_size, parse_speed, parse_time
from mrsched.platforms.description import (
    GeneratedPlatform, HostSpec, LinkSpec, PlatformDescription, all_pair_routes, check_positive, half,
    link_sharing_policy, render_xml)

MAX_HOSTS = 1200  # Full routing lists every pair: ~720k routes beyond this, too large a file


def generate_cluster(*, nodes: int, storage: int = 0, bb_capacity: float | str = "40GB",
                     speed: float | str = "1Gf", link_bandwidth: float | str = "1250MBps",
                     link_latency: float | str = "50us", pfs_bandwidth: float | str = "5GBps",
                     pfs_latency: float | str = "100us", pfs: bool = True, prefix: str = "node_",
                     gpus: int = 0, cores: int = 0, link_sharing: str = "splitduplex") -> GeneratedPlatform:
    """A one-switch cluster of ``nodes`` compute hosts plus ``storage`` burst-buffer hosts and a PFS."""
    sharing = link_sharing_policy(link_sharing)
    check_positive(nodes, "nodes", integer=True)
    check_positive(storage, "storage", integer=True, allow_zero=True)
    check_positive(gpus, "gpus", integer=True, allow_zero=True)
    check_positive(cores, "cores", integer=True, allow_zero=True)
    total = nodes + storage + int(pfs) + 1
    if total > MAX_HOSTS:
        raise PlatformError(f"{total} hosts is too many for an explicit Full-routing cluster "
                            f"(limit {MAX_HOSTS})", field="nodes",
                            hint="use fewer nodes, or `mrsched platform dragonfly` for a larger machine")
    bb = parse_size(bb_capacity)
    check_positive(bb, "bb_capacity", allow_zero=True)
    speed_f, link_bw, link_lat = parse_speed(speed), parse_bandwidth(link_bandwidth), parse_time(link_latency)
    pfs_bw, pfs_lat = parse_bandwidth(pfs_bandwidth), parse_time(pfs_latency)
    for name, value in (("speed", speed_f), ("link_bandwidth", link_bw), ("pfs_bandwidth", pfs_bw)):
        check_positive(value, name)
    for name, value in (("link_latency", link_lat), ("pfs_latency", pfs_lat)):
        check_positive(value, name, allow_zero=True)

    hosts: list[HostSpec] = []
    for k in range(nodes):
        props = {}  # no role: Batsim's default compute node ("compute" is not a Batsim role)
        if gpus:
            props["gpus"] = str(gpus)
        if cores:
            props["cores"] = str(cores)
        hosts.append(HostSpec(f"{prefix}{k}", speed_f, props))
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

    params = {"nodes": nodes, "storage": storage, "bb_capacity": int(round(bb)), "speed": speed_f,
              "link_bandwidth": link_bw, "link_latency": link_lat, "pfs": pfs, "pfs_bandwidth": pfs_bw,
              "pfs_latency": pfs_lat, "prefix": prefix, "gpus": gpus, "cores": cores,
              "link_sharing": sharing.lower()}
    desc = PlatformDescription("cluster", params, hosts, links,
                               all_pair_routes(hosts, lambda s, d: (own_link(s, "UP"), own_link(d, "DOWN"))))
    comments = [
        f"Generated by mrsched platform cluster: {nodes} compute nodes, {storage} burst-buffer storage nodes "
        f"({int(round(bb))} bytes each){', a PFS behind pfs_link' if pfs else ''} and a master, on one switch.",
        "Explicit topology, Full routing: every route is listed, so SimGrid 3.25 and 3.3x route identically.",
    ]
    if sharing == "SPLITDUPLEX":
        comments.append("Host links are SPLITDUPLEX as in SimGrid's flat cluster: sender's link UP, receiver's link "
                        "DOWN, one-way routes both ways.")
    return GeneratedPlatform(render_xml(desc, comments), desc)
