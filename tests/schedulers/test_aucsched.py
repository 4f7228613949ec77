"""AUCSCHED (seed 002 Sect. 4): Fig. 2's nodesets, Fig. 4's bids and auction outcome, Eq. 19."""

from __future__ import annotations

import pytest

from mrsched.schedulers.optim.auction import Nodeset, job_bids, nodesets, preference, winner_determination
from mrsched.schedulers.model.cores import core_request


def test_fig2_nodesets_of_a_12_node_system():
    # free cores / GPUs of nodes 1..12 (top row of Fig. 2)
    free = [4, 8, 2, 4, 0, 4, 1, 2, 2, 2, 0, 4]
    gpus = [1, 2, 2, 0, 0, 2, 2, 1, 1, 0, 0, 1]
    got = [(s.first + 1, s.last + 1, s.cores, s.g) for s in nodesets(free, gpus)]
    assert got == [(1, 4, 18, 0), (6, 10, 11, 0), (12, 12, 4, 0),
                   (1, 3, 14, 1), (6, 9, 9, 1), (12, 12, 4, 1),
                   (2, 3, 10, 2), (6, 7, 5, 2)]
    assert isinstance(nodesets(free, gpus)[0], Nodeset)


FIG4_FREE = [8] * 64 + [0] * 16 + [8] * 64      # nodes 65-80 busy
FIG4_GPUS = [2] * 64 + [0] * 16 + [2] * 64
FIG4_JOBS = [
    core_request("J1", {"res": 512}),
    core_request("J2", {"res": 128, "nodes": 64, "cores_per_node": 2, "gpus_per_node": 1}),
    core_request("J3", {"res": 256, "nodes": 64, "cores_per_node": 4, "gpus_per_node": 2}),
    core_request("J4", {"res": 128, "nodes": 128, "cores_per_node": 1}),
]
BLOCK1, BLOCK2 = tuple(range(0, 64)), tuple(range(80, 144))


def test_fig4_bids():
    bids = [job_bids(r, FIG4_FREE, FIG4_GPUS, max_bids=4) for r in FIG4_JOBS]
    nodesets_of = [{(b.cls, b.nodes) for b in jb} for jb in bids]
    # J1 (512 cores): a whole block (type A) or both blocks combined (type C, J1's winning bid)
    assert {("A", BLOCK1), ("A", BLOCK2), ("C", BLOCK1 + BLOCK2)} <= nodesets_of[0]
    # J2, J3: 64 nodes aligned on either block; J4 (128 nodes x 1 core): only both blocks
    for j in (1, 2):
        assert {("A", BLOCK1), ("A", BLOCK2)} <= nodesets_of[j]
    assert nodesets_of[3] == {("C", BLOCK1 + BLOCK2)}
    assert all(len(jb) <= 4 for jb in bids)


def test_fig4_auction_outcome_starts_all_four_jobs():
    bids = [job_bids(r, FIG4_FREE, FIG4_GPUS, max_bids=4) for r in FIG4_JOBS]
    out = winner_determination([4.0, 3.0, 2.0, 1.0], FIG4_JOBS, bids, FIG4_FREE, FIG4_GPUS)
    assert out.status == "optimal" and sorted(out.winners) == [0, 1, 2, 3]
    lay = {j: dict(layout.per_node) for j, (_, layout) in out.winners.items()}
    # J1 and J4 on {1-64, 81-144}; J2 and J3 one block each (1 + 2 GPUs > 2 per node)
    assert set(lay[0]) == set(BLOCK1 + BLOCK2) and sum(lay[0].values()) == 512
    assert set(lay[3]) == set(BLOCK1 + BLOCK2) and set(lay[3].values()) == {1}
    assert {frozenset(lay[1]), frozenset(lay[2])} == {frozenset(BLOCK1), frozenset(BLOCK2)}
    assert set(lay[1].values()) == {2} and set(lay[2].values()) == {4}
    # Fig. 5: every free core is used (J1 takes what J2/J3/J4 leave: 5 and 3 per node)
    for n in BLOCK1 + BLOCK2:
        assert sum(lay[j].get(n, 0) for j in lay) == 8


def test_preference_values_follow_table_9_ranges():
    j1, j3 = FIG4_JOBS[0], FIG4_JOBS[2]
    a = preference(j1, "A", 10, 1, 144, 2)
    b = preference(j1, "B", 10, 1, 144, 2)
    c = preference(j1, "C", 10, 2, 144, 2)
    assert 1 > a > 0.75 > b > 0.5 > c > 0          # Eq. (18)
    assert a == pytest.approx(1 - 0.25 * 10 / 145)
    assert preference(j3, "A", 64, 1, 144, 2) == 1.0
    assert preference(j3, "C", 64, 2, 144, 2) == pytest.approx(0.5 - 0.5 * 2 / 3)
    assert preference(j1, "S", 500, 3, 144, 2) == 1.0   # SLURM bids: k1 = k2 = k3 = 0


def test_contiguous_jobs_get_no_type_c_bids():
    req = core_request("J", {"res": 600, "contiguous": True})
    assert job_bids(req, FIG4_FREE, FIG4_GPUS, max_bids=10) == []
    req = core_request("J", {"res": 600})
    assert [b.cls for b in job_bids(req, FIG4_FREE, FIG4_GPUS, max_bids=10)] == ["C"]


def test_auction_prefers_priority_then_preference():
    # one 64-node block, two 512-core jobs: only the higher-priority one can win
    free, gpus = [8] * 64, [2] * 64
    reqs = [core_request("a", {"res": 512}), core_request("b", {"res": 512})]
    bids = [job_bids(r, free, gpus, max_bids=4) for r in reqs]
    out = winner_determination([1.0, 2.0], reqs, bids, free, gpus)
    assert sorted(out.winners) == [1]
