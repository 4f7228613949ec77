"""MultiSched on the five-resource workload: job fields become requests, capacities hold.

End to end through the embedded simulator: the policy learns the pools' capacities from its
``counters`` knob (campaign runs have no sched-config), the runtime reads the jobs' fields of
those names, and no pool is ever over-committed.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from mrsched.errors import ConfigError
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.optim.pareto import WindowProblem
from mrsched.schedulers.policies.multisched import MultiSchedSelector
from mrsched.schedulers.registry import make_policy, make_scheduler
from mrsched.schedulers.execution.runtime import PolicyRuntime
from mrsched.workloads.multires import RESOURCES, counters_option, generate_multires

NAMES = [r.name for r in RESOURCES]


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """cluster16 and 120 jobs of the multires workload (synthetic base, busy machine)."""
    from mrsched.platforms.bundled import bundled_path
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.platform_info import read_platform_info
    from mrsched.workloads.synthetic import generate_synthetic

    plat = bundled_path("cluster16.xml")
    info = read_platform_info(plat)
    base = generate_synthetic(jobs=120, platform=info, seed=11, model="delay", mean_interarrival=30.0,
                              max_nodes=8, max_runtime=1200.0)
    wl = generate_multires(base, platform=info, seed=11)
    path = tmp_path_factory.mktemp("multires") / "wl.json"
    write_workload(path, wl)
    return str(plat), str(path), wl


def run(machine, tmp_path, policy: str, options: dict) -> dict[str, tuple[float, float]]:
    """(start, finish) per executed job id of one embedded simulation."""
    from mrsched.simulator.engine import simulate

    plat, path, _ = machine
    simulate(plat, [path], make_scheduler(policy, options), export_prefix=str(tmp_path / "out"))
    out = {}
    with open(tmp_path / "out_jobs.csv") as f:
        for row in csv.DictReader(f):
            if row["final_state"] != "REJECTED" and float(row["starting_time"]) >= 0:
                out[row["job_id"]] = (float(row["starting_time"]), float(row["finish_time"]))
    return out


def peak_use(machine, times: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Largest total demand of each pool (and nodes) over the jobs running at any instant."""
    _, _, wl = machine
    jobs = {str(j["id"]): j for j in wl["jobs"]}
    peaks = dict.fromkeys(NAMES + ["res"], 0.0)
    for t, _ in times.values():
        running = [jobs[i] for i, (s, f) in times.items() if s <= t < f]
        for name in peaks:
            peaks[name] = max(peaks[name], sum(j[name] for j in running))
    return peaks


def test_multisched_sees_every_demand_and_respects_every_capacity(machine, tmp_path):
    _, _, wl = machine
    caps = wl["counters"]
    demands = np.array([[j[n] for n in NAMES] for j in wl["jobs"]])
    assert (demands > 0).any(axis=0).all()          # every pool is asked for by some job
    times = run(machine, tmp_path, "multisched", {"counters": counters_option(caps), "window_percent": "50"})
    assert len(times) == len(wl["jobs"])            # every job ran (each fits alone)
    peaks = peak_use(machine, times)
    assert peaks["res"] <= 16
    for name in NAMES:
        assert peaks[name] <= caps[name] + 1e-9, name
    # the pools bind: some resource was used to more than half its capacity at some point
    assert max(peaks[n] / caps[n] for n in NAMES) > 0.5


def test_a_policy_blind_to_the_pools_overcommits_them(machine, tmp_path):
    """The control: without the capacities the same workload over-commits a pool, so the
    test above checks something the counters knob and the runtime really enforce."""
    _, _, wl = machine
    peaks = peak_use(machine, run(machine, tmp_path, "multisched", {"window_percent": "50"}))
    assert any(peaks[n] > wl["counters"][n] for n in NAMES)


@pytest.mark.parametrize("policy", ["naive", "bbsched", "bin-packing", "constrained-bb"])
def test_every_window_method_enforces_the_pools(machine, tmp_path, policy):
    _, _, wl = machine
    times = run(machine, tmp_path, policy, {"counters": counters_option(wl["counters"]),
                                            **({"generations": "50"} if policy == "bbsched" else {})})
    assert len(times) == len(wl["jobs"])
    peaks = peak_use(machine, times)
    assert all(peaks[n] <= wl["counters"][n] + 1e-9 for n in NAMES)


def test_sched_config_capacities_win_over_the_knob():
    cluster = Cluster.simple(4, counters={"memory": 10.0})
    runtime = PolicyRuntime(make_policy("multisched", counters="memory=99,licences=2"))
    runtime.begin(cluster)
    assert runtime.cluster.counters == {"memory": 10.0, "licences": 2.0}
    job = runtime.submit(0.0, "w!1", {"id": "1", "subtime": 0, "res": 1, "walltime": 10,
                                      "memory": 4, "licences": 1, "power": 7})
    assert dict(job.request.counters) == {"memory": 4.0, "licences": 1.0}   # power: not a pool here


@pytest.mark.parametrize("text", ["memory", "memory=abc", "memory=-1", "=3", "gpus=4"])
def test_bad_counters_knob_is_a_config_error_naming_the_option(text):
    runtime = PolicyRuntime(make_policy("naive", counters=text))
    with pytest.raises(ConfigError) as exc:
        runtime.begin(Cluster.simple(4))
    assert exc.value.field == "counters"


def test_a_pool_no_window_job_asks_for_changes_nothing():
    """Decision in MultiSchedSelector: zero-demand resources leave the search and the factor."""
    rng = np.random.default_rng(0)
    total = np.array([100.0, 50.0])
    for seed in range(20):
        d = np.column_stack([rng.integers(1, 60, 8), rng.integers(0, 30, 8)])
        two = WindowProblem.build(d, total * 0.6, total)
        padded = WindowProblem.build(np.column_stack([d, np.zeros((8, 3))]), np.r_[total * 0.6, [5, 5, 5]],
                                     np.r_[total, [10, 10, 10]])
        sel = MultiSchedSelector()
        a = sel.select(two, np.random.default_rng(seed))
        b = sel.select(padded, np.random.default_rng(seed))
        assert (a == b).all()
