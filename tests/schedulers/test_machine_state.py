"""The runtime's one ledger of what is in use (``model/machine.py``): cores, GPUs per node and
burst buffer are taken by every start, refused when over-allocated, given back at the end; a
policy sees this round's starts through ``ctx.machine`` at once."""

from __future__ import annotations

import pytest
from engine_run import begins_data

from mrsched.errors import SimulationError
from mrsched.schedulers.execution.runtime import PolicyRuntime
from mrsched.schedulers.model.cluster import Cluster, cluster_from_simulation_begins
from mrsched.schedulers.model.contract import Policy
from mrsched.schedulers.model.decisions import Allocation, Reject, Start
from mrsched.schedulers.model.job import job_from_batsim
from mrsched.schedulers.model.machine import MachineState, indices_of


def per_core(nodes: int = 2, cores: int = 4, gpus: int = 2) -> Cluster:
    """``nodes`` x ``cores`` core resources (ids in node order) with ``gpus`` GPUs per node."""
    props = [{"resource": "core", "node": f"n{k // cores}", "cores": str(cores)} for k in range(nodes * cores)]
    return cluster_from_simulation_begins(begins_data(nodes * cores, gpus=[gpus] * (nodes * cores),
                                                      node_props=props))


def job(jid: str, res: int, gpus: int = 0, walltime: float = 100.0):
    fields = {"subtime": 0, "res": res, "walltime": walltime, "profile": "p"}
    if gpus:
        fields["gpus_per_node"] = gpus
    return job_from_batsim(jid, fields)


def mask(*cores: int) -> int:
    return sum(1 << c for c in cores)


def test_indices_of_a_mask():
    assert indices_of(0) == []
    assert indices_of(mask(0, 1, 2, 5, 9, 10)) == [0, 1, 2, 5, 9, 10]


def test_cores_and_gpus_per_node_are_taken_refused_and_given_back():
    state = MachineState(per_core(), "policy 'p'")
    assert state.free_count == [4, 4] and state.free_gpus == [2, 2] and state.total_free == 8
    state.take(job("a", 3, gpus=1), Allocation(mask(0, 1, 4)), 10.0)
    assert state.free_count == [2, 3] and state.free_gpus == [1, 1] and state.total_free == 5
    held = state.holdings["a"]
    assert (held.end, held.per_node, held.gpus_per_node) == (110.0, ((0, 2), (1, 1)), 1)
    before = (state.busy, list(state.free_count), list(state.free_gpus), dict(state.holdings))
    # two more GPUs on n0, which has one left: refused by name, nothing changed
    with pytest.raises(SimulationError, match=r"job b: policy 'p' over-allocates GPUs on node n0: the job "
                                              r"asks 2 per node, 1 are free"):
        state.take(job("b", 1, gpus=2), Allocation(mask(2)), 10.0)
    assert (state.busy, state.free_count, state.free_gpus, state.holdings) == before
    with pytest.raises(SimulationError, match="job c: .*busy nodes"):
        state.take(job("c", 1), Allocation(mask(1)), 10.0)
    state.take(job("d", 1, gpus=1), Allocation(mask(5)), 10.0)    # n1 shares its GPUs
    assert state.free_gpus == [1, 0]
    state.release("a", Allocation(mask(0, 1, 4)))
    state.release("d", Allocation(mask(5)))
    assert (state.busy, state.free_count, state.free_gpus, state.holdings) == (0, [4, 4], [2, 2], {})


def test_whole_nodes_need_only_enough_gpus_and_keep_no_node_ledger():
    state = MachineState(Cluster.simple(3, gpus=[0, 2, 2], bb_capacity=[10]))
    assert state.nodes is None
    with pytest.raises(SimulationError, match="fewer than 1 GPUs"):
        state.take(job("a", 1, gpus=1), Allocation(mask(0)), 0.0)
    state.take(job("b", 2, gpus=2), Allocation(mask(1, 2), (7,)), 0.0)
    assert state.holdings == {} and state.bb_free == (3,)
    with pytest.raises(SimulationError, match="over-allocates burst buffer on storage bb0"):
        state.take(job("c", 1), Allocation(mask(0), (4,)), 0.0)


