"""``hierarchical``: a tree of scheduler instances with their own clocks (issue #17, seed 004 Ch. 5)."""

from __future__ import annotations

import csv
import logging

import pytest

from mrsched.errors import ConfigError
from mrsched.platforms.cluster import generate_cluster
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.ensemble import generate_ensemble

from test_cost import begins, submitted


def machine(tmp_path, n: int) -> str:
    path = tmp_path / f"p{n}.xml"
    path.write_text(generate_cluster(nodes=n, pfs=False).xml)
    return str(path)


def workload(tmp_path, wl: dict, name: str = "w.json") -> str:
    path = tmp_path / name
    write_workload(path, wl)
    return str(path)


def run(platform, wl, tmp_path, policy, options):
    sched = make_scheduler(policy, options)
    result = simulate(platform, [wl], sched, export_prefix=str(tmp_path / "out"))
    with open(tmp_path / "out_jobs.csv") as f:
        rows = {r["job_id"]: r for r in csv.DictReader(f)}
    return sched, result, rows


def starts(rows) -> list[float]:
    return sorted(float(r["starting_time"]) for r in rows.values())


def ids_of(text: str) -> set[int]:
    out = set()
    for part in text.split():
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.fixture
def ten(tmp_path):
    return machine(tmp_path, 10), workload(tmp_path, generate_ensemble(jobs=10, nb_res=10))


# -- the tests ----------------------------------------------------------------------
def test_depth2_two_children_of_five_cores_finish_at_five(ten, tmp_path):
    sched, result, rows = run(*ten, tmp_path, "hierarchical",
                              {"depth": 2, "branching": 2, "decision_cost": "per_job=1"})
    assert result.makespan == pytest.approx(5.0, abs=1e-2)
    assert [(i.path, i.lo, i.hi) for i in sched.policy.instances()] == [("0", 0, 10), ("0.0", 0, 5), ("0.1", 5, 10)]
    # each child starts one job a second, in parallel
    assert starts(rows) == pytest.approx([1, 1, 2, 2, 3, 3, 4, 4, 5, 5], abs=1e-2)


def test_depth1_is_the_centralized_costed_fcfs(ten, tmp_path):
    _, central, rows_c = run(*ten, tmp_path, "fcfs", {"decision_cost": "per_job=1"})
    _, depth1, rows_h = run(*ten, tmp_path, "hierarchical", {"depth": 1, "decision_cost": "per_job=1"})
    assert depth1.makespan == pytest.approx(central.makespan, abs=1e-3) == pytest.approx(10.0, abs=1e-3)
    assert starts(rows_h) == pytest.approx(starts(rows_c), abs=1e-3)


def test_free_hierarchy_starts_everything_at_once(ten, tmp_path):
    _, result, _ = run(*ten, tmp_path, "hierarchical", {"depth": 3, "branching": "2,5"})
    assert result.makespan < 0.01


def test_costs_never_take_effect_before_the_submission(tmp_path):
    wl = generate_ensemble(jobs=12, runtime="1-5", nb_res=6, seed=3)
    for k, job in enumerate(wl["jobs"]):
        job["subtime"] = 2.0 * k
    sched, result, rows = run(machine(tmp_path, 6), workload(tmp_path, wl), tmp_path, "hierarchical",
                              {"depth": 2, "branching": 3, "decision_cost": "per_event=0.5,per_job=0.25"})
    for r in rows.values():
        # ingest (0.5 s) and decide (0.25 s) at least, after the job arrived
        assert float(r["starting_time"]) >= float(r["submission_time"]) + 0.75 - 1e-6, r["job_id"]


def test_distribution_cost_serialises_the_parent(ten, tmp_path):
    _, _, rows = run(*ten, tmp_path, "hierarchical", {"depth": 2, "branching": 5, "distribution_cost": 1.0})
    # the root hands job k down at k s; leaves decide for free
    assert starts(rows) == pytest.approx(list(range(1, 11)), abs=1e-2)


def test_launch_cost_delays_the_children(ten, tmp_path):
    sched, result, rows = run(*ten, tmp_path, "hierarchical", {"depth": 2, "branching": 2, "launch_cost": 3.0})
    # the root launches child 0 (ready at 3 s) then child 1 (6 s), and only then hands jobs down
    assert [i.ready for i in sched.policy.instances()] == [0.0, 3.0, 6.0]
    assert starts(rows) == pytest.approx([6.0] * 10, abs=1e-2)


