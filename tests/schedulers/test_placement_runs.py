"""Burst-buffer placement a run of nodes at a time gives the per-node greedy's result (seed 001:
each node's share on the first storage node of its distance order with room), same insertion
order included."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.schedulers.profile import placement
from mrsched.schedulers.model.cluster import Cluster, StorageNode
from mrsched.schedulers.profile.placement import BurstBufferPlacer, split_shares


def greedy(placer: BurstBufferPlacer, nodes, amounts, free):
    left, out = list(free), {}
    for k, share in zip(nodes, amounts):
        if share <= 0:
            continue
        for s in placer.order[k]:
            if left[s] >= share:
                left[s] -= share
                out[k] = (s, share)
                break
        else:
            return None
    return out


def test_run_placement_is_the_per_node_greedy():
    rng = np.random.default_rng(4)
    placed = refused = runs = 0
    for trial in range(1500):
        n, ns = int(rng.integers(2, 60)), int(rng.integers(1, 7))
        storage = tuple(StorageNode(id=n + s, name=f"bb{s}", capacity=1000, group=s % 3, chassis=s) for s in range(ns))
        chassis = [int(x) for x in rng.integers(0, 6, n)]
        if trial % 2:       # chassis in index order: long runs of one storage order
            chassis.sort()
        cluster = Cluster(compute_ids=tuple(range(n)), compute_names=tuple(f"n{k}" for k in range(n)),
                          storage=storage, group=tuple(c % 3 for c in chassis), chassis=tuple(chassis),
                          storage_ids=tuple(s.id for s in storage))
        placer = BurstBufferPlacer(cluster)
        runs += not placer._fragmented
        nodes = sorted(int(x) for x in rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        total = int(rng.integers(0, 3000))
        split = rng.random() < 0.7
        amounts = split_shares(total, len(nodes)) if split else [int(rng.choice([0, 50, 100, 333])) for _ in nodes]
        free = [int(x) for x in rng.integers(0, 1500, ns)]
        expected = greedy(placer, nodes, amounts, free)
        got = placer.place(nodes, amounts, free)
        assert got == expected and (got is None or list(got.items()) == list(expected.items())), trial
        if split:
            got = placer.place_split(nodes, total, len(nodes), free)
            assert got == expected and (got is None or list(got.items()) == list(expected.items())), trial
        placed += expected is not None
        refused += expected is None
    assert placed > 300 and refused > 100 and runs > 300


def test_surely_fits_is_sufficient_for_place():
    """Whenever ``surely_fits`` says yes, the greedy placement of the split shares succeeds
    (random machines, totals and free bytes); and it says yes on a plainly roomy case."""
    import numpy as np
    from mrsched.schedulers.model.cluster import Cluster
    from mrsched.schedulers.profile.placement import BurstBufferPlacer, split_shares
    rng = np.random.default_rng(3)
    said_yes = 0
    for _ in range(2000):
        storage = int(rng.integers(1, 6))
        cluster = Cluster.simple(16, bb_capacity=[int(c) for c in rng.integers(0, 400, storage)])
        placer = BurstBufferPlacer(cluster)
        n = int(rng.integers(1, 17))
        total = int(rng.integers(1, 900))
        free = [int(f) for f in rng.integers(0, 400, storage)]
        if placer.surely_fits(-(-total // n), n, free):
            said_yes += 1
            assert placer.place(list(range(n)), split_shares(total, n), free) is not None
    assert said_yes > 100
    assert BurstBufferPlacer.surely_fits(10, 3, [15, 15, 10])
    assert not BurstBufferPlacer.surely_fits(10, 4, [15, 15, 10])


def test_capacity_fits_counts_whole_shares_on_many_storage_nodes(share_count):
    """``capacity_fits`` is ``sum(free // share) >= nodes`` whatever the number of storage
    nodes, in C (``_shares.holds``) or in Python (on more than 16, from the total's bounds or
    one pass of ``map``); the cases right at the bounds' edges (a share one byte short on every
    storage node) and values beyond int64 included."""
    rng = np.random.default_rng(11)
    placer = BurstBufferPlacer(Cluster.simple(4, bb_capacity=[1]))
    seen = set()
    for _ in range(4000):
        storage = int(rng.choice([3, 16, 17, 100]))
        share = int(rng.integers(1, 1_000))
        free = [int(f) for f in rng.integers(0, 20 * share, storage)]
        exact = sum(f // share for f in free)
        nodes = max(1, exact + int(rng.integers(-2, 3)))
        got = placer.capacity_fits(share, nodes, free)
        assert got == (exact >= nodes), (share, nodes, free)
        seen.add((storage > 16, got))
    assert seen == {(True, True), (True, False), (False, True), (False, False)}
    edge = [2 * 10 - 1] * 100           # each holds one share of 10, the total nearly two
    assert placer.capacity_fits(10, 100, edge) and not placer.capacity_fits(10, 101, edge)
    assert placer.capacity_fits(0, 10**9, edge)
    assert placer.capacity_fits(5, 0, []) and not placer.capacity_fits(5, 1, [])
    huge = [2**70, 2**64, 5]            # beyond int64: counted in Python, exactly
    assert placer.capacity_fits(2**62, 2**8 + 4, huge) and not placer.capacity_fits(2**62, 2**8 + 5, huge)
    assert placer.capacity_fits(3, 2**62, [2**64 - 1]) and not placer.capacity_fits(3, 2**63, [2**64 - 1])


def test_place_mask_is_the_per_node_greedy_with_bytes_per_storage(share_count):
    """``place_mask`` (a node mask, runs found in numpy when wide, a chunked placement) gives the
    per-node greedy's placement, node order included, and the bytes it puts on each storage
    node; narrow and wide jobs, chassis in index order or interleaved as Batsim's name order
    interleaves them; the bytes counted in C or in Python."""
    rng = np.random.default_rng(7)
    placed = refused = wide = 0
    for trial in range(600):
        n, ns = int(rng.integers(2, 400)), int(rng.integers(1, 9))
        storage = tuple(StorageNode(id=n + s, name=f"bb{s}", capacity=1000, group=s % 3, chassis=s) for s in range(ns))
        chassis = [int(x) for x in rng.integers(0, 8, n)]
        if trial % 2:
            chassis.sort()
        cluster = Cluster(compute_ids=tuple(range(n)), compute_names=tuple(f"n{k}" for k in range(n)),
                          storage=storage, group=tuple(c % 3 for c in chassis), chassis=tuple(chassis),
                          storage_ids=tuple(s.id for s in storage))
        placer = BurstBufferPlacer(cluster)
        assert (placer._taker is not None) == (share_count == "compiled")
        nodes = sorted(int(x) for x in rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        mask = sum(1 << k for k in nodes)
        total = int(rng.integers(0, 40 * len(nodes)))
        free = [int(x) for x in rng.integers(0, 8 * len(nodes), ns)]
        expected = greedy(placer, nodes, split_shares(total, len(nodes)), free)
        got = placer.place_mask(mask, total, len(nodes), free)
        if expected is None:
            assert got is None, trial
            refused += 1
            continue
        per = [0] * ns
        for s, b in expected.values():
            per[s] += b
        assert got[0] == tuple(per), trial
        assert got[1] == expected and list(got[1].items()) == list(expected.items()), trial
        assert list(got[1]) == list(expected) and len(got[1]) == len(expected), trial
        assert all(got[1][k] == v for k, v in expected.items()), trial
        placed += 1
        wide += len(nodes) >= 48
    assert placed > 200 and refused > 50 and wide > 100


@pytest.mark.parametrize("share_count", ["compiled"], indirect=True)
def test_compiled_share_count_is_the_python_one_and_falls_back_beyond_int64(share_count):
    """The C count (``_shares.ShareTaker``) and the Python one (``_take``, run by run) give the
    same bytes per storage node, or both refuse, on random machines with storage nodes of
    shared orders (chassis without storage, groups that fall back on the same ones), shares
    that drop by one byte after the first nodes, and free bytes near the edge; values beyond
    int64 are counted in Python; a mask naming a node beyond the machine is an error."""
    rng = np.random.default_rng(11)
    agree = refused = 0
    for trial in range(800):
        n, ns = int(rng.integers(1, 300)), int(rng.integers(0, 10))
        storage = tuple(StorageNode(id=n + s, name=f"bb{s}", capacity=1000, group=s % 3, chassis=2 * s)
                        for s in range(ns))
        chassis = [int(x) for x in rng.integers(0, 12, n)]       # odd chassis have no storage
        if trial % 3 == 0:
            chassis.sort()
        cluster = Cluster(compute_ids=tuple(range(n)), compute_names=tuple(f"n{k}" for k in range(n)),
                          storage=storage, group=tuple(c % 3 for c in chassis), chassis=tuple(chassis),
                          storage_ids=tuple(s.id for s in storage))
        compiled = BurstBufferPlacer(cluster)
        placement.use(False)
        python = BurstBufferPlacer(cluster)
        placement.use(True)
        assert compiled._taker is not None and python._taker is None
        nodes = sorted(int(x) for x in rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        mask = sum(1 << k for k in nodes)
        total = int(rng.integers(0, 30 * len(nodes)))
        base, extra = divmod(total, len(nodes))
        free = [int(x) for x in rng.integers(0, 6 * len(nodes) + 1, ns)]
        got = compiled._given(mask, len(nodes), base, extra, free)
        assert got == python._given(mask, len(nodes), base, extra, free), trial
        assert got == compiled._taker.take(mask.to_bytes((mask.bit_length() + 7) // 8, "little"),
                                           base, extra, free), trial
        agree += got is not None
        refused += got is None
    assert agree > 250 and refused > 150

    cluster = Cluster.simple(4, bb_capacity=[10, 10])
    compiled = BurstBufferPlacer(cluster)
    huge = [2**70, 5]
    assert compiled._given(0b0111, 3, 2**66, 0, huge) == (3 * 2**66, 0)      # Python, exactly
    with pytest.raises(OverflowError):
        compiled._taker.take(b"\x07", 2**66, 0, huge)
    with pytest.raises(ValueError, match="node 4 is beyond the machine's 4 compute nodes"):
        compiled._taker.take(b"\x17", 1, 0, [10, 10])
    with pytest.raises(ValueError, match="free has 1 storage nodes, the machine 2"):
        compiled._taker.take(b"\x01", 1, 0, [10])
