"""BBSched and its comparison methods as policies, run through the runtime on the embedded
engine (tests/schedulers/engine_run.py): start times, starvation, knobs."""

from __future__ import annotations

import pytest
from engine_run import begins_data, simulate

from mrsched.errors import ConfigError
from mrsched.schedulers.model.job import Job, Request
from mrsched.schedulers.policies.window import base_order, wfp_priority
from mrsched.schedulers.registry import make_policy, make_scheduler, policy_parameters

TB = 10**12
# Seed 000 Table 1: 100 nodes, 100 TB of burst buffer; J1..J5 (nodes, TB), all at t=0.
TABLE1 = [(1, 80, 20), (2, 10, 85), (3, 40, 5), (4, 10, 0), (5, 20, 0)]
FAST = {"generations": "100"}   # Table 1 has 32 selections: 100 generations find its front


def run_table1(policy: str, options: dict | None = None) -> dict[int, float]:
    jobs = [dict(id=j, subtime=0, runtime=100, walltime=100, res=n, burst_buffer=b * TB)
            for j, n, b in TABLE1]
    res = simulate(make_scheduler(policy, options or {}),
                   begins_data(100, storage=[{"bb_capacity": 100 * TB}]), jobs)
    assert not res["rejected"]
    return {int(k.split("!")[1]): v for k, v in res["start"].items()}


def started_at_zero(start: dict[int, float]) -> list[int]:
    return sorted(j for j, t in start.items() if t == 0)


@pytest.mark.parametrize("policy, options, expected", [
    ("bbsched", FAST, [2, 3, 4, 5]),
    ("bbsched", {"solver": "exact"}, [2, 3, 4, 5]),
    ("weighted", {}, [2, 3, 4, 5]),
    ("weighted-bb", {}, [2, 3, 4, 5]),
    ("constrained-bb", {}, [2, 3, 4, 5]),
    ("naive", {}, [1, 4]),               # J1, then EASY backfills J4 (000 Sect. 1)
    ("weighted-cpu", {}, [1, 5]),
    ("constrained-cpu", {}, [1, 5]),
    ("bin-packing", {}, [1, 5]),
])
def test_table1_start_times(policy, options, expected):
    start = run_table1(policy, options)
    assert started_at_zero(start) == expected
    # Everything else starts when the first batch ends (walltime = runtime = 100 s).
    assert all(start[j] == 100 for j in start if j not in expected)


def test_bbsched_tradeoff_factor_changes_the_pick():
    # The BB gain (0.7) is below 4x the node loss (0.8): keep the max-node solution J1, J5.
    start = run_table1("bbsched", {**FAST, "tradeoff_factor": "4"})
    assert started_at_zero(start) == [1, 5]


def starvation_jobs(pairs: int) -> list[dict]:
    """S (6 of 10 nodes) never wins against a pair of 5-node jobs: node use 10 beats 6."""
    jobs = [dict(id="S", subtime=0, runtime=10, walltime=10, res=6)]
    for k in range(pairs):
        t = 0 if k == 0 else 10 * k - 5
        jobs += [dict(id=f"A{k}", subtime=t, runtime=10, walltime=10, res=5),
                 dict(id=f"B{k}", subtime=t, runtime=10, walltime=10, res=5)]
    return jobs


@pytest.mark.parametrize("policy", ["bbsched", "constrained-cpu"])
def test_starvation_bound_forces_the_job_to_start(policy):
    options = {"starvation_bound": "3", "generations": "50"}
    scheduler = make_scheduler(policy, options)
    res = simulate(scheduler, begins_data(10), starvation_jobs(5))
    assert scheduler.policy.forced_[0] == "w0!S"   # the first job the bound forced
    # Rounds at 0 (A0+B0 chosen), 5 (full), 10 (A1+B1 chosen): S has been in the window 3
    # times; at 15 it is forced but nothing is free, so it heads EASY with a reservation at
    # 20 (no pair can be backfilled before it) and starts at 20.
    assert res["start"]["w0!S"] == 20
    assert res["start"]["w0!A2"] >= 30 and res["start"]["w0!B2"] >= 30
    unbounded = simulate(make_scheduler(policy, {**options, "starvation_bound": "1000"}),
                         begins_data(10), starvation_jobs(5))
    assert unbounded["start"]["w0!S"] == 50   # after every pair: starved without the bound


def test_wfp_priority_and_base_order():
    small = Job("a", 0.0, Request(nodes=2, walltime=100.0))
    big = Job("b", 50.0, Request(nodes=64, walltime=100.0))
    none = Job("c", 0.0, Request(nodes=1))
    assert wfp_priority(small, 100.0) == pytest.approx(1.0 ** 3 * 2)
    assert wfp_priority(big, 100.0) == pytest.approx(0.5 ** 3 * 64)
    assert wfp_priority(none, 100.0) == 0.0
    assert [j.id for j in base_order([small, big, none], "wfp", 100.0)] == ["b", "a", "c"]
    assert [j.id for j in base_order([small, big, none], "fcfs", 100.0)] == ["a", "b", "c"]


def test_window_limits_what_the_optimiser_sees():
    # window=1: the optimiser only sees J1, which fits: it starts, then EASY fills J4.
    start = run_table1("bbsched", {**FAST, "window": "1"})
    assert started_at_zero(start) == [1, 4]


def test_same_seed_same_schedule():
    a = run_table1("bbsched", {**FAST, "seed": "7"})
    b = run_table1("bbsched", {**FAST, "seed": "7"})
    assert a == b


