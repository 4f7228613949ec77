"""``mrsched workload``: convert SWF traces, generate synthetic / BBSched / ESP-2 workloads, check files."""

from __future__ import annotations

import argparse
import sys

from mrsched.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="workload_command", metavar="ACTION")

    swf = sub.add_parser("swf", help="convert a Parallel Workloads Archive SWF trace to a Batsim workload",
                         description="SWF -> Batsim JSON: submit shifted to 0, walltime = requested time, "
                                     "res = requested processors in the platform's unit (whole nodes: "
                                     "processors / cores per node, rounded up; cores on a per-core platform), "
                                     "run time kept. The unit and the cleaning are reported.")
    swf.add_argument("trace", help="SWF file (.swf or .swf.gz)")
    swf.add_argument("--platform", help="SimGrid platform (machine size, speed, burst-buffer capacity)")
    swf.add_argument("--nodes", type=int, help="machine size without --platform (default: trace MaxNodes)")
    swf.add_argument("--cores-per-node", type=int,
                     help="processors of one node of the trace's machine (default: the platform's 'cores' "
                          "property, else the trace header's MaxProcs / MaxNodes, else 1)")
    swf.add_argument("--model", default="delay", choices=["delay", "compute", "burst-buffer"],
                     help="profile model: delay (run time as a delay), compute (run time x host speed "
                          "flops) or burst-buffer (compute plus seed 001's burst-buffer requests; needs "
                          "--platform with storage nodes); default delay")
    swf.add_argument("--variant", default="alloc-only", choices=["alloc-only", "io-phased"],
                     help="burst-buffer model: alloc-only keeps the run time (the burst buffer is held, "
                          "as the policies' default job_model runs it); io-phased shortens compute to "
                          "leave room for I/O phases (seed 001: run it with -O job_model=io-phased)")
    swf.add_argument("--jobs", type=int, help="keep the first N jobs (after --part)")
    swf.add_argument("--part", help="keep time window I of N, 1-based (seed 001: --part 3/16)")
    swf.add_argument("--part-length", help="fixed window length (e.g. 3w) instead of N equal windows")
    swf.add_argument("--oversize", default="drop", choices=["drop", "cap"],
                     help="jobs wider than the machine: drop (default) or cap to its size")
    swf.add_argument("--exclude-status", type=int, nargs="*", default=[],
                     help="drop jobs with these SWF statuses (default: keep every status)")
    swf.add_argument("--seed", type=int, default=0, help="seed of the burst-buffer draws (default 0)")
    _output(swf)

    chk = sub.add_parser("check", help="validate a workload file (one line per problem, exit 1 if any)",
                         description="One line per problem (exit 1 if any). Warnings (exit status unchanged): "
                                     "requests that look like processors on a platform of whole nodes.")
    chk.add_argument("workload", nargs="+", help="Batsim workload JSON file(s)")
    chk.add_argument("--platform", help="also check requests against this platform")
    chk.add_argument("--engine", default="embedded", choices=["embedded", "batsim", "docker"],
                     help="the engine the workload is for, as `mrsched run --engine` (default: "
                          "embedded; real Batsim also runs smpi profiles)")

    syn = sub.add_parser("synthetic", help="small synthetic workload (Poisson arrivals; no trace needed)",
                         description="Jobs arriving as a Poisson process, sizes and run times "
                                     "log-uniform in the given ranges (small and short jobs common), "
                                     "walltime = run time x U[1, factor] rounded up to a minute; on a "
                                     "platform with burst buffer, seed 001's burst-buffer requests. "
                                     "Written job by job; the same seed gives the same bytes. The "
                                     "quickstart's workload.")
    syn.add_argument("--platform", help="platform (size, speed, burst buffer)")
    syn.add_argument("--nodes", type=int, help="machine size without --platform")
    syn.add_argument("--jobs", type=int, default=50, help="number of jobs")
    syn.add_argument("--mean-interarrival", type=float, default=120.0, help="mean seconds between submissions")
    syn.add_argument("--min-nodes", type=int, default=1, help="smallest job, in resources (nodes)")
    syn.add_argument("--max-nodes", type=int, help="widest job, in resources (default: the machine)")
    syn.add_argument("--min-runtime", type=float, default=60.0, help="shortest run time, seconds")
    syn.add_argument("--max-runtime", type=float, default=3600.0, help="longest run time, seconds")
    syn.add_argument("--walltime-factor", type=float, default=3.0, help="walltime = run time x U[1, this], rounded up to a minute")
    syn.add_argument("--model", default=None, choices=["delay", "compute", "burst-buffer"],
                     help="profile model (default: burst-buffer with a platform that has storage, else compute)")
    syn.add_argument("--variant", default="alloc-only", choices=["alloc-only", "io-phased"],
                     help="burst-buffer model: alloc-only keeps the run time; io-phased shortens compute "
                          "for I/O phases (run it with -O job_model=io-phased)")
    syn.add_argument("--seed", type=int, default=0, help="seed of every draw")
    _output(syn)

    bb = sub.add_parser("bbsched", help="BBSched S1-S4: a fraction of jobs request large burst buffers (seed 000)",
                        description="Seed 000's scenarios on a given workload (or an SWF trace with --trace): "
                                    "S1-S4 make 50 or 75 % of the jobs (or --fraction) request burst buffer "
                                    "above a threshold of 5 or 20 TB on the reference machine (Theta or "
                                    "Cori), every size scaled to this platform's burst-buffer capacity.")
    bb.add_argument("workload", nargs="?", help="input workload JSON (e.g. from `mrsched workload swf`)")
    _trace_arguments(bb)
    bb.add_argument("--platform", required=True, help="platform with burst-buffer storage nodes")
    bb.add_argument("--scenario", default="S1", choices=["S1", "S2", "S3", "S4"],
                    help="seed 000's scenario (fraction of jobs and threshold)")
    bb.add_argument("--fraction", type=float, help="override the scenario's fraction of jobs")
    bb.add_argument("--threshold", help="override the scenario's threshold on the reference machine (e.g. 5TB)")
    bb.add_argument("--reference", default="theta", choices=["theta", "cori"],
                    help="machine whose burst-buffer sizes the thresholds are scaled from")
    bb.add_argument("--seed", type=int, default=0, help="seed of the draws")
    _output(bb)

    mr = sub.add_parser("multires", help="MultiSched workload: jobs request five extra countable resources (seed 003)",
                        description="Seed 003's multi-resource jobs: each job of the base workload (a JSON, "
                                    "--trace, else a synthetic one) asks, with probability --fraction, each "
                                    "of five extra countable resources; prints the policies' counters option "
                                    "that declares their capacities.")
    mr.add_argument("workload", nargs="?", help="input workload JSON (default: --trace, else a synthetic one)")
    _trace_arguments(mr)
    mr.add_argument("--platform", help="platform (machine size scales the capacities)")
    mr.add_argument("--nodes", type=int, help="machine size without --platform")
    mr.add_argument("--fraction", type=float, default=0.5,
                    help="fraction of jobs requesting each resource (default 0.5)")
    mr.add_argument("--intensity", type=float, default=1.5,
                    help="mean demand of a requesting job, in units of its node share (default 1.5)")
    mr.add_argument("--seed", type=int, default=0, help="seed of the draws")
    _output(mr)

    esp = sub.add_parser("esp2", help="ESP-2 benchmark workload (seed 002 Table 11)",
                         description="The ESP-2 effective system performance benchmark: 230 jobs of "
                                     "14 types, each a fraction of the machine's cores with a fixed run "
                                     "time; 50 released at 0, the rest about 30 s apart, then two "
                                     "full-machine Z jobs; --gpu-copies adds seed 002's GPU copy of every "
                                     "job (458 jobs).")
    esp.add_argument("--platform", help="platform (nodes, cores and gpus properties)")
    esp.add_argument("--nodes", type=int, help="machine nodes without --platform (default 1024: seed 002's Machine-L)")
    esp.add_argument("--cores-per-node", type=int, help="cores per node without --platform (default 8)")
    esp.add_argument("--gpus", type=int, default=2, help="GPUs per node of the GPU copies (default 2)")
    esp.add_argument("--gpu-copies", action="store_true", help="seed 002's CPU-GPU version (458 jobs)")
    esp.add_argument("--model", default="delay", choices=["delay", "compute"],
                     help="profile model: delay, or compute (run time x host speed flops)")
    esp.add_argument("--seed", type=int, default=0, help="seed of the submission order and gaps")
    _output(esp)

    mo = sub.add_parser("model", help="seed 004's workload model fitted on an SWF trace (user arrivals, "
                                      "power-of-two sizes, joint limit/elapsed; I/O rate per node)",
                        description="Seed 004 Sect. 3.3.2: fit per-period user arrival rates, power-of-two "
                                    "size bins and the joint law of time limit and elapsed time on a trace, "
                                    "then sample --jobs jobs for a machine of --nodes nodes, each draining "
                                    "--io-rate per node (optionally spread per user and job).")
    mo.add_argument("--from", "--trace", dest="trace", required=True, help="SWF trace to fit (.swf or .swf.gz)")
    mo.add_argument("--nodes", type=int, required=True, help="compute nodes of the target machine")
    mo.add_argument("--jobs", type=int, required=True, help="jobs to sample")
    mo.add_argument("--io-rate", default="18MB/s", help="I/O bandwidth per node (default 18MB/s)")
    mo.add_argument("--cores-per-node", type=int, default=1, help="processors per node of the trace's machine")
    mo.add_argument("--speed", default="1Gf", help="node speed: profiles compute elapsed x speed flops")
    mo.add_argument("--max-nodes", type=int, help="cap job sizes (e.g. the widest job the PFS can carry)")
    mo.add_argument("--io-spread", type=float, default=0.0,
                    help="sigma of a per-user log-normal factor on each job's true I/O rate (0: every job "
                         "drains its stated rate); jobs then carry user, true_runtime, true_io_bandwidth_per_node")
    mo.add_argument("--io-jitter", type=float, default=0.1, help="with --io-spread: per-job sigma (default 0.1)")
    mo.add_argument("--seed", type=int, default=0, help="seed of the draws")
    _output(mo)

    ens = sub.add_parser("ensemble", help="ensemble: many small jobs submitted at 0 (seed 004 Ch. 5)",
                         description="Fig. 5.2's synthetic ensembles (--cores 1 --runtime 0: zero-length jobs, "
                                     "written as Batsim accepts them), variable sizes / durations as ranges "
                                     "LOW-HIGH, or --kind uq (Sect. 5.4's UQ ensemble). One resource per core.")
    ens.add_argument("--jobs", type=int, required=True, help="number of jobs")
    ens.add_argument("--cores", default="1", help="cores per job: N or LOW-HIGH (default 1)")
    ens.add_argument("--runtime", default="0", help="seconds: S or LOW-HIGH (default 0: zero-length jobs)")
    ens.add_argument("--kind", default="synthetic", choices=["synthetic", "uq"],
                     help="synthetic (--cores, --runtime) or uq (Sect. 5.4's UQ ensemble)")
    ens.add_argument("--walltime", type=float, help="seconds (default: twice the runtime, at least 60)")
    ens.add_argument("--platform", help="platform: nb_res is its number of compute resources")
    ens.add_argument("--nb-res", type=int, help="nb_res without --platform (default: the widest job)")
    ens.add_argument("--seed", type=int, default=0, help="seed of the draws (ranges, uq)")
    _output(ens)

    from mrsched.workloads.cpugpu_cli import add_parsers
    add_parsers(sub)   # requests, cpugpu (seed 002)

    fe = sub.add_parser("fetch", help="download a Parallel Workloads Archive trace into the cache (sha256 checked)",
                        description="Download a trace once into the cache, uncompress it, check its "
                                    "SHA-256 and print the path of the .swf (the commands after it take "
                                    "that path). Known traces: " + ", ".join(_archive_traces()) + ".")
    fe.add_argument("name", help="trace name, e.g. KTH-SP2-1996-2.1-cln")
    fe.add_argument("--cache", help="cache directory (default $MRSCHED_CACHE or ~/.cache/mrsched/traces)")
    fe.add_argument("--source", help="local path or URL to copy instead of the archive")


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="workload JSON to write")


