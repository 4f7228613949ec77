"""studies/hierarchical.yaml (issue #17): the campaign loads, its options pass validation, and its
machine (1,152 one-core hosts in a <cluster> zone) runs a depth-3 hierarchy on the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrsched.expe.campaign import load_campaign, plan_runs
from mrsched.expe.validation import check_values
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.ensemble import generate_ensemble

EXPE = Path(__file__).resolve().parents[2] / "studies"


def test_campaign_plans_every_depth_on_every_ensemble():
    campaign = load_campaign(EXPE / "hierarchical.yaml", output="/tmp/unused-hierarchical")
    runs = plan_runs(campaign)
    assert len(runs) == 5 * 4
    for pol in campaign.policies:
        check_values(pol.policy, pol.options)   # decision_cost is accepted by fcfs as by hierarchical
    assert {p.label for p in campaign.policies} == {"centralized", "depth1", "depth2", "depth3"}


def test_machine_of_1152_cores_runs_one_job_per_core_leaf(tmp_path):
    wl = tmp_path / "w.json"
    write_workload(wl, generate_ensemble(jobs=2304, nb_res=1152))
    sched = make_scheduler("hierarchical", {"depth": 3, "branching": "32,36", "decision_cost": "per_job=0.5"})
    result = simulate(str(EXPE / "hierarchical" / "cores1152.xml"), [str(wl)], sched,
                      export_prefix=str(tmp_path / "out"))
    leaves = [i for i in sched.policy.instances() if i.leaf]
    assert len(leaves) == 1152 and {i.hi - i.lo for i in leaves} == {1}
    assert {i.started for i in leaves} == {2}          # round-robin: two jobs per core
    assert result.makespan == pytest.approx(1.0, abs=0.01)   # each leaf: 0.5 s per job, in parallel


def test_run_records_the_metrics_per_level(tmp_path):
    """`mrsched run` of `hierarchical` writes out_hierarchy.csv (one row per instance) and the
    manifest sums it per depth (issue 44: metrics per level)."""
    from mrsched.expe.manifest import read_manifest
    from mrsched.expe.runner import execute_run
    from mrsched.expe.spec import RunSpec
    from mrsched.platforms.bundled import bundled_path
    from mrsched.workloads.platform_info import read_platform_info
    from mrsched.workloads.synthetic import generate_synthetic

    platform = str(bundled_path("dragonfly96"))
    wl = tmp_path / "w.json"
    write_workload(wl, generate_synthetic(jobs=60, platform=read_platform_info(platform), seed=2))
    out = tmp_path / "run"
    execute_run(RunSpec(run_id="h", out_dir=str(out), platform=platform, workload=str(wl), policy="hierarchical",
                        options={"depth": 3, "branching": "2,2", "leaf_policy": "fcfs-easy"}, timeout=300))
    manifest = read_manifest(out)
    assert manifest["status"] == "ok", manifest["error"]
    assert "out_hierarchy.csv" in manifest["outputs"]
    import csv
    with open(out / "out_hierarchy.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["instance"] for r in rows] == ["0", "0.0", "0.0.0", "0.0.1", "0.1", "0.1.0", "0.1.1"]
    levels = manifest["levels"]
    assert [lv["depth"] for lv in levels] == [1, 2, 3] and [lv["instances"] for lv in levels] == [1, 2, 4]
    assert levels[0]["routed"] == 60
    with open(out / "out_jobs.csv") as fh:
        jobs = list(csv.DictReader(fh))
    ran = [j for j in jobs if j["final_state"] != "REJECTED"]
    assert levels[0]["rejected"] == len(jobs) - len(ran)
    node_seconds = sum(int(j["requested_number_of_resources"]) * float(j["execution_time"]) for j in ran)
    for level in levels:     # every depth accounts for all the work the engine ran
        assert level["node_seconds"] == pytest.approx(node_seconds, rel=1e-6)
