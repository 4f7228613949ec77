"""Summarise the `studies/bbsched.yaml` campaign for `studies/BBSCHED.md`: per workload, mean over seeds.

Prints markdown tables (waiting time, bounded slowdown, node and burst-buffer use with warm-up
and cool-down excluded, use of the five MultiSched pools, which `mrsched report` does not know)
and writes per-scenario Kiviat charts into the campaign's report folder.

    python -m mrsched.studies.bbsched_summary studies/results/bbsched
"""
import json
import sys
from pathlib import Path
import numpy as np
import pandas as pd
from mrsched.analysis import load_run, run_metrics
from mrsched.analysis.plots import kiviat_plot

def md(t, index=False):
    t = t.reset_index() if index else t
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) and abs(v) < 100 else (f"{v:.0f}" if isinstance(v, float) else str(v))
    rows = ["| " + " | ".join(map(str, t.columns)) + " |", "|" + "---|" * len(t.columns)]
    return "\n".join(rows + ["| " + " | ".join(fmt(v) for v in r) + " |" for r in t.itertuples(index=False)])

def main(argv: list[str]) -> None:
    camp = Path(argv[0] if argv else "studies/results/bbsched")
    POOLS = ["memory", "local_ssd", "io_bandwidth", "licences", "power"]
    rows = []
    for d in sorted((camp / "runs").iterdir()):
        man = json.loads((d / "manifest.json").read_text())
        if man["status"] != "ok":
            continue
        run = load_run(d)
        full = run_metrics(run.jobs, capacities=run.capacities)
        sub = run.jobs["submission_time"]
        span = sub.max() - sub.min()
        win = (sub.min() + 0.1 * span, sub.min() + 0.9 * span)          # warm-up / cool-down excluded
        mid = run_metrics(run.jobs, capacities=run.capacities, window=win)
        row = {"workload": man["workload_name"], "policy": man["policy_label"], "seed": man.get("seed"),
               "wait": full["mean_waiting_time"], "bsld": full["mean_bounded_slowdown"],
               "node_w": mid["utilisation_nodes"], "bb_w": mid.get("utilisation_burst_buffer", 0.0)}
        wl = json.loads(Path(man["workload"]).read_text())
        if "counters" in wl:                                            # the five pools (multires)
            fields = {str(j["id"]): j for j in wl["jobs"]}
            ran = run.jobs[~run.jobs["rejected"]]
            s = np.clip(ran["starting_time"].to_numpy(float), *win)
            f = np.clip(ran["finish_time"].to_numpy(float), *win)
            ids = ran["job_id"].astype(str).str.split("!").str[-1]
            for p in POOLS:
                amount = np.array([fields[i][p] for i in ids], float)
                row[p] = float(np.sum(amount * (f - s)) / (wl["counters"][p] * (win[1] - win[0])))
            row["pools_mean"] = float(np.mean([row[p] for p in POOLS]))
        rows.append(row)
    ok = pd.DataFrame(rows)
    for w, t in ok.groupby(["workload", "policy"]).mean(numeric_only=True).reset_index().groupby("workload"):
        t = t.set_index("policy")
        print(f"\n#### {w}\n\n" + md(t.assign(wait_vs=100 * (t.wait / t.loc["naive", "wait"] - 1)).sort_values("wait"), index=True))
    p = ok.pivot_table(index=["workload", "seed"], columns="policy", values="wait")
    print("\nper seed wait change vs naive (%):\n" + md((100 * (p.div(p["naive"], axis=0) - 1)).round(1), index=True))
    ok = ok.assign(family=ok.workload.str.replace(r"-p\d+$", "", regex=True))
    for fam, t in ok.groupby(["family", "policy"]).mean(numeric_only=True).reset_index().groupby("family"):
        t = t.set_index("policy")
        cols = {"1/wait": 1 / t.wait, "1/bounded slowdown": 1 / t.bsld, "node use": t.node_w}
        if t.bb_w.notna().all() and (t.bb_w > 0).all():
            cols["burst-buffer use"] = t.bb_w
        if "pools_mean" in t and t.pools_mean.notna().all():
            cols["R1-R5 use (mean)"] = t.pools_mean
        m = pd.DataFrame(cols)
        if fam == "kth-multires":
            m = m.drop(index="fcfs-bb")      # ignores the five pools: over-commits them, not comparable
        scores = ((m - m.min()) / (m.max() - m.min()).replace(0, np.nan)).fillna(1.0)
        kiviat_plot(scores, title=f"{fam}: 1 = best, 0 = worst (min-max, as 000 Fig. 13)").savefig(
            camp / "report" / f"kiviat_{fam}.png", dpi=90)
        print(f"\n#### {fam} (parts and seeds averaged)\n\n" + md(t.assign(area=scores.sum(axis=1)).sort_values("wait"), index=True))


if __name__ == "__main__":
    main(sys.argv[1:])
