"""Generated inputs: written once into the campaign directory (atomically, named by what
produced them), one per seed when the generator takes a seed, reused on re-runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrsched.expe.campaign import load_campaign, plan_runs, prepare_inputs


def test_generated_inputs_per_seed_and_reused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("""
name: gen
seeds: [1, 2]
platforms: [{generate: cluster, nodes: 8, storage: 2, bb_capacity: 20GB}]
workloads: [{generate: synthetic, jobs: 15, name: s15}]
policies: [fcfs, {policy: fcfs-bb, name: bb}]
""")
    campaign = load_campaign(path)
    runs = plan_runs(campaign)
    assert [r.spec.run_id for r in runs] == [
        "fcfs-cluster-s15-s1", "fcfs-cluster-s15-s2", "bb-cluster-s15-s1", "bb-cluster-s15-s2"]
    assert runs[0].spec.labels["workload_name"] == "s15" and runs[0].spec.seed == 1
    prepare_inputs(campaign, runs)
    files = sorted(p.name for p in campaign.inputs_dir.iterdir())
    assert len(files) == 3 and sum(f.startswith("workload-s15-") for f in files) == 2
    wl1, wl2 = runs[0].spec.workload, runs[1].spec.workload
    assert wl1 != wl2 and runs[2].spec.workload == wl1  # same seed, same workload file
    jobs1 = json.loads(Path(wl1).read_text())["jobs"]
    jobs2 = json.loads(Path(wl2).read_text())["jobs"]
    assert len(jobs1) == len(jobs2) == 15 and jobs1 != jobs2
    stamps = {p.name: p.stat().st_mtime_ns for p in campaign.inputs_dir.iterdir()}
    prepare_inputs(campaign, plan_runs(load_campaign(path)))  # a re-run generates nothing
    assert {p.name: p.stat().st_mtime_ns for p in campaign.inputs_dir.iterdir()} == stamps
    # a changed generator spec is a new input, the old one stays for the runs that used it
    path.write_text(path.read_text().replace("jobs: 15", "jobs: 16"))
    c2 = load_campaign(path)
    prepare_inputs(c2, plan_runs(c2))
    assert len(list(c2.inputs_dir.iterdir())) == 5


def test_swf_parts_expand_and_are_labelled(tmp_path, shared_dir):
    trace = shared_dir / "data" / "KTH-SP2-1996-2.1-cln.swf"
    path = tmp_path / "c.yaml"
    path.write_text(f"""
name: swf
platforms: [{{generate: cluster, nodes: 100}}]
workloads: [{{swf: {trace}, name: kth, jobs: 20, part: [1/16, 2/16], model: delay}}]
policies: [fcfs]
""")
    campaign = load_campaign(path)
    runs = plan_runs(campaign)
    # the converter takes --seed (burst-buffer sizes), so the run carries the default seed 0
    assert [r.spec.run_id for r in runs] == ["fcfs-cluster-kth-p1-s0", "fcfs-cluster-kth-p2-s0"]
    assert [r.spec.labels["part"] for r in runs] == ["1/16", "2/16"]
    prepare_inputs(campaign, runs)
    parts = [json.loads(Path(r.spec.workload).read_text())["jobs"] for r in runs]
    assert [len(p) for p in parts] == [20, 20] and parts[0] != parts[1]
    assert runs[0].spec.workload != runs[1].spec.workload


def test_generator_failure_is_one_clear_error(tmp_path):
    from mrsched.errors import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text("""
platforms: [{generate: cluster, nodes: -3}]
workloads: [{generate: synthetic, jobs: 5}]
policies: [fcfs]
""")
    campaign = load_campaign(path)
    with pytest.raises(ConfigError, match="generating platform 'cluster' failed") as info:
        prepare_inputs(campaign, plan_runs(campaign))
    assert info.value.file == str(path) and "mrsched platform cluster --nodes -3" in info.value.hint
    assert not list(campaign.inputs_dir.glob("*.xml"))