def _archive_traces() -> list[str]:
    from mrsched.workloads.archive import TRACES

    return list(TRACES)


def _trace_arguments(parser: argparse.ArgumentParser) -> None:
    """Let a generator start from an SWF trace itself (campaign specs chain no commands)."""
    parser.add_argument("--trace", help="SWF trace converted first (delay model) instead of a workload JSON")
    parser.add_argument("--jobs", type=int, help="with --trace: keep the first N jobs (after --part)")
    parser.add_argument("--part", help="with --trace: keep time window I of N, 1-based")
    parser.add_argument("--oversize", default="drop", choices=["drop", "cap"],
                        help="with --trace: jobs wider than the machine are dropped (default) or capped")
    parser.add_argument("--cores-per-node", type=int,
                        help="with --trace: processors of one node of the trace's machine (default: platform "
                             "'cores', else the header's MaxProcs / MaxNodes)")


def _base_workload(args: argparse.Namespace, platform) -> dict | None:
    """The workload a generator transforms: the JSON given, or ``--trace`` converted (delay model)."""
    from mrsched.workloads.batsim_json import read_workload

    if args.workload and args.trace:
        raise ConfigError("give either a workload JSON or --trace, not both", field="trace")
    if args.trace:
        from mrsched.workloads.convert import convert_swf

        conv = convert_swf(args.trace, platform=platform, model="delay", jobs=args.jobs, part=args.part,
                           oversize=args.oversize, cores_per_node=args.cores_per_node)
        for line in conv.summary_lines():
            print(line)
        return conv.workload
    if args.workload and (args.jobs is not None or args.part is not None or args.cores_per_node is not None):
        raise ConfigError("--jobs, --part and --cores-per-node apply to an SWF trace: give --trace", field="jobs")
    return read_workload(args.workload) if args.workload else None


