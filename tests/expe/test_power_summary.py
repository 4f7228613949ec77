"""studies/power_summary.py (the table of studies/POWER.md) on a small campaign of the same shape: a
generated cluster with wattage, a burst-buffer workload from a small SWF trace, fcfs-bb and
conservative-bb under power_cap_share 1.0 and 0.6, and the hierarchy splitting a cap given in
watts; ``--run`` runs the campaign files first."""

from __future__ import annotations

import subprocess
import sys

from mrsched.expe.launch import run_campaign
from test_bbsched_summary import swf_trace


def _campaign(path, name: str, parallelism: int, policies: str):
    """A campaign file of the study's shape at ``path``: a generated 8-node cluster with
    wattage, a burst-buffer workload from a small SWF trace beside it, then ``policies``."""
    trace = swf_trace(path.parent / "trace.swf")
    path.write_text(f"""
name: {name}
engine: embedded
timeout: 120
parallelism: {parallelism}
seeds: 1
platforms:
  - {{generate: cluster, nodes: 8, storage: 2, bb_capacity: 10GB, name: c8w, wattage: "100:200"}}
workloads:
  - {{generate: bbsched, name: kth-S2, trace: {trace}, part: 1/2, scenario: S2}}
policies:{policies}
""")
    return path


def test_power_summary_table(tmp_path):
    path = _campaign(tmp_path / "power.yaml", "power-small", 2, """
  - {policy: fcfs-bb, options: {power_cap_share: [1.0, 0.6]}}
  - {policy: conservative-bb, options: {power_cap_share: [1.0, 0.6]}}
  - {policy: hierarchical, name: hier2, options: {depth: 2, leaf_policy: fcfs-bb, power_cap: [1600, 1280]}}""")
    summary = run_campaign(path, output=tmp_path / "out", progress=False, report=False,
                           log=lambda *a: None)
    assert summary.all_ok and summary.total == 6
    proc = subprocess.run([sys.executable, "-m", "mrsched.studies.power_summary", str(tmp_path / "out")],
                          capture_output=True, text=True, check=True)
    rows = [r.strip("|").split("|") for r in proc.stdout.splitlines()[2:]]
    assert len(rows) == 6
    head = [c.strip() for c in proc.stdout.splitlines()[0].strip("|").split("|")]
    for r in rows:
        cell = dict(zip(head, (c.strip() for c in r)))
        assert cell["under_cap"] == "True"
        # 8 nodes of 100:200 W: peak 1.6 kW; 60% = 0.96 kW leaves 160 W: one busy node
        # hier2's 1,280 W: 80% of the peak
        assert cell["cap (kW)"] == {"1.00": "1.60", "0.60": "0.96", "0.80": "1.28"}[cell["cap_share"]]
        assert cell["seeds"] == "1"
    assert sorted(cell.split("|")[3].strip() for cell in proc.stdout.splitlines()[2:]) == \
        ["conservative-bb"] * 2 + ["fcfs-bb"] * 2 + ["hier2"] * 2


def test_run_runs_the_campaign_files_then_prints_the_table(tmp_path, monkeypatch, capsys):
    from mrsched.studies import power_summary

    path = _campaign(tmp_path / "p.yaml", "p", 1, """
  - {policy: fcfs-bb, options: {power_cap_share: 0.6}}""")
    monkeypatch.setattr(power_summary, "CAMPAIGNS", (path,))
    monkeypatch.setattr(power_summary, "ROOTS", (tmp_path / "results" / "p",))
    assert power_summary.main(["--run"]) == 0
    out = capsys.readouterr().out
    assert "both campaigns done in" in out and "| c8w | kth-S2 | fcfs-bb | 0.60 | 0.00 | 1 |" in out
