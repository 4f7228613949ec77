"""The plan search on plain slice lists (``PlanProblem._evaluate_lists``) plans exactly what the
profile-object path (``PlanProblem._evaluate``) plans: same starts, allocations, scores, prefix
scores and rejections, through annealing-like walks where the accepted plan's answers are reused
(identical windows) or its scans start later (candidates that failed on nodes or space before
any reservation it held and this plan does not). Its pieces are checked against the profile's:
``_reserve_in_slices`` = ``reserve_fitted``, ``fit_in_slices``' packing-failure report, and
``swap_pair`` draws what ``Generator.choice`` draws."""

from __future__ import annotations

import numpy as np
import pytest
from test_availability_fit import coord_cluster, loaded, random_request, shares_one_byte_apart
from test_plan_fast import random_jobs

from mrsched.schedulers.optim.annealing import CoolingSchedule, swap_move, swap_pair
from mrsched.schedulers.profile.availability import AvailabilityProfile, fit_in_slices, lowest_bits
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Job, Request
from mrsched.schedulers.optim.planning import PlanProblem, _reserve_in_slices, best_plan

GB = 10**9


def problems(base, jobs, now, alpha, stride):
    fast = PlanProblem(base, jobs, now, alpha=alpha, stride=stride)
    slow = PlanProblem(base, jobs, now, alpha=alpha, stride=stride)
    assert fast.lists
    slow.lists = False                        # the profile-object path
    return fast, slow


def same_plan(a, b):
    assert (a is None) == (b is None)
    if a is not None:
        assert a.order == b.order and a.starts == b.starts and a.allocs == b.allocs
        assert a.score == b.score and a.prefix == b.prefix


@pytest.mark.parametrize("seed", range(10))
def test_list_evaluation_equals_the_profile_path_along_a_walk(seed):
    base, rng = loaded(seed, gpus=seed % 3 == 2)
    base.advance(60.0)
    walk(seed, base, random_jobs(rng, int(rng.integers(8, 20)), base.cluster.nb_nodes))


def walk(seed, base, jobs) -> int:
    """Annealing-like walk on both paths; returns how many packing failures it met."""
    rng, now = np.random.default_rng(seed), base.now
    fast, slow = problems(base, jobs, now, alpha=float(1 + seed % 3), stride=int(rng.integers(1, 5)))
    current = fast.evaluate(list(range(len(jobs))))
    other = slow.evaluate(list(range(len(jobs))))
    same_plan(current, other)
    fast.commit(current)
    slow.commit(other)
    packfails = 0
    for _ in range(60):
        order, i = swap_move(current.order, rng)
        full = PlanProblem(base, jobs, now, alpha=fast.alpha).evaluate(order)
        # a bound below, at and above the full score: the same plan or the same rejection
        bound = full.score * float(rng.choice([0.5, 1.0, 2.0])) + float(rng.integers(0, 2))
        got, other = fast.evaluate(order, i, bound), slow.evaluate(order, i, bound)
        same_plan(got, other)
        if got is not None and rng.random() < 0.8:
            same_plan(got, full)
            # the first candidate whose shares did not pack, as a scan from the start finds it
            assert got.packfail == full.packfail
            packfails += sum(t != float("inf") for t in got.packfail)
            fast.commit(got)
            slow.commit(other)
            current = got
    # some of the accepted plans' answers were reused without a scan
    assert fast.placements < slow.placements
    return packfails


