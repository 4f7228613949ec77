"""Seed 004 Ch. 4's results from an ``studies/ioaware_knowledge.yaml`` campaign: per knowledge
source, how well the scheduler's estimates anticipate system I/O and I/O bursts, and what the
schedule gains (goodput, turnaround).

    python -m mrsched.studies.ioaware_knowledge_summary studies/results/ioaware_knowledge [--figures DIR]

Every run is scored by :mod:`mrsched.analysis.iocontention` (true rates, jobs keep their
durations) and :mod:`mrsched.analysis.ioknowledge` (the run's source replayed). Prints one
Markdown table per (workload, platform): mean over seeds [min-max]; writes
``ioaware_knowledge_summary.csv`` (one row per run) beside the runs.

*Anticipation* (004 Figs. 4.5-4.8): 004 scores predictions against one fixed history (real
Cab jobs scheduled by production, I/O-ignorant, software). Here, likewise, every source is
replayed on each I/O-ignorant run (``learned`` fed that run's completions), so all sources
face the same actual system I/O and the same bursts: ``ioaware_knowledge_anticipation.csv``
and the second table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np

from mrsched.analysis.iocontention import run_contention
from mrsched.atomic import write_rows_atomic
from mrsched.analysis.ioknowledge import (GRID, burst_threshold, estimate_jobs, knowledge_metrics, run_knowledge,
                                          system_io)
from mrsched.schedulers.model.params import KNOWLEDGE

COLUMNS = ("goodput", "computing_fraction_min", "mean_turnaround", "runtime_accuracy_mean", "io_rate_accuracy_mean",
           "sysio_accuracy_mean_pt", "sysio_accuracy_median_pt", "sysio_accuracy_mean_et",
           "burst_sensitivity_5min_pt", "burst_precision_5min_pt", "burst_sensitivity_5min_et",
           "burst_precision_5min_et", "burst_sensitivity_60min_et", "burst_precision_60min_et")


def _runs(root: Path):
    for man in sorted((root / "runs").glob("*/manifest.json")):
        m = json.loads(man.read_text())
        if m.get("status") == "ok":
            yield man.parent, m


def variant(m: dict) -> str:
    """``easy/learned``, ``fcfs/perfect``, ``easy-ignorant``: the policy label and its source."""
    label = str(m.get("policy_label") or m["policy"]).split("_knowledge=")[0]
    if not m["options"].get("io_aware"):
        return label
    return f"{label}/{m['options'].get('knowledge', 'requested')}"


def _turnaround(path: Path) -> float:
    with open(path, newline="") as fh:
        ta = [float(r["turnaround_time"]) for r in csv.DictReader(fh) if r["final_state"] != "REJECTED"]
    return float(np.mean(ta)) if ta else math.nan


def summarise(root: Path) -> list[dict]:
    rows = []
    for run_dir, m in _runs(root):
        jobs_csv = run_dir / "out_jobs.csv"
        known = run_knowledge(jobs_csv, m["workload"], m["options"])
        row = {"variant": variant(m), "workload": m["workload_name"], "platform": m["platform_name"],
               "seed": m["seed"], "run_dir": str(run_dir), "mean_turnaround": _turnaround(jobs_csv)}
        row.update(run_contention(jobs_csv, m["platform"], m["workload"]).metrics())
        row.update(knowledge_metrics(known))
        rows.append(row)
    return rows


def anticipation(root: Path) -> list[dict]:
    """Every knowledge source replayed on each I/O-ignorant run (module docstring)."""
    rows = []
    for run_dir, m in _runs(root):
        if m["options"].get("io_aware"):
            continue
        with open(run_dir / "out_jobs.csv", newline="") as fh:
            jobs = list(csv.DictReader(fh))
        workload = json.loads(Path(m["workload"]).read_text())
        for source in KNOWLEDGE:
            known = estimate_jobs(jobs, workload, source, 0.3, 0)
            rows.append({"variant": source, "workload": m["workload_name"], "platform": m["platform_name"],
                         "seed": m["seed"], "schedule": variant(m), **knowledge_metrics(known)})
    return rows


ANTICIPATION = ("runtime_accuracy_mean", "runtime_accuracy_median", "io_rate_accuracy_mean", "sysio_accuracy_mean_pt",
                "sysio_accuracy_median_pt", "sysio_accuracy_mean_et", "sysio_accuracy_median_et",
                "burst_sensitivity_5min_pt", "burst_precision_5min_pt", "burst_sensitivity_60min_pt",
                "burst_precision_60min_pt", "burst_sensitivity_5min_et", "burst_precision_5min_et",
                "burst_sensitivity_60min_et", "burst_precision_60min_et", "burst_share")


def _cell(values: list[float]) -> str:
    v = [x for x in values if not (isinstance(x, float) and math.isnan(x))]
    if not v:
        return "—"
    big = max(abs(x) for x in v) >= 100
    fmt = (lambda x: f"{x:,.0f}") if big else (lambda x: f"{x:.3f}")
    return f"{fmt(np.mean(v))} [{fmt(min(v))}-{fmt(max(v))}]" if len(v) > 1 else fmt(v[0])


def table(rows: list[dict], workload: str, platform: str, columns=COLUMNS) -> str:
    rs = [r for r in rows if r["workload"] == workload and r["platform"] == platform]
    out = ["| variant | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for v in sorted({r["variant"] for r in rs}):
        sel = [r for r in rs if r["variant"] == v]
        out.append(f"| {v} | " + " | ".join(_cell([r.get(c, math.nan) for r in sel]) for c in columns) + " |")
    return "\n".join(out)


def figures(rows: list[dict], root: Path, out: Path, seed: int = 1) -> None:
    """Fig. 4.5 / 4.7 style: actual vs estimated system I/O over a week of one run per source,
    and the relative accuracy per source (box plot over runs)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    for workload, platform in sorted({(r["workload"], r["platform"]) for r in rows}):
        sel = [r for r in rows if r["workload"] == workload and r["platform"] == platform and r["seed"] == seed
               and r["variant"].startswith("easy/")]
        if not sel:
            continue
        fig, axes = plt.subplots(len(sel), 1, figsize=(7, 1.8 * len(sel)), sharex=True)
        for ax, r in zip(np.atleast_1d(axes), sorted(sel, key=lambda r: r["variant"])):
            m = json.loads((Path(r["run_dir"]) / "manifest.json").read_text())
            known = run_knowledge(Path(r["run_dir"]) / "out_jobs.csv", m["workload"], m["options"])
            t0 = min(j.start for j in known)
            n = int(math.ceil((max(j.finish for j in known) - t0) / GRID))
            week = min(n, int(7 * 86400 / GRID))
            hours = np.arange(week) * GRID / 3600
            actual = system_io(known, t0, n, "actual")
            for kind, style in (("actual", "k-"), ("pt", "C0-"), ("et", "C1-")):
                series = actual if kind == "actual" else system_io(known, t0, n, kind)
                ax.plot(hours, series[:week] / 1e9, style, lw=0.7, label=kind)
            ax.axhline(burst_threshold(actual) / 1e9, color="C3", lw=0.8, ls="--", label="burst threshold")
            ax.set_ylabel("GB/s")
            ax.set_title(r["variant"], fontsize=8)
        np.atleast_1d(axes)[0].legend(fontsize=6, ncol=4)
        np.atleast_1d(axes)[-1].set_xlabel("hours since the first start (first week)")
        fig.tight_layout()
        fig.savefig(out / f"sysio_{workload}_{platform}.png", dpi=110)
        plt.close(fig)
        # accuracy per source (all seeds)
        sel = [r for r in rows if r["workload"] == workload and r["platform"] == platform and "/" in r["variant"]]
        names = sorted({r["variant"] for r in sel})
        fig, ax = plt.subplots(figsize=(7, 3))
        for k, col in enumerate(("runtime_accuracy_mean", "io_rate_accuracy_mean", "sysio_accuracy_mean_et")):
            ax.bar(np.arange(len(names)) + 0.27 * (k - 1),
                   [np.mean([r[col] for r in sel if r["variant"] == v]) for v in names], width=0.27, label=col)
        ax.set_xticks(range(len(names)), names, rotation=30, fontsize=7)
        ax.set_ylabel("relative accuracy")
        ax.set_title(f"{workload}, {platform}: estimate accuracy (cf. 004 Figs. 4.4-4.7)", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"accuracy_{workload}_{platform}.png", dpi=110)
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mrsched.studies.ioaware_knowledge_summary")
    p.add_argument("results", help="campaign results directory (studies/results/ioaware_knowledge)")
    p.add_argument("--figures", help="write the figures there")
    args = p.parse_args(argv)
    root = Path(args.results)
    rows = summarise(root)
    if not rows:
        print("no finished runs yet")
        return 1
    write_rows_atomic(root / "ioaware_knowledge_summary.csv", rows)
    for workload, platform in sorted({(r["workload"], r["platform"]) for r in rows}):
        print(f"\n{workload}, {platform} (mean over seeds [min-max])\n")
        print(table(rows, workload, platform))
    ant = anticipation(root)
    if ant:
        write_rows_atomic(root / "ioaware_knowledge_anticipation.csv", ant)
        for workload, platform in sorted({(r["workload"], r["platform"]) for r in ant}):
            print(f"\nanticipation on the I/O-ignorant EASY runs, {workload}, {platform} (mean over seeds [min-max])\n")
            print(table(ant, workload, platform, ANTICIPATION))
    if args.figures:
        figures(rows, root, Path(args.figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
