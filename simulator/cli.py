"""``mrsched simulate``: the embedded engine with Batsim 4.2.1's command line.

Every flag of ``batsim --help`` (Batsim 4.2.1, ``src/batsim.cpp``) is either done as Batsim does
it (``HANDLED``) or refused by name with one line saying why (``REFUSED``); a test parses
Batsim's usage text and checks both lists cover it. The scheduler is reached over ZeroMQ
(``-s``, Batsim's default ``tcp://localhost:28000``) or, for debugging, replayed in-process from
a recorded transcript (``--replay``, an engine extra, as ``--timeout``).
"""

from __future__ import annotations

import argparse
import json

#: Batsim's flags the engine takes and does as Batsim 4.2.1 (``src/batsim.cpp`` 295-578).
#: ``--disable-schedule-tracing``: the engine never writes the Pajé trace Batsim writes by
#: default; ``--forward-unknown-events``, ``--workflow-jobs-limit``, ``--ignore-beyond-last-
#: workflow`` only matter with ``--events`` / workflows, which are refused, so they change
#: nothing, as in Batsim without those; ``-v``/``-q``/``--sg-log`` set logging only.
HANDLED = (
    "-p", "--platform", "-w", "--workload", "-m", "--master-host", "-r", "--add-role-to-hosts",
    "-s", "--socket-endpoint", "--redis-hostname", "--redis-port", "--redis-prefix",
    "-e", "--export", "--disable-schedule-tracing", "--disable-machine-state-tracing",
    "--mmax", "--mmax-workload", "--forward-profiles-on-submission", "--enable-dynamic-jobs",
    "--acknowledge-dynamic-jobs", "--enable-profile-reuse", "-v", "--verbosity", "-q",
    "--quiet", "--workflow-jobs-limit", "--ignore-beyond-last-workflow",
    "--dump-execution-context", "--enable-compute-sharing", "--disable-storage-sharing",
    "--sched-cfg", "--sched-cfg-file", "--sg-log", "--forward-unknown-events", "-E", "--energy",
    "-h", "--help", "--version",
)

#: Batsim's flags the engine refuses: (flags, number of values, why).
REFUSED = (
    (("-W", "--workflow"), 1, "workflows (DAX files) are not simulated by the embedded engine"),
    (("--WS", "--workflow-start"), 2, "workflows are not simulated by the embedded engine"),
    (("--events",), 1, "external events are not simulated by the embedded engine"),
    (("--enable-redis",), 0, "the embedded engine talks to the scheduler over ZeroMQ only"),
    (("--no-sched",), 0, "the embedded engine always runs a scheduler"),
    (("--sg-cfg",), 1, "the embedded engine has no SimGrid configuration to set"),
    (("--simgrid-version",), 0, "the embedded engine has no SimGrid (it follows SimGrid 3.32's "
                                "arithmetic itself)"),
)

VERBOSITY = ("quiet", "network-only", "information", "debug")


class _Refused(argparse.Action):
    """Remembers a refused flag as typed; ``run`` turns it into one line naming it."""

    def __call__(self, parser, namespace, values, option_string=None):
        if not getattr(namespace, "refused", None):
            namespace.refused = option_string