class Scripted(Policy):
    """Returns the decisions in ``script``; ``ctx_starts`` go through ``ctx.start`` and the
    free cores it then reads are kept in ``seen``."""

    name = "scripted"
    shares_gpus = True      # it is given GPU jobs on per-core machines: the ledger checks them

    def setup(self, cluster):
        super().setup(cluster)
        self.script_, self.ctx_starts_, self.seen_ = [], [], []

    def schedule(self, ctx):
        for jid, alloc in self.ctx_starts_:
            ctx.start(ctx.queue.get(jid), alloc)
            self.seen_.append((list(ctx.machine.free_count), list(ctx.machine.free_gpus)))
        out, self.script_, self.ctx_starts_ = self.script_ + ctx.decisions, [], []
        return out


def runtime(cluster: Cluster) -> PolicyRuntime:
    rt = PolicyRuntime(Scripted())
    rt.begin(cluster, 0.0)
    return rt


def test_the_runtime_refuses_gpus_a_node_does_not_have_left():
    rt = runtime(per_core())
    rt.submit(0, "w0!1", {"subtime": 0, "res": 2, "walltime": 10, "gpus_per_node": 2})
    rt.submit(0, "w0!2", {"subtime": 0, "res": 2, "walltime": 10, "gpus_per_node": 1})
    rt.policy.script_ = [Start("w0!1", (0, 1))]
    rt.step(0)
    rt.policy.script_ = [Start("w0!2", (2, 3))]      # hand-built: checked when applied
    with pytest.raises(SimulationError, match=r"w0!2: policy 'scripted' over-allocates GPUs on node n0"):
        rt.step(1)
    rt.complete(2, "w0!1")
    assert rt.machine.free_gpus == [2, 2] and rt.machine.busy == 0


def test_ctx_start_takes_at_once_and_the_policy_sees_it():
    rt = runtime(per_core())
    for k in (1, 2):
        rt.submit(0, f"w0!{k}", {"subtime": 0, "res": 2, "walltime": 10, "gpus_per_node": 1})
    rt.policy.ctx_starts_ = [("w0!1", Allocation(mask(0, 4))), ("w0!2", Allocation(mask(1, 2)))]
    rt.step(0)
    assert rt.policy.seen_ == [([3, 3], [1, 1]), ([1, 3], [0, 1])]
    assert set(rt.running) == {"w0!1", "w0!2"}
    rt.submit(1, "w0!3", {"subtime": 1, "res": 1, "walltime": 10, "gpus_per_node": 1})
    rt.policy.ctx_starts_ = [("w0!3", Allocation(mask(3)))]   # n0 has no GPU left
    with pytest.raises(SimulationError, match="w0!3: .*over-allocates GPUs on node n0"):
        rt.step(1)


def test_a_start_must_be_the_one_ctx_start_took():
    rt = runtime(per_core())
    rt.submit(0, "w0!1", {"subtime": 0, "res": 1, "walltime": 10})
    rt.policy.ctx_starts_ = [("w0!1", Allocation(mask(0)))]
    rt.policy.script_ = [Start("w0!1", (5,))]
    with pytest.raises(SimulationError, match="w0!1: .*another allocation than the one ctx.start took"):
        rt.step(0)


def test_a_policy_placing_hosts_gets_no_gpu_job_on_a_per_core_machine():
    """A policy that places hosts does not count the GPUs a node shares among the jobs on its
    cores: two 1-GPU jobs on a 1-GPU node would both start (found by
    tests/schedulers/test_fuzz_policies.py: every host policy over-allocated). The runtime
    rejects GPU jobs there at submission, with the reason; CPU jobs run."""
    class Hosts(Policy):
        name = "hosts"

    rt = PolicyRuntime(Hosts())
    rt.begin(per_core(), 0.0)
    assert rt.submit(0, "w0!1", {"subtime": 0, "res": 1, "walltime": 10, "gpus_per_node": 1}) is None
    assert rt.submit(0, "w0!2", {"subtime": 0, "res": 1, "walltime": 10}) is not None
    (reject,) = rt.pending
    assert type(reject) is Reject and reject.job_id == "w0!1"
    assert "places cores without counting the GPUs their node shares" in reject.reason
