"""The plan-based search's fast paths give exactly the answers of the general ones:
``AvailabilityProfile.earliest_fit`` = ``earliest_start``, the run-wise burst-buffer placement =
``BurstBufferPlacer.place``, ``lowest_bits`` = the n lowest set bits, ``reserve_fitted`` =
``reserve``. Random loaded profiles on machines with Dragonfly-like coordinates, GPUs and tight
burst buffer, so that every branch (nodes short, burst buffer short in total, shares that do not
pack) is met."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.schedulers.profile.availability import AvailabilityProfile, lowest_bits
from mrsched.schedulers.model.cluster import Cluster, StorageNode
from mrsched.schedulers.model.job import Request
from mrsched.schedulers.profile.placement import BurstBufferPlacer, split_shares

GB = 10**9


def coord_cluster(rng: np.random.Generator, nodes: int = 24, storages: int = 6, gpus: bool = False) -> Cluster:
    """Nodes in chassis of 4, groups of 2 chassis; storage nodes spread over the chassis."""
    chassis = tuple(k // 4 for k in range(nodes))
    group = tuple(c // 2 for c in chassis)
    nb_chassis = chassis[-1] + 1
    storage = tuple(StorageNode(id=nodes + s, name=f"bb{s}", capacity=int(rng.integers(2, 9)) * GB,
                                group=(s % nb_chassis) // 2, chassis=s % nb_chassis) for s in range(storages))
    g = tuple(int(x) for x in rng.integers(0, 3, nodes)) if gpus else ()
    return Cluster(compute_ids=tuple(range(nodes)), compute_names=tuple(f"n{k}" for k in range(nodes)),
                   storage=storage, gpus=g, group=group, chassis=chassis,
                   storage_ids=tuple(s.id for s in storage))


def random_request(rng: np.random.Generator, nodes: int, gpus: bool) -> Request:
    n = int(rng.integers(1, nodes + 1))
    # shares up to most of a storage node: the free space fragments (room in total, not per node)
    bb = n * int(rng.integers(1, 3 * GB)) + int(rng.integers(0, n)) if rng.random() < 0.8 else 0
    return Request(nodes=n, walltime=float(rng.integers(1, 60) * 10), bb_per_node=-(-bb // n), bb_total=bb,
                   gpus_per_node=int(rng.integers(0, 3)) if gpus and rng.random() < 0.3 else 0)


def loaded(seed: int, gpus: bool = False) -> tuple[AvailabilityProfile, np.random.Generator]:
    rng = np.random.default_rng(seed)
    cl = coord_cluster(rng, gpus=gpus)
    prof = AvailabilityProfile(cl, 0.0)
    for _ in range(int(rng.integers(5, 25))):
        req = random_request(rng, cl.nb_nodes, gpus)
        found = prof.earliest_start(req, req.walltime, float(rng.integers(0, 300)))
        if found is not None:
            prof.reserve(found[0], found[0] + req.walltime, found[1])
    return prof, rng


@pytest.mark.parametrize("seed", range(12))
def test_earliest_fit_finds_the_start_and_allocation_of_earliest_start(seed):
    prof, rng = loaded(seed, gpus=seed % 3 == 0)
    work = prof.copy()
    asked = 0
    for _ in range(60):
        req = random_request(rng, prof.cluster.nb_nodes, seed % 3 == 0)
        not_before = float(rng.integers(0, 500))
        spec = work.fit_spec(req, req.walltime)
        assert spec is not None
        got = work.earliest_fit(spec, not_before)
        fresh = work.copy()
        fresh._place_memo = {}
        want = fresh.earliest_start(req, req.walltime, not_before)
        assert (got is None) == (want is None)
        if got is not None:
            assert got[0] == want[0] and fresh.allocation(got[1]) == want[1]
            assert (got[1].nodes, got[1].bb) == (want[1].nodes, want[1].bb)   # what the search reserves
        if got is not None and rng.random() < 0.5:   # the profile fills up: later asks get harder
            work.reserve_fitted(got[0], got[0] + req.walltime, got[1])
        asked += 1
    assert asked == 60


def test_earliest_fit_answers_again_from_its_memo_with_the_same_allocation():
    prof, rng = loaded(5)
    req = Request(nodes=3, walltime=100.0, bb_per_node=GB, bb_total=3 * GB)
    spec = prof.fit_spec(req)
    first = prof.earliest_fit(spec, 0.0)
    again = prof.copy().earliest_fit(spec, 0.0)
    want = prof.earliest_start(req, 100.0, 0.0)
    assert first[0] == want[0] and prof.allocation(first[1]) == want[1]
    assert again[1] is first[1]               # shared by the profile's copies


def test_fit_spec_leaves_counters_and_machines_without_burst_buffer_to_earliest_start():
    cl = Cluster.simple(4, counters={"licences": 2.0})
    prof = AvailabilityProfile(cl)
    assert prof.fit_spec(Request(nodes=1, walltime=10.0, counters=(("licences", 1.0),))) is None
    assert prof.fit_spec(Request(nodes=1, walltime=10.0)) == (1, 0b1111, 0, 0, 10.0)
    nobb = AvailabilityProfile(Cluster.simple(4))
    assert nobb.fit_spec(Request(nodes=1, walltime=10.0, bb_per_node=GB, bb_total=GB)) is None
    assert nobb.earliest_start(Request(nodes=1, walltime=10.0, bb_per_node=GB, bb_total=GB)) is None


@pytest.mark.parametrize("seed", range(8))
def test_run_wise_placement_equals_the_placer(seed):
    rng = np.random.default_rng(seed)
    cl = coord_cluster(rng, nodes=32, storages=8)
    placer = BurstBufferPlacer(cl)
    packed = failed = 0
    for _ in range(300):
        n = int(rng.integers(1, 33))
        nodes = sorted(int(k) for k in rng.choice(32, size=n, replace=False))
        total = int(rng.integers(0, 3 * n)) if rng.random() < 0.2 else int(rng.integers(1, 6 * GB))
        free = tuple(int(rng.integers(0, 3 * GB)) for _ in range(8))
        want = placer.place(nodes, split_shares(total, n), free)
        got = placer.place_split(nodes, total, n, free)
        assert got == want
        if want is not None:
            assert list(got) == list(want)     # same insertion order (the storage mapping's)
            packed += 1
        else:
            failed += 1
    assert packed and failed


@pytest.mark.parametrize("seed", range(4))
def test_lowest_bits_keeps_the_n_lowest_set_bits(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        mask = int(rng.integers(0, 2**62)) | (int(rng.integers(0, 2**40)) << 62)
        ones = [k for k in range(mask.bit_length()) if mask >> k & 1]
        n = int(rng.integers(0, len(ones) + 1))
        assert lowest_bits(mask, n) == sum(1 << k for k in ones[:n])


@pytest.mark.parametrize("seed", range(6))
def test_reserve_fitted_leaves_the_profile_exactly_as_reserve_with_coordinates(seed):
    prof, rng = loaded(seed)
    a, b = prof.copy(), prof.copy()
    done = 0
    for _ in range(15):
        req = random_request(rng, prof.cluster.nb_nodes, False)
        found = b.earliest_fit(b.fit_spec(req), 30.0)
        if found is None:
            continue
        t, alloc = found
        a.reserve(t, t + req.walltime, alloc)
        b.reserve_fitted(t, t + req.walltime, alloc)
        assert (a.times, a.nodes, a.bb, a.bbsum, a.cnt, a._pre) == (b.times, b.nodes, b.bb, b.bbsum, b.cnt, b._pre)
        done += 1
    assert done


def shares_one_byte_apart() -> tuple[AvailabilityProfile, Request]:
    """A profile with 2S + 1 bytes free until t=100 (3S + 1 after) and a request whose shares
    are S+1 and S: enough in total, the smallest share fits twice, but they do not pack."""
    S = GB
    cl = Cluster.simple(4, bb_capacity=[3 * S, 1])
    prof = AvailabilityProfile(cl)
    first = prof.earliest_start(Request(nodes=1, walltime=100.0, bb_per_node=S, bb_total=S))
    prof.reserve(0.0, 100.0, first[1])
    return prof, Request(nodes=2, walltime=10.0, bb_per_node=S + 1, bb_total=2 * S + 1)


def test_shares_one_byte_apart_that_do_not_pack_move_the_start_later():
    prof, req = shares_one_byte_apart()
    # not before the release
    want = prof.earliest_start(req, 10.0, 0.0)
    assert want is not None and want[0] == 100.0
    for _ in range(2):                                         # computed, then from the memo
        t, fit = prof.earliest_fit(prof.fit_spec(req), 0.0)
        assert t == want[0] and prof.allocation(fit) == want[1]


@pytest.mark.parametrize("seed", range(8))
def test_scanning_from_fit_bound_finds_the_same_start_on_fuller_profiles(seed):
    base, rng = loaded(seed, gpus=seed % 2 == 1)
    reqs = [random_request(rng, base.cluster.nb_nodes, seed % 2 == 1) for _ in range(12)]
    specs = [base.fit_spec(r) for r in reqs]
    bounds = [base.fit_bound(s, 20.0) for s in specs]
    assert any(b > 20.0 for b in bounds)                # the bound does skip part of the scan
    later = 0
    for _ in range(10):
        prof = base.copy()
        for k in rng.permutation(len(reqs)):            # a plan: reservations in some order
            want = prof.earliest_fit(specs[k], 20.0)
            got = prof.earliest_fit(specs[k], bounds[k])
            assert got == want
            assert want is None or want[0] >= bounds[k]
            if want is not None:
                later += want[0] > bounds[k]
                prof.reserve_fitted(want[0], want[0] + reqs[k].walltime, want[1])
    assert later


def nodes_only_profile(seed: int) -> tuple[AvailabilityProfile, list, np.random.Generator]:
    """A profile of 24 nodes loaded with nodes-only reservations (some endless), and them."""
    rng = np.random.default_rng(seed)
    cl = coord_cluster(rng, storages=0)
    prof = AvailabilityProfile(cl, 0.0, release_log=True)
    held = []
    for _ in range(int(rng.integers(5, 30))):
        req = Request(nodes=int(rng.integers(1, 13)),
                      walltime=float(rng.integers(1, 60) * 10) if rng.random() < 0.95 else float("inf"))
        found = prof.earliest_start(req, req.walltime, float(rng.integers(1, 300)))
        if found is not None and found[0] > 0.0:
            held.append((prof.reserve(found[0], found[0] + req.walltime, found[1], tag=f"j{len(held)}"), req))
    return prof, held, rng


@pytest.mark.parametrize("seed", range(16))
def test_searching_a_reservation_as_released_answers_as_releasing_it(seed, profile_kernels):
    """``fit_released_nodes`` (reinsert's search with a job's own nodes counted free, nothing
    released) gives the start and nodes ``earliest_fit`` gives once the reservation is
    released, from any point; ``renew_in_place`` after it leaves the slices as release then
    reserve of the same window do, and logs no release."""
    prof, held, rng = nodes_only_profile(seed)
    assert held
    for reservation, req in held:
        spec = prof.fit_spec(req)
        for not_before in (0.0, float(rng.integers(0, 400)), reservation.start):
            work = prof.copy()
            work.release(work_reservation := reservation)
            want = work.earliest_fit(spec, not_before)
            again = prof.copy()
            fast = again.fit_released_nodes(spec, not_before, reservation)
            assert (fast is None) == (want is None)
            if want is not None:
                assert fast[0] == want[0] and fast[1].nodes == want[1].nodes
            # staying in place: the profile as release + reserve of the same window leave it
            log = len(again._log)
            renewed = again.renew_in_place(reservation, reservation.allocation, tag="again")
            work.reserve(work_reservation.start, work_reservation.end, work_reservation.allocation)
            assert (again.times, again.nodes) == (work.times, work.nodes)
            assert len(again._log) == log and renewed[:3] == reservation[:3]
