"""studies/bbsched.yaml: every method on every workload, and capacities that match the machine."""

from __future__ import annotations

import pytest

METHODS = {"naive", "bbsched", "weighted", "weighted-cpu", "weighted-bb", "constrained-cpu",
           "constrained-bb", "bin-packing", "multisched", "fcfs-bb"}


@pytest.fixture(scope="module")
def campaign(shared_file, repo_dir):
    from mrsched.expe.campaign import load_campaign

    shared_file("data", "KTH-SP2-1996-2.1-cln.swf")
    return load_campaign(repo_dir / "studies" / "bbsched.yaml")


def test_every_method_runs_on_s1_to_s4_and_the_multires_workload(campaign):
    from mrsched.expe.campaign import plan_runs

    runs = plan_runs(campaign)
    pairs = {(r.spec.policy, r.workload.name) for r in runs}
    workloads = {f"kth-{w}-p{p}" for w in ("S1", "S2", "S3", "S4", "multires") for p in (7, 12)}
    workloads.add("kth-S4-150TB")
    assert pairs == {(m, w) for m in METHODS for w in workloads}
    assert {r.seed for r in runs} == {1, 2, 3}      # the workload seed varies the injection
    commands = {w.name: w.command for w in campaign.workloads}
    assert commands["kth-S3-p7"][:2] == ("workload", "bbsched") and "S3" in commands["kth-S3-p7"]
    assert "7/16" in commands["kth-S3-p7"] and "12/16" in commands["kth-S3-p12"]
    assert commands["kth-multires-p12"][:2] == ("workload", "multires")


def test_counters_option_is_the_multires_capacities_of_the_platform(campaign):
    from mrsched.platforms.bundled import bundled_path
    from mrsched.workloads.multires import counters_option, generate_multires
    from mrsched.workloads.platform_info import read_platform_info

    info = read_platform_info(bundled_path("dragonfly96.xml"))
    expected = counters_option(generate_multires(platform=info, jobs=1)["counters"])
    window = [p for p in campaign.policies if p.policy != "fcfs-bb"]
    assert window and all(p.options.get("counters") == expected for p in window)
