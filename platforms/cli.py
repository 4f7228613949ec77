"""``mrsched platform``: generate SimGrid platforms (dragonfly, cluster, iotree) or list the
bundled ones."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from mrsched.errors import ConfigError
from mrsched.platforms.wattage import STORAGE_WATTAGE, with_wattage


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="platform_command", metavar="KIND")
    df = sub.add_parser("dragonfly", help="seed 001's Dragonfly with burst-buffer storage nodes and a PFS",
                        description="Dragonfly machine (defaults: seed 001's 108 nodes = 96 compute + 12 storage). "
                                    "Up to 1,200 hosts: explicit topology with Full routing (loads and routes "
                                    "identically in SimGrid 3.25 and 3.3x); beyond: SimGrid <cluster> zones "
                                    "with implicit routing, one per chassis.")
    df.add_argument("--groups", type=int, default=3, help="Dragonfly groups")
    df.add_argument("--chassis", type=int, default=4, help="chassis per group")
    df.add_argument("--routers", type=int, default=3, help="routers per chassis")
    df.add_argument("--nodes-per-router", type=int, default=3, help="nodes (compute and storage) per router")
    where = df.add_mutually_exclusive_group()
    where.add_argument("--storage-per-chassis", type=int, default=None,
                       help="burst-buffer nodes per chassis (default 1: each chassis' last node)")
    where.add_argument("--storage-per-group", type=int, default=None, help="burst-buffer nodes per group")
    where.add_argument("--storage-count", type=int, default=None, help="total burst-buffer nodes, spread evenly")
    df.add_argument("--bb-capacity", default="40GB", help="burst buffer per storage node (default 40GB)")
    df.add_argument("--speed", default="1Gf", help="host speed (default 1Gf)")
    df.add_argument("--link-bandwidth", default="1250MBps", help="bandwidth of every node link and cable")
    df.add_argument("--link-latency", default="50us", help="latency of every node link and cable")
    df.add_argument("--pfs-bandwidth", default="5GBps", help="the shared PFS link (default 5GBps)")
    df.add_argument("--pfs-latency", default="100us", help="latency of the PFS link")
    _link_sharing(df, "node links and green/black/blue cables")
    _output(df)
    _wattage_arg(df)

    cl = sub.add_parser("cluster", help="flat one-switch cluster with storage nodes and a PFS; CPU+GPU machines with --cores",
                        description="Flat cluster: node_0..node_{N-1}, bb_0..bb_{K-1}, pfs, master.")
    cl.add_argument("--nodes", type=int, required=True, help="compute nodes")
    cl.add_argument("--storage", type=int, default=0, help="burst-buffer storage nodes (default 0)")
    cl.add_argument("--bb-capacity", default="40GB", help="burst buffer per storage node (default 40GB)")
    cl.add_argument("--speed", default="1Gf", help="host speed")
    cl.add_argument("--link-bandwidth", default="1250MBps", help="bandwidth of each node's link to the switch")
    cl.add_argument("--link-latency", default="50us", help="latency of each node's link")
    cl.add_argument("--pfs-bandwidth", default="5GBps", help="the shared PFS link")
    cl.add_argument("--no-pfs", action="store_true", help="no PFS host")
    cl.add_argument("--gpus", type=int, default=0, help="GPUs per compute node (host property gpus; default 0)")
    cl.add_argument("--cores", type=int, default=0,
                    help="cores per compute node: one Batsim resource per core (hosts node_K_core_C with "
                         "resource=core, node, cores, gpus properties; seed 002's CPU+GPU machines, which "
                         "slurm-bf, ipsched and aucsched need; default 0: one resource per node)")
    cl.add_argument("--node-hosts", action="store_true",
                    help="with --cores: one host per node carrying a cores property instead")
    _link_sharing(cl, "compute and storage node links")
    _output(cl)
    _wattage_arg(cl)

    io = sub.add_parser("iotree", help="seed 004's I/O bandwidth tree (CTS-1: nodes, edge switches, core pool, PFS)",
                        description="Seed 004 Sect. 3.3.1 CTS-1 model by default: 24 units x 162 nodes, edge "
                                    "216GBps, core pool 432GBps, PFS 70GBps. SimGrid <cluster> zones with "
                                    "implicit routing (any size).")
    io.add_argument("--units", type=int, default=24, help="scalable units (edge switches; default 24)")
    io.add_argument("--nodes-per-unit", type=int, default=162, help="compute nodes per unit (default 162)")
    io.add_argument("--edge-bandwidth", default="216GBps", help="edge switch of a unit (default 216GBps)")
    io.add_argument("--core-bandwidth", default="432GBps", help="core switch / gateway pool (default 432GBps)")
    io.add_argument("--pfs-bandwidth", default="70GBps", help="PFS before underprovisioning (default 70GBps)")
    io.add_argument("--node-bandwidth", default="12.5GBps", help="each node's link (default 12.5GBps)")
    io.add_argument("--underprovision", type=float, default=0.0,
                    help="fraction of PFS bandwidth removed (0.3: 70 -> 49GBps; default 0)")
    io.add_argument("--speed", default="1Gf", help="compute node speed")
    io.add_argument("-o", "--output", required=True, help="output XML file")
    _wattage_arg(io)

    bu = sub.add_parser("bundled", help="list the platforms shipped with mrsched (or rewrite them)",
                        description="The platforms installed with mrsched (dragonfly96.xml: seed 001's "
                                    "machine; cluster16.xml: a small test cluster), each path with a "
                                    "summary; --write regenerates them from their generators.")
    bu.add_argument("--write", action="store_true", help="regenerate the bundled XML files in place")


def _link_sharing(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--link-sharing", choices=("splitduplex", "shared"), default="splitduplex",
                   help=f"sharing policy of the {what}: splitduplex (default, as SimGrid's <cluster>: "
                        "each direction has the full bandwidth) or shared (both directions contend); "
                        "the PFS link is always SHARED, the master link FATPIPE")


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="output XML file")
    p.add_argument("--describe", metavar="JSON", help="also write a JSON description (hosts, properties, links)")


def _wattage_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wattage", metavar="IDLE:ALLCORES", default=None,
                   help="wattage_per_state of every compute host (SimGrid's Idle:AllCores or "
                        "Idle:Epsilon:AllCores, watts): the power model of -E runs, power_cap and "
                        "the report's power; default: none")
    p.add_argument("--storage-wattage", metavar="IDLE:ALLCORES", default=STORAGE_WATTAGE,
                   help="with --wattage: wattage_per_state of every storage host (burst buffer, "
                        "PFS): Batsim's -E reads every machine's energy and SimGrid aborts on one "
                        f"without it; default {STORAGE_WATTAGE} (storage draws nothing)")
    p.add_argument("--sleep-wattage", metavar="WATTS", default=None,
                   help="with --wattage: every compute host also gets a sleep pstate drawing WATTS "
                        "and its virtual switch-off / switch-on pstates (Batsim's sleep_pstates "
                        "property, sleep:off:on), so that -O idle_sleep can put it to sleep; "
                        "default: no sleep pstate")
    p.add_argument("--switch-off", metavar="SECONDS:WATTS", default=None,
                   help="with --sleep-wattage: how long switching a host off lasts and what it "
                        f"draws meanwhile (default {DEFAULT_OFF}: Batsim's cluster_energy_128.xml)")
    p.add_argument("--switch-on", metavar="SECONDS:WATTS", default=None,
                   help="with --sleep-wattage: how long switching a host on lasts and what it "
                        f"draws meanwhile (default {DEFAULT_ON}: Batsim's cluster_energy_128.xml)")


#: Batsim's ``platforms/cluster_energy_128.xml`` (v4.2.1): switch-off pstate 0.1639344 flop/s at
#: 100.997 W, switch-on 0.0065998 flop/s at 125.174 W (1 flop: 6.1 s and 151.52 s)
DEFAULT_OFF = "6.1:100.997"
DEFAULT_ON = "151.52:125.174"


def sleep_states(args: argparse.Namespace) -> tuple[float, float, float, float, float] | None:
    """(asleep W, switch-off s, switch-off W, switch-on s, switch-on W) from the
    ``--sleep-wattage`` / ``--switch-off`` / ``--switch-on`` options; None without a sleep
    pstate. ConfigError naming the option on a value SimGrid or Batsim would not take."""
    sleep = getattr(args, "sleep_wattage", None)
    if sleep is None:
        for flag in ("switch_off", "switch_on"):
            if getattr(args, flag, None) is not None:
                raise ConfigError(f"--{flag.replace('_', '-')} needs --sleep-wattage (the sleep "
                                  "pstate it switches to)", field=flag.replace("_", "-"))
        return None
    if args.wattage is None:
        raise ConfigError("--sleep-wattage needs --wattage (the computing pstate's Idle:AllCores)",
                          field="sleep-wattage")

    def number(text, what, flag, positive=False):
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise ConfigError(f"--{flag}: {what} must be a number {'> 0' if positive else '>= 0'}, "
                              f"got {text!r}", field=flag)
        return v

    asleep = number(sleep, "watts", "sleep-wattage")
    out = [asleep]
    for flag, given, default in (("switch-off", args.switch_off, DEFAULT_OFF),
                                 ("switch-on", args.switch_on, DEFAULT_ON)):
        parts = (given if given is not None else default).split(":")
        if len(parts) != 2:
            raise ConfigError(f"--{flag} must be SECONDS:WATTS, got {given!r}", field=flag)
        out += [number(parts[0], "seconds", flag, positive=True), number(parts[1], "watts", flag)]
    return tuple(out)




def run(args: argparse.Namespace) -> int:
    from mrsched.platforms.cluster import generate_cluster
    from mrsched.platforms.dragonfly import generate_dragonfly

    if args.platform_command == "bundled":
        from mrsched.platforms.bundled import BUNDLED, HERE, regenerate
        if args.write:
            for path in regenerate():
                print(f"wrote {path}")
        else:
            for name, make in BUNDLED.items():
                print(f"{HERE / name}: {make().description.summary()}")
        return 0
    if args.platform_command == "dragonfly":
        storage_per_chassis = args.storage_per_chassis
        if storage_per_chassis is None and args.storage_per_group is None and args.storage_count is None:
            storage_per_chassis = 1
        result = generate_dragonfly(
            groups=args.groups, chassis=args.chassis, routers=args.routers, nodes_per_router=args.nodes_per_router,
            storage_per_chassis=storage_per_chassis, storage_per_group=args.storage_per_group,
            storage_count=args.storage_count, bb_capacity=args.bb_capacity, speed=args.speed,
            link_bandwidth=args.link_bandwidth, link_latency=args.link_latency,
            pfs_bandwidth=args.pfs_bandwidth, pfs_latency=args.pfs_latency, link_sharing=args.link_sharing)
    elif args.platform_command == "iotree":
        from mrsched.platforms.iotree import generate_iotree
        tree = generate_iotree(units=args.units, nodes_per_unit=args.nodes_per_unit,
                               edge_bandwidth=args.edge_bandwidth, core_bandwidth=args.core_bandwidth,
                               pfs_bandwidth=args.pfs_bandwidth, node_bandwidth=args.node_bandwidth,
                               underprovision=args.underprovision, speed=args.speed)
        try:
            xml = with_wattage(tree.xml, args.wattage, sleep_states(args), args.storage_wattage)
            Path(args.output).write_text(xml, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write: {exc.strerror}", file=exc.filename) from None
        print(f"wrote {args.output}: {tree.summary()}")
        return 0
    elif args.platform_command == "cluster":
        result = generate_cluster(
            nodes=args.nodes, storage=args.storage, bb_capacity=args.bb_capacity, speed=args.speed,
            link_bandwidth=args.link_bandwidth, link_latency=args.link_latency, pfs_bandwidth=args.pfs_bandwidth,
            pfs=not args.no_pfs, gpus=args.gpus, cores=args.cores, link_sharing=args.link_sharing,
            node_hosts=args.node_hosts)
    else:
        raise ConfigError("missing platform kind", hint="valid: dragonfly, cluster, iotree, bundled (see --help)")
    out = Path(args.output)
    try:
        xml = with_wattage(result.xml, args.wattage, sleep_states(args), args.storage_wattage)
        out.write_text(xml, encoding="utf-8")
        if args.describe:
            Path(args.describe).write_text(json.dumps(result.description.to_dict(), indent=1) + "\n",
                                           encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write: {exc.strerror}", file=exc.filename) from None
    print(f"wrote {out}: {result.description.summary()}")
    return 0
