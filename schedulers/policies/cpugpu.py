"""What the three seed 002 policies share: the node view of the machine, each job's request,
its priority, and how a layout becomes a Batsim start; and what the two MILP policies share
(:class:`MilpWindowPolicy`): the window, the budget of a round's MILPs and what a MILP its
budget stopped does.

The free cores and GPUs per node, the burst buffer and what each running job holds until when
are the runtime's (``ctx.machine``, :mod:`mrsched.schedulers.model.machine`): a policy reads
them there and keeps no count of its own. :meth:`CpuGpuPolicy.start` turns a layout into the
lowest free cores of its nodes and ``ctx.start`` takes them, refused by the runtime when a node
would give more GPUs than it has (DESIGN.md "CPU+GPU machines").

Run-time state (derived from the jobs' fields, never from what is in use): ``requests_`` (job
id -> :class:`CoreRequest`), ``seq_`` (submission rank, the basic priority).
"""

from __future__ import annotations

import logging

from mrsched.errors import ConfigError, MrschedError, SimulationError
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.optim.bestfit import never_fits
from mrsched.schedulers.optim.milp import MilpResult, start_worker
from mrsched.schedulers.optim.window import AdaptiveWindow, RoundBudget
from mrsched.schedulers.model.nodes import Layout, NodeView
from mrsched.schedulers.policies.priority import PRIORITIES, job_priority
from mrsched.schedulers.model.cores import CoreRequest, core_request
from mrsched.schedulers.profile.placement import BurstBufferPlacer, split_shares
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import Policy, SchedulingContext

logger = logging.getLogger(__name__)
#: what a MILP its budget stopped starts (seed 002 Sect. 3.1: nothing; Decision: the
#: incumbent by default, never worse than SLURM's answer given as the MIP start)
ON_TIMEOUT = ("incumbent", "nothing")
HALVING_METADATA = "window halved {n}x (last at t={t:.3f} by the {limit} limit: {old} -> {new} jobs; {held} were in it)"


def halving_metadata(n: int, t: float, old: int, new: int, held: int, limit: str) -> str:
    """The metadata of a job that headed ``n`` windows whose MILP its budget stopped: the last
    time, which limit (``node`` or ``time``), the window's size before and after, and the jobs
    it held (fewer than its size when the queue was shorter)."""
    return HALVING_METADATA.format(n=n, t=t, limit=limit, old=old, new=new, held=held)


class CpuGpuPolicy(Policy):
    """Base of ``slurm-bf``, ``ipsched`` and ``aucsched`` (seed 002)."""

    power_capped = False      # cores and GPUs are placed by their own model, not the counters
    shares_gpus = True        # the free GPUs of every node are read from the runtime's view

    _parameter_constraints = {
        "priority": Param(str, PRIORITIES, help="job priority: basic (submission order) or multifactor "
                                                "(age + size, equal weights, +1 per minute; seed 002 Sect. 5)"),
        "priority_max_age": Param(float, min=60.0, help="seconds after which the age factor saturates "
                                                        "(SLURM PriorityMaxAge); sets both weights"),
    }

    def setup(self, cluster: Cluster) -> None:
        super().setup(cluster)
        self.view_ = NodeView.from_cluster(cluster)
        if not self.view_.per_core:
            # seed 002 places cores and GPUs of nodes: on whole-node resources each host would
            # pass for a node of one core, and the run would mean nothing (DESIGN.md "CPU+GPU")
            raise ConfigError(f"policy '{self.policy_name()}' needs a per-core CPU+GPU platform (one "
                              "Batsim resource per core); this platform's compute resources are "
                              "whole nodes", field="platform",
                              hint="make one with `mrsched platform cluster --nodes N --cores C --gpus G`")
        self.requests_: dict[str, CoreRequest] = {}
        self.seq_: dict[str, int] = {}
        self.stats_: dict[str, int] = {"rounds": 0}
        self._empty = ([len(c) for c in self.view_.cores], list(self.view_.gpus))
        # burst buffer (seed 001's machines): placed per core resource like every policy does
        self.placer_ = BurstBufferPlacer(cluster)

    # -- bookkeeping ------------------------------------------------------------------------
    def _admit(self, ctx: SchedulingContext) -> list[Job]:
        """The waiting jobs with a valid request that can fit the empty machine; others rejected."""
        out = []
        for job in ctx.queue:
            if job.id not in self.requests_:
                self.seq_[job.id] = len(self.seq_)
                try:
                    req = core_request(job.id, job.fields, per_core=self.view_.per_core)
                except MrschedError as exc:
                    ctx.reject(job, f"invalid request: {exc}")
                    continue
                reason = never_fits(req, *self._empty)
                if reason is not None:
                    ctx.reject(job, reason)
                    continue
                self.requests_[job.id] = req
            out.append(job)
        return out

    def priority_of(self, job: Job, now: float) -> float:
        return job_priority(self.priority, self.seq_[job.id], job.subtime, self.requests_[job.id].cores, now,
                            self.view_.total_cores, self.priority_max_age)

    def ordered(self, jobs: list[Job], now: float) -> list[Job]:
        """Highest priority first; ties in submission order."""
        return sorted(jobs, key=lambda j: (-self.priority_of(j, now), self.seq_[j.id]))

    def start(self, ctx: SchedulingContext, job: Job, layout: Layout) -> bool:
        """Start ``job`` on ``layout``'s cores (the lowest free ones of each node) and GPUs,
        checked against its request; False (nothing taken) when its burst buffer, if any,
        cannot be placed now. ``ctx.start`` takes them from the runtime's machine state."""
        req = self.requests_[job.id]
        if layout.cores != req.cores or not req.nodes_min <= len(layout.per_node) <= req.nodes_max \
                or (req.cores_per_node and any(c != req.cores_per_node for _, c in layout.per_node)) \
                or layout.gpus_per_node != req.gpus_per_node:
            raise SimulationError(f"policy '{self.policy_name()}' lays out {layout} for request {req}", job=job.id)
        machine = ctx.machine
        cores = []
        for n, k in layout.per_node:
            free = machine.free_cores(n)
            if len(free) < k:
                raise SimulationError(f"policy '{self.policy_name()}': layout {layout} does not fit the free "
                                      f"cores of node {self.view_.names[n]}", job=job.id)
            cores.extend(free[:k])
        cores.sort()
        placement, bb = {}, ()
        total = job.request.bb_total
        if total:
            placement = self.placer_.place(cores, split_shares(total, len(cores)), machine.bb_free)
            if placement is None:
                return False
            per = [0] * len(machine.bb_free)
            for st, nbytes in placement.values():
                per[st] += nbytes
            bb = tuple(per)
        mask = 0
        for c in cores:
            mask |= 1 << c
        ctx.start(job, Allocation(mask, bb, placement))
        return True

    def schedule(self, ctx: SchedulingContext):
        jobs = self._admit(ctx)
        self.stats_["rounds"] += 1
        if jobs:
            self.decide(ctx, self.ordered(jobs, ctx.now))
        return ctx.decisions

    def decide(self, ctx: SchedulingContext, jobs: list[Job]) -> None:
        raise NotImplementedError


