"""Seed 004's results from an ``studies/ioaware.yaml`` campaign: goodput, per-job computing
fraction, contended time, efficiency and turnaround ratios (Figs. 3.5, 3.6, 3.8).

    python -m mrsched.studies.ioaware_summary studies/results/ioaware [--figures DIR]

Every run is scored by :mod:`mrsched.analysis.iocontention` (jobs keep their durations).
I/O-ignorant and I/O-aware runs are paired by (policy, platform, seed); turnaround is
compared on the jobs both ran (the I/O-aware run rejects jobs whose bandwidth exceeds the
PFS: they never fit). Prints a Markdown table per policy and writes ``ioaware_summary.csv``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from mrsched.analysis.iocontention import run_contention
from mrsched.atomic import write_rows_atomic


def _runs(root: Path):
    for man in sorted((root / "runs").glob("*/manifest.json")):
        m = json.loads(man.read_text())
        if m.get("status") == "ok":
            yield man.parent, m


def _turnaround(path: Path) -> dict[str, float]:
    out = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["final_state"] != "REJECTED":
                out[row["job_id"]] = float(row["turnaround_time"])
    return out


def summarise(root: Path) -> list[dict]:
    rows, fractions = [], {}
    per = {}
    for run_dir, m in _runs(root):
        res = run_contention(run_dir / "out_jobs.csv", m["platform"], m["workload"])
        aware = bool(m["options"].get("io_aware"))
        key = (m["policy"], m["workload_name"], m["platform_name"], m["seed"])
        per.setdefault(key, {})[aware] = (res, _turnaround(run_dir / "out_jobs.csv"))
        fractions.setdefault((m["policy"], m["workload_name"], m["platform_name"], aware), []).extend(
            j.computing_fraction for j in res.jobs)
    for (policy, workload, plat, seed), pair in sorted(per.items()):
        if set(pair) != {False, True}:
            continue
        (ign, ta_i), (awr, ta_a) = pair[False], pair[True]
        common = set(ta_i) & set(ta_a)
        mi, ma = ign.metrics(), awr.metrics()
        rows.append({
            "policy": policy, "workload": workload, "platform": plat, "seed": seed,
            "goodput_ignorant": mi["goodput"], "goodput_aware": ma["goodput"],
            "fraction_min_ignorant": mi["computing_fraction_min"],
            "fraction_max_ignorant": mi["computing_fraction_max"],
            "fraction_min_aware": ma["computing_fraction_min"],
            "time_contended_ignorant": mi["time_contended_share"],
            "efficiency_ratio": ma["goodput"] / mi["goodput"],
            "turnaround_ignorant": float(np.mean([ta_i[j] for j in common])),
            "turnaround_aware": float(np.mean([ta_a[j] for j in common])),
            "turnaround_ratio": float(np.mean([ta_a[j] for j in common]) / np.mean([ta_i[j] for j in common])),
            "rejected_aware": len(ta_i) - len(common),
        })
    return rows, fractions


def figures(rows: list[dict], fractions: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    plats = sorted({r["platform"] for r in rows})
    under = [int(p.split("-u")[-1]) for p in plats]
    for policy, workload in sorted({(r["policy"], r["workload"]) for r in rows}):
        rs = [r for r in rows if r["policy"] == policy and r["workload"] == workload]
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for key, label in (("goodput_ignorant", "I/O-ignorant"), ("goodput_aware", "I/O-aware")):
            ax.plot(under, [100 * np.mean([r[key] for r in rs if r["platform"] == p]) for p in plats], "o-",
                    label=label)
        ax.set_xlabel("PFS underprovisioning (%)")
        ax.set_ylabel("node time computing (%)")
        ax.set_title(f"{policy}, {workload}: goodput (cf. 004 Fig. 3.5)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"goodput_{policy}_{workload}.png", dpi=110)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3.2))
        data = [fractions.get((policy, workload, p, False), [1.0]) for p in plats]
        ax.boxplot([100 * np.array(d) for d in data])
        ax.set_xticks(range(1, len(under) + 1), [f"{u}%" for u in under])
        ax.set_xlabel("PFS underprovisioning")
        ax.set_ylabel("job's computing fraction (%)")
        ax.set_title(f"{policy} I/O-ignorant, {workload}: per-job (cf. Fig. 3.6)")
        fig.tight_layout()
        fig.savefig(out / f"variability_{policy}_{workload}.png", dpi=110)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for key, label in (("efficiency_ratio", "efficiency aware/ignorant"),
                           ("turnaround_ratio", "turnaround aware/ignorant")):
            ax.plot(under, [np.mean([r[key] for r in rs if r["platform"] == p]) for p in plats], "o-", label=label)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xlabel("PFS underprovisioning (%)")
        ax.set_title(f"{policy}, {workload}: trade-off (cf. Fig. 3.8)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"tradeoff_{policy}_{workload}.png", dpi=110)
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mrsched.studies.ioaware_summary")
    p.add_argument("results", help="campaign results directory (studies/results/ioaware)")
    p.add_argument("--figures", help="write the figures there")
    args = p.parse_args(argv)
    root = Path(args.results)
    rows, fractions = summarise(root)
    if not rows:
        print("no paired runs yet")
        return 1
    write_rows_atomic(root / "ioaware_summary.csv", rows)
    cols = ("goodput_ignorant", "goodput_aware", "fraction_min_ignorant", "fraction_max_ignorant",
            "time_contended_ignorant", "efficiency_ratio", "turnaround_ratio", "rejected_aware")
    for policy, workload in sorted({(r["policy"], r["workload"]) for r in rows}):
        print(f"\n{policy}, {workload} (mean over seeds [min-max])\n")
        print("| PFS | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for plat in sorted({r["platform"] for r in rows}):
            rs = [r for r in rows if r["policy"] == policy and r["workload"] == workload and r["platform"] == plat]
            cells = []
            for c in cols:
                v = [r[c] for r in rs]
                cells.append(f"{np.mean(v):.3f} [{min(v):.3f}-{max(v):.3f}]" if c != "rejected_aware"
                             else f"{np.mean(v):.1f}")
            print(f"| {plat} | " + " | ".join(cells) + " |")
    if args.figures:
        figures(rows, fractions, Path(args.figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