def test_every_knob_is_a_constructor_argument():
    params = policy_parameters("bbsched")
    assert {"window", "base_order", "starvation_bound", "solver", "generations", "population",
            "mutation", "seed", "tradeoff_factor", "resources", "reserve"} <= set(params)
    assert params["window"] == 20 and params["generations"] == 500 and params["mutation"] == 0.0005
    assert policy_parameters("weighted-cpu")["node_weight"] == 0.8
    assert policy_parameters("constrained-bb")["target"] == "burst_buffer"
    p = make_policy("bbsched", window=10)
    assert p.get_params()["window"] == 10


def test_bad_knobs_are_config_errors():
    with pytest.raises(ConfigError, match="window"):
        make_policy("bbsched", window=0)
    with pytest.raises(ConfigError, match="solver"):
        make_policy("bbsched", solver="milp")
    with pytest.raises(ConfigError, match="did you mean 'window'"):
        make_policy("bbsched", windw=3)
    with pytest.raises(ConfigError, match="unknown resource 'ssd'"):
        run_table1("bbsched", {"resources": "nodes,ssd"})


@pytest.mark.parametrize("policy, options, expected", [
    ("bbsched", FAST, [2, 3, 4, 5]),
    ("weighted", {}, [2, 3, 4, 5]),
    ("naive", {}, [1, 4]),
    ("constrained-cpu", {}, [1, 5]),
    ("bin-packing", {}, [1, 5]),
])
def test_table1_on_the_embedded_simulator(tmp_path, policy, options, expected):
    """000 Table 1 end to end: generated platform + Batsim workload on mrsched's engine."""
    import csv
    import json

    from mrsched.platforms.cluster import generate_cluster
    from mrsched.simulator.engine import simulate as engine_simulate

    (tmp_path / "platform.xml").write_text(
        generate_cluster(nodes=100, storage=1, bb_capacity=100 * TB).xml)
    jobs = [dict(id=str(j), subtime=0, walltime=110, res=n, burst_buffer=b * TB, profile="d100")
            for j, n, b in TABLE1]
    (tmp_path / "workload.json").write_text(json.dumps(
        {"nb_res": 100, "jobs": jobs, "profiles": {"d100": {"type": "delay", "delay": 100}}}))
    engine_simulate(tmp_path / "platform.xml", [tmp_path / "workload.json"],
                    make_scheduler(policy, options), export_prefix=tmp_path / "out")
    with open(tmp_path / "out_jobs.csv", newline="") as fh:
        rows = {int(r["job_id"]): r for r in csv.DictReader(fh)}
    assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in rows.values())
    first = sorted(j for j, r in rows.items() if float(r["starting_time"]) == 0.0)
    assert first == expected
    # the others start once the first batch ends (100 s plus Batsim's message latencies)
    assert all(100 <= float(r["starting_time"]) < 101 for j, r in rows.items() if j not in expected)


def random_bb_jobs(seed: int, n: int = 40) -> list[dict]:
    """A contended burst-buffer workload on 16 nodes / 16 TB (Poisson-ish arrivals)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(30.0, n)).round()
    jobs = []
    for k in range(n):
        runtime = float(rng.integers(20, 400))
        jobs.append(dict(id=k, subtime=float(t[k]), runtime=runtime,
                         walltime=float(runtime * rng.uniform(1.0, 2.0)).__round__(),
                         res=int(rng.integers(1, 9)),
                         burst_buffer=int(rng.choice([0, 0, 1, 4, 8])) * TB))
    return jobs


def run_random(policy: str, options: dict | None = None, seed: int = 0) -> dict:
    return simulate(make_scheduler(policy, options or {}),
                    begins_data(16, storage=[{"bb_capacity": 8 * TB}, {"bb_capacity": 8 * TB}]),
                    random_bb_jobs(seed))


def test_naive_plus_easy_is_exactly_easy_with_bb_reservations():
    # 000's Baseline "then EASY backfilling" is fcfs-bb: identical schedules, job for job.
    for seed in range(3):
        assert run_random("naive", seed=seed)["start"] == run_random("fcfs-bb", seed=seed)["start"]


@pytest.mark.parametrize("policy", ["bbsched", "weighted", "weighted-cpu", "weighted-bb",
                                    "constrained-cpu", "constrained-bb", "bin-packing"])
def test_every_method_runs_a_contended_workload_to_completion(policy):
    options = {"generations": "40"} if policy == "bbsched" else {}
    res = run_random(policy, options, seed=5)
    # The runtime checks every start (free nodes and burst buffer, after submission);
    # here: nothing rejected, every job ran, none before its submission.
    assert not res["rejected"] and len(res["finish"]) == 40
    jobs = {f"w0!{j['id']}": j for j in random_bb_jobs(5)}
    assert all(res["start"][k] >= jobs[k]["subtime"] for k in jobs)
    assert res["start"] == run_random(policy, options, seed=5)["start"]   # deterministic


@pytest.mark.parametrize("order, first", [("fcfs", "A"), ("wfp", "B")])
def test_base_order_decides_what_enters_the_window(order, first):
    # At t=100: A waited 100 s of a 1000 s walltime, B 100 s of 100 s: WFP puts B first.
    # (Batsim submits same-time jobs in id text order: 0R, A, B.)
    jobs = [dict(id="0R", subtime=0, runtime=100, walltime=100, res=10),
            dict(id="A", subtime=0, runtime=50, walltime=1000, res=3),
            dict(id="B", subtime=0, runtime=50, walltime=100, res=8)]
    res = simulate(make_scheduler("bbsched", {"window": "1", "base_order": order, "generations": "20"}),
                   begins_data(10), jobs)
    assert res["start"][f"w0!{first}"] == 100
    other = "B" if first == "A" else "A"
    assert res["start"][f"w0!{other}"] == 150


def test_docstring_examples_run():
    import doctest

    import mrsched.schedulers.policies.bbsched as bbsched
    import mrsched.schedulers.policies.multisched as multisched

    for module in (bbsched, multisched):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0
