"""``mrsched run``: one simulation (platform + workload + policy) into one run directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from mrsched.errors import ConfigError
from mrsched.expe.spec import ENGINES


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


def build_spec(args: argparse.Namespace):
    from mrsched.expe import engines
    from mrsched.expe.spec import RunSpec
    from mrsched.expe.validation import check_file, check_policy, check_values, with_seed

    platform = check_file(args.platform, what="platform")
    workload = check_file(args.workload, what="workload")
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
    return RunSpec(run_id=out.name, out_dir=str(out), platform=str(platform.resolve()),
                   workload=str(workload.resolve()), policy=args.policy, options=options,
                   seed=args.seed, engine=args.engine,
                   batsim=args.batsim if args.engine == "batsim" else None, timeout=args.timeout)


def run(args: argparse.Namespace) -> int:
    from mrsched.expe.runner import execute_run

    spec = build_spec(args)
    manifest = execute_run(spec)
    if manifest["status"] == "ok":
        print(f"run ok in {manifest['wall_time']:.2f} s: {spec.out_dir}")
        return 0
    print(f"run {manifest['status']}: {manifest['error']} (see {spec.out_dir})")
    return 1
