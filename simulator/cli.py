"""``mrsched simulate``: the embedded engine with Batsim's command-line flags.

The scheduler is reached over ZeroMQ (``-s``, Batsim's default ``tcp://localhost:28000``) or,
for debugging, replayed in-process from a recorded transcript (``--replay``).
"""

from __future__ import annotations

import argparse


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
    parser.add_argument("--mmax", type=int, default=None,
                        help="use only the first N compute machines")
    parser.add_argument("--enable-dynamic-jobs", action="store_true",
                        help="accept REGISTER_JOB / REGISTER_PROFILE")
    parser.add_argument("--enable-profile-reuse", action="store_true",
                        help="keep the profiles of finished dynamic jobs")
    parser.add_argument("--enable-compute-sharing", action="store_true",
                        help="several jobs may run on one compute machine (they share its CPU)")
    parser.add_argument("-E", "--energy", action="store_true",
                        help="Batsim's energy model: host pstates and wattage, SET_RESOURCE_STATE, "
                             "energy QUERY; also writes PREFIX_consumed_energy.csv and "
                             "_pstate_changes.csv")
    parser.add_argument("--sched-cfg", default="", help="string forwarded in SIMULATION_BEGINS")
    parser.add_argument("--forward-profiles-on-submission", action="store_true",
                        help="add the job's profile to JOB_SUBMITTED")
    parser.add_argument("-m", "--master-host", default="master_host",
                        help="name of the master host if no host has role=master (as Batsim)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for each scheduler answer (default 300; 0 = "
                             "forever, as Batsim)")
    parser.add_argument("--replay", metavar="TRANSCRIPT",
                        help="no socket: replay the decisions of a transcript.jsonl in-process")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")


def run(args: argparse.Namespace) -> int:
    from mrsched.errors import ConfigError
    from mrsched.simulator.engine import simulate

    if args.mmax is not None and args.mmax < 1:
        raise ConfigError(f"--mmax must be positive, got {args.mmax}", field="mmax")
    if args.timeout is not None and args.timeout < 0:
        raise ConfigError(f"--timeout must be >= 0, got {args.timeout}", field="timeout")
    if args.replay:
        from mrsched.simulator.replay import ReplayScheduler

        scheduler = ReplayScheduler(args.replay)
        closer = None
    else:
        from mrsched.simulator.connection import ZmqScheduler

        scheduler = ZmqScheduler(args.socket_endpoint, timeout=args.timeout or None)
        closer = scheduler.close
    try:
        from mrsched.simulator.platform import load_platform

        platform = load_platform(args.platform, roles=tuple(args.add_role_to_hosts),
                                 master_host=args.master_host)
        result = simulate(platform, args.workload, scheduler, export_prefix=args.export,
                          roles=tuple(args.add_role_to_hosts), mmax=args.mmax,
                          dynamic_jobs=args.enable_dynamic_jobs,
                          profile_reuse=args.enable_profile_reuse, sched_cfg=args.sched_cfg,
                          forward_profiles=args.forward_profiles_on_submission,
                          compute_sharing=args.enable_compute_sharing, keep_records=False,
                          energy=args.energy)
    finally:
        if closer is not None:
            closer()
    if not args.quiet:
        print(f"simulated {result.nb_jobs} jobs, makespan {result.makespan:.6f} s, "
              f"{result.nb_messages} messages; outputs {args.export}_jobs.csv")
    return 0
