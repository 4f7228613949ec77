"""Plan-based scheduling (seed 001 Sect. 3.3, Alg. 2): plan evaluation, search, policy decisions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from engine_run import begins_data, simulate

from mrsched.errors import ConfigError
from mrsched.schedulers.optim.annealing import CoolingSchedule, anneal
from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Job, Request
from mrsched.schedulers.optim.planning import PlanProblem, SearchStats, best_plan, initial_orders
from mrsched.schedulers.registry import make_policy, make_scheduler, policy_parameters

GB = 10**9


def job(jid: str, nodes: int, walltime: float, subtime: float = 0.0, bb_per_node: int = 0) -> Job:
    return Job(jid, subtime, Request(nodes=nodes, walltime=walltime, bb_per_node=bb_per_node,
                                     bb_total=bb_per_node * nodes))


def random_jobs(n: int, seed: int, nodes: int = 8) -> list[Job]:
    rng = np.random.default_rng(seed)
    return [job(f"j{k}", int(rng.integers(1, nodes + 1)), float(rng.integers(1, 50) * 10),
                subtime=float(rng.integers(0, 100)), bb_per_node=int(rng.integers(0, 4)) * GB)
            for k in range(n)]


def test_exhaustive_search_finds_the_optimum_small_jobs_first():
    cl = Cluster.simple(2)
    jobs = [job("A", 2, 100), job("B", 1, 10), job("C", 1, 10)]
    plan = best_plan(AvailabilityProfile(cl), jobs, 0.0, alpha=1, rng=np.random.default_rng(0))
    starts = {jobs[i].id: plan.starts[p] for p, i in enumerate(plan.order)}
    assert starts == {"A": 10.0, "B": 0.0, "C": 0.0}     # FCFS would give 0 + 100 + 100
    assert plan.score == 10.0


def test_exhaustive_search_agrees_with_brute_force_over_every_permutation():
    cl = Cluster.simple(6, bb_capacity=[5 * GB, 5 * GB])
    jobs = random_jobs(5, seed=3, nodes=6)
    now = 100.0
    prof = AvailabilityProfile(cl, now)
    scores = []
    for perm in itertools.permutations(range(5)):
        scores.append(PlanProblem(prof, jobs, now, alpha=2).evaluate(list(perm)).score)
    stats = SearchStats()
    plan = best_plan(prof, jobs, now, alpha=2, rng=np.random.default_rng(0), stats=stats)
    assert stats.method == "exhaustive" and stats.evaluations <= 120     # branch and bound
    assert plan.score == min(scores)
    assert len(prof) == 1          # the round's profile is untouched by the search


def test_plan_respects_burst_buffer_capacity():
    cl = Cluster.simple(4, bb_capacity=[10 * GB])
    jobs = [job("A", 1, 100, bb_per_node=8 * GB), job("B", 1, 10, bb_per_node=8 * GB)]
    plan = PlanProblem(AvailabilityProfile(cl), jobs, 0.0, alpha=1).evaluate([0, 1])
    assert plan.starts == [0.0, 100.0]       # nodes are free, burst buffer is not


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_incremental_evaluation_equals_full_replay(seed):
    cl = Cluster.simple(8, bb_capacity=[6 * GB, 6 * GB])
    jobs = random_jobs(17, seed)
    prof = AvailabilityProfile(cl, 100.0)
    problem = PlanProblem(prof, jobs, 100.0, alpha=2, stride=3)
    fresh = PlanProblem(prof, jobs, 100.0, alpha=2)
    rng = np.random.default_rng(seed)
    current = problem.evaluate(list(range(17)))
    problem.commit(current)
    incremental = 0
    for _ in range(40):
        order = list(current.order)
        i, j = sorted(rng.choice(17, size=2, replace=False))
        order[i], order[j] = order[j], order[i]
        before = problem.placements
        cand = problem.evaluate(order, int(i))
        incremental += problem.placements - before
        full = fresh.evaluate(order)
        assert cand.starts == full.starts and cand.score == pytest.approx(full.score, rel=1e-12)
        # a bound cuts the evaluation exactly when the score would not be below it
        assert problem.evaluate(order, int(i), bound=full.score) is None
        assert problem.evaluate(order, int(i), bound=full.score * 1.0001 + 1).score == cand.score
        if rng.random() < 0.5:
            problem.commit(cand)
            current = cand
    assert incremental < fresh.placements      # the prefix was reused


def test_initial_orders_are_the_nine_candidates():
    jobs = [job("a", 3, 10, bb_per_node=1), job("b", 1, 30, bb_per_node=9), job("c", 2, 20, bb_per_node=4)]
    orders = initial_orders(jobs)
    assert len(orders) == 9
    assert orders[0] == [0, 1, 2]                   # FCFS
    assert orders[1] == [1, 2, 0] and orders[2] == [0, 2, 1]     # nodes asc / desc
    assert orders[3] == [0, 2, 1] and orders[4] == [1, 2, 0]     # bb per processor asc / desc
    assert orders[7] == [0, 2, 1] and orders[8] == [1, 2, 0]     # walltime asc / desc


def test_annealing_is_seeded_bounded_and_never_worse_than_the_best_initial_order():
    cl = Cluster.simple(8, bb_capacity=[6 * GB, 6 * GB])
    jobs = random_jobs(14, seed=7)
    prof = AvailabilityProfile(cl, 100.0)
    results = []
    for _ in range(2):
        stats = SearchStats()
        plan = best_plan(prof, jobs, 100.0, alpha=2, rng=np.random.default_rng(42), stats=stats)
        results.append((plan.order, plan.score, stats.evaluations))
    assert results[0] == results[1]
    assert stats.method == "annealing"
    assert stats.evaluations == 9 + 30 * 6
    assert plan.score <= stats.initial_best


def test_annealing_skipped_when_all_initial_orders_score_the_same():
    cl = Cluster.simple(16)
    jobs = [job(f"j{k}", 1, 10.0 * (k + 1)) for k in range(8)]     # all fit at once: score 0
    stats = SearchStats()
    plan = best_plan(AvailabilityProfile(cl), jobs, 0.0, alpha=2, rng=np.random.default_rng(0), stats=stats)
    assert stats.method == "initial" and stats.evaluations == 9 and plan.score == 0


def test_annealing_optimiser_accepts_worse_moves_only_by_temperature():
    class Toy:
        """Score = number of positions out of place; committed state is irrelevant here."""
        def evaluate(self, order, first_changed=0, bound=float("inf")):
            score = float(sum(i != v for i, v in enumerate(order)))
            return type("C", (), {"order": order, "score": score})() if score < bound else None

        def commit(self, cand):
            pass

    start = Toy().evaluate([3, 2, 1, 0, 5, 4])
    cold = anneal(Toy(), start, 0.0, np.random.default_rng(0), CoolingSchedule(steps=50, moves=6, t_min=0.0))
    assert cold.best.score < start.score          # improving swaps exist and are always taken
    assert cold.evaluations == 300
    # at T = 0 nothing worse is accepted: every accepted move improved, so accepted <= 6 here
    assert cold.accepted <= start.score


def test_alpha_changes_the_decision():
    # 1 node; A runs 0..100; X (submitted 1, walltime 50) and Y (submitted 99, walltime 40) wait.
    # At 100: alpha 1 prefers Y first (1 + 140 < 100 + 51); alpha 2 prefers X (100^2 + 51^2 < 1 + 140^2).
    jobs = [dict(id="A", subtime=0, runtime=100, walltime=100, res=1),
            dict(id="X", subtime=1, runtime=50, walltime=50, res=1),
            dict(id="Y", subtime=99, runtime=40, walltime=40, res=1)]
    starts = {}
    for name in ("plan-1", "plan-2", "plan-3"):
        res = simulate(make_scheduler(name), begins_data(1), jobs)
        starts[name] = {k.split("!")[1]: v for k, v in res["start"].items()}
    assert starts["plan-1"] == {"A": 0, "Y": 100, "X": 140}
    assert starts["plan-2"] == {"A": 0, "X": 100, "Y": 150}
    assert starts["plan-3"] == starts["plan-2"]


def _random_workload(seed: int, n: int = 30) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    t = 0.0
    for k in range(n):
        t += float(rng.exponential(20))
        run = float(rng.integers(10, 400))
        out.append(dict(id=k, subtime=round(t), runtime=run, walltime=run * 1.5, res=int(rng.integers(1, 9)),
                        burst_buffer=int(rng.integers(0, 8)) * GB))
    return out


def test_same_seed_same_decisions_on_a_loaded_machine():
    jobs = _random_workload(11)
    begins = begins_data(8, storage=[{"bb_capacity": 10 * GB}])
    runs = []
    for _ in range(2):
        sched = make_scheduler("plan-2", {"seed": "5"})
        res = simulate(sched, begins, jobs)
        runs.append((res["start"], res["alloc"]))
    assert runs[0] == runs[1]
    assert not res["rejected"] and len(runs[0][0]) == len(jobs)
    # the queue grew past the exhaustive limit, so annealing ran (and smaller queues were exhaustive)
    assert sched.policy.methods_.get("annealing", 0) > 0 and sched.policy.methods_.get("exhaustive", 0) > 0


def test_plan_beats_fcfs_on_mean_wait_on_a_loaded_machine():
    jobs = _random_workload(12)
    begins = begins_data(8, storage=[{"bb_capacity": 10 * GB}])
    subs = {f"w0!{j['id']}": j["subtime"] for j in jobs}
    mean = {}
    for name in ("fcfs", "plan-1"):
        res = simulate(make_scheduler(name), begins, jobs)
        mean[name] = sum(res["start"][k] - subs[k] for k in subs) / len(subs)
    assert mean["plan-1"] < mean["fcfs"]


def test_registry_names_and_knobs():
    assert policy_parameters("plan-1")["alpha"] == 1.0
    assert policy_parameters("plan-3")["alpha"] == 3.0
    p = make_policy("plan", alpha=3, seed=4)
    assert p.get_params()["alpha"] == 3 and p.get_params()["seed"] == 4
    with pytest.raises(ConfigError, match="alpha"):
        make_policy("plan", alpha=-1.0)
    with pytest.raises(ConfigError, match="did you mean 'seed'"):
        make_policy("plan-2", sed=3)
    sched = make_scheduler("plan", {"alpha": "1", "steps": "10"})
    assert sched.policy.alpha == 1.0 and sched.policy.steps == 10



# -- speed-ups of the plan search must not change any result (issue 4) -------------------------

def _loaded_profile(seed: int, nodes: int = 12, storages: int = 3) -> tuple[AvailabilityProfile, list[Job]]:
    """A profile with running jobs' windows (random nodes / burst buffer) and a random queue."""
    rng = np.random.default_rng(seed)
    cl = Cluster.simple(nodes, bb_capacity=[int(rng.integers(4, 12)) * GB for _ in range(storages)])
    prof = AvailabilityProfile(cl, 50.0)
    for k in range(int(rng.integers(2, 8))):
        req = Request(nodes=int(rng.integers(1, nodes // 2)), walltime=float(rng.integers(1, 60) * 10),
                      bb_per_node=int(rng.integers(0, 3)) * GB)
        req = Request(nodes=req.nodes, walltime=req.walltime, bb_per_node=req.bb_per_node,
                      bb_total=req.bb_per_node * req.nodes)
        found = prof.earliest_start(req, req.walltime, 50.0 + float(rng.integers(0, 200)))
        if found is not None:
            prof.reserve(found[0], found[0] + req.walltime, found[1], tag=f"r{k}")
    return prof, random_jobs(int(rng.integers(6, 16)), seed + 1000, nodes=nodes)


@pytest.mark.parametrize("seed", range(6))
def test_reserve_fitted_leaves_the_profile_exactly_as_reserve(seed):
    prof, jobs = _loaded_profile(seed)
    a, b = prof.copy(), prof.copy()
    for jb in jobs:
        req = jb.request
        found = a.earliest_start(req, req.walltime, 50.0)
        assert found == b.earliest_start(req, req.walltime, 50.0)
        if found is None:
            continue
        t, alloc = found
        a.reserve(t, t + req.walltime, alloc, tag=jb.id)
        b.reserve_fitted(t, t + req.walltime, alloc)
        # every attribute (slices, prefix cache, version, release log) is the same
        assert vars(a) == vars(b)
    assert len(a) > len(prof)      # the reservations did split slices


@pytest.mark.parametrize("seed", range(6))
def test_memoised_burst_buffer_placement_equals_a_fresh_one(seed):
    prof, jobs = _loaded_profile(seed, nodes=10, storages=4)
    warm = prof.copy()
    asked = 0
    for _ in range(3):                        # the same questions again: answered from the memo
        for jb in jobs:
            req = jb.request
            for not_before in (50.0, 120.0, 400.0):
                fresh = prof.copy()
                fresh._place_memo = {}        # an empty memo: computed by the placer
                got, want = warm.earliest_start(req, req.walltime, not_before), \
                    fresh.earliest_start(req, req.walltime, not_before)
                asked += 1
                assert got == want            # start, nodes, bytes per storage, placement
    memo = warm._place_memo
    assert memo is prof._place_memo           # shared by the copies of one profile
    assert 0 < len(memo) < asked


def test_a_copy_keeps_a_valid_prefix_cache():
    prof, jobs = _loaded_profile(3)
    prof.earliest_start(jobs[0].request, 1e6, 50.0)          # fills the prefix cache far ahead
    assert prof._pre
    clone = prof.copy()
    bare = prof.copy()
    bare._pre = []
    assert [clone._prefix(k) for k in range(len(prof))] == [bare._prefix(k) for k in range(len(prof))]


@pytest.mark.parametrize("seed", range(8))
def test_reused_prefix_and_tail_give_the_plans_of_a_full_replay(seed, monkeypatch):
    """Annealing-like walk: each swap is evaluated incrementally (accepted plan's placements
    before the first change, and after the last change when the swapped segment reserved the
    same windows) and compared with a from-scratch evaluation of the same order."""
    tails = []
    reuse_tail = PlanProblem._reuse_tail
    monkeypatch.setattr(PlanProblem, "_reuse_tail", lambda self, *a: tails.append(a[1]) or reuse_tail(self, *a))
    prof, jobs = _loaded_profile(seed, nodes=16)
    n = len(jobs)
    problem = PlanProblem(prof, jobs, 50.0, alpha=2, stride=2)
    fresh = PlanProblem(prof, jobs, 50.0, alpha=2)
    rng = np.random.default_rng(seed)
    current = problem.evaluate(list(range(n)))
    problem.commit(current)
    for _ in range(60):
        order = list(current.order)
        i, j = sorted(int(x) for x in rng.choice(n, size=2, replace=False))
        order[i], order[j] = order[j], order[i]
        cand = problem.evaluate(order, i)
        full = fresh.evaluate(order)
        assert cand.starts == full.starts and cand.allocs == full.allocs
        assert cand.score == full.score and cand.prefix == full.prefix
        # its snapshots are the profiles a full replay passes through
        for p, snap in cand.snapshots.items():
            ref = fresh.base.copy()
            for q in range(p):
                if full.allocs[q] is not None:
                    w = jobs[order[q]].request.walltime
                    ref.reserve(full.starts[q], full.starts[q] + w, full.allocs[q])
            # a profile, or the (times, nodes, bb, bbsum) lists of PlanProblem._evaluate_lists
            got = (snap.times, snap.nodes, snap.bb, snap.bbsum) if isinstance(snap, AvailabilityProfile) else snap
            assert tuple(got) == (ref.times, ref.nodes, ref.bb, ref.bbsum)
        if rng.random() < 0.7:
            problem.commit(cand)
            current = cand
    assert problem.placements < fresh.placements
    assert tails                               # the reused tail was exercised


@pytest.mark.parametrize("seed", range(4))
def test_an_order_met_again_gets_the_answer_of_a_fresh_evaluation(seed):
    """The round's memo of evaluated orders (the full score, or the partial score that stopped
    a rejected one) answers exactly as evaluating again: same plan, same None for a bound."""
    prof, jobs = _loaded_profile(seed + 20, nodes=10)
    n = len(jobs)
    problem = PlanProblem(prof, jobs, 50.0, alpha=1)
    rng = np.random.default_rng(seed)
    orders = [list(rng.permutation(n)) for _ in range(4)]
    scores = [PlanProblem(prof, jobs, 50.0, alpha=1).evaluate(o).score for o in orders]
    answered = fresh_placements = 0
    for _ in range(80):
        k = int(rng.integers(len(orders)))
        bound = scores[k] * float(rng.choice([0.3, 0.9, 1.0, 1.1, 3.0])) + float(rng.integers(0, 2))
        got = problem.evaluate(orders[k], 0, bound)
        fresh = PlanProblem(prof, jobs, 50.0, alpha=1)
        want = fresh.evaluate(orders[k], 0, bound)
        fresh_placements += fresh.placements
        assert (got is None) == (want is None)
        if got is not None:
            assert got.starts == want.starts and got.allocs == want.allocs and got.score == want.score
        answered += 1
    assert problem.evaluations == answered and problem.placements < fresh_placements


def test_a_plan_placing_no_job_is_accepted_even_at_a_zero_bound():
    # nothing ever fits (a job larger than the machine): no partial score is ever checked
    cl = Cluster.simple(2)
    jobs = [job("big", 4, 10), job("huge", 3, 10)]
    problem = PlanProblem(AvailabilityProfile(cl), jobs, 0.0, alpha=2)
    for _ in range(2):                        # the second answer comes from the memo
        plan = problem.evaluate([0, 1], 0, bound=0.0)
        assert plan is not None and plan.score == 0 and plan.allocs == [None, None]