# -- invariants ------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [
    {"depth": 1},
    {"depth": 2, "branching": 3, "decision_cost": "per_job=0.5"},
    {"depth": 3, "branching": "2,2", "decision_cost": "per_event=0.1,per_start=0.3", "distribution": "weighted"},
    {"depth": 3, "branching": "3,2", "leaf_policy": "conservative-bb", "distribution_cost": 0.05},
    {"depth": 2, "branching": 2, "leaf_policy": "fcfs-easy", "decision_cost": "measured", "decision_scale": 100.0},
])
def test_grants_respected_and_every_job_decided_once_at_every_depth(tmp_path, options):
    wl = generate_ensemble(jobs=120, cores="1-4", runtime="0-30", nb_res=12, seed=7)
    wl["jobs"][5]["res"] = 5      # wider than some leaves: refused with a reason when it reaches them
    sched, result, rows = run(machine(tmp_path, 12), workload(tmp_path, wl), tmp_path, "hierarchical", options)
    assert len(rows) == 120
    policy = sched.policy
    leaves = {i.path: i for i in policy.instances() if i.leaf}
    started = {j: r for j, r in rows.items() if r["final_state"] != "REJECTED"}
    assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in started.values())
    assert {f"w0!{j}" for j in started} == set(policy.placed_)
    for job_id, row in started.items():
        leaf = leaves[policy.placed_[f"w0!{job_id}"]]
        assert ids_of(row["allocated_resources"]) <= set(range(leaf.lo, leaf.hi)), job_id
    depth_of = {}
    for inst in policy.instances():
        depth_of.setdefault(inst.path.count("."), []).append(inst)
        if inst.leaf:
            assert inst.received == inst.started + inst.rejected, inst.path
        else:
            assert inst.received == inst.handed + inst.rejected, inst.path
            assert inst.handed == sum(c.received for c in inst.children), inst.path
    # every job is received once at every depth it reaches, and decided exactly once
    assert sum(i.received for i in depth_of[0]) == 120
    assert sum(i.started for i in policy.instances()) == len(started)
    assert sum(i.rejected for i in policy.instances()) == 120 - len(started)


def test_job_wider_than_the_leaves_is_refused_with_a_reason(caplog):
    sched = make_scheduler("hierarchical", {"depth": 2, "branching": 2})
    sched.handle_message(begins(10))
    with caplog.at_level(logging.INFO, logger="mrsched.schedulers.execution.runtime"):
        reply = sched.handle_message(submitted([1], 0.0, res=6))
    reason = ("asks 6 resources, more than the leaf partitions below instance 0 can hold "
              "(seed 004 Sect. 5.3.1: every leaf a job may reach must fit it)")
    # the reason travels as the job's metadata (out_jobs.csv), then the rejection
    assert reply["events"] == [
        {"timestamp": 0.0, "type": "SET_JOB_METADATA", "data": {"job_id": "w!1", "metadata": f"rejected: {reason}"}},
        {"timestamp": 0.0, "type": "REJECT_JOB", "data": {"job_id": "w!1"}}]
    assert f"rejecting job w!1: {reason}" in caplog.text


def test_held_work_is_never_asked_for_closer_than_the_minimum_wakeup_delay():
    """Regression: Batsim's clock may be microseconds past the message's `now` when it reads
    the reply; a wake-up asked 0.5 ms ahead aborted a campaign run (asked in Batsim's past)."""
    sched = make_scheduler("hierarchical", {"depth": 2, "branching": 1, "decision_cost": "per_job=0.0005"})
    sched.handle_message(begins(1))
    reply = sched.handle_message(submitted([1, 2], 0.0))
    wake = [e for e in reply["events"] if e["type"] == "CALL_ME_LATER"]
    assert [e["data"]["timestamp"] for e in wake] == [0.001]      # the start is due at 0.0005
    reply = sched.handle_message({"now": 0.001, "events": [{"timestamp": 0.001, "type": "REQUESTED_CALL", "data": {}}]})
    assert [e["type"] for e in reply["events"]] == ["EXECUTE_JOB"]


