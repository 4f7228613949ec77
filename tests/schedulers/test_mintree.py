"""The compiled tree of the ordered queue (``schedulers/profile/_mintree.c``) against its pure-Python
twin (``_PyMinTree``): the same answers to every call on random trees and rooms (plain dicts,
a profile's lazy room with its packing test, rooms that count their reads), and clear errors
on values it cannot hold."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mrsched.schedulers.profile import ordered_queue as oq
from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.profile.availability import Room
from mrsched.schedulers.model.job import Job, Request
from mrsched.schedulers.model.contract import WaitingQueue, order_queue

from test_fast_paths import dragonfly, random_request

INF = math.inf


@pytest.fixture
def compiled(require):
    require(oq._mintree is not None,
            "the compiled queue tree (schedulers/profile/_mintree.c) was not built: no C compiler at install")
    return oq._mintree.MinTree


def random_leaves(rng, n: int) -> list[tuple]:
    out = []
    for _ in range(n):
        if rng.random() < 0.3:
            out.append((INF, INF, INF))                     # an empty slot
        else:
            wall = INF if rng.random() < 0.1 else float(rng.integers(1, 50))
            out.append((int(rng.integers(1, 40)), int(rng.choice([0, 0, 10, 500, 10**12])), wall))
    return out


class StepRoom(dict):
    """A room from a step function of walltime (non-increasing), computed on a miss."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def __missing__(self, w):
        for until, nodes, bb in self.steps:
            if w <= until:
                return nodes, bb
        return 0, 0


def random_room(rng) -> StepRoom:
    steps, nodes, bb = [], int(rng.integers(0, 45)), int(rng.choice([0, 100, 1000, 10**13]))
    for until in sorted(rng.choice(60, size=3, replace=False)):
        steps.append((float(until), nodes, bb))
        nodes, bb = int(rng.integers(0, nodes + 1)), int(rng.integers(0, bb + 1))
    return StepRoom(steps)


def test_random_trees_answer_as_the_python_tree(compiled):
    """``first`` over random ranges (with and without an upper end and a test of single jobs),
    ``live``, ``root``, ``leaf`` and ``set`` after random changes: the same answers."""
    rng = np.random.default_rng(7)
    for _ in range(150):
        leaves = random_leaves(rng, int(rng.integers(0, 70)))
        c, p = compiled(leaves), oq._PyMinTree(leaves)
        assert c.cap == p.cap and c.root() == p.root()
        for _ in range(25):
            if rng.random() < 0.5:
                s = int(rng.integers(0, c.cap))
                leaf = random_leaves(rng, 1)[0]
                assert c.set(s, *leaf) == p.set(s, *leaf)
            room = random_room(rng)
            lo = int(rng.integers(0, c.cap + 1))
            hi = int(rng.integers(-1, c.cap + 2))
            picky = (lambda n, b, w: (n + b + int(w if w != INF else 0)) % 3 != 0) if rng.random() < 0.5 else None
            assert c.first(lo, room, hi, picky) == p.first(lo, room, hi, picky), (leaves, lo, hi)
            assert c.first(lo, room) == p.first(lo, room)
            assert c.live(lo) == p.live(lo) and c.head == p.head
            assert c.root() == p.root()
            assert [c.leaf(s) for s in range(c.cap)] == [p.leaf(s) for s in range(p.cap)]


