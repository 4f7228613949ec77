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
            raise ConfigError(f"--option expects key=value, got '{pair}'", field="option")
        options[key.strip()] = value.strip()
    return options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--platform", "-p", required=True, help="SimGrid platform XML")
    parser.add_argument("--workload", "-w", required=True, help="Batsim workload JSON")
    parser.add_argument("--policy", required=True,
                        help="registered policy name (see `mrsched policies`) or module.path:ClassName")
    parser.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                        help="policy option (repeatable)")
    parser.add_argument("--out", required=True, help="run directory (manifest.json + out_*.csv)")
    parser.add_argument("--engine", choices=ENGINES, default="embedded",
                        help="embedded simulator in a child process (default), a Batsim "
                             "binary over ZeroMQ, or docker compose")
    parser.add_argument("--batsim", default="batsim",
                        help="Batsim command for --engine batsim: a path or a command string "
                             "(e.g. 'mrsched simulate'); default: batsim")
    parser.add_argument("--timeout", type=float, default=None,
                        help="wall-clock seconds before the run is killed (default: none)")
    parser.add_argument("--seed", type=int, default=None,
                        help="recorded in the manifest; passed to policies that take a seed")
    parser.add_argument("-r", "--add-role-to-hosts", dest="roles", action="append", default=[],
                        metavar="HOSTS:ROLE",
                        help="Batsim's -r, e.g. -r node_8,node_17:storage (repeatable)")
    parser.add_argument("--bb-capacity", default=None, metavar="SIZE",
                        help="burst buffer of storage hosts without a bb_capacity property "
                             "(e.g. 40GB; the Euro-Par artifact's platform keeps it in a YAML)")
    parser.add_argument("--enable-compute-sharing", dest="compute_sharing", action="store_true",
                        help="Batsim's --enable-compute-sharing: jobs may share compute hosts")
    parser.add_argument("--force", action="store_true",
                        help="overwrite --out even when it holds another run")


def build_spec(args: argparse.Namespace):
    from mrsched.expe import engines
    from mrsched.expe.spec import RunSpec
    from mrsched.expe.validation import (check_file, check_policy, check_storage, check_values,
                                         read_workload, with_seed, workload_warnings)

    platform = check_file(args.platform, what="platform")
    workload = check_file(args.workload, what="workload")
    data = read_workload(workload, key="workload")
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
    check_storage(platform, args.roles, bb_capacity, data)
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
    out = Path(args.out).resolve()
    check_out(out, force=args.force)
    spec = RunSpec(run_id=out.name, out_dir=str(out), platform=str(platform.resolve()),
                   workload=str(workload.resolve()), policy=args.policy, options=options,
                   seed=args.seed, engine=args.engine,
                   batsim=args.batsim if args.engine == "batsim" else None, timeout=args.timeout,
                   roles=tuple(args.roles), bb_capacity=bb_capacity,
                   compute_sharing=args.compute_sharing)
    return spec, workload_warnings(data, options)


def check_out(out: Path, *, force: bool) -> None:
    """Refuse to overwrite a finished run, or a folder holding anything but a run's files,
    unless ``--force``; an unfinished or failed attempt is redone without asking."""
    from mrsched.expe.manifest import MANIFEST, OUTPUT_FILES, read_manifest
    from mrsched.expe.runner import LOG_FILES

    if force or not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory", field="out")
    ours = {MANIFEST, *OUTPUT_FILES, *LOG_FILES}
    others = sorted(p.name for p in out.iterdir() if p.name not in ours and not p.name.startswith("."))
    manifest = read_manifest(out) or {}
    if manifest.get("status") == "ok":
        what = f"a finished run ({manifest.get('policy', '?')}, {manifest.get('finished', '?')})"
    elif others:
        what = f"other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''})"
    else:
        return
    raise ConfigError(f"--out {out} already holds {what}", field="out",
                      hint="choose another --out, or add --force to overwrite it")


def run(args: argparse.Namespace) -> int:
    import sys

    from mrsched.expe.runner import execute_run

    spec, warnings = build_spec(args)
    for text in warnings:
        print(f"mrsched run: warning: {text}", file=sys.stderr)
    manifest = execute_run(spec, warnings=warnings)
    if manifest["status"] == "ok":
        from mrsched.expe.manifest import rejections_line

        rejected = rejections_line(manifest.get("rejected"))
        extra = f"; {rejected}" if rejected else ""
        cost = (f" (CPU {manifest['cpu_time']:.2f} s, peak memory {manifest['peak_memory_mb']:.0f} MB)"
                if "cpu_time" in manifest and "peak_memory_mb" in manifest else "")
        print(f"run ok in {manifest['wall_time']:.2f} s{cost}: {spec.out_dir}{extra}")
        return 0
    raise SimulationError(f"run {manifest['status']}: {manifest['error']}", hint=f"see {spec.out_dir}")
