"""``mrsched campaign run|status FILE``: run a campaign (resuming), or show where it stands."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run_p = sub.add_parser("run", help="run every unfinished run, then write the report",
                           description="Check the whole campaign file, generate its inputs once, run "
                                       "every run not finished yet (a finished one is skipped, a broken "
                                       "or interrupted one redone: the same command resumes), then write "
                                       "the report into <campaign dir>/report/. Exit 1 if a run failed.")
    run_p.add_argument("file", help="campaign YAML file")
    run_p.add_argument("--executor", default="local",
                       help="local (default) or dask://HOST:PORT (an existing dask scheduler)")
    run_p.add_argument("--jobs", "-j", type=int, default=None,
                       help="runs at a time with the local executor (default: the file's parallelism)")
    run_p.add_argument("-o", "--output", "--out", dest="out", default=None, metavar="DIR",
                       help="campaign directory (default: the file's output, else results/<name>/ beside it)")
    run_p.add_argument("--no-progress", action="store_true", help="no progress bar")
    run_p.add_argument("--no-report", action="store_true", help="do not write the report")
    st_p = sub.add_parser("status", help="count finished, failed and pending runs",
                          description="Check the campaign file and count its runs by status (ok, failed, "
                                      "timeout, incomplete, pending) from their manifests, running nothing.")
    st_p.add_argument("file", help="campaign YAML file")
    st_p.add_argument("-o", "--output", "--out", dest="out", default=None, metavar="DIR",
                      help="campaign directory (default: as for run)")
    st_p.add_argument("--verbose", "-v", action="store_true", help="one line per run")


def run(args: argparse.Namespace) -> int:
    from mrsched.errors import ConfigError

    if args.action == "status":
        from mrsched.expe.launch import campaign_status

        status = campaign_status(args.file, output=args.out)
        counts = ", ".join(f"{n} {s}" for s, n in sorted(status["counts"].items()))
        print(f"campaign {status['campaign']} ({status['dir']}): {len(status['runs'])} runs: {counts}")
        for row in status["runs"]:
            if args.verbose or row["status"] not in ("ok", "pending"):
                extra = f": {row['error']}" if row["error"] and row["status"] != "ok" else ""
                print(f"  {row['status']:<10} {row['run_id']}{extra}")
        return 0
    from mrsched.expe.launch import run_campaign

    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1 (runs at a time), got {args.jobs}",
                          field="jobs", hint="or leave it out to use the file's parallelism")
    # SIGTERM raises KeyboardInterrupt (mrsched.cli): a killed campaign kills its runs too
    summary = run_campaign(args.file, executor=args.executor, jobs=args.jobs, output=args.out,
                           progress=not args.no_progress,
                           report=False if args.no_report else None)
    print(f"{summary.ok} ok, {summary.skipped} skipped (already done), "
          f"{len(summary.failed)} failed of {summary.total} runs in {summary.campaign_dir}")
    if summary.report is not None:
        print(f"report: {summary.report}")
    return 0 if summary.all_ok else 1
