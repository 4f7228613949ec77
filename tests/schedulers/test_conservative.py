"""Conservative backfilling's decisions on hand-checked cases (batsched ``conservative_bf``):
a newcomer goes to its earliest fit without moving anyone; an early completion compresses the
reservations in queue order, each job re-inserted while the later ones keep theirs."""

from __future__ import annotations

import pytest
from engine_run import begins_data, simulate

from mrsched.schedulers.registry import make_scheduler


def _jobs() -> list[dict]:
    # J0 holds the whole machine until 100 by its walltime but ends at 10. Planned before the
    # early end: J1 on nodes 0-1 at [100, 150), J2 (whole machine) at [150, 170), J3 backfilled
    # beside J1 on nodes 2-3 at [100, 130) (it does not delay J2).
    return [
        {"id": 0, "subtime": 0, "res": 4, "walltime": 100, "runtime": 10},
        {"id": 1, "subtime": 1, "res": 2, "walltime": 50, "runtime": 50},
        {"id": 2, "subtime": 2, "res": 4, "walltime": 20, "runtime": 20},
        {"id": 3, "subtime": 3, "res": 2, "walltime": 30, "runtime": 30},
    ]


def test_early_completion_compresses_in_queue_order():
    """At 10: J1 moves to now (nodes 0-1); J2 re-inserted while J3 still holds [100, 130) on
    nodes 2-3 goes to 60 (after J1's walltime); J3 then fits at once on nodes 2-3."""
    res = simulate(make_scheduler("conservative-bb", {}), begins_data(4), _jobs())
    assert res["start"] == {"w0!0": 0.0, "w0!1": 10.0, "w0!2": 60.0, "w0!3": 10.0}
    assert res["alloc"]["w0!1"] == [0, 1] and res["alloc"]["w0!3"] == [2, 3]


def test_without_early_completion_nobody_moves():
    """Same jobs run to their walltime: every job starts where it was first planned."""
    jobs = [dict(j, runtime=j["walltime"]) for j in _jobs()]
    res = simulate(make_scheduler("conservative-bb", {}), begins_data(4), jobs)
    assert res["start"] == {"w0!0": 0.0, "w0!1": 100.0, "w0!2": 150.0, "w0!3": 100.0}
    assert res["alloc"]["w0!3"] == [2, 3]


@pytest.mark.parametrize("compression", ["batsched", "rebuild"])
def test_compression_cascades_to_the_last_job(compression):
    """J4 (whole machine) is planned at [170, 180), behind J2; the early end moves J2 to [60, 80),
    which frees J4's way to 80 (J1 holds nodes 0-1 until 60, J2 then holds everything)."""
    jobs = _jobs() + [
        {"id": 4, "subtime": 4, "res": 4, "walltime": 10, "runtime": 10},
    ]
    res = simulate(make_scheduler("conservative-bb", {"compression": compression}), begins_data(4), jobs)
    assert res["start"]["w0!4"] == 80.0
    assert res["alloc"]["w0!4"] == [0, 1, 2, 3]



@pytest.mark.parametrize("policy", ["conservative-bb", "plain"])
def test_a_job_due_after_a_late_kill_keeps_its_turn(policy):
    """J0 (both nodes of a generated cluster) is killed at its walltime, 1; Batsim reports it
    at 1.0001. J1 (one node, walltime 31) was planned at [1, 32), J2 (both nodes) at [32,
    42). At 1.0001, J1 re-inserted from now would end past 32, into J2's reservation: put
    behind it, it lost its turn to J2 (found by tests/schedulers/test_fuzz_power.py). J1
    keeps its turn: J2's reservation is made again after it."""
    from conservative_reference import PlainConservative

    import mrsched
    from mrsched.platforms.cluster import generate_cluster
    jobs = [{"id": 0, "subtime": 0, "res": 2, "walltime": 1, "profile": "d1"},
            {"id": 1, "subtime": 0, "res": 1, "walltime": 31, "profile": "d1"},
            {"id": 2, "subtime": 0, "res": 2, "walltime": 10, "profile": "d1"}]
    workload = {"nb_res": 2, "jobs": jobs, "profiles": {"d1": {"type": "delay", "delay": 1}}}
    run = mrsched.simulate(generate_cluster(nodes=2, pfs=False), workload,
                           "conservative-bb" if policy == "conservative-bb" else PlainConservative)
    starts = dict(zip(run.jobs["job_id"].astype(str), run.jobs["starting_time"]))
    assert starts == {"0": 0.0, "1": 1.0001, "2": 2.0002}


@pytest.mark.parametrize("policy", ["conservative-bb", "plain"])
def test_a_plan_left_without_a_running_end_calls_for_its_first_start(policy):
    """Two nodes. J0 (walltime 20) is killed at 20, reported at 20.0001; J1 ends at 2; J2
    (both nodes, no walltime) is planned at [22, inf) behind J4 (both nodes, [20, 22)). At
    20.0001 J4 no longer fits before J2 and, J2 having no walltime, nowhere after: it leaves
    the plan, and no running job ends at 22 to start J2. The policy asks for a call at 22
    (found by tests/schedulers/test_fuzz_policies.py: the run stalled)."""
    from conservative_reference import PlainConservative

    import mrsched
    from mrsched.platforms.cluster import generate_cluster
    shapes = [(1, 20, 20), (1, -1, 2), (2, -1, 2), (1, 2, 2), (2, 2, 2)]   # nodes, walltime, run
    jobs = [{"id": k, "subtime": 0, "res": n, "walltime": w, "profile": f"d{r}"}
            for k, (n, w, r) in enumerate(shapes)]
    workload = {"nb_res": 2, "jobs": jobs, "profiles": {
        f"d{r}": {"type": "delay", "delay": r} for r in (2, 20)}}
    run = mrsched.simulate(generate_cluster(nodes=2, pfs=False), workload,
                           "conservative-bb" if policy == "conservative-bb" else PlainConservative)
    starts = dict(zip(run.jobs["job_id"].astype(str), run.jobs["starting_time"]))
    assert starts == {"0": 0.0, "1": 0.0, "3": 2.0001, "2": 22.0, "4": 24.0001}
