"""``hierarchical`` bounds every resource down the tree (issue 44 item 4, seed 004 Sect. 5.3's
Hierarchical Bounding Principle): nodes, burst buffer per storage node, I/O bandwidth, counters
and a power budget; a job goes only to a child where some leaf can hold it."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest

from mrsched.errors import ConfigError
from mrsched.platforms.bundled import bundled_path
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers import registry
from mrsched.schedulers.model.cluster import Cluster, StorageNode
from mrsched.schedulers.model.job import Job, Request, job_from_batsim
from mrsched.schedulers.model.decisions import Start
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.policies.fcfs import FCFS
from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.schedulers.profile.feasibility import infeasible_reason
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.ensemble import generate_ensemble
from mrsched.workloads.platform_info import read_platform_info
from mrsched.workloads.synthetic import generate_synthetic

from test_cost import begins, submitted
from test_hierarchical import ids_of


def recording(sched) -> dict[str, Start]:
    """Every Start the tree sends, by job id (wraps the policy's schedule)."""
    starts: dict[str, Start] = {}
    policy = sched.policy
    inner = policy.schedule

    def schedule(ctx):
        out = inner(ctx)
        for d in out:
            if type(d) is Start:
                starts[d.job_id] = d
        return out

    policy.schedule = schedule
    return starts


def run_dragonfly(tmp_path, options, jobs=160, seed=3):
    platform = str(bundled_path("dragonfly96"))
    wl_path = tmp_path / "w.json"
    write_workload(wl_path, generate_synthetic(jobs=jobs, platform=read_platform_info(platform), seed=seed))
    sched = make_scheduler("hierarchical", options)
    starts = recording(sched)
    simulate(platform, [str(wl_path)], sched, export_prefix=str(tmp_path / "out"))
    with open(tmp_path / "out_jobs.csv") as f:
        rows = {f"w0!{r['job_id']}": r for r in csv.DictReader(f)}
    return sched, starts, rows, json.loads(wl_path.read_text())


def check_bounds_over_the_run(policy, starts, rows) -> int:
    """Sweep the run (engine's start and finish times): at every instant, the jobs of every
    instance hold no more nodes than its grant and no more bytes on any storage node than its
    bound in force then (``shares=queue`` changes them: ``bounds_log_``), and children's bounds
    sum to at most their parent's. Returns the number of instants checked."""
    cluster = policy.cluster_
    changes = sorted(policy.bounds_log_, key=lambda e: e[0])
    storage = {st.id: k for k, st in enumerate(cluster.storage)}
    events = []
    for jid, d in starts.items():
        row = rows[jid]
        nodes = ids_of(row["allocated_resources"])
        assert nodes == {cluster.compute_ids.index(r) for r in d.nodes} or nodes == set(d.nodes)
        bb = [0] * len(storage)
        for shares in d.bb.values():
            for sid, nbytes in shares.items():
                bb[storage[sid]] += nbytes
        leaf = policy.placed_[jid]
        events.append((float(row["finish_time"]), 0, leaf, nodes, bb))    # ends first at equal times
        events.append((float(row["starting_time"]), 1, leaf, nodes, bb))
    events.sort(key=lambda e: (e[0], e[1]))
    instances = policy.instances()
    bound = {inst.path: inst.static_bb for inst in instances}
    nxt = 0
    nodes_held = defaultdict(int)
    bb_held = defaultdict(lambda: [0] * len(storage))
    checked = 0
    for k, (t, kind, leaf, nodes, bb) in enumerate(events):
        sign = 1 if kind else -1
        for inst in instances:
            if leaf == inst.path or leaf.startswith(inst.path + "."):
                if kind:
                    assert all(inst.lo <= n < inst.hi for n in nodes), (inst.path, t)
                nodes_held[inst.path] += sign * len(nodes)
                held = bb_held[inst.path]
                for s, b in enumerate(bb):
                    held[s] += sign * b
        if k + 1 < len(events) and events[k + 1][:2] == (t, kind):
            continue     # check once all events of this instant and kind are in
        while nxt < len(changes) and changes[nxt][0] <= t + 1e-6:
            bound[changes[nxt][1]] = changes[nxt][2]
            nxt += 1
        for inst in instances:
            assert nodes_held[inst.path] <= inst.hi - inst.lo, (inst.path, t)
            assert all(h <= cap for h, cap in zip(bb_held[inst.path], bound[inst.path])), (inst.path, t)
            if inst.children:
                for s, cap in enumerate(bound[inst.path]):
                    assert sum(bound[c.path][s] for c in inst.children) <= cap, (inst.path, t)
            checked += 1
    return checked


@pytest.mark.parametrize("options", [
    {"depth": 2, "leaf_policy": "fcfs-easy"},                       # the run
    {"depth": 3, "branching": "2,3", "leaf_policy": "conservative-bb", "distribution": "weighted"},
    {"shape": '{"children": [{"policy": "fcfs-bb", "size": 64, "bb": 0.5}, {"policy": "sjf-bb"}]}'},
    {"depth": 3, "branching": "2,2", "leaf_policy": "fcfs-easy", "shares": "queue"},
    {"depth": 2, "branching": 3, "leaf_policy": "conservative-bb", "shares": "queue"},
])
def test_burst_buffer_workload_runs_within_every_bound_at_every_level(tmp_path, options):
    sched, starts, rows, wl = run_dragonfly(tmp_path, options)
    policy = sched.policy
    instances = policy.instances()
    leaves = [i for i in instances if i.leaf]
    # the leaves hold storage now, and jobs asking burst buffer ran
    assert all(sum(leaf.static_bb) > 0 for leaf in leaves)
    asked = {f"w0!{j['id']}" for j in wl["jobs"] if j.get("burst_buffer")}
    ran_bb = asked & {j for j, r in rows.items() if r["final_state"] == "COMPLETED_SUCCESSFULLY"}
    assert len(ran_bb) > 0.4 * len(asked)     # the rest are wider than the leaves (checked below)
    # a rejected job fits no leaf's bounds (checked here on every leaf's bounded machine; with
    # shares=queue a leaf may get all its parents' bytes: its machine holds them)
    requests = {f"w0!{j['id']}": j for j in wl["jobs"]}
    for jid, row in rows.items():
        if row["final_state"] == "REJECTED":
            assert "fits the machine but no leaf's bounds below instance" in row["metadata"], row["metadata"]
            req = job_from_batsim(jid, requests[jid], {}).request
            for leaf in leaves:
                assert infeasible_reason(leaf.runtime.cluster, req) is not None, (jid, leaf.path)
            if options.get("shares") == "queue":
                assert req.nodes > max(leaf.hi - leaf.lo for leaf in leaves)    # only too wide
        else:
            assert row["final_state"] == "COMPLETED_SUCCESSFULLY", jid
    if options.get("shares") == "queue":
        assert len(policy.bounds_log_) > 50         # the shares moved
    # children's bounds sum to at most their parent's, storage node by storage node
    for inst in instances:
        if inst.children:
            for s, cap in enumerate(inst.bb):
                assert sum(c.bb[s] for c in inst.children) <= cap
            assert sum(c.hi - c.lo for c in inst.children) == inst.hi - inst.lo
    assert check_bounds_over_the_run(policy, starts, rows) > 100
    # metrics per level: every depth accounts for the same work; routed = received
    levels = policy.stats()
    node_seconds = [v["node_seconds"] for v in levels.values()]
    assert node_seconds[0] > 0 and node_seconds == pytest.approx([node_seconds[0]] * len(levels), rel=1e-9)
    table = policy.instance_stats()
    assert [r["instance"] for r in table] == [i.path for i in instances]
    assert table[0]["routed"] == len(rows) and table[0]["bb_bytes"] == sum(st.capacity for st in policy.cluster_.storage)
    assert all(r["peak_bb_bytes"] <= r["bb_bytes_max"] and r["peak_nodes"] <= r["nodes"] for r in table)
    if options.get("shares") != "queue":
        assert all(r["bb_bytes_max"] == r["bb_bytes"] for r in table)


def test_storage_goes_to_the_children_holding_its_nearest_nodes():
    """A storage node's bytes follow the compute nodes of its chassis (else group, else all):
    a child holding a whole chassis holds its storage node whole."""
    cl = Cluster(compute_ids=tuple(range(8)), compute_names=tuple(f"n{k}" for k in range(8)),
                 group=(0,) * 4 + (1,) * 4, chassis=(0, 0, 1, 1, 2, 2, 3, 3),
                 storage=tuple(StorageNode(id=8 + s, name=f"bb{s}", capacity=1000, group=g, chassis=c)
                               for s, (g, c) in enumerate([(0, 0), (0, 1), (1, 2), (1, 9), (None, None)])))
    sched = make_scheduler("hierarchical", {"shape": '{"children": [{"size": 3}, {"size": 5}]}'})
    sched.policy.setup(cl)
    a, b = sched.policy.instances()[1:]
    # chassis 0 -> all to a; chassis 1 (nodes 2,3) split 1:1; chassis 2 -> b; storage 3's chassis
    # has no compute node: its group (nodes 4-7) -> b; storage 4, no place: by node counts 3:5
    assert a.bb == (1000, 500, 0, 0, 375) and b.bb == (0, 500, 1000, 1000, 625)
    leaf_a = a.runtime.cluster
    assert [(st.id, st.capacity) for st in leaf_a.storage] == [(8, 1000), (9, 500), (12, 375)]


def test_nodes_of_a_chassis_without_storage_share_their_group_s():
    """Nodes 4-7 sit in a chassis without storage: the group's storage node is their nearest,
    so a child holding them gets part of it (never a leaf without burst buffer)."""
    cl = Cluster(compute_ids=tuple(range(8)), compute_names=tuple(f"n{k}" for k in range(8)),
                 group=(0,) * 8, chassis=(0,) * 4 + (1,) * 4,
                 storage=(StorageNode(id=8, name="bb0", capacity=1000, group=0, chassis=0),))
    sched = make_scheduler("hierarchical", {"depth": 2})
    sched.policy.setup(cl)
    assert [i.bb for i in sched.policy.instances()] == [(1000,), (500,), (500,)]


def test_shape_fractions_and_counters_are_split():
    shape = {"children": [{"policy": "fcfs", "size": 2, "bb": 0.75}, {"policy": "filler"}]}
    sched = make_scheduler("hierarchical", {"shape": json.dumps(shape)})
    cl = Cluster.simple(8, bb_capacity=[1000, 101], counters={"licences": 16})
    sched.policy.setup(cl)
    _, a, b = sched.policy.instances()
    assert a.bb == (750, 75) and b.bb == (250, 26)
    assert a.counters == {"licences": 4.0} and b.counters == {"licences": 12.0}
    assert b.runtime.cluster.counters == {"licences": 12.0}


def test_a_job_goes_to_the_next_child_that_can_hold_it():
    """Round-robin hands a job the turn's child cannot hold to the next one that can (issue
    44: routed only to a child whose bounds it fits), instead of refusing it."""
    sched = make_scheduler("hierarchical", {"shape": '{"children": [{"size": 2}, {"size": 6}]}'})
    sched.handle_message(begins(8))
    reply = sched.handle_message(submitted([1, 2, 3], 0.0, res=4))
    assert [e["type"] for e in reply["events"]] == ["EXECUTE_JOB"]
    assert sched.policy.placed_ == {"w!1": "0.1"}
    assert [i.rejected for i in sched.policy.instances()] == [0, 0, 0]


def test_burst_buffer_wider_than_every_leaf_is_refused_naming_the_bounds():
    policy = make_scheduler("hierarchical", {"depth": 2}).policy
    policy.setup(Cluster.simple(4, bb_capacity=[100, 100]))
    job = Job("w!1", 0.0, Request(nodes=2, walltime=10.0, bb_total=300, bb_per_node=150))
    root = policy.instances()[0]
    assert policy._pick(root, job) is None
    assert policy._unfit_reason(root, job.request) == (
        "fits the machine but no leaf's bounds below instance 0 (with leaf 0.0's bounds as the machine: asks 150 "
        "bytes of burst buffer per node, the largest storage node holds 50; seed 004 Sect. 5.3.1: size the "
        "shares by the largest job)")
    assert [i.bb for i in policy.instances()] == [(100, 100), (50, 50), (50, 50)]


# -- I/O bandwidth ----------------------------------------------------------------------------
def test_bandwidth_tree_is_split_edge_switches_with_their_nodes(tmp_path):
    path = tmp_path / "io.xml"
    path.write_text(generate_iotree(units=3, nodes_per_unit=4).xml)
    wl = tmp_path / "w.json"
    write_workload(wl, generate_ensemble(jobs=4, nb_res=2))
    sched = make_scheduler("hierarchical", {"shape": '{"children": [{"size": 5, "bandwidth": 0.5}, {}, {}]}'})
    simulate(str(path), [str(wl)], sched, export_prefix=str(tmp_path / "out"))
    policy = sched.policy
    machine = BandwidthTree.from_cluster(policy.cluster_)
    root, *kids = policy.instances()
    assert root.top_bw == machine.top_bw
    for k, level in enumerate(machine.top_bw):
        assert kids[0].top_bw[k] == pytest.approx(level / 2)
        assert sum(c.top_bw[k] for c in kids) == pytest.approx(level)
    for c in kids:
        tree = BandwidthTree.from_cluster(c.runtime.cluster)    # the leaf's own reading of its bounds
        assert tree.top_bw == pytest.approx(c.top_bw)
        for e in range(tree.nb_edges):
            mask = tree.edge_masks[e]
            first = (mask & -mask).bit_length() - 1
            global_edge = policy.edge_of_[c.lo + first]
            held = bin(policy.edge_masks_[global_edge]).count("1")
            assert tree.edge_bw[e] == pytest.approx(machine.edge_bw[machine.edge_of[c.lo + first]]
                                                    * mask.bit_count() / held)


# -- power ------------------------------------------------------------------------------------
class CappedFCFS(FCFS):
    """fcfs taking a ``power_cap`` (a stand-in for a leaf policy with power support)."""

    _parameter_constraints = {**FCFS._parameter_constraints, "power_cap": Param(float, min=0.0)}

    def __init__(self, *, power_cap: float = 0.0, **kw):
        super().__init__(**kw)
        self.power_cap = power_cap


def test_power_cap_is_refused_when_a_leaf_policy_cannot_take_it():
    with pytest.raises(ConfigError) as exc:
        make_scheduler("hierarchical", {"depth": 2, "leaf_policy": "slurm-bf", "power_cap": "5000"})
    assert exc.value.message == ("policy 'hierarchical': option 'power_cap' needs leaf policies that take "
                                 "power_cap; leaf 0.0 runs 'slurm-bf', which does not")


def test_power_cap_is_split_among_the_leaves(monkeypatch):
    monkeypatch.setitem(registry.POLICIES, "capped-fcfs", registry.Entry(CappedFCFS, {}, "test"))
    shape = {"children": [{"policy": "capped-fcfs", "size": 2, "power": 0.5},
                          {"children": [{"policy": "capped-fcfs"}, {"policy": "capped-fcfs", "size": 1}]}]}
    sched = make_scheduler("hierarchical", {"shape": json.dumps(shape), "power_cap": 1000})
    sched.handle_message(begins(8))
    got = {i.path: (i.power, i.runtime.policy.power_cap if i.leaf else None) for i in sched.policy.instances()}
    # 0.1 holds 6 nodes: 5 to 0.1.0, 1 to 0.1.1, and its 500 W in that proportion
    assert got == {"0": (1000.0, None), "0.0": (500.0, 500.0), "0.1": (500.0, None),
                   "0.1.0": (pytest.approx(2500 / 6), pytest.approx(2500 / 6)),
                   "0.1.1": (pytest.approx(500 / 6), pytest.approx(500 / 6))}
    with pytest.raises(ConfigError, match="leaf 0.0 sets its own power_cap"):
        make_scheduler("hierarchical", {"power_cap": 10, "shape": json.dumps(
            {"children": [{"policy": "capped-fcfs", "options": {"power_cap": 5}}]})})


@pytest.mark.parametrize("shape,message", [
    ({"children": [{"bb": 1.5}]}, "shape node 0.0: bb must be a fraction of the parent's, in (0, 1], got 1.5"),
    ({"children": [{"power": 0.6}, {"power": 0.6}]}, "the children of shape node 0 ask 1.2 of its power, more than all of it"),
])
def test_bad_fractions_are_one_line_errors(shape, message):
    with pytest.raises(ConfigError) as exc:
        make_scheduler("hierarchical", {"shape": json.dumps(shape)})
    assert exc.value.message == f"policy 'hierarchical': {message}"


def test_platform_without_storage_gives_leaves_none(tmp_path):
    """Unchanged leaves where there is nothing to split (byte-identical runs: test_hierarchical)."""
    path = tmp_path / "p.xml"
    path.write_text(generate_cluster(nodes=6, pfs=False).xml)
    sched = make_scheduler("hierarchical", {"depth": 2, "branching": 2})
    wl = tmp_path / "w.json"
    write_workload(wl, generate_ensemble(jobs=6, nb_res=6))
    simulate(str(path), [str(wl)], sched, export_prefix=str(tmp_path / "out"))
    for leaf in sched.policy.instances()[1:]:
        cl = leaf.runtime.cluster
        assert cl.storage == () and cl.pfs_id is None and cl.counters == {} and cl.storage_ids == ()


# -- shares=queue ------------------------------------------------------------------------------
def storage_begins(n: int, capacity: int) -> dict:
    msg = begins(n)
    msg["events"][0]["data"]["storage_resources"] = [
        {"id": n, "name": "bb0", "state": "idle", "properties": {"bb_capacity": str(capacity), "role": "storage"}}]
    msg["events"][0]["data"]["nb_resources"] = n + 1
    return msg


def bb_jobs(jobs: dict[int, int], now: float = 0.0) -> dict:
    """Two-node jobs asking the given bytes of burst buffer, submitted at ``now``."""
    return {"now": now, "events": [{"timestamp": now, "type": "JOB_SUBMITTED", "data": {"job_id": f"w!{i}", "job": {
        "id": f"w!{i}", "res": 2, "walltime": 100, "subtime": now, "burst_buffer": nbytes}}}
        for i, nbytes in jobs.items()]}


def completed(job: str, now: float) -> dict:
    return {"now": now, "events": [{"timestamp": now, "type": "JOB_COMPLETED", "data": {
        "job_id": job, "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "0-1"}}]}


def started(reply) -> list[str]:
    return [e["data"]["job_id"] for e in reply["events"] if e["type"] == "EXECUTE_JOB"]


def test_queue_shares_give_a_child_the_bytes_its_queue_asks():
    """Static halves (100 + 100 bytes) cannot hold a 160-byte job; shares=queue gives the child
    whose queue asks it what the other does not need, then gives it back."""
    static = make_scheduler("hierarchical", {"depth": 2})
    static.handle_message(storage_begins(4, 200))
    reply = static.handle_message(bb_jobs({1: 160}))
    assert [e["type"] for e in reply["events"]] == ["SET_JOB_METADATA", "REJECT_JOB"]

    sched = make_scheduler("hierarchical", {"depth": 2, "shares": "queue"})
    sched.handle_message(storage_begins(4, 200))
    policy = sched.policy
    assert started(sched.handle_message(bb_jobs({1: 160, 2: 80}))) == ["w!1"]
    _, a, b = policy.instances()
    assert (a.bb, b.bb) == ((160,), (40,))      # w!2 (80 bytes) waits on 0.1 for the rest
    assert started(sched.handle_message(completed("w!1", 10.0))) == ["w!2"]
    assert b.bb[0] >= 80 and a.bb[0] + b.bb[0] <= 200


def test_queue_shares_drain_for_the_oldest_job_instead_of_starving_both():
    """Two 120-byte jobs on two children of a 200-byte machine: split by their queues (100 +
    100) neither would ever start; the oldest gets what the other does not need, then the other."""
    sched = make_scheduler("hierarchical", {"depth": 2, "shares": "queue"})
    sched.handle_message(storage_begins(4, 200))
    assert started(sched.handle_message(bb_jobs({1: 120, 2: 120}))) == ["w!1"]
    assert started(sched.handle_message(completed("w!1", 10.0))) == ["w!2"]
    assert [i.max_bb for i in sched.policy.instances()] == [200, 200, 200]


def test_queue_shares_is_a_known_option():
    with pytest.raises(ConfigError, match="option 'shares'"):
        make_scheduler("hierarchical", {"shares": "dynamic"})


def test_registered_leaves_keep_their_share_of_the_cap(tmp_path):
    """fcfs-easy leaves given their share of a 1,400 W cap on 8 nodes at 100:200 W: each leaf
    counts a job's power as a flat run does, so the machine's power (idle nodes at 100 W, busy
    ones at 200 W) never passes 1,400 W, where the same tree uncapped reaches 1,600 W."""
    from mrsched.analysis import load_run
    from mrsched.analysis.power import run_energy_metrics
    from mrsched.cli import main

    platform = tmp_path / "p.xml"
    from mrsched.platforms.wattage import with_wattage

    platform.write_text(with_wattage(generate_cluster(nodes=8, pfs=False).xml, "100:200"))
    wl = tmp_path / "w.json"
    assert main(["workload", "synthetic", "--platform", str(platform), "--jobs", "40", "--model",
                 "delay", "--seed", "1", "-o", str(wl)]) == 0
    peaks = {}
    for cap in ("1400", "0"):
        out = tmp_path / f"cap{cap}"
        assert main(["run", "-p", str(platform), "-w", str(wl), "--policy", "hierarchical",
                     "-O", "depth=2", "-O", "leaf_policy=fcfs-easy", "-O", f"power_cap={cap}",
                     "-o", str(out)]) == 0
        peaks[cap] = run_energy_metrics(load_run(out))["peak_power_w"]
    assert peaks["1400"] <= 1400 < peaks["0"], peaks
