"""``io_model=contention``: each started job's I/O runs as a parallel task merged with its
compute (Batsim's ``additional_io_job``), so SimGrid's max-min sharing on the bandwidth tree's
links stretches jobs whose I/O is contended (seed 004's contention, physically).

A job asking ``r`` B/s per node whose nominal compute time is ``T`` writes ``r x T`` bytes
from each of its nodes to the PFS, in the same ptask as its computation: alone on the tree
it takes ``T`` (the I/O keeps pace with the compute); when its share of some link falls to
``I x r`` it takes ``T / I``.

``T``: a ``parallel_homogeneous`` profile's ``cpu`` divided by the node speed, read from the
compute hosts' ``speed`` property (flop/s; ``mrsched platform iotree`` writes it). Decisions:
jobs without I/O, with another profile type (a ``delay`` cannot carry a ptask; a PFS profile
already uses its one optional EXECUTE_JOB field, ``storage_mapping``) start as usual.
Batsim 4.2.1 accepts exactly this EXECUTE_JOB (``../shared/batsim-reference/iotree``).
"""

from __future__ import annotations

from mrsched.errors import ConfigError
from mrsched.schedulers.model.decisions import Start
from mrsched.schedulers.execution.knowledge import true_rate
from mrsched.schedulers.execution.runtime import PolicyScheduler

IO_MODELS = ("none", "contention")


def io_volume_per_node(job, speed: float) -> float:
    """Bytes each node of ``job`` writes to the PFS: rate x nominal compute time (0: none).
    The rate is the job's true one (``true_io_bandwidth_per_node``, else its stated rate), not
    the scheduler's estimate (``mrsched.schedulers.execution.knowledge``): physics ignores knowledge."""
    rate = true_rate(job)
    prof = job.profile_data or {}
    if not rate or prof.get("type") != "parallel_homogeneous":
        return 0.0
    return rate * float(prof.get("cpu", 0.0)) / speed


def io_ptask(nodes: list[int], pfs: int, nbytes: float, name: str) -> dict:
    """The ``additional_io_job`` of a start: each node sends ``nbytes`` to the PFS."""
    hosts = sorted(nodes) + [pfs]
    m = len(hosts)
    com = [0.0] * (m * m)
    for i in range(m - 1):
        com[i * m + m - 1] = nbytes
    return {"alloc": " ".join(map(str, hosts)), "profile_name": name,
            "profile": {"type": "parallel", "cpu": [0.0] * m, "com": com}}


class IoPtaskScheduler(PolicyScheduler):
    """A ``PolicyScheduler`` whose starts carry the job's I/O as an ``additional_io_job``."""

    def on_simulation_begins(self, event) -> None:
        super().on_simulation_begins(event)
        cluster = self.runtime.cluster
        if cluster.pfs_id is None:
            raise ConfigError("io_model 'contention' needs a PFS storage host (property pfs=\"true\")",
                              field="io_model", hint="generate the platform with `mrsched platform iotree`")
        speeds = {cluster.properties.get(rid, {}).get("speed") for rid in cluster.compute_ids}
        try:
            speed = float(speeds.pop()) if len(speeds) == 1 else None
        except (TypeError, ValueError):
            speed = None
        if speed is None or not speed > 0:
            raise ConfigError("io_model 'contention' needs every compute host's 'speed' property "
                              "(one value, flop/s) to turn a job's cpu into its run time",
                              field="io_model", hint="generate the platform with `mrsched platform iotree`")
        self.speed_ = speed

    def start_job(self, d: Start) -> None:
        run = self.runtime.running.get(d.job_id)
        nbytes = io_volume_per_node(run.job, self.speed_) if run is not None else 0.0
        if not nbytes or self.runtime.storage_mapping(d) is not None:
            super().start_job(d)
            return
        io = io_ptask(list(d.nodes), self.runtime.cluster.pfs_id, nbytes, f"io_{d.job_id.replace('!', '_')}")
        self.execute_job(d.job_id, self.runtime.procset_of(d), additional_io_job=io)
