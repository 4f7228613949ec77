"""The ordered queue and the profile's room: same order as ``order_queue``, the same
first job as a scan, only necessary conditions pruned, and a pass that does not grow with the
queue."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Job, Request
from mrsched.schedulers.profile.ordered_queue import OrderedQueue
from mrsched.schedulers.model.params import ORDERS
from mrsched.schedulers.model.contract import SchedulingContext, WaitingQueue, order_queue

from test_fast_paths import dragonfly, next_instant, random_request

# every test twice: with the compiled queue tree and with the pure-Python one (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("queue_tree")


def random_job(rng, k: int, now: float = 0.0) -> Job:
    req = random_request(rng)
    if rng.random() < 0.3:      # wider jobs: node counts in several lanes (1 to 120 nodes)
        req = Request(nodes=req.nodes * int(rng.integers(1, 21)), walltime=req.walltime,
                      bb_total=req.bb_total, bb_per_node=req.bb_per_node)
    if rng.random() < 0.1:
        req = Request(nodes=req.nodes, bb_total=req.bb_total, bb_per_node=req.bb_per_node)   # no walltime
    return Job(f"w!{k}", now, req)


@pytest.mark.parametrize("order", ORDERS)
def test_iteration_and_first_fit_match_a_scan_of_order_queue(order):
    """Jobs come and go over many rounds; the kept queue's order is ``order_queue``'s and
    ``next_job`` returns the first job after a position that passes a test, as a scan does
    (``skip``: whether there is one, and a position before it)."""
    rng = np.random.default_rng(hash(order) % 1000)
    waiting: dict[str, Job] = {}
    kept = OrderedQueue(order)
    seq = 0
    for _ in range(300):
        for _ in range(int(rng.integers(0, 6))):
            seq += 1
            waiting[f"w!{seq}"] = random_job(rng, seq)
        kept.update(WaitingQueue(waiting))
        expected = list(order_queue(list(waiting.values()), order))
        assert list(kept) == expected
        limit_n = int(rng.integers(1, 7) if rng.random() < 0.5 else rng.integers(1, 130))
        limit_b, limit_w = int(rng.integers(0, 3000)), float(rng.integers(1, 45))

        class Room(dict):           # up to limit_w: limit_n nodes and limit_b bytes; then nothing
            def __missing__(self, w):
                return (limit_n, limit_b) if w <= limit_w else (-1, -1)

        room = Room()
        scan = [j for j in expected if j.request.nodes <= room[j.request.walltime][0]
                and j.request.bb_total <= room[j.request.walltime][1]]
        got, at = [], None
        while True:
            # skip: None when no later job passes, else a position the search may resume from
            skipped = kept.skip(at, room)
            job, at = kept.next_job(at, room)
            assert (skipped is None) == (job is None)
            if job is None:
                break
            assert kept.next_job(skipped, room)[0] is job
            got.append(job)
        assert got == scan
        for job in expected:                    # a policy starts some: they leave
            if rng.random() < 0.3:
                kept.remove(job)
                del waiting[job.id]


def test_a_queue_changed_behind_its_back_is_read_again():
    rng = np.random.default_rng(2)
    waiting = {f"w!{k}": random_job(rng, k) for k in range(20)}
    kept = OrderedQueue("sjf").update(WaitingQueue(waiting))
    del waiting["w!3"]                           # not through kept.remove
    waiting["w!99"] = random_job(rng, 99)
    assert list(kept.update(WaitingQueue(waiting))) == list(order_queue(list(waiting.values()), "sjf"))
    as_list = list(waiting.values())[:5]         # a plain list: read whole
    assert list(kept.update(as_list)) == order_queue(as_list, "sjf")


def busy_rounds(rng, profile: AvailabilityProfile, rounds: int, *, keep: float):
    """Drive ``profile`` through ``rounds`` random rounds (jobs end, some early; three
    requests reserved at their earliest start with probability ``keep``), yielding each."""
    running, now = {}, 0.0
    for step in range(rounds):
        now = next_instant(rng, profile, running, now, early=0.1)
        for k in range(3):
            req = random_request(rng)
            found = profile.earliest_start(req, None, now + float(rng.integers(0, 20)))
            if found is not None and rng.random() < keep:
                running[f"r{step}-{k}"] = profile.reserve(found[0], found[0] + req.walltime, found[1])
        yield step


def test_room_is_necessary_for_fits_now():
    """Whenever a request fits now, the room admits it (and so for anything smaller)."""
    rng = np.random.default_rng(9)
    cluster = dragonfly()
    profile = AvailabilityProfile(cluster, 0.0)
    fits = refused = 0
    for step in busy_rounds(rng, profile, 400, keep=0.5):
        room = profile.room()
        for _ in range(20):
            req = random_request(rng)
            free_nodes, free_bytes = room[req.walltime]
            passes = req.nodes <= free_nodes and req.bb_total <= free_bytes
            if profile.fits_now(req) is not None:
                fits += 1
                assert passes, (step, req)
            refused += not passes
    assert fits > 100 and refused > 100    # both sides exercised


def test_room_packing_test_is_necessary_and_passes_over_jobs_that_do_not_pack():
    """The room also tests one job's burst-buffer packing (``Room.admits``): the queue passes
    over a job whose bytes fit in total but whose shares pack on no storage node, and the
    test never refuses a job that ``fits_now`` starts; ``room(packing=False)``, and machines
    without burst buffer, keep the bounds alone."""
    profile = AvailabilityProfile(Cluster.simple(8, bb_capacity=[10] * 20), 0.0)
    wide = Job("w!1", 0.0, Request(nodes=2, walltime=10.0, bb_per_node=11, bb_total=22))
    small = Job("w!2", 0.0, Request(nodes=1, walltime=10.0, bb_per_node=5, bb_total=5))
    queue = OrderedQueue("fcfs").update(WaitingQueue({j.id: j for j in (wide, small)}))
    assert profile.fits_now(wide.request) is None and profile.fits_now(small.request) is not None
    assert queue.next_job(None, profile.room())[0] is small
    assert queue.next_job(None, profile.room(packing=False))[0] is wide
    exact = Job("w!3", 0.0, Request(nodes=3, walltime=10.0, bb_per_node=10, bb_total=30))
    assert profile.fits_now(exact.request) is not None          # a storage node's all, each
    assert OrderedQueue("fcfs").update(WaitingQueue({"w!1": wide, "w!3": exact})).next_job(
        None, profile.room())[0] is exact
    few = AvailabilityProfile(Cluster.simple(8, bb_capacity=[10, 10]), 0.0)
    assert few.room().admits is not None and queue.next_job(None, few.room())[0] is small
    assert AvailabilityProfile(Cluster.simple(8), 0.0).room().admits is None

    rng = np.random.default_rng(21)
    profile = AvailabilityProfile(Cluster.simple(16, bb_capacity=[int(c) for c in rng.integers(200, 900, 24)]), 0.0)
    started = refused = 0
    for step in busy_rounds(rng, profile, 300, keep=0.6):
        room = profile.room()
        for _ in range(20):
            req = random_request(rng)
            req = Request(nodes=req.nodes * int(rng.integers(1, 3)), walltime=req.walltime,
                          bb_total=req.bb_total * 3, bb_per_node=req.bb_per_node * 3)
            free_nodes, free_bytes = room[req.walltime]
            bounds = req.nodes <= free_nodes and req.bb_total <= free_bytes
            packs = bounds and room.admits(req.nodes, req.bb_total, req.walltime)
            if profile.fits_now(req) is not None:
                started += 1
                assert packs, (step, req)
            refused += bounds and not packs
    assert started > 100 and refused > 100    # both sides exercised


def test_a_walk_fills_a_rooms_slices_as_its_missing_method_does():
    """The compiled walk computes a profile's room on a miss itself (running AND and least
    bytes extended, the slice's room stored; it reads the room by slice, not by walltime):
    the same slices and chains as ``Room.__missing__`` on a fresh room read at every
    slice, and no call of that method from the walk; the Python tree calls it."""
    import sys

    from mrsched.schedulers.profile import ordered_queue as oq
    from mrsched.schedulers.profile.availability import Room

    rng = np.random.default_rng(33)
    profile = AvailabilityProfile(dragonfly(), 0.0)
    jobs = [random_job(rng, k) for k in range(300)]
    queue = OrderedQueue("sjf").update(WaitingQueue({j.id: j for j in jobs}))
    missing = Room.__missing__.__code__
    calls = [0]

    def count(frame, event, arg):
        if event == "call" and frame.f_code is missing:
            calls[0] += 1

    walked = 0
    for step in busy_rounds(rng, profile, 150, keep=0.7):
        walked_room, fresh = profile.room(), profile.room()
        sys.setprofile(count)
        try:
            job, at = queue.next_job(None, walked_room)
            while job is not None:
                job, at = queue.next_job(at, walked_room)
        finally:
            sys.setprofile(None)
        for w in list(walked_room):
            assert fresh[w] == walked_room[w], (step, w)
        times = profile.times
        for a, b in zip(times, times[1:] + [times[-1] + 2.0]):   # a walltime ending in each slice
            fresh[(a + b) / 2 - times[0]]
        assert walked_room.slices.items() <= fresh.slices.items(), step
        k = len(walked_room._and)
        assert walked_room._and == fresh._and[:k] and walked_room._least == fresh._least[:k], step
        assert max(walked_room.slices) == k - 1, step
        walked += len(walked_room.slices)
    assert walked > 300
    compiled = oq._MinTree is not oq._PyMinTree
    assert (calls[0] == 0) if compiled else (calls[0] > 100), calls


def test_a_room_with_its_packing_test_is_freed_without_the_garbage_collector():
    """A round makes a room or two: one that held its own bound packing test was a reference
    cycle, left for the cyclic collector with its slice lists (on 10,000 nodes the collector
    took ~5 % of a run). Reference counting alone must free it, after a walk used it."""
    profile = AvailabilityProfile(Cluster.simple(8, bb_capacity=[10] * 20), 0.0)
    job = Job("w!1", 0.0, Request(nodes=2, walltime=10.0, bb_per_node=5, bb_total=10))
    queue = OrderedQueue("fcfs").update(WaitingQueue({job.id: job}))
    gc.collect()
    gc.disable()
    try:
        room = profile.room()
        assert room.admits is not None and queue.next_job(None, room)[0] is job
        del room
        assert gc.collect() == 0
    finally:
        gc.enable()


class CountedJob(Job):
    """A job that counts how often a policy reads its request."""

    reads = [0]

    def __getattribute__(self, name):
        if name == "request":
            CountedJob.reads[0] += 1
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("name", ["fcfs-bb", "sjf-bb", "fcfs-easy", "filler", "fcfs"])
def test_a_round_does_not_read_jobs_that_cannot_start(name):
    """A long queue of jobs wider than the free nodes: after the round that sees them arrive,
    a round with one more (small) submission reads a handful of requests, however long the
    queue (before the ordered queue, every round read every waiting job)."""
    from mrsched.schedulers.registry import make_policy

    cluster = Cluster.simple(64, bb_capacity=10_000)
    reads = {}
    for length in (1_000, 20_000):
        policy = make_policy(name)
        policy.setup(cluster)
        profile = AvailabilityProfile(cluster, 0.0)
        profile.reserve(0.0, 100.0, profile.fits_now(Request(nodes=60, walltime=100.0)))   # 4 nodes free
        waiting = {f"w!{k}": CountedJob(f"w!{k}", 0.0, Request(nodes=8 + k % 50, walltime=50.0 + k % 7))
                   for k in range(length)}
        ctx = SchedulingContext(0.0, cluster, profile, WaitingQueue(waiting), {}, [], [])
        assert policy.schedule(ctx) == []
        waiting["w!small"] = CountedJob("w!small", 1.0, Request(nodes=2, walltime=10.0))
        CountedJob.reads[0] = 0
        profile.advance(1.0)
        ctx = SchedulingContext(1.0, cluster, profile, WaitingQueue(waiting), {}, ["w!small"], [])
        started = [d.job_id for d in policy.schedule(ctx)]
        assert started == ([] if name == "fcfs" else ["w!small"])
        reads[length] = CountedJob.reads[0]
    assert reads[1_000] == reads[20_000] <= 20, reads


@pytest.mark.parametrize("order", ORDERS)
def test_next_job_without_a_room_walks_every_live_job_in_order(order, monkeypatch):
    """The room-less walk (head of the queue, next job) skips removed slots and empty runs
    and never consults a room."""
    import mrsched.schedulers.profile.ordered_queue as oq
    rng = np.random.default_rng(7)
    waiting = {f"w!{k}": random_job(rng, k) for k in range(200)}
    kept = OrderedQueue(order).update(WaitingQueue(waiting))
    for job in list(kept):
        if rng.random() < 0.6:
            kept.remove(job)
            del waiting[job.id]

    def no_room(self, w):
        raise AssertionError("a room-less walk read a room")

    monkeypatch.setattr(oq._Anything, "__missing__", no_room)
    got, at = [], None
    while True:
        job, at = kept.next_job(at)
        if job is None:
            break
        got.append(job)
    assert got == list(order_queue(list(waiting.values()), order))
    assert kept._runs and all(r.occupied.live(r.occupied.cap) == -1 for r in kept._runs.values())


class CountingRoom(dict):
    """Many nodes for up to 100 s, none for longer; counts every read."""

    reads = 0

    def get(self, w, default=None):
        CountingRoom.reads += 1
        return super().get(w, default)

    def __missing__(self, w):
        CountingRoom.reads += 1
        return (32, 10**12) if w <= 100 else (0, 0)


def test_a_room_that_no_job_passes_is_answered_without_walking_the_queue():
    """Small long jobs and wide short ones, interleaved: every stretch of the queue holds a
    small node count and a short walltime, yet no job passes a room of 32 nodes for 100 s and
    none after. Saying so reads a handful of subtrees however long the queue (minima of both
    kinds of jobs in one tree passed everywhere: the walk read every stretch)."""
    reads = {}
    for length in (1_000, 50_000):
        waiting = {f"w!{k}": Job(f"w!{k}", 0.0, Request(nodes=1, walltime=1000.0) if k % 2
                                 else Request(nodes=40, walltime=10.0)) for k in range(length)}
        kept = OrderedQueue("fcfs").update(WaitingQueue(waiting))
        CountingRoom.reads = 0
        assert kept.next_job(None, CountingRoom()) == (None, None)
        reads[length] = CountingRoom.reads
    assert reads[1_000] == reads[50_000] <= 30, reads


def test_sjf_runs_that_pass_only_on_mixed_minima_are_not_entered():
    """``sjf``: one run per walltime, each holding a 1-node job asking many bytes and a
    40-node job asking none. Every run's minima (1 node, no bytes) pass a room of 32 nodes and
    1,000 bytes, yet no job does. Saying so reads a handful of subtrees however many runs
    (a tree over whole runs entered every run: reads grew with the queue's walltimes)."""
    reads = {}
    for runs in (50, 2_000):
        waiting = {}
        for k in range(runs):
            for nodes, bb in ((1, 10**6), (40, 0)):
                job = Job(f"w!{k}-{nodes}", 0.0, Request(nodes=nodes, walltime=10.0 + k, bb_total=bb))
                waiting[job.id] = job
        kept = OrderedQueue("sjf").update(WaitingQueue(waiting))

        class Room(CountingRoom):
            def __missing__(self, w):
                CountingRoom.reads += 1
                return (32, 1_000)

        CountingRoom.reads = 0
        assert kept.next_job(None, Room()) == (None, None)
        assert kept.skip(None, Room()) is None
        reads[runs] = CountingRoom.reads
    assert reads[50] == reads[2_000] <= 20, reads



def test_the_head_hint_follows_slots_filled_again():
    """``live`` starts from the first slot it found occupied; a slot below it filled again
    (any ``set``) is found from the front once more."""
    from mrsched.schedulers.profile.ordered_queue import INF, _MinTree

    tree = _MinTree([(1, 0, 5.0)] * 10)
    for s in range(6):
        tree.set(s, INF, INF, INF)
    assert tree.live(0) == 6 and tree.live(8) == 8
    tree.set(2, 3, 0, 1.0)
    assert tree.live(0) == 2 and tree.live(3) == 6
    for s in range(10):
        tree.set(s, INF, INF, INF)
    assert tree.live(0) == -1


def test_the_run_order_head_hint_follows_slots_used_again():
    """The run's occupancy tree shares ``live`` and its hint: a slot below the hint used again
    is found from the front."""
    from mrsched.schedulers.profile.ordered_queue import _Occupied

    occ = _Occupied(10, 16)
    for s in range(6):
        occ.mark(s, False)
    assert occ.live(0) == 6 and occ.live(8) == 8
    occ.mark(2, True)
    assert occ.live(0) == 2 and occ.live(3) == 6
    for s in range(10):
        occ.mark(s, False)
    assert occ.live(0) == -1
