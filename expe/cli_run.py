"""``mrsched run``: one simulation (platform + workload + policy) into one run directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from mrsched.errors import ConfigError, MrschedError, SimulationError
from mrsched.expe.spec import ENGINES
from mrsched.units import parse_size


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    """``["depth=2", "order=sjf"]`` -> ``{"depth": "2", "order": "sjf"}`` (the registry coerces)."""
    options: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-O/--option expects KEY=VALUE, got '{pair}'", field="option")
        options[key.strip()] = value.strip()
    return options


#: ``-o`` was ``--option`` here before it meant the output, as in every other command
OLD_OPTION_HINT = "-o is the output (the run directory); policy options are -O/--option KEY=VALUE"


def looks_like_option(value: str) -> bool:
    """``order=sjf``: a policy option given with ``-o`` the old way, not a directory (one
    named like that can still be written ``./order=sjf``)."""
    import re

    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=[^/]*", value) is not None


def run_directory(values: list[str]) -> str:
    """The one run directory of ``-o``/``--output``/``--out`` (given once, not an option)."""
    options = [v for v in values if looks_like_option(v)]
    if options:
        raise ConfigError(f"'-o {options[0]}' looks like a policy option", field="output",
                          hint=OLD_OPTION_HINT)
    if len(values) > 1:
        raise ConfigError(f"the run directory is given {len(values)} times ({', '.join(values)})",
                          field="output", hint="give -o DIR once")
    return values[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--platform", required=True, help="SimGrid platform XML")
    parser.add_argument("-w", "--workload", required=True, help="Batsim workload JSON")
    parser.add_argument("--policy", required=True,
                        help="registered policy name (see `mrsched policies`) or module.path:ClassName")
    parser.add_argument("-O", "--option", action="append", metavar="KEY=VALUE",
                        help="policy option (repeatable; `mrsched policies NAME` lists them)")
    # appended, not stored: a second -o (the old `-o key=value` beside --out) is refused, not lost
    parser.add_argument("-o", "--output", "--out", dest="out", action="append", required=True,
                        metavar="DIR", help="run directory (manifest.json + out_*.csv)")
    parser.add_argument("--engine", choices=ENGINES, default="embedded",
                        help="embedded (the embedded simulator in a child process), batsim (a "
                             "Batsim binary over ZeroMQ, see --batsim) or docker (docker compose)")
    parser.add_argument("--batsim", default="batsim",
                        help="Batsim command for --engine batsim: a path or a command string "
                             "(e.g. 'mrsched simulate')")
    parser.add_argument("--timeout", type=float, default=None,
                        help="wall-clock seconds before the run is killed (default: none)")
    parser.add_argument("--seed", type=int, default=None,
                        help="recorded in the manifest; passed to policies that take a seed "
                             "(default: none, the policy's own)")
    parser.add_argument("-r", "--add-role-to-hosts", dest="roles", action="append", default=[],
                        metavar="HOSTS:ROLE",
                        help="Batsim's -r, e.g. -r node_8,node_17:storage (repeatable)")
    parser.add_argument("--bb-capacity", default=None, metavar="SIZE",
                        help="burst buffer of storage hosts without a bb_capacity property "
                             "(e.g. 40GB; the Euro-Par artifact's platform keeps it in a YAML)")
    parser.add_argument("--enable-compute-sharing", dest="compute_sharing", action="store_true",
                        help="Batsim's --enable-compute-sharing: jobs may share compute hosts")
    parser.add_argument("-E", "--energy", action="store_true",
                        help="Batsim's -E/--energy: host pstates and wattage, the scheduler's "
                             "SET_RESOURCE_STATE and energy QUERY; the run also writes "
                             "out_consumed_energy.csv and out_pstate_changes.csv")
    parser.add_argument("--force", action="store_true",
                        help="overwrite the run directory even when it holds another run")


def build_spec(args: argparse.Namespace):
    """The run, checked whole before anything is written: names and values first, then the
    inputs (every job as the engine checks it, the policy started on the platform)."""
    from mrsched.expe import engines
    from mrsched.expe.spec import RunSpec
    from mrsched.expe.validation import (check_file, check_policy, check_start,
                                         check_storage, check_values, read_workload, with_seed,
                                         workload_warnings)

    out = Path(run_directory(args.out)).resolve()
    platform = check_file(args.platform, what="platform")
    workload = check_file(args.workload, what="workload")
    bb_capacity = None
    if args.bb_capacity is not None:
        try:
            bb_capacity = parse_size(args.bb_capacity)
        except MrschedError as exc:
            raise ConfigError(exc.message, field="bb-capacity", hint=exc.hint) from None
        if not 0 < bb_capacity < float("inf"):
            raise ConfigError(f"--bb-capacity must be a positive size, got {args.bb_capacity!r}",
                              field="bb-capacity")
        bb_capacity = int(bb_capacity)
    for role in args.roles:
        if role.count(":") != 1 or not all(role.split(":")):
            raise ConfigError(f"-r expects HOSTS:ROLE, got {role!r}", field="roles",
                              hint="e.g. -r node_8,node_17:storage")
    options = parse_options(args.option)
    params = check_policy(args.policy, options, key="policy")
    options = with_seed(args.policy, options, args.seed, params)
    check_values(args.policy, options, key="policy")
    if args.timeout is not None and args.timeout <= 0:
        raise ConfigError("--timeout must be positive", field="timeout")
    if args.engine == "batsim":
        engines.batsim_argv(args.batsim)  # refuses a command that does not exist
    if args.engine == "docker":
        engines.docker_compose_argv()  # refuses when no Docker engine answers
    check_out(out, force=args.force)
    # the inputs themselves, read whole: every job as the engine will check it
    data = read_workload(workload, engine=args.engine)
    check_storage(platform, args.roles, bb_capacity, data)
    spec = RunSpec(run_id=out.name, out_dir=str(out), platform=str(platform.resolve()),
                   workload=str(workload.resolve()), policy=args.policy, options=options,
                   seed=args.seed, engine=args.engine,
                   batsim=args.batsim if args.engine == "batsim" else None, timeout=args.timeout,
                   roles=tuple(args.roles), bb_capacity=bb_capacity,
                   compute_sharing=args.compute_sharing, energy=args.energy)
    check_start(spec)
    return spec, workload_warnings(data, options)


def check_out(out: Path, *, force: bool) -> None:
    """Refuse to overwrite a finished run, or a folder holding anything but a run's files,
    unless ``--force``; an unfinished or failed attempt is redone without asking."""
    from mrsched.expe.manifest import MANIFEST, OUTPUT_FILES, read_manifest
    from mrsched.expe.runner import INPUTS_DIR, LOG_FILES

    if force or not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"run directory {out} exists and is not a directory", field="output")
    ours = {MANIFEST, *OUTPUT_FILES, *LOG_FILES, INPUTS_DIR}
    others = sorted(p.name for p in out.iterdir() if p.name not in ours and not p.name.startswith("."))
    manifest = read_manifest(out) or {}
    if manifest.get("status") == "ok":
        what = f"a finished run ({manifest.get('policy', '?')}, {manifest.get('finished', '?')})"
    elif others:
        what = f"other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''})"
    else:
        return
    raise ConfigError(f"run directory {out} already holds {what}", field="output",
                      hint="choose another -o DIR, or add --force to overwrite it")


def run(args: argparse.Namespace) -> int:
    import sys

    from mrsched.expe.runner import execute_run

    spec, warnings = build_spec(args)
    for text in warnings:
        print(f"mrsched run: warning: {text}", file=sys.stderr)
    manifest = execute_run(spec, warnings=warnings)
    if manifest["status"] == "ok":
        from mrsched.analysis.rejections import rejections_line

        rejected = rejections_line(manifest.get("rejected"))
        extra = f"; {rejected}" if rejected else ""
        cost = (f" (CPU {manifest['cpu_time']:.2f} s, peak memory {manifest['peak_memory_mb']:.0f} MB)"
                if "cpu_time" in manifest and "peak_memory_mb" in manifest else "")
        print(f"run ok in {manifest['wall_time']:.2f} s{cost}: {spec.out_dir}{extra}")
        return 0
    raise SimulationError(f"run {manifest['status']}: {manifest['error']}", hint=f"see {spec.out_dir}")
