"""The table of studies/POWER.md from a finished (or partial) ``studies/power.yaml`` campaign.

``python -m mrsched.studies.power_summary [studies/results/power]`` prints, per workload, policy and
power cap (share of the machine's peak), the mean over seeds of the mean waiting time, the
mean bounded slowdown, the makespan, the jobs rejected (their power alone passes the
cap), the energy, the mean and peak power (the analysis' wattage
estimate of the run, ``analysis/power.py``) and the cap in watts, and whether the peak stayed
under the cap.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from mrsched.errors import MrschedError

COLUMNS = ("n_rejected", "mean_waiting_time", "mean_bounded_slowdown", "makespan", "energy_j",
           "mean_power_w", "peak_power_w", "cap_w")


def table(root: Path) -> pd.DataFrame:
    """One row per (workload, policy, cap share): the metrics' means over the seeds."""
    from mrsched.analysis.campaign import iter_runs, metrics_table
    from mrsched.analysis.power import run_power

    rows = []
    for run in iter_runs(root):
        if run.status != "ok":
            continue
        row = metrics_table([run]).iloc[0].to_dict()
        share = float((run.manifest.get("options") or {}).get("power_cap_share") or 0.0)
        series = run_power(run)
        row["cap_share"] = share
        row["cap_w"] = share * series.busy_w if series is not None and share else math.nan
        rows.append(row)
    if not rows:
        raise MrschedError("no finished run", file=str(root))
    m = pd.DataFrame(rows)
    keys = ["workload_name", "policy", "cap_share"]
    out = m.groupby(keys, sort=True)[list(COLUMNS)].mean().reset_index()
    out["under_cap"] = out["peak_power_w"] <= out["cap_w"] + 1e-6
    return out


def md(t: pd.DataFrame) -> str:
    """A markdown table (no tabulate dependency)."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
        return str(v)
    rows = ["| " + " | ".join(map(str, t.columns)) + " |", "|" + "---|" * len(t.columns)]
    return "\n".join(rows + ["| " + " | ".join(fmt(v) for v in r) + " |" for r in t.itertuples(index=False)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default="studies/results/power")
    args = ap.parse_args(argv)
    try:
        t = table(Path(args.root))
    except MrschedError as exc:
        print(f"power_summary: error: {exc}")
        return 1
    t = t.assign(energy_j=t["energy_j"] / 1e9, peak_power_w=t["peak_power_w"] / 1e3,
                 cap_w=t["cap_w"] / 1e3, mean_power_w=t["mean_power_w"] / 1e3)
    t = t.rename(columns={"energy_j": "energy (GJ)", "peak_power_w": "peak (kW)", "cap_w": "cap (kW)", "mean_power_w": "mean (kW)", "n_rejected": "rejected",
                          "mean_waiting_time": "mean wait (s)", "mean_bounded_slowdown": "mean bsld",
                          "makespan": "makespan (s)"})
    print(md(t))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