def test_weighted_distribution_balances_cores_times_walltime():
    sched = make_scheduler("hierarchical", {"depth": 2, "branching": 2, "distribution": "weighted"})
    sched.handle_message(begins(4))
    msg = submitted([1, 2, 3, 4], 0.0)
    walltimes = [100, 10, 10, 10]
    for ev, wt in zip(msg["events"], walltimes):
        ev["data"]["job"]["walltime"] = wt
    sched.handle_message(msg)
    # the long job alone on one child, the three short ones on the other
    assert sched.policy.placed_ == {"w!1": "0.0", "w!2": "0.1", "w!3": "0.1"}   # w!4 waits on child 0.1


# -- shapes and specialisation -----------------------------------------------------------------
def test_explicit_shape_with_sizes_and_policies_per_child(tmp_path):
    shape = tmp_path / "shape.yaml"
    shape.write_text("children:\n"
                     "  - {policy: fcfs, size: 6}\n"
                     "  - policy: conservative-bb\n"
                     "  - children: [{policy: filler}, {policy: fcfs-easy, options: {order: sjf}}]\n")
    sched = make_scheduler("hierarchical", {"shape": str(shape)})
    sched.handle_message(begins(10))
    got = [(i.path, i.lo, i.hi, i.runtime.policy.policy_name() if i.leaf else None)
           for i in sched.policy.instances()]
    assert got == [("0", 0, 10, None), ("0.0", 0, 6, "fcfs"), ("0.1", 6, 8, "conservative-bb"),
                   ("0.2", 8, 10, None), ("0.2.0", 8, 9, "filler"), ("0.2.1", 9, 10, "fcfs-easy")]
    assert sched.policy.instances()[-1].runtime.policy.order == "sjf"


@pytest.mark.parametrize("options,message", [
    ({"depth": 3, "branching": "2,2,2"},
     "policy 'hierarchical': option 'branching' gives 3 levels, depth 3 needs 2"),
    ({"branching": "two"}, "policy 'hierarchical': option 'branching' must be whole numbers >= 1, got 'two'"),
    ({"shape": '{"children": [{"policy": "fcfs", "cores": 2}]}'},
     "policy 'hierarchical': shape node 0.0 has unknown key 'cores' (policy, options, size, children, "
     "bb, bandwidth, power)"),
    ({"shape": '{"children": [{"policy": "hierarchical"}]}'},
     "policy 'hierarchical': instance 0.0 cannot itself be 'hierarchical' (nest children in the shape instead)"),
    ({"shape": '{"children": [{"policy": "nope"}]}'}, "policy 'hierarchical': shape node 0.0: unknown policy 'nope'"),
    ({"period": "60"}, "policy 'hierarchical': option 'period' must be 0 (every instance keeps its own clock)"),
    ({"leaf_policy": "nan"}, "policy 'hierarchical': option 'leaf_policy': unknown policy 'nan'"),
    # a tree too large to build is refused before any instance is made (it once ate 22 GB)
    ({"depth": "17"}, "policy 'hierarchical': depth 17 and branching '2' make more than 65,536 instances"),
    ({"depth": "9" * 40}, f"policy 'hierarchical': depth {'9' * 40} makes more than 65,536 instances"),
    ({"depth": 3, "branching": "9" * 40},
     f"policy 'hierarchical': depth 3 and branching '{'9' * 40}' make more than 65,536 instances"),
    ({"decision_cost": "cheap"},
     "option 'decision_cost': 'cheap' is not none, measured or per_event=S / per_job=S / per_start=S"),
])
def test_bad_specs_are_one_line_errors(options, message):
    with pytest.raises(ConfigError) as exc:
        make_scheduler("hierarchical", options)
    assert exc.value.message == message or (exc.value.message.startswith(message)
                                            and exc.value.message[len(message):].startswith(" (valid:"))
    assert exc.value.field in options


def test_grant_too_small_for_the_children_is_refused():
    sched = make_scheduler("hierarchical", {"depth": 2, "branching": 4})
    with pytest.raises(ConfigError, match="instance 0 holds 3 resources, too few for its 4 children"):
        sched.handle_message(begins(3))