class MilpWindowPolicy(CpuGpuPolicy):
    """Base of ``ipsched`` and ``aucsched``: each round the ``window`` highest-priority jobs are
    decided by MILPs within the round's budget; a MILP the budget stops halves the window for
    the rest of the run (seed 002 Sect. 3.1) and, by default, its incumbent starts.

    The budget counts work by default (``node_limit`` branch-and-bound nodes, calibrated to the
    paper's 5 s interval), so a run is a function of its inputs and options alone. The paper's
    wall-clock ``time_limit`` is an explicit option (both apply when both are set); with it a
    run depends on the machine's speed and load, as the paper's SLURM plug-ins did.

    Run-time state: ``window_`` (:class:`AdaptiveWindow`), ``solves_`` (one record per MILP),
    ``halved_`` (job id -> halvings while it headed the window), ``idle_`` (the last round
    started nothing: a round with no submission and no ending job is not solved again).
    """

    _parameter_constraints = {
        "time_limit": Param(float, min=0.0, help="wall-clock seconds a round's MILPs may take (the paper's "
                                                 "interval, e.g. 5: the run then depends on the machine's "
                                                 "load); 0 = none"),
        "node_limit": Param(int, min=0, help="branch-and-bound nodes a round's MILPs may explore (HiGHS "
                                             "mip_max_nodes; presolve and the root node are not counted); "
                                             "0 = no bound"),
        "on_timeout": Param(str, ON_TIMEOUT, help="what a MILP its budget stopped starts: incumbent (HiGHS's "
                                                  "best answer, at least SLURM's) or nothing (seed 002 Sect. 3.1)"),
        "mip_gap": Param(float, min=0.0, max=1.0, help="HiGHS relative MIP gap (0: proven optimum, the "
                                                      "only gap that never reorders priorities)"),
    }

    def setup(self, cluster: Cluster) -> None:
        super().setup(cluster)
        self.window_ = AdaptiveWindow(self.window)
        if self.time_limit:
            start_worker()      # timed solves run in the worker: start it before the first
        self.idle_ = False
        self.solves_: list[dict] = []
        self.halved_: dict[str, int] = {}
        self.stats_.update(solves=0, limits=0)

    def budget(self) -> RoundBudget:
        """What this round's MILPs may spend."""
        return RoundBudget(self.node_limit or None, self.time_limit or None)

    def record_solve(self, ctx: SchedulingContext, window: list[Job], res: MilpResult, **extra) -> None:
        self.solves_.append({"time": ctx.now, "window": len(window), "variables": res.variables,
                             "constraints": res.constraints, "seconds": res.seconds, "nodes": res.nodes,
                             "status": res.status, "stopped_by": res.stopped_by, **extra})
        self.stats_["solves"] += 1

    def limit_hit(self, ctx: SchedulingContext, window: list[Job], res: MilpResult, answer: int) -> bool:
        """A MILP over ``window`` its budget stopped, its incumbent placing ``answer`` jobs: the
        window is halved, the halving written in the metadata of the window's first job
        (``_jobs.csv``, so the run directory keeps it whatever engine ran it;
        :func:`mrsched.analysis.cpugpu.window_halvings` counts them) and logged. Returns
        whether the incumbent's answer starts (``on_timeout``)."""
        self.stats_["limits"] += 1
        old = self.window_.timed_out()
        head = window[0]
        n = self.halved_[head.id] = self.halved_.get(head.id, 0) + 1
        limit = "time" if res.stopped_by == "time" else "node"
        ctx.annotate(head, halving_metadata(n, ctx.now, old, self.window_.current, len(window), limit))
        starts = answer > 0 and self.on_timeout == "incumbent"
        logger.warning("%s: MILP stopped by its %s limit at t=%.3f with %d jobs: %s, window halved to %d",
                       self.policy_name(), limit, ctx.now, len(window),
                       f"its incumbent starts {answer} jobs" if starts else "nothing started",
                       self.window_.current)
        return starts
