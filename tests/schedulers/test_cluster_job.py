"""Reading the machine from SIMULATION_BEGINS and requests from job fields."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from mrsched.errors import ProtocolError, WorkloadError
from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.model.cluster import Cluster, StorageNode, cluster_from_simulation_begins
from mrsched.schedulers.model.job import INF, job_from_batsim, request_from_fields
from mrsched.schedulers.profile.placement import BurstBufferPlacer
from mrsched.schedulers.model.job import Request


def dragonfly_begins() -> dict:
    """Batsim ids follow lexicographic host names: node_0, node_1, node_10, node_11, node_2..."""
    names = sorted([f"node_{k}" for k in range(12)])
    compute, storage = [], []
    for rid, name in enumerate(names):
        k = int(name.split("_")[1])
        props = {"group": str(k // 6), "chassis": str((k // 3) % 2), "gpus": str(k % 3)}
        if k % 3 == 2:
            storage.append((name, {"role": "storage", "bb_capacity": "100", **props}))
        else:
            compute.append((name, {"role": "", **props}))
    out_c = [{"id": i, "name": n, "properties": p} for i, (n, p) in enumerate(compute)]
    out_s = [{"id": len(compute) + i, "name": n, "properties": p} for i, (n, p) in enumerate(storage)]
    out_s.append({"id": len(compute) + len(storage), "name": "pfs", "properties": {"role": "storage"}})
    return {"nb_resources": 13, "compute_resources": out_c, "storage_resources": out_s,
            "config": {"sched-config": json.dumps({"counters": {"licenses": 3}})}}


def test_cluster_keeps_batsim_ids_names_storage_pfs_and_coordinates():
    cl = cluster_from_simulation_begins(dragonfly_begins())
    assert cl.nb_nodes == 8
    assert cl.compute_names[:3] == ("node_0", "node_1", "node_10")
    assert cl.compute_ids == tuple(range(8))
    assert [s.name for s in cl.storage] == ["node_11", "node_2", "node_5", "node_8"]
    assert all(s.capacity == 100 for s in cl.storage)
    assert cl.pfs_id == 12
    k10 = cl.compute_names.index("node_10")
    assert (cl.group[k10], cl.chassis[k10], cl.gpus[k10]) == (1, 1, 1)
    assert cl.counters == {"licenses": 3.0}
    assert cl.sched_config == {"counters": {"licenses": 3}}


def test_placement_prefers_same_chassis_then_group_then_any():
    storage = (StorageNode(10, "s0", 100, group=0, chassis=0), StorageNode(11, "s1", 100, group=0, chassis=1),
               StorageNode(12, "s2", 100, group=1, chassis=0))
    cl = Cluster(compute_ids=(0, 1, 2), compute_names=("a", "b", "c"), storage=storage,
                 group=(0, 1, 0), chassis=(1, 0, 0))
    placer = BurstBufferPlacer(cl)
    assert placer.order == [(1, 0, 2), (2, 0, 1), (0, 1, 2)]
    # node 0 prefers s1 (same chassis), then s0 (same group)
    assert placer.place([0, 1, 2], [60, 60, 60], [100, 100, 100]) == {0: (1, 60), 1: (2, 60), 2: (0, 60)}
    assert placer.place([0, 2], [60, 60], [100, 50, 100]) == {0: (0, 60), 2: (2, 60)}
    assert placer.place([0, 1], [60, 60], [50, 50, 50]) is None


def test_placement_is_tracked_over_the_whole_window():
    cl = Cluster.simple(2, bb_capacity=[100, 100])
    prof = AvailabilityProfile(cl, 0)
    # node 0 and storage 0 are taken over [5, 10): a job over [0, 20) gets node 1 and storage 1
    t, a = prof.earliest_start(Request(nodes=1, walltime=5, bb_total=100, bb_per_node=100))
    prof.reserve(5, 10, a)
    t, b = prof.earliest_start(Request(nodes=1, walltime=20, bb_total=100, bb_per_node=100))
    assert t == 0 and b.placement == {1: (1, 100)} and b.bb == (0, 100)


def test_a_start_names_its_burst_buffer_shares_by_batsim_ids():
    """``Start.bb``, read when a job model needs it (io-phased, storage labels): each compute id
    with its share on its storage id, from the allocation's placement."""
    from mrsched.schedulers.model.contract import SchedulingContext
    storage = (StorageNode(7, "bb0", 100), StorageNode(9, "bb1", 100))
    cl = Cluster(compute_ids=(2, 3, 5), compute_names=("a", "b", "c"), storage=storage)
    prof = AvailabilityProfile(cl, 0)
    job = job_from_batsim("w!1", {"id": "w!1", "subtime": 0, "walltime": 10, "res": 3, "burst_buffer": 150})
    alloc = prof.fits_now(job.request)
    d = SchedulingContext(0.0, cl, prof, [job], {}, [], []).start(job, alloc)
    assert d.nodes == (2, 3, 5) and (2, 3, 5) == d.nodes and hash(d.nodes) == hash((2, 3, 5))
    assert list(d.nodes) == [2, 3, 5] and d.nodes[-1] == 5 and len(d.nodes) == 3 and 3 in d.nodes
    assert d.nodes != [2, 3, 5] and d.nodes != (2, 3) and repr(d.nodes) == "(2, 3, 5)"
    assert pickle.loads(pickle.dumps(d.nodes)) == (2, 3, 5) and type(copy.deepcopy(d.nodes)) is tuple
    # shares of 50 bytes: two on bb0 (100 bytes), the third on bb1
    assert d.bb == {2: {7: 50}, 3: {7: 50}, 5: {9: 50}} and list(d.bb) == [2, 3, 5] and len(d.bb) == 3
    assert d.bb[5] == {9: 50} and dict(d.bb.items()) == {2: {7: 50}, 3: {7: 50}, 5: {9: 50}}


