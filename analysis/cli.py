"""``mrsched report DIR``: the HTML report of a campaign or a run (Setup, summary per policy,
rejected jobs, metrics per run, comparison and schedule figures), with metrics.csv,
summary.csv, summary.tex and every figure as PNG, SVG and PDF."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR",
                        help="campaign directory (runs/<run_id>/manifest.json) or one run directory")
    parser.add_argument("--baseline", metavar="POLICY", default=None,
                        help="policy (or policy(options) variant) to normalise against "
                             "(default: the campaign's first policy, else the first in name order)")
    parser.add_argument("--tau", type=float, default=600.0,
                        help="bounded slowdown threshold in seconds (default 600)")
    parser.add_argument("-o", "--output", metavar="OUTDIR", default=None,
                        help="where to write index.html, metrics.csv, summary.csv, summary.tex "
                             "and figures/ (default DIR/report)")
    parser.add_argument("--max-gantt", type=int, default=6, metavar="N",
                        help="schedule figures (Gantt chart, burst buffer, queue, utilisation): "
                             "the first run of every policy, then further runs up to N in all "
                             "(default 6; 0: none)")
    parser.add_argument("--tail", type=int, default=50, metavar="N",
                        help="jobs in the tail plots: the N worst per policy (default 50; "
                             "seed 001's Figs. 9-10 show 3000)")


def run(args: argparse.Namespace) -> int:
    from mrsched.analysis.report import check_tau, write_report
    from mrsched.errors import ConfigError

    if args.max_gantt < 0:
        raise ConfigError(f"--max-gantt must be >= 0, got {args.max_gantt}", field="max-gantt")
    if args.tail < 1:
        raise ConfigError(f"--tail must be >= 1, got {args.tail}", field="tail")
    index = write_report(args.dir, out=args.output, baseline=args.baseline,
                         tau=check_tau(args.tau), max_gantt=args.max_gantt, tail_n=args.tail)
    print(index)
    _say_broken(index.parent / "metrics.csv")
    for name in ("metrics.csv", "summary.csv", "summary.tex"):
        if (index.parent / name).is_file():
            print(index.parent / name)
    return 0


def _say_broken(metrics_csv) -> None:
    """One warning line per run left out as broken (its reason is in the report too)."""
    import csv
    import sys

    try:
        with open(metrics_csv, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("status") == "broken"]
    except OSError:
        return
    for row in rows:
        print(f"mrsched report: warning: run {row['run_id']} is broken, left out: {row['error']}",
              file=sys.stderr)
