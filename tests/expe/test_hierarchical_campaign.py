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