def test_request_forms_of_burst_buffer():
    r = request_from_fields("j", {"res": 4, "walltime": 100, "burst_buffer": 10})
    assert (r.bb_total, r.bb_per_node, r.walltime) == (10, 3, 100.0)
    r = request_from_fields("j", {"res": 4, "walltime": -1}, {"type": "delay", "delay": 5, "bb": 7})
    assert (r.bb_total, r.bb_per_node, r.walltime) == (28, 7, INF)
    r = request_from_fields("j", {"res": 2, "gpus_per_node": 2, "io_bandwidth_per_node": 1e6, "lic": 2},
                            counters=("lic",))
    assert (r.gpus_per_node, r.io_bandwidth_per_node, r.counters) == (2, 1e6, (("lic", 2.0),))


def test_job_profile_comes_from_simulation_begins_profiles():
    job = job_from_batsim("w0!1", {"id": "w0!1", "subtime": 3, "res": 2, "walltime": 10, "profile": "p"},
                          {"p": {"type": "delay", "delay": 1, "bb": 5}})
    assert job.request.bb_total == 10 and job.profile_data["type"] == "delay"


@pytest.mark.parametrize("job,field", [
    ({"subtime": 0, "walltime": 5}, "res"),
    ({"subtime": 0, "res": 0}, "res"),
    ({"subtime": 0, "res": 1.5}, "res"),
    ({"subtime": 0, "res": 1, "burst_buffer": "lots"}, "burst_buffer"),
    ({"subtime": 0, "res": 1, "burst_buffer": -3}, "burst_buffer"),
    ({"subtime": 0, "res": 1, "walltime": 0}, "walltime"),
    ({"res": 1}, "subtime"),
])
def test_bad_job_fields_name_job_and_field(job, field):
    with pytest.raises(WorkloadError) as err:
        job_from_batsim("w0!9", job)
    assert err.value.job == "w0!9" and err.value.field == field


def test_bad_host_property_and_sched_config_are_protocol_errors():
    data = dragonfly_begins()
    data["compute_resources"][0]["properties"]["gpus"] = "two"
    with pytest.raises(ProtocolError, match="gpus"):
        cluster_from_simulation_begins(data)
    data = dragonfly_begins()
    data["config"]["sched-config"] = "{not json"
    with pytest.raises(ProtocolError, match="sched-config"):
        cluster_from_simulation_begins(data)


def test_ids_and_runs_of_a_node_mask_match_a_bit_by_bit_reading():
    """A start's resource set comes from these: any gap or off-by-one starts a job on the
    wrong nodes."""
    import random

    rng = random.Random(7)
    flat = Cluster.simple(130)
    spaced = Cluster(compute_ids=tuple(range(0, 260, 2)), compute_names=tuple(f"n{k}" for k in range(130)))
    for mask in [0, 1, 1 << 129, (1 << 130) - 1, 0b1011] + [rng.getrandbits(130) for _ in range(300)]:
        ref = [k for k in range(130) if mask >> k & 1]
        assert flat.ids_of(mask) == ref
        assert spaced.ids_of(mask) == [2 * k for k in ref]
        runs = flat.runs_of(mask)
        assert [i for lo, hi in runs for i in range(lo, hi + 1)] == ref
        assert all(b[0] > a[1] + 1 for a, b in zip(runs, runs[1:]))   # maximal ranges
        assert spaced.runs_of(mask) is None                           # ids not consecutive


def test_request_hot_path_equals_the_checked_path_on_plain_fields():
    """Submitted jobs with plain numeric fields take a shortcut (shared Requests per shape);
    it must build exactly what the fully checked reading builds."""
    import random

    from mrsched.schedulers.model.job import _request_general

    rng = random.Random(3)
    for _ in range(2000):
        job = {"res": rng.randint(1, 64)}
        wall = rng.choice([None, -1, -7, 1, 59.5, 3600, float("inf"), "absent"])
        if wall != "absent":
            job["walltime"] = wall
        if rng.random() < 0.5:
            job["burst_buffer"] = rng.choice([0, 1, 10**9 + 7, 40 * 10**9])
        if rng.random() < 0.1:
            job["gpus_per_node"] = rng.choice([0, 2])
        profile = rng.choice([None, {"type": "delay"}, {"bb": 5 * 10**8}])
        try:
            expected = _request_general("w0!1", job, profile, ())
        except WorkloadError:
            with pytest.raises(WorkloadError):
                request_from_fields("w0!1", job, profile)
            continue
        assert request_from_fields("w0!1", job, profile) == expected
        assert request_from_fields("w0!1", job, profile) == expected   # from the shape cache


def test_a_request_of_a_plain_submission_is_the_general_one():
    """``request_from_fields``' shared requests (its hot path) are the ``Request(...)`` of
    the general reading: equal, hashed, printed, replaced and frozen alike."""
    import dataclasses

    from mrsched.schedulers.model.job import Request, request_from_fields

    got = request_from_fields("w0!1", {"res": 3, "walltime": 123457, "burst_buffer": 10})
    want = Request(nodes=3, walltime=123457.0, bb_per_node=4, bb_total=10)
    assert got == want and hash(got) == hash(want) and repr(got) == repr(want)
    assert dataclasses.replace(got, nodes=4) == dataclasses.replace(want, nodes=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.nodes = 5
    none = request_from_fields("w0!2", {"res": 2, "walltime": -1})
    assert none == Request(nodes=2) and not none.has_walltime
