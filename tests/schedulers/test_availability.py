"""The availability profile against a brute-force model (one array cell per time unit)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrsched.errors import SimulationError
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import AvailabilityProfile, lowest_bits
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Request
from mrsched.schedulers.profile.placement import split_shares

H = 16          # reservations live in [0, H); the machine is empty from H on


def packable(amounts: list[int], bins: list[int]) -> bool:
    """Exact: can every amount go whole into one bin?"""
    amounts = sorted((a for a in amounts if a > 0), reverse=True)

    def rec(i: int, left: list[int]) -> bool:
        if i == len(amounts):
            return True
        seen = set()
        for s, room in enumerate(left):
            if room >= amounts[i] and room not in seen:
                seen.add(room)
                left[s] -= amounts[i]
                if rec(i + 1, left):
                    return True
                left[s] += amounts[i]
        return False

    return rec(0, list(bins))


class Brute:
    """Free nodes (sets) and burst buffer per storage node for each unit of time."""

    def __init__(self, n: int, caps: list[int]):
        self.nodes = [set(range(n)) for _ in range(H + 8)]
        self.bb = [list(caps) for _ in range(H + 8)]

    def fits(self, s: int, e: int, nodes: set[int], bb: tuple[int, ...]) -> bool:
        return all(nodes <= self.nodes[t] and all(f >= b for f, b in zip(self.bb[t], bb)) for t in range(s, e))

    def take(self, s, e, nodes, bb, sign=-1):
        for t in range(s, e):
            if sign < 0:
                self.nodes[t] -= nodes
            else:
                self.nodes[t] |= nodes
            self.bb[t] = [f + sign * b for f, b in zip(self.bb[t], bb)]

    def earliest(self, n: int, d: int, total: int, not_before: int, *, equal: bool = False) -> int | None:
        """Exact earliest start; ``equal``: every node gets the rounded-up share."""
        for t in range(not_before, H + 1):
            common = set.intersection(*(self.nodes[u] for u in range(t, t + d)))
            if len(common) < n:
                continue
            if total:
                if not self.bb[0]:
                    return None
                mins = [min(self.bb[u][s] for u in range(t, t + d)) for s in range(len(self.bb[0]))]
                shares = [-(-total // n)] * n if equal else split_shares(total, n)
                if not packable(shares, mins):
                    continue
            return t
        return None


def mask_of(nodes) -> int:
    return sum(1 << k for k in nodes)


def nodes_of(mask: int) -> set[int]:
    return {k for k in range(mask.bit_length()) if mask >> k & 1}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_earliest_start_matches_brute_force(data):
    n = data.draw(st.integers(1, 6), label="nodes")
    caps = data.draw(st.lists(st.integers(1, 8), max_size=3), label="caps")
    cluster = Cluster.simple(n, bb_capacity=caps)
    prof = AvailabilityProfile(cluster, 0.0)
    brute = Brute(n, caps)
    held = []
    for _ in range(data.draw(st.integers(0, 7), label="nb_reservations")):
        s = data.draw(st.integers(0, H - 1))
        e = min(H, s + data.draw(st.integers(1, 6)))
        nodes = nodes_of(data.draw(st.integers(0, (1 << n) - 1)))
        bb = tuple(data.draw(st.integers(0, c)) for c in caps)
        alloc = Allocation(mask_of(nodes), bb if caps else ())
        if brute.fits(s, e, nodes, bb):
            held.append((prof.reserve(s, e, alloc), s, e, nodes, bb))
            brute.take(s, e, nodes, bb)
        else:
            before = [prof.free_at(t) for t in range(H + 2)]
            with pytest.raises(SimulationError):
                prof.reserve(s, e, alloc)
            assert [prof.free_at(t) for t in range(H + 2)] == before   # refused: no trace left
    if held and data.draw(st.booleans(), label="release_one"):
        res, s, e, nodes, bb = held.pop(data.draw(st.integers(0, len(held) - 1)))
        prof.release(res)
        brute.take(s, e, nodes, bb, sign=+1)
    # the profile's slices equal the brute-force cells
    for t in range(H + 2):
        free, bbf, _ = prof.free_at(t)
        assert nodes_of(free) == brute.nodes[t]
        assert list(bbf) == brute.bb[t]
    assert all(prof.times[k] < prof.times[k + 1] for k in range(len(prof.times) - 1))
    # the query
    need = data.draw(st.integers(1, n), label="need")
    d = data.draw(st.integers(1, 5), label="duration")
    total = data.draw(st.integers(0, sum(caps) + 2), label="bb_total")
    nb = data.draw(st.integers(0, H), label="not_before")
    req = Request(nodes=need, walltime=d, bb_total=total, bb_per_node=-(-total // need))
    got = prof.earliest_start(req, d, nb)
    exact = brute.earliest(need, d, total, nb)
    if total % need == 0:
        assert (None if got is None else got[0]) == exact
    else:
        # shares one byte apart: the greedy nearest-first placement is sound, never earlier than
        # the exact optimum and never later than when every node asks the rounded-up share
        rounded_up = brute.earliest(need, d, total, nb, equal=True)
        if got is None:
            assert rounded_up is None
        else:
            assert exact is not None and exact <= got[0] and (rounded_up is None or got[0] <= rounded_up)
    if got is not None:
        t, alloc = got
        t = int(t)
        assert alloc.nodes.bit_count() == need
        assert brute.fits(t, t + d, nodes_of(alloc.nodes), alloc.bb if caps else ())
        assert sum(alloc.bb) == total
        assert alloc.nodes == lowest_bits(mask_of(set.intersection(*(brute.nodes[u] for u in range(t, t + d)))), need)


def test_running_job_then_reservation_then_release_early():
    cl = Cluster.simple(4, bb_capacity=10)
    prof = AvailabilityProfile(cl, 0.0)
    run = prof.reserve(0, 100, Allocation(0b0011, (6,)))
    t, alloc = prof.earliest_start(Request(nodes=3, walltime=50, bb_total=6, bb_per_node=2), 50, 0)
    assert t == 100 and alloc.nodes == 0b0111 and alloc.bb == (6,)
    # the running job ends early at 40: its remaining window is freed
    prof.advance(40)
    prof.release(run, from_time=40)
    t, _ = prof.earliest_start(Request(nodes=3, walltime=50, bb_total=6, bb_per_node=2), 50, 40)
    assert t == 40
    assert prof.times == [40]   # breakpoints merged back


def test_nodes_only_query_ignores_burst_buffer():
    cl = Cluster.simple(2, bb_capacity=4)
    prof = AvailabilityProfile(cl, 0.0)
    prof.reserve(0, 10, Allocation(0b01, (4,)))
    req = Request(nodes=1, walltime=5, bb_total=4, bb_per_node=4)
    assert prof.earliest_start(req)[0] == 10
    assert prof.earliest_start(req, with_bb=False)[0] == 0


def test_gpu_request_only_uses_gpu_nodes_and_never_fits_without_them():
    cl = Cluster.simple(4, gpus=[0, 2, 0, 4])
    prof = AvailabilityProfile(cl, 0.0)
    t, alloc = prof.earliest_start(Request(nodes=2, walltime=5, gpus_per_node=2))
    assert t == 0 and alloc.nodes == 0b1010
    assert prof.earliest_start(Request(nodes=3, walltime=5, gpus_per_node=1)) is None


def test_counters_limit_concurrency():
    cl = Cluster.simple(4, counters={"licenses": 2})
    prof = AvailabilityProfile(cl, 0.0)
    req = Request(nodes=1, walltime=10, counters=(("licenses", 2),))
    t, alloc = prof.earliest_start(req)
    prof.reserve(t, t + 10, alloc)
    assert prof.earliest_start(req)[0] == 10


def test_endless_job_and_double_release_and_time_travel():
    cl = Cluster.simple(2)
    prof = AvailabilityProfile(cl, 0.0)
    forever = prof.reserve(0, math.inf, Allocation(0b11))
    assert prof.earliest_start(Request(nodes=1, walltime=1)) is None
    prof.release(forever, from_time=5)
    assert prof.earliest_start(Request(nodes=2, walltime=1))[0] == 5
    with pytest.raises(SimulationError, match="twice"):
        prof.release(forever, from_time=5)
    prof.advance(3)
    with pytest.raises(SimulationError, match="backwards"):
        prof.advance(2)


def test_burst_buffer_total_not_divisible_by_nodes_is_exact():
    cl = Cluster.simple(3, bb_capacity=[10])
    prof = AvailabilityProfile(cl, 0.0)
    _, alloc = prof.earliest_start(Request(nodes=3, walltime=1, bb_total=8, bb_per_node=3))
    assert alloc.bb == (8,) and sorted(b for _, b in alloc.placement.values()) == [2, 3, 3]


def test_lowest_bits():
    assert lowest_bits(0b101101, 3) == 0b001101
    assert [lowest_bits(m, k) for m, k in itertools.product([0b11], [0, 1, 2])] == [0, 1, 3]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 6), caps=st.lists(st.integers(1, 12), max_size=3), gpus=st.lists(st.integers(0, 2), min_size=6,
       max_size=6), need=st.integers(1, 7), total=st.integers(0, 40), g=st.integers(0, 3))
def test_rejected_exactly_when_the_empty_machine_cannot_hold_it(n, caps, gpus, need, total, g):
    from mrsched.schedulers.profile.feasibility import infeasible_reason

    cl = Cluster.simple(n, bb_capacity=caps, gpus=gpus[:n])
    req = Request(nodes=need, walltime=10, bb_total=total, bb_per_node=-(-total // need), gpus_per_node=g)
    runnable = AvailabilityProfile(cl, 0.0).earliest_start(req) is not None
    assert (infeasible_reason(cl, req) is None) == runnable


def test_release_log_stays_bounded_when_nobody_trims_it(monkeypatch):
    """EASY never trims the release log (only conservative reads it): it is cut in half beyond
    its bound, and a position older than what is kept reads as unknown history (None)."""
    import mrsched.schedulers.profile.availability as availability

    monkeypatch.setattr(availability, "_LOG_MAX", 10)
    cluster = Cluster.simple(4)
    p = AvailabilityProfile(cluster, 0.0, release_log=True)
    first = None
    for k in range(50):
        r = p.reserve(float(k), float(k) + 5.0, Allocation(1))
        first = r.log_pos if first is None else first
        p.release(r)
    assert len(p._log) <= 10
    assert p.released_since(first) is None
    recent = p.reserve(60.0, 70.0, Allocation(2))
    p.release(p.reserve(61.0, 62.0, Allocation(1)))
    assert p.released_since(recent.log_pos) == [(61.0, 62.0)]


def test_the_release_log_is_kept_only_for_a_policy_that_reads_it():
    """Only conservative backfilling asks what was freed since a reservation: other policies'
    profiles keep no log (a reservation's history reads as unknown, so a reader would
    re-examine, never trust a missing entry), and the runtime turns it on for conservative."""
    from mrsched.schedulers.registry import make_policy
    from mrsched.schedulers.execution.runtime import PolicyRuntime

    p = AvailabilityProfile(Cluster.simple(4), 0.0)
    r = p.reserve(1.0, 5.0, Allocation(1))
    p.release(p.reserve(2.0, 3.0, Allocation(2)))
    assert r.log_pos == -1 and p._log == [] and p.released_span(r.log_pos) is None
    assert p.copy().release_log is False
    kept = AvailabilityProfile(Cluster.simple(4), 0.0, release_log=True)
    r = kept.reserve(1.0, 5.0, Allocation(1))
    kept.release(kept.reserve(2.0, 3.0, Allocation(2)))
    assert kept.released_span(r.log_pos) == (2.0, 3.0) and kept.copy().release_log is True
    for name, logged in (("conservative-bb", True), ("fcfs-bb", False), ("sjf-bb", False), ("filler", False)):
        runtime = PolicyRuntime(make_policy(name))
        runtime.begin(Cluster.simple(4))
        assert runtime.profile.release_log is logged, name


@pytest.mark.parametrize("seed", range(5))
def test_released_span_is_the_extremes_of_released_since(seed):
    """``released_span`` (monotonic stacks, O(log n)) answers what a scan of ``released_since``
    gives: the earliest start and latest end released after any position, across trims."""
    import random

    rng = random.Random(seed)
    p = AvailabilityProfile(Cluster.simple(8), 0.0, release_log=True)
    held, positions = [], []
    for step in range(400):
        if held and rng.random() < 0.5:
            r = held.pop(rng.randrange(len(held)))
            p.release(r, from_time=rng.choice([None, r.start + rng.random() * (r.end - r.start)]))
        else:
            start = p.now + rng.randrange(0, 50)
            node = 1 << rng.randrange(8)
            try:
                r = p.reserve(start, start + rng.randrange(1, 30), Allocation(node))
            except Exception:
                continue
            held.append(r)
            positions.append(r.log_pos)
        if rng.random() < 0.05:
            p.trim_log(rng.choice(positions))
        for pos in rng.sample(positions, min(10, len(positions))):
            freed = p.released_since(pos)
            want = None if freed is None else (min((a for a, _ in freed), default=math.inf),
                                               max((b for _, b in freed), default=-math.inf))
            assert p.released_span(pos) == want