def _platform(path: str | None):
    from mrsched.workloads.platform_info import read_platform_info

    return read_platform_info(path) if path else None


def _write(path: str, workload: dict, platform=None) -> None:
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.check import check_workload

    problems = check_workload(workload, file=path, platform=platform)
    if problems:  # a generator bug, never the user's: refuse to write a broken file
        raise ConfigError(f"generated workload fails its check: {problems[0]}")
    write_workload(path, workload)
    print(f"wrote {path}: {len(workload['jobs'])} jobs")


def run(args: argparse.Namespace) -> int:
    command = args.workload_command
    if command == "swf":
        from mrsched.units import parse_time
        from mrsched.workloads.convert import convert_swf

        platform = _platform(args.platform)
        conv = convert_swf(args.trace, platform=platform, nodes=args.nodes, model=args.model, variant=args.variant,
                           seed=args.seed, jobs=args.jobs, part=args.part,
                           part_length=parse_time(args.part_length) if args.part_length else None,
                           oversize=args.oversize, exclude_status=tuple(args.exclude_status),
                           cores_per_node=args.cores_per_node)
        for line in conv.summary_lines():
            print(line)
        conv.write(args.output, platform=platform)  # streamed job by job, checked on the way
        print(f"wrote {args.output}: {len(conv.columns.ids)} jobs")
        return 0
    if command == "model":
        from mrsched.units import parse_bandwidth, parse_speed
        from mrsched.workloads.iomodel import model_workload

        rate = args.io_rate.replace("/s", "ps") if args.io_rate.endswith("/s") else args.io_rate
        model, workload = model_workload(args.trace, jobs=args.jobs, nodes=args.nodes,
                                         io_rate=parse_bandwidth(rate), seed=args.seed,
                                         cores_per_node=args.cores_per_node, speed=parse_speed(args.speed),
                                         max_nodes=args.max_nodes, io_spread=args.io_spread,
                                         io_jitter=args.io_jitter)
        print(model.summary())
        _write(args.output, workload)
        return 0
    if command == "check":
        from mrsched.workloads.check import check_file

        platform = _platform(args.platform)
        total = 0
        for path in args.workload:
            warnings: list = []
            problems = check_file(path, platform, warnings, engine=args.engine)
            for w in warnings:  # probably wrong, not invalid: printed, exit status unchanged
                print(w, file=sys.stderr)
            for p in problems:
                print(p, file=sys.stderr)
            total += len(problems)
            if not problems:
                print(f"{path}: ok")
        return 1 if total else 0
    if command == "synthetic":
        from mrsched.workloads.synthetic import synthetic_columns

        platform = _platform(args.platform)
        model = args.model or ("burst-buffer" if platform and platform.bb_capacities else "compute")
        head, columns = synthetic_columns(jobs=args.jobs, platform=platform, nodes=args.nodes, seed=args.seed,
                                          mean_interarrival=args.mean_interarrival, min_nodes=args.min_nodes,
                                          max_nodes=args.max_nodes, min_runtime=args.min_runtime,
                                          max_runtime=args.max_runtime, walltime_factor=args.walltime_factor,
                                          model=model, variant=args.variant)
        columns.write(args.output, head, platform=platform)    # job by job, checked on the way
        print(f"wrote {args.output}: {len(columns.ids)} jobs")
        return 0
    if command == "bbsched":
        from mrsched.units import parse_size
        from mrsched.workloads.bbsched import inject_burst_buffer

        platform = _platform(args.platform)
        base = _base_workload(args, platform)
        if base is None:
            raise ConfigError("missing input: a workload JSON or --trace SWF", field="workload")
        wl = inject_burst_buffer(base, platform=platform, scenario=args.scenario,
                                 fraction=args.fraction,
                                 threshold=parse_size(args.threshold) if args.threshold else None,
                                 reference=args.reference, seed=args.seed)
        print(wl["description"])
        _write(args.output, wl, platform)
        return 0
    if command == "multires":
        from mrsched.workloads.multires import counters_option, generate_multires

        platform = _platform(args.platform)
        wl = generate_multires(_base_workload(args, platform), platform=platform, nodes=args.nodes,
                               fraction=args.fraction, intensity=args.intensity,
                               jobs=args.jobs or 300, seed=args.seed)
        print(wl["description"])
        print(f"policy option: counters={counters_option(wl['counters'])}")
        _write(args.output, wl, platform)
        return 0
    if command == "esp2":
        from mrsched.workloads.esp2 import generate_esp2

        platform = _platform(args.platform)
        wl = generate_esp2(platform=platform, nodes=args.nodes, cores_per_node=args.cores_per_node, gpus=args.gpus,
                           gpu_copies=args.gpu_copies, model=args.model, seed=args.seed)
        _write(args.output, wl, None)
        return 0
    if command == "ensemble":
        from mrsched.workloads.ensemble import generate_ensemble

        platform = _platform(args.platform)
        nb_res = platform.compute_nodes if platform is not None else args.nb_res
        wl = generate_ensemble(jobs=args.jobs, cores=args.cores, runtime=args.runtime, kind=args.kind,
                               walltime=args.walltime, nb_res=nb_res, seed=args.seed)
        print(wl["description"])
        _write(args.output, wl, platform)
        return 0
    if command in ("requests", "cpugpu"):
        from mrsched.workloads.cpugpu_cli import run_command
        return run_command(args, _write)
    if command == "fetch":
        from mrsched.workloads.archive import fetch

        print(fetch(args.name, cache=args.cache, source=args.source))
        return 0
    raise ConfigError("missing workload action",
                      hint="valid: swf, check, synthetic, bbsched, multires, esp2, ensemble, requests, cpugpu, fetch (see --help)")
