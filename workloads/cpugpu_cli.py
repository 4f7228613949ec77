"""``mrsched workload requests`` and ``mrsched workload cpugpu`` (seed 002 CPU+GPU workloads);
hooked into :mod:`mrsched.workloads.cli`."""

from __future__ import annotations

import argparse


def add_parsers(sub) -> None:
    rq = sub.add_parser("requests", help="CSV job list (cores, nodes, cores per node, GPUs per node) -> workload "
                                         "for a per-core CPU+GPU platform",
                        description="Columns id,subtime,walltime,runtime,cores,nodes,cores_per_node,gpus_per_node "
                                    "(empty = not requested; optional nodes_min, nodes_max, contiguous). cores "
                                    "may be left out when nodes and cores_per_node give it (their product). "
                                    "Each job runs runtime seconds (a delay) on cores core resources.")
    rq.add_argument("jobs", help="CSV file")
    rq.add_argument("--platform", required=True, help="per-core platform (mrsched platform cluster --cores C)")
    rq.add_argument("-o", "--output", required=True, metavar="FILE", help="workload JSON to write")

    cg = sub.add_parser("cpugpu", help="seed 002 CPU+GPU workloads: ESP-2 x 2 or mixes I-V (Table 12)",
                        description="--mix esp: ESP-2 with CPU-only and GPU copies (458 jobs, Table 11); "
                                    "--mix I..V: Table 12's generated workloads (run times U(60, 600) s).")
    cg.add_argument("--platform", required=True, help="per-core platform (mrsched platform cluster --cores C)")
    cg.add_argument("--mix", required=True, choices=["esp", "I", "II", "III", "IV", "V"],
                    help="esp (ESP-2 x 2, Table 11) or a mix of Table 12")
    cg.add_argument("--jobs", type=int, default=400, help="jobs of a mix (default 400)")
    cg.add_argument("--max-cores", type=int, help="largest job of a mix in cores (default: machine / 8)")
    cg.add_argument("--seed", type=int, default=0, help="seed of the draws")
    cg.add_argument("-o", "--output", required=True, metavar="FILE", help="workload JSON to write")


def run_command(args: argparse.Namespace, write) -> int:
    from mrsched.workloads.cpugpu import generate_esp2_cpugpu, generate_mix, read_machine
    from mrsched.workloads.platform_info import read_platform_info

    machine = read_machine(args.platform)
    info = read_platform_info(args.platform)
    if args.workload_command == "requests":
        from mrsched.workloads.requests import requests_workload

        wl = requests_workload(args.jobs, machine)
    else:
        from mrsched.errors import WorkloadError

        if not machine.per_core:
            raise WorkloadError("needs a per-core platform (`mrsched platform cluster --cores C`)",
                                file=args.platform, field="platform")
        wl = (generate_esp2_cpugpu(machine, seed=args.seed) if args.mix == "esp" else
              generate_mix(machine, args.mix, jobs=args.jobs, seed=args.seed, max_cores=args.max_cores))
    write(args.output, wl, info)
    return 0