def test_a_profiles_room_and_its_packing_test_read_alike(compiled):
    """A real profile's room (read lazily, slice by slice) with its packing test: the compiled
    walk reads the same values, and fills the room's slices as the Python walk does (the
    Python walk also keeps each walltime read in the room; the compiled one reads by slice)."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        profile = AvailabilityProfile(dragonfly(12))
        now = 0.0
        for _ in range(int(rng.integers(0, 8))):
            req = random_request(rng)
            alloc = profile.fits_now(req)
            if alloc is not None:
                profile.reserve(now, now + req.walltime * float(rng.integers(1, 4)), alloc)
        reqs = [random_request(rng) for _ in range(int(rng.integers(1, 60)))]
        leaves = [(r.nodes, r.bb_total, r.walltime) for r in reqs]
        c, p = compiled(leaves), oq._PyMinTree(leaves)
        rc, rp = profile.room(), profile.room()
        packing = Room(rp.times, rp.nodes, rp.bbsum, profile._prefix, profile.placer.capacity_fits)
        packing_c = Room(rp.times, rp.nodes, rp.bbsum, profile._prefix, profile.placer.capacity_fits)
        for lo in range(0, len(leaves), 3):
            assert c.first(lo, rc) == p.first(lo, rp)
            assert c.first(lo, packing_c, -1, packing_c.admits) == p.first(lo, packing, -1, packing.admits)
        assert rc.slices == rp.slices and all(rc[w] == r for w, r in rp.items())


def test_lanes_search_as_the_python_run_search(compiled):
    """``first_in_lanes`` (a run's search over its node-count lanes) on random queues."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        jobs = []
        for k in range(int(rng.integers(1, 120))):
            req = random_request(rng)
            if rng.random() < 0.3:
                req = Request(nodes=req.nodes * int(rng.integers(1, 21)), walltime=req.walltime,
                              bb_total=req.bb_total, bb_per_node=req.bb_per_node)
            jobs.append(Job(f"w!{k}", 0.0, req))
        py_run = oq._Run(jobs, (oq._PyMinTree, oq._PyOccupied))
        c_run = oq._Run(jobs, (oq._CMinTree, oq._COccupied))
        for job in jobs:
            if rng.random() < 0.4:
                py_run.remove(job.id)
                c_run.remove(job.id)
        for _ in range(10):
            room = random_room(rng)
            after = int(rng.integers(-1, len(jobs)))
            for earliest in (True, False):
                assert c_run.first(after, room, earliest) == py_run.first(after, room, earliest)


@pytest.mark.parametrize("order", ["sjf", "largest", "fcfs"])
def test_the_search_over_runs_answers_as_the_python_one(compiled, order, monkeypatch):
    """``find_in_runs`` (the search over runs, lane by lane) against ``_py_find_in_runs`` on
    the same queue: the same (key, slot) from every rank, earliest or not."""
    monkeypatch.setattr(oq, "_MinTree", oq._CMinTree)   # compiled queues, whatever the environment
    monkeypatch.setattr(oq, "_Occupied", oq._COccupied)
    monkeypatch.setattr(oq, "_find_in_runs", oq._mintree.find_in_runs)
    rng = np.random.default_rng(5)
    for _ in range(25):
        waiting = {}
        for k in range(int(rng.integers(1, 150))):
            req = random_request(rng)
            if rng.random() < 0.3:
                req = Request(nodes=req.nodes * int(rng.integers(1, 21)), walltime=req.walltime,
                              bb_total=req.bb_total, bb_per_node=req.bb_per_node)
            waiting[f"w!{k}"] = Job(f"w!{k}", 0.0, req)
        queue = oq.OrderedQueue(order).update(WaitingQueue(waiting))
        assert queue._trees[2] is oq._mintree.find_in_runs
        for job in list(queue):
            if rng.random() < 0.4:
                queue.remove(job)
        state = (queue._tops, queue._top_ks, queue._keys, queue._runs)
        for _ in range(10):
            room = random_room(rng)
            for r in range(len(queue._keys) + 1):
                for earliest in (True, False):
                    assert oq._mintree.find_in_runs(r, *state, room, earliest) == \
                        oq._py_find_in_runs(r, *state, room, earliest)
    with pytest.raises(TypeError, match="find_in_runs\\(r, tops: dict"):
        oq._mintree.find_in_runs(0, [], [], [], {}, {}, True)


def test_counting_rooms_are_read_through_their_own_get(compiled):
    """A room whose ``get`` is its own (it counts, say) is read through it, never around it."""
    reads = []

    class Counting(dict):
        def get(self, w, default=None):
            reads.append(w)
            return (5, 5)

        def __missing__(self, w):
            return (5, 5)

    tree = compiled([(3, 1, 2.0), (9, 1, 4.0), (4, 1, 8.0)])
    assert tree.first(0, Counting()) == 0 and reads


def test_values_it_cannot_hold_are_refused_clearly(compiled):
    with pytest.raises(ValueError, match="integers"):
        compiled([(1.5, 0, 1.0)])
    with pytest.raises(OverflowError, match="beyond 2\\*\\*63"):
        compiled([(1, 2**63, 1.0)])
    tree = compiled([(1, 0, 1.0)])
    with pytest.raises(IndexError, match="slot 8"):
        tree.set(8, 1, 0, 1.0)
    with pytest.raises(TypeError, match="leaf is a tuple"):
        compiled([[1, 0, 1.0]])
    with pytest.raises(TypeError, match="non-empty list"):
        tree.first(0, type("R", (dict,), {"times": [], "__missing__": lambda s, w: (1, 1)})())
    # a room of huge floats ("anything") lets every job through, never an empty slot
    assert tree.first(0, {1.0: (1e300, 1e300), INF: (1e300, 1e300)}) == 0
    assert compiled([(INF, INF, INF)]).first(0, {INF: (1e300, 1e300)}) == -1


@pytest.mark.parametrize("value, compiled_used", [("1", False), ("true", False), ("0", True), ("", True)])
def test_the_environment_selects_the_pure_python_tree(compiled, require, value, compiled_used):
    """``MRSCHED_PURE_PYTHON=1`` starts a process with the pure-Python tree, placers that
    count burst-buffer shares in Python and profiles with Python row operations; 0 or empty
    does not."""
    import os
    import subprocess
    import sys

    from mrsched.schedulers.profile import placement

    from mrsched.schedulers.profile import availability

    require(placement._shares is not None and availability._profile is not None,
            "the compiled share count and row operations (schedulers/profile/_shares.c, _profile.c) were not "
            "built: no C compiler at install")
    code = ("from mrsched.schedulers.profile import ordered_queue as oq; "
            "from mrsched.schedulers.model.cluster import Cluster; "
            "from mrsched.schedulers.profile.placement import BurstBufferPlacer; "
            "from mrsched.schedulers.profile import availability as av, placement; "
            "print(oq._MinTree is not oq._PyMinTree, "
            "BurstBufferPlacer(Cluster.simple(4, bb_capacity=[8]))._taker is not None, "
            "placement._COMPILED, av._least is not av._py_least)")
    env = dict(os.environ, MRSCHED_PURE_PYTHON=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == " ".join([str(compiled_used)] * 4)


def test_a_room_that_fails_fails_the_search_with_its_own_error(compiled):
    """An error raised while reading a room or testing a job comes out of the search as it is
    (never a crash, never a silent answer), from either tree."""
    class Broken(dict):
        def __missing__(self, w):
            if w > 5:
                raise ValueError(f"no room for walltime {w}")
            return (10, 10)

    def refusing(n, b, w):
        raise RuntimeError("packing test failed")

    leaves = [(1, 1, 2.0), (1, 1, 9.0)]
    for tree in (compiled(leaves), oq._PyMinTree(leaves)):
        with pytest.raises(ValueError, match="no room for walltime 9"):
            tree.first(1, Broken())
        with pytest.raises(RuntimeError, match="packing test failed"):
            tree.first(0, Broken(), -1, refusing)


def test_a_queue_keeps_the_kind_of_tree_it_was_made_with(compiled):
    """Switching the kind (``use``) changes the queues made afterwards only: a queue made
    before grows new runs and lanes of its own kind and answers as before."""
    rng = np.random.default_rng(5)
    was = oq._MinTree is not oq._PyMinTree
    try:
        for first, then in ((True, False), (False, True)):
            oq.use(first)
            queue = oq.OrderedQueue("sjf")
            waiting = {}
            for k in range(200):
                if k == 100:
                    oq.use(then)
                req = random_request(rng)
                if rng.random() < 0.3:
                    req = Request(nodes=req.nodes * int(rng.integers(1, 21)), walltime=req.walltime,
                                  bb_total=req.bb_total, bb_per_node=req.bb_per_node)
                waiting[f"w!{k}"] = Job(f"w!{k}", 0.0, req)
                queue.update(WaitingQueue(waiting))     # the new tail is appended
                room = random_room(rng)
                want = next((j for j in order_queue(list(waiting.values()), "sjf")
                             if j.request.nodes <= room[j.request.walltime][0]
                             and j.request.bb_total <= room[j.request.walltime][1]), None)
                assert queue.next_job(None, room)[0] is want
    finally:
        oq.use(was)