class _BatsimVersion(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print the engine's version and the Batsim version it follows, and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from mrsched import __version__

        print(f"mrsched {__version__} (embedded engine following Batsim 4.2.1)")
        parser.exit()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--platform", required=True, help="SimGrid platform XML file")
    parser.add_argument("-w", "--workload", action="append", required=True,
                        help="Batsim JSON workload (repeat: named w0, w1, ... in order)")
    parser.add_argument("-e", "--export", default="out",
                        help="output prefix: PREFIX_jobs.csv, _schedule.csv, _machine_states.csv")
    parser.add_argument("-s", "--socket-endpoint", default="tcp://localhost:28000",
                        help="scheduler endpoint (loopback only; default tcp://localhost:28000)")
    parser.add_argument("-r", "--add-role-to-hosts", action="append", default=[],
                        metavar="HOSTS:ROLE", help="e.g. -r pfs,bb_0:storage (repeatable)")
    parser.add_argument("--mmax", type=int, default=0,
                        help="use only the first N compute machines (0: all, as Batsim)")
    parser.add_argument("--mmax-workload", action="store_true",
                        help="use only as many compute machines as the largest 'nb_res' of the "
                             "workloads (with --mmax: the smaller of both)")
    parser.add_argument("--enable-dynamic-jobs", action="store_true",
                        help="accept REGISTER_JOB / REGISTER_PROFILE")
    parser.add_argument("--acknowledge-dynamic-jobs", action="store_true",
                        help="answer each REGISTER_JOB with a JOB_SUBMITTED")
    parser.add_argument("--enable-profile-reuse", action="store_true",
                        help="keep the profiles of finished dynamic jobs (needs "
                             "--enable-dynamic-jobs)")
    parser.add_argument("--enable-compute-sharing", action="store_true",
                        help="several jobs may run on one compute machine (they share its CPU)")
    parser.add_argument("--disable-storage-sharing", action="store_true",
                        help="a storage machine runs one job at a time")
    parser.add_argument("-E", "--energy", action="store_true",
                        help="Batsim's energy model: host pstates and wattage, SET_RESOURCE_STATE, "
                             "energy QUERY; also writes PREFIX_consumed_energy.csv and "
                             "_pstate_changes.csv")
    cfg = parser.add_mutually_exclusive_group()
    cfg.add_argument("--sched-cfg", default="", help="string forwarded in SIMULATION_BEGINS")
    cfg.add_argument("--sched-cfg-file", default=None,
                     help="same as --sched-cfg, the string read from this file")
    parser.add_argument("--forward-profiles-on-submission", action="store_true",
                        help="add the job's profile to JOB_SUBMITTED")
    parser.add_argument("-m", "--master-host", default="master_host",
                        help="name of the master host if no host has role=master (as Batsim)")
    parser.add_argument("--redis-hostname", default="127.0.0.1",
                        help="forwarded in SIMULATION_BEGINS' config, as Batsim (no Redis used)")
    parser.add_argument("--redis-port", default="6379",
                        help="forwarded in SIMULATION_BEGINS' config, as Batsim (no Redis used)")
    parser.add_argument("--redis-prefix", default="default",
                        help="forwarded in SIMULATION_BEGINS' config, as Batsim (no Redis used)")
    parser.add_argument("--disable-schedule-tracing", action="store_true",
                        help="accepted: the engine never writes Batsim's Pajé trace")
    parser.add_argument("--disable-machine-state-tracing", action="store_true",
                        help="do not write PREFIX_machine_states.csv")
    parser.add_argument("--dump-execution-context", action="store_true",
                        help="print the execution context as Batsim does (JSON) and exit")
    parser.add_argument("-v", "--verbosity", choices=VERBOSITY, default="information",
                        help="quiet: no summary line (the engine logs nothing else)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    parser.add_argument("--sg-log", action="append", default=[], metavar="LOG_OPTION",
                        help="accepted and ignored (SimGrid logging; the engine has none)")
    parser.add_argument("--forward-unknown-events", action="store_true",
                        help="accepted: no effect without --events (refused), as in Batsim")
    parser.add_argument("--workflow-jobs-limit", default="0", metavar="N",
                        help="accepted: no effect without workflows (refused), as in Batsim")
    parser.add_argument("--ignore-beyond-last-workflow", action="store_true",
                        help="accepted: no effect without workflows (refused), as in Batsim")
    parser.add_argument("--version", action=_BatsimVersion)
    for flags, nargs, _why in REFUSED:
        parser.add_argument(*flags, action=_Refused, nargs=nargs, dest="refused_flag",
                            default=None, help=argparse.SUPPRESS)
    parser.set_defaults(refused=None)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for each scheduler answer (default 300; 0 = "
                             "forever, as Batsim)")
    parser.add_argument("--replay", metavar="TRANSCRIPT",
                        help="no socket: replay the decisions of a transcript.jsonl in-process")
    parser.add_argument("--replay-writer", choices=("python", "rapidjson"),
                        help="with --replay: who wrote the recorded replies' numbers, which "
                             "Batsim read from their text: a Python scheduler (default) or "
                             "rapidjson's writer (batsched, other C++ schedulers)")


def refusal(flag: str) -> str:
    """The line refusing one of Batsim's flags."""
    why = next(why for flags, _n, why in REFUSED if flag in flags)
    return f"Batsim's {flag} is not supported: {why}"


def engine_options(args: argparse.Namespace) -> dict:
    """The ``simulate`` keyword arguments of a parsed command line (Batsim's checks first)."""
    from mrsched.errors import ConfigError

    if args.refused:
        raise ConfigError(refusal(args.refused))
    try:
        redis_port = int(args.redis_port)
    except ValueError:
        raise ConfigError(f"cannot read the Redis port {args.redis_port!r} as an integer",
                          field="redis-port") from None
    try:
        limit = int(args.workflow_jobs_limit)
    except ValueError:
        raise ConfigError(f"cannot read the <job_limit> {args.workflow_jobs_limit!r} as an "
                          "integer", field="workflow-jobs-limit") from None
    if limit < 0:
        raise ConfigError(f"the <workflow_limit> {limit} must be positive",
                          field="workflow-jobs-limit")
    if args.enable_profile_reuse and not args.enable_dynamic_jobs:
        # Batsim: "Profile reuse is enabled but dynamic registration is not"
        raise ConfigError("--enable-profile-reuse needs --enable-dynamic-jobs",
                          field="enable-profile-reuse")
    sched_cfg = args.sched_cfg
    if args.sched_cfg_file is not None:
        try:
            with open(args.sched_cfg_file) as fh:
                sched_cfg = fh.read()
        except OSError as exc:
            raise ConfigError(f"cannot read the scheduler configuration: {exc.strerror}",
                              file=args.sched_cfg_file) from None
    return {
        "roles": tuple(args.add_role_to_hosts),
        "mmax": args.mmax if args.mmax > 0 else None,   # 0 or less: no limit (batsim.cpp 668)
        "mmax_workload": args.mmax_workload,
        "dynamic_jobs": args.enable_dynamic_jobs,
        "ack_dynamic_jobs": args.acknowledge_dynamic_jobs,
        "profile_reuse": args.enable_profile_reuse,
        "sched_cfg": sched_cfg,
        "forward_profiles": args.forward_profiles_on_submission,
        "compute_sharing": args.enable_compute_sharing,
        "storage_sharing": not args.disable_storage_sharing,
        "machine_states": not args.disable_machine_state_tracing,
        "energy": args.energy,
        "redis": {"hostname": args.redis_hostname, "port": redis_port,
                  "prefix": args.redis_prefix},
    }


def execution_context(args: argparse.Namespace) -> str:
    """``--dump-execution-context`` (``src/batsim.cpp`` 764-791), as Batsim prints it."""
    try:
        port = int(args.redis_port)
    except ValueError:
        port = 0
    return json.dumps({"socket_endpoint": args.socket_endpoint, "redis_enabled": False,
                       "redis_hostname": args.redis_hostname, "redis_port": port,
                       "redis_prefix": args.redis_prefix, "export_prefix": args.export,
                       "external_scheduler": True}, separators=(",", ":"))


def run(args: argparse.Namespace) -> int:
    from mrsched.errors import ConfigError
    from mrsched.simulator.engine import simulate

    if args.refused:
        raise ConfigError(refusal(args.refused))
    if args.dump_execution_context:
        print(execution_context(args))
        return 0
    options = engine_options(args)
    if args.timeout is not None and args.timeout < 0:
        raise ConfigError(f"--timeout must be >= 0, got {args.timeout}", field="timeout")
    if args.replay_writer is not None and not args.replay:
        raise ConfigError("--replay-writer goes with --replay", field="replay-writer")
    if args.replay:
        from mrsched.simulator.replay import ReplayScheduler

        scheduler = ReplayScheduler(args.replay, writer=args.replay_writer or "python")
        closer = None
    else:
        from mrsched.simulator.connection import ZmqScheduler

        scheduler = ZmqScheduler(args.socket_endpoint, timeout=args.timeout or None)
        closer = scheduler.close
    try:
        from mrsched.simulator.platform import load_platform
        from mrsched.simulator.workload import validate_workload

        for path in args.workload:   # the one validator `run`, `workload check` and campaigns use
            validate_workload(path)
        platform = load_platform(args.platform, roles=options["roles"],
                                 master_host=args.master_host)
        result = simulate(platform, args.workload, scheduler, export_prefix=args.export,
                          keep_records=False, **options)
    finally:
        if closer is not None:
            closer()
    if not args.quiet and args.verbosity != "quiet":
        print(f"simulated {result.nb_jobs} jobs, makespan {result.makespan:.6f} s, "
              f"{result.nb_messages} messages; outputs {args.export}_jobs.csv")
    return 0