def test_list_evaluation_equals_the_profile_path_where_shares_often_do_not_pack():
    """Storage nodes of about one or two shares and shares one byte apart: candidates with
    room in total whose shares do not pack are common, so the walk meets the packing-failure
    limit of the later scan starts."""
    S = GB
    packfails = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        cl = Cluster.simple(8, bb_capacity=[S, S + 1, 2 * S, 2 * S + 1, S + 2])
        base = AvailabilityProfile(cl, 0.0)
        jobs = []
        for q in range(int(rng.integers(8, 14))):
            n = int(rng.integers(1, 4))
            total = n * S + int(rng.integers(0, n)) if rng.random() < 0.8 else 0
            jobs.append(Job(f"j{q}", float(rng.integers(0, 50)),
                            Request(nodes=n, walltime=float(rng.integers(1, 30) * 10),
                                    bb_per_node=-(-total // n), bb_total=total)))
        packfails += walk(seed, base, jobs)
    assert packfails


@pytest.mark.parametrize("seed", range(4))
def test_best_plan_is_the_same_on_lists_and_on_profiles(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    cl = coord_cluster(rng, nodes=16, storages=4)
    prof = AvailabilityProfile(cl, 0.0)
    jobs = random_jobs(rng, 14, 16)
    fast = best_plan(prof, jobs, 0.0, alpha=2.0, rng=np.random.default_rng(seed),
                     schedule=CoolingSchedule(steps=10, moves=6))
    real_init = PlanProblem.__init__

    def profile_path(self, *a, **kw):
        real_init(self, *a, **kw)
        self.lists = False

    monkeypatch.setattr(PlanProblem, "__init__", profile_path)
    slow = best_plan(prof, jobs, 0.0, alpha=2.0, rng=np.random.default_rng(seed),
                     schedule=CoolingSchedule(steps=10, moves=6))
    assert fast.order == slow.order and fast.starts == slow.starts and fast.score == slow.score
    assert fast.allocs == slow.allocs


@pytest.mark.parametrize("seed", range(6))
def test_reserve_in_slices_leaves_the_slices_of_reserve_fitted(seed):
    base, rng = loaded(seed)
    prof = base.copy()
    lists = (list(base.times), list(base.nodes), list(base.bb), list(base.bbsum))
    placed = 0
    for _ in range(15):
        req = random_request(rng, base.cluster.nb_nodes, False)
        found = prof.earliest_fit(prof.fit_spec(req), float(rng.integers(0, 200)))
        if found is None:
            continue
        t, alloc = found
        prof.reserve_fitted(t, t + req.walltime, alloc)
        _reserve_in_slices(*lists, t, t + req.walltime, alloc)
        placed += 1
        assert lists == (prof.times, prof.nodes, prof.bb, prof.bbsum)
    assert placed


def _monotone_ok(prof, spec, c):
    """Whether candidate ``c`` passes every test but the packing: nodes free all along its
    window, enough burst buffer in every slice and room for the shares in the window's minimum."""
    n, elig, total, share, d = spec
    k = max(i for i, t in enumerate(prof.times) if t <= c)
    ks = [k] + [i for i in range(k + 1, len(prof)) if prof.times[i] < c + d]
    mask = elig
    for i in ks:
        mask &= prof.nodes[i]
    if mask.bit_count() < n or (total and any(prof.bbsum[i] < total for i in ks)):
        return False
    bbmin = tuple(map(min, *[prof.bb[i] for i in ks])) if len(ks) > 1 else prof.bb[ks[0]]
    return not total or prof.placer.capacity_fits(share, n, bbmin), mask, bbmin


@pytest.mark.parametrize("seed", range(10))
def test_packing_failure_report_is_the_first_candidate_whose_shares_do_not_pack(seed):
    check_packing_report(seed)


def check_packing_report(seed):
    base, rng = loaded(seed)
    reported = 0
    for _ in range(30):
        req = random_request(rng, base.cluster.nb_nodes, False)
        spec = base.fit_spec(req)
        nb = float(rng.integers(0, 200))
        pf = [float("inf")]
        found = fit_in_slices(base.times, base.nodes, base.bb, base.bbsum, spec, nb, {},
                              base.placer.capacity_fits, base._fit, pf)
        assert found == base.earliest_fit(spec, nb)
        end = found[0] if found is not None else float("inf")
        cands = [nb] + [t for t in base.times if nb < t <= end]
        first = float("inf")
        for c in cands:
            if c >= end:
                break
            ok = _monotone_ok(base, spec, c)
            if ok and ok[0]:
                n, _, total = spec[0], spec[1], spec[2]
                chosen = lowest_bits(ok[1], n)
                if base._fit(chosen, total, n, ok[2]) is None:
                    first = c
                    break
        assert pf[0] == first
        reported += first != float("inf")
    return reported


def test_packing_failure_report_on_shares_one_byte_apart():
    prof, req = shares_one_byte_apart()
    pf = [float("inf")]
    found = fit_in_slices(prof.times, prof.nodes, prof.bb, prof.bbsum, prof.fit_spec(req), 5.0, {},
                          prof.placer.capacity_fits, prof._fit, pf)
    assert found[0] == 100.0 and pf == [5.0]   # the first candidate: room in total, no packing


@pytest.mark.parametrize("seed", range(20))
def test_swap_pair_draws_what_generator_choice_draws(seed):
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    for k in range(200):
        n = (2, 3, 5, 17, 100, 4097, 20_000)[(seed + k) % 7]
        assert swap_pair(n, b) == tuple(int(x) for x in a.choice(n, size=2, replace=False))
        assert a.random() == b.random()          # the streams stay in step
    assert a.bit_generator.state == b.bit_generator.state
