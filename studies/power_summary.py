"""The tables of studies/POWER.md from the finished (or partial) ``studies/power.yaml`` and
``studies/power_tree.yaml`` campaigns; ``--run`` runs both first (the study's one command).

``python -m mrsched.studies.power_summary [--run] [ROOT ...]`` prints, per platform, workload,
policy and power cap (share of the machine's peak), the mean over seeds of the mean waiting
time, the mean bounded slowdown, the makespan, the jobs rejected, the energy, the mean and
peak power (the analysis' wattage estimate of the run, ``analysis/power.py``) and the cap in
watts, and whether the peak stayed under the cap; ``idle_sleep`` is the runs' option (0: idle
nodes stay awake). A run's energy and power are measured when it ran with -E. A run's cap is its ``power_cap_share``
option, or its ``power_cap`` in watts over the machine's peak (``hierarchical`` splits watts,
not shares). ROOT defaults to both campaigns' result folders (those that exist).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd

from mrsched.errors import MrschedError

#: relative tolerance of the cap check on a measured peak (Batsim's printed precision, above)
MEASURED_TOL = 1e-3
COLUMNS = ("n_rejected", "mean_waiting_time", "mean_bounded_slowdown", "makespan", "energy_j",
           "mean_power_w", "peak_power_w", "cap_w")
#: the study's campaign files, in the order ``--run`` runs them
HERE = Path(__file__).resolve().parent
CAMPAIGNS = (HERE / "power.yaml", HERE / "power_tree.yaml")
ROOTS = (HERE / "results" / "power", HERE / "results" / "power_tree")


def table(root: Path | list[Path]) -> pd.DataFrame:
    """One row per (platform, workload, policy, cap share): the metrics' means over the seeds."""
    from mrsched.analysis.campaign import iter_runs, metrics_table
    rows = []
    roots = [root] if isinstance(root, Path) else list(root)
    for one in roots:
        for run in iter_runs(one):
            if run.status != "ok":
                continue
            row = metrics_table([run]).iloc[0].to_dict()
            options = run.manifest.get("options") or {}
            peak = _peak_w(run)
            share = float(options.get("power_cap_share") or 0.0)
            watts = float(options.get("power_cap") or 0.0)
            if watts:
                share = round(watts / peak, 6) if peak > 0 else math.nan
            row["cap_share"] = share
            row["policy"] = _entry_name(run.manifest, options)
            row["idle_sleep"] = float(options.get("idle_sleep") or 0.0)
            row["cap_w"] = watts or (share * peak if share else math.nan)
            rows.append(row)
    if not rows:
        raise MrschedError("no finished run", file=", ".join(map(str, roots)) or str(ROOTS[0]),
                           hint="python -m mrsched.studies.power_summary --run runs the study")
    m = pd.DataFrame(rows)
    keys = ["platform_name", "workload_name", "policy", "cap_share", "idle_sleep"]
    out = m.groupby(keys, sort=False)[list(COLUMNS) + ["energy_measured"]].mean().reset_index()
    out.insert(5, "seeds", m.groupby(keys, sort=False).size().to_numpy())
    # a measured (-E) peak is read back from Batsim's energy file, whose times and energies
    # are printed to 1 us and 1 uJ: over the few microseconds between a job's end and the next
    # start the power read back is off by up to watts x 1e-6 / interval (a few W); MEASURED_TOL
    out["under_cap"] = out["peak_power_w"] <= out["cap_w"] * (1 + MEASURED_TOL * out["energy_measured"]) + 1e-6
    out = out.drop(columns="energy_measured")
    return out.sort_values(["platform_name", "workload_name", "cap_share", "idle_sleep"],
                           ascending=[True, True, False, True], kind="stable").reset_index(drop=True)


def _peak_w(run) -> float:
    """The machine's peak power (every compute machine busy, the others idle) from its
    platform's wattage; NaN when unknown."""
    from mrsched.analysis.power import _run_wattage

    w = _run_wattage(run, 1.0)
    if w is None:
        return math.nan
    return float(w.busy[:w.n_compute].sum() + w.idle[w.n_compute:].sum())


def _entry_name(manifest: dict, options: dict) -> str:
    """The campaign entry's name (``name:``, else the policy): the run's policy label without
    its option values (``hier2-fcfs-bb_power_cap=10944`` -> ``hier2-fcfs-bb``)."""
    label = str(manifest.get("policy_label") or manifest.get("policy") or "")
    cuts = [label.find(f"_{key}=") for key in options]
    cuts = [c for c in cuts if c > 0]
    return label[:min(cuts)] if cuts else label or str(manifest.get("policy", ""))


def md(t: pd.DataFrame) -> str:
    """A markdown table (no tabulate dependency)."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
        return str(v)
    rows = ["| " + " | ".join(map(str, t.columns)) + " |", "|" + "---|" * len(t.columns)]
    return "\n".join(rows + ["| " + " | ".join(fmt(v) for v in r) + " |" for r in t.itertuples(index=False)])


def run_all() -> int:
    """Run (or resume) both campaign files, one after the other; prints the wall time."""
    from mrsched.cli import main as cli

    t0 = time.monotonic()
    for path in CAMPAIGNS:
        code = cli(["campaign", "run", str(path)])
        if code:
            print(f"power_summary: error: campaign {path.name} ended with exit code {code}")
            return code
    print(f"power_summary: both campaigns done in {time.monotonic() - t0:,.0f} s of wall time")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="*", help="campaign result folders (default: the study's two)")
    ap.add_argument("--run", action="store_true", help="run both campaign files first (resumes)")
    args = ap.parse_args(argv)
    if args.run:
        code = run_all()
        if code:
            return code
    roots = [Path(r) for r in args.root] or [r for r in ROOTS if r.is_dir()]
    try:
        t = table(roots)
    except MrschedError as exc:
        print(f"power_summary: error: {exc}")
        return 1
    t = t.assign(energy_j=t["energy_j"] / 1e9, peak_power_w=t["peak_power_w"] / 1e3,
                 cap_w=t["cap_w"] / 1e3, mean_power_w=t["mean_power_w"] / 1e3)
    t = t.rename(columns={"energy_j": "energy (GJ)", "peak_power_w": "peak (kW)", "cap_w": "cap (kW)",
                          "mean_power_w": "mean (kW)", "n_rejected": "rejected",
                          "mean_waiting_time": "mean wait (s)", "mean_bounded_slowdown": "mean bsld",
                          "makespan": "makespan (s)", "platform_name": "platform",
                          "workload_name": "workload"})
    print(md(t))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
