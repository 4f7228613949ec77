"""Tables of studies/IPSCHED.md from a finished (or partial) ``studies/ipsched.yaml`` campaign.

``python studies/ipsched_summary.py [studies/results/ipsched] [--cpu CPU.json]`` prints, per workload
and Table 10 experiment, the mean over seeds of seed 002's measures (utilisation = theoretical
/ actual run time, mean waiting time, packing factor, fragmentation, spread, GPUs in use) and
the window halvings (summed over seeds), for ESP the utilisation up to the end of the last
non-Z job (the Z jobs are submitted at 160 and 480 minutes, which pins every scheduler's run
time on ESP; see IPSCHED.md); then the campaign's cost per policy: wall time per run from the
manifests and CPU time per run (the manifest's ``cpu_time``; ``--cpu``, a JSON of run id -> CPU
seconds sampled from /proc, for runs made before manifests recorded it).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pandas as pd

from mrsched.analysis.campaign import campaign_metrics
from mrsched.errors import MrschedError
from mrsched.sums import ordered_sum

EXPERIMENTS = {  # Table 10
    "slurm-bf_priority=basic": 1, "slurm-bf_priority=multifactor": 2,
    "ipsched_objective=priority_priority=basic": 3, "ipsched_objective=priority_priority=multifactor": 4,
    "ipsched_objective=priority-cores_priority=basic": 5,
    "ipsched_objective=priority-cores_priority=multifactor": 6,
    "aucsched_priority=basic": 7, "aucsched_priority=multifactor": 8,
}
CORES = 8192


def md(t: pd.DataFrame) -> str:
    """A markdown table (no tabulate dependency)."""
    def fmt(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    rows = ["| " + " | ".join(map(str, t.columns)) + " |", "|" + "---|" * len(t.columns)]
    return "\n".join(rows + ["| " + " | ".join(fmt(v) for v in r) + " |" for r in t.itertuples(index=False)])


def busy_utilisation(run_dir: Path) -> float:
    """Core-seconds of the non-Z jobs / (cores x the last non-Z job's finish)."""
    rows = list(csv.DictReader(open(run_dir / "out_jobs.csv", newline="")))
    rows = [r for r in rows if r["final_state"] == "COMPLETED_SUCCESSFULLY"
            and int(r["requested_number_of_resources"]) < CORES]
    if not rows:
        return float("nan")
    end = max(float(r["finish_time"]) for r in rows)
    work = ordered_sum(float(r["execution_time"]) * int(r["requested_number_of_resources"])
                       for r in rows)
    return work / (CORES * end)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default="studies/results/ipsched")
    ap.add_argument("--cpu", help="JSON: run id -> CPU seconds of its engine process")
    args = ap.parse_args()
    root = Path(args.root)
    df = campaign_metrics(root)
    df = df[df["status"] == "ok"].copy()
    df["exp"] = df["variant"].map(EXPERIMENTS)
    df["busy_utilisation"] = [busy_utilisation(root / "runs" / rid) if w == "esp" else float("nan")
                              for rid, w in zip(df["run_id"], df["workload_name"])]
    cols = ["seed002_utilisation", "busy_utilisation", "mean_waiting_time", "packing_factor", "fragmentation",
            "spread", "utilisation_gpus"]
    cols = [c for c in cols if c in df.columns]
    keys = ["workload_name", "exp", "variant"]
    out = df.groupby(keys)[cols].mean()
    if "window_halvings" in df.columns:
        out["halvings"] = df.groupby(keys)["window_halvings"].sum().astype(int)
    out["runs"] = df.groupby(keys).size()
    pd.set_option("display.width", 200)
    for wl, table in out.groupby(level=0):
        print(f"\n#### {wl}\n")
        t = table.droplevel(0).reset_index()
        t["mean_waiting_time"] = t["mean_waiting_time"] / 3600.0
        t = t.rename(columns={"mean_waiting_time": "mean wait (h)", "seed002_utilisation": "utilisation",
                              "busy_utilisation": "utilisation to last non-Z job", "utilisation_gpus": "GPUs used"})
        if wl != "esp":
            t = t.drop(columns=["utilisation to last non-Z job"], errors="ignore")
        print(md(t))
    cost(root, args.cpu)


def cost(root: Path, cpu_file: str | None) -> None:
    """Wall (and CPU) seconds per run, by policy and workload, from the run manifests."""
    cpu = json.loads(Path(cpu_file).read_text()) if cpu_file else {}
    rows = []
    for manifest in sorted((root / "runs").glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        rows.append({"policy": m["policy"], "workload": m.get("workload_name", ""),
                     "wall": float(m.get("wall_time") or "nan"), "cpu": cpu.get(m["run_id"], m.get("cpu_time", float("nan")))})
    if not rows:
        return
    t = pd.DataFrame(rows)
    g = t.groupby(["policy", "workload"]).agg(runs=("wall", "size"), wall_mean=("wall", "mean"),
                                              wall_max=("wall", "max"), cpu_mean=("cpu", "mean"),
                                              cpu_max=("cpu", "max")).reset_index()
    print("\n#### cost per run (seconds)\n")
    print(md(g))
    print(f"\nall runs: {len(t)}, wall sum {t['wall'].sum():.0f} s, CPU sum {t['cpu'].sum():.0f} s "
          f"over {t['cpu'].notna().sum()} runs with a CPU sample")


if __name__ == "__main__":
    try:
        main()
    except MrschedError as exc:   # a missing or unreadable campaign: one line, no traceback
        raise SystemExit(f"ipsched_summary: error: {exc}")
