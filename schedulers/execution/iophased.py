"""The I/O-phased job model (seed 001 Sect. 4.1, Fig. 4): a started job runs as a chain of
Batsim dynamic jobs — stage-in, compute and checkpoint phases, drains, stage-out.

For a job with burst buffer ``B`` bytes placed per compute node on storage nodes:

- ``stage_in``: PFS -> each burst-buffer storage node, the bytes held there (``B`` in all);
- ``P`` compute phases, ``P = min(max(round(cpu / 3600e9), 1), 10)`` (ALGORITHMS.md, the
  artifact: one phase per hour of compute at 1 Gflop/s), each ``1/P`` of the job's profile;
- after each compute phase a ``checkpoint``: each compute node -> its storage node, half its
  share (``0.5 B`` in all), computation suspended;
- when a checkpoint completes, its ``drain`` (storage nodes -> PFS, ``0.5 B``) starts together
  with the next phase and never blocks it;
- ``stage_out``: storage nodes -> PFS, ``B``.

Why dynamic jobs (and not ``additional_io_job``)? ``additional_io_job`` merges I/O into a
job's own single ptask, so phases could neither follow each other nor overlap (drains). Each
phase is therefore one or more Batsim dynamic jobs (``--enable-dynamic-jobs``) using the
protocol's own I/O profiles with ``storage_mapping``: PFS <-> burst-buffer transfers are
``data_staging`` jobs (one per storage node the job uses, labels ``pfs`` and ``bb``), a
checkpoint is one ``parallel_homogeneous_pfs`` job per storage node on the compute nodes whose
share lives there (label ``bb``), compute is the job's own profile cut in ``P`` parts. No phase
job asks for more resources than the job's nodes or two storage hosts (Batsim refuses a job
larger than the machine), every transfer is a ptask contending by max-min sharing with all
others on the same links — on real Batsim 4.x and on the embedded engine alike.

Naming (docs/DESIGN.md "Sub-jobs"): the phase jobs of ``w0!12`` are dynamic jobs of workload
``w0-io`` with ids ``12.{k}.{kind}``; ``k`` numbers the Batsim jobs of the whole chain from 0
in chain order (all storage nodes of a step, then the next step; a drain right after its
checkpoint), fixed by the placement, so ids do not depend on timing. Each phase job's profile
has the same name. The parent is rejected with metadata ``io-phased`` as soon as its first
phase is registered; analysis folds the phases back into one row per job.

Resources: the scheduler keeps the parent's nodes and burst buffer from stage-in until its
last phase (stage-out and every drain) ended. The walltime covers the whole job: every phase
gets ``walltime = parent start + parent walltime - now``, so Batsim ends whatever runs at the
parent's deadline; a phase that fails, hits the walltime or is killed ends the job (the other
running phases are killed, later ones are never registered).

Jobs without burst buffer, or whose profile is neither ``parallel_homogeneous`` /
``parallel_homogeneous_total`` nor ``delay``, run as one job (the alloc-only model).
Dynamic registration ends (``NOTIFY registration_finished``) once every static job was
submitted, none waits, and every running job has registered all its phases.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping

from mrsched.errors import ConfigError
from mrsched.schedulers.model.decisions import Start
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.execution.runtime import PolicyScheduler

logger = logging.getLogger(__name__)

#: Flops per compute phase (seed 001 artifact: one phase per hour at 1 Gflop/s) and the bounds.
FLOPS_PER_PHASE = 3600e9
MAX_PHASES = 10
#: Checkpoint size as a fraction of the burst-buffer request (ALGORITHMS.md, the artifact).
CHECKPOINT_FRACTION = 0.5
COMPUTE_TYPES = ("parallel_homogeneous", "parallel_homogeneous_total", "delay")
METADATA = "io-phased"


def number_of_phases(profile: Mapping[str, Any]) -> int:
    """min(max(round(cpu / 3600e9), 1), 10); a delay counts as ``delay`` s at 1 Gflop/s."""
    if profile.get("type") == "delay":
        flops = float(profile["delay"]) * 1e9
    else:
        flops = float(profile.get("cpu", 0.0))
    return min(max(round(flops / FLOPS_PER_PHASE), 1), MAX_PHASES)


@dataclass(frozen=True)
class Phase:
    """One Batsim dynamic job of a phased job: chain index, kind, allocation, profile, storage labels."""

    k: int
    kind: str                       # stage_in | compute | checkpoint | drain | stage_out
    hosts: tuple[int, ...]          # Batsim resource ids, sorted
    profile: dict
    storage_mapping: dict[str, int] | None = None

    def name(self, parent: str) -> str:
        return f"{parent}.{self.k}.{self.kind}"


#: One step of the chain: Batsim jobs that start together; the next sequential step starts when
#: all of them ended. A ``drain`` step is detached: it starts when the checkpoint step before
#: it ends, beside the next sequential step, and blocks nothing.
Step = tuple[Phase, ...]


def phase_chain(nodes: tuple[int, ...], bb: Mapping[int, Mapping[int, int]], pfs: int,
                profile: Mapping[str, Any]) -> list[Step]:
    """Every step of one job in chain order (drain ``i`` right after checkpoint ``i``).

    ``nodes``: compute ids; ``bb``: ``{compute id: {storage id: bytes}}`` (the Start's
    placement); ``pfs``: the PFS storage id; ``profile``: the job's compute profile.
    Transfers between the PFS and one storage node are ``data_staging`` jobs (one per storage
    node the job uses); a checkpoint is one ``parallel_homogeneous_pfs`` job per storage node,
    on the compute nodes whose share lives there. No phase job asks more resources than the
    job's own nodes, or two storage hosts (Batsim refuses jobs larger than the machine).
    """
    held: dict[int, int] = {}
    users: dict[int, list[tuple[int, int]]] = {}
    for c, shares in bb.items():
        for s, nbytes in shares.items():
            held[s] = held.get(s, 0) + int(nbytes)
            users.setdefault(s, []).append((c, int(nbytes)))
    stores = sorted(held)
    p = number_of_phases(profile)
    ptype = profile["type"]
    if ptype == "delay":
        compute = {"type": "delay", "delay": float(profile["delay"]) / p}
    else:
        compute = {"type": ptype, "cpu": float(profile["cpu"]) / p, "com": float(profile.get("com", 0.0)) / p}
    counter = iter(range(10**9))

    def staging(kind: str, src: str, dst: str, fraction: float) -> Step:
        return tuple(Phase(next(counter), kind, tuple(sorted((s, pfs))),
                           {"type": "data_staging", "nb_bytes": fraction * held[s], "from": src, "to": dst},
                           {"pfs": pfs, "bb": s}) for s in stores)

    chain: list[Step] = [staging("stage_in", "pfs", "bb", 1.0)]
    for _ in range(p):
        chain.append((Phase(next(counter), "compute", tuple(sorted(nodes)), dict(compute)),))
        ckpt = []
        for s in stores:
            group = users[s]
            per_node = CHECKPOINT_FRACTION * sum(b for _, b in group) / len(group)
            ckpt.append(Phase(next(counter), "checkpoint", tuple(sorted(c for c, _ in group)),
                              {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                               "bytes_to_write": per_node, "storage": "bb"}, {"bb": s}))
        chain.append(tuple(ckpt))
        chain.append(staging("drain", "bb", "pfs", CHECKPOINT_FRACTION))
    chain.append(staging("stage_out", "bb", "pfs", 1.0))
    return chain


@dataclass
class PhasedJob:
    """Run-time state of one phased job (plain data; the scheduler drives it)."""

    parent: str                     # Batsim id of the static job, e.g. "w0!12"
    workload: str                   # "{parent workload}-io"
    short: str                      # parent id without its workload, e.g. "12"
    deadline: float                 # parent start + walltime (inf: none)
    chain: list[Step]
    next_step: int = 0              # index in ``chain`` of the next sequential step to launch
    # ordered (dicts, not sets): kill lists must not depend on string hashing (determinism)
    step_left: dict[str, None] = field(default_factory=dict)  # running jobs of the current sequential step
    running: dict[str, None] = field(default_factory=dict)    # every running phase job
    failed: str | None = None       # first non-successful phase state


class IoPhasedScheduler(PolicyScheduler):
    """A ``PolicyScheduler`` executing started jobs as I/O phases (``job_model=io-phased``)."""

    def on_simulation_begins(self, event) -> None:
        super().on_simulation_begins(event)
        cluster = self.runtime.cluster
        if self.config.get("dynamic-jobs-enabled") is False:
            raise ConfigError("job_model 'io-phased' runs phases as dynamic jobs, but Batsim was started "
                              "without them", field="job_model",
                              hint="run Batsim (or mrsched simulate) with --enable-dynamic-jobs")
        if cluster.pfs_id is None:
            raise ConfigError("job_model 'io-phased' needs a PFS storage host (property pfs=\"true\")",
                              field="job_model", hint="use a platform from mrsched platforms (Dragonfly)")
        self.phased_: dict[str, PhasedJob] = {}       # parent id -> state
        self.phase_of_: dict[str, str] = {}           # phase Batsim id -> parent id
        self.static_done_ = False
        self.registration_done_ = False
        self.to_kill_: list[str] = []

    def on_notify(self, event) -> None:
        if event.notify_type == "no_more_static_job_to_submit":
            self.static_done_ = True

    # -- starting ------------------------------------------------------------------------------
    def start_job(self, d: Start) -> None:
        run = self.runtime.running[d.job_id]
        job = run.job
        if not d.bb or not job_is_phased(job):
            super().start_job(d)
            return
        workload, _, short = d.job_id.partition("!")
        chain = phase_chain(d.nodes, d.bb, self.runtime.cluster.pfs_id, job.profile_data)
        wall = job.request.walltime
        pj = PhasedJob(d.job_id, f"{workload}-io", short, self.now + wall, chain)
        self.phased_[d.job_id] = pj
        self._launch_next(pj)
        self.set_job_metadata(d.job_id, METADATA)
        self.reject_job(d.job_id)

    def _launch(self, pj: PhasedJob, step: Step) -> dict[str, None] | None:
        """Register and execute every job of ``step``; None when the deadline has passed."""
        remaining = pj.deadline - self.now
        if remaining <= 0:
            return None
        wall = remaining if remaining != float("inf") else -1
        ids: dict[str, None] = {}
        for phase in step:
            name = phase.name(pj.short)
            jid = f"{pj.workload}!{name}"
            self.register_profile(pj.workload, name, phase.profile)
            self.register_job(jid, {"res": len(phase.hosts), "profile": name, "subtime": self.now,
                                    "walltime": wall})
            self.execute_job(jid, list(phase.hosts), storage_mapping=phase.storage_mapping)
            self.phase_of_[jid] = pj.parent
            ids[jid] = None
        pj.running.update(ids)
        return ids

    def _launch_next(self, pj: PhasedJob) -> None:
        """Launch the next sequential step (drains are skipped: the checkpoint launches them)."""
        chain = pj.chain
        while pj.next_step < len(chain) and chain[pj.next_step][0].kind == "drain":
            pj.next_step += 1
        if pj.next_step >= len(chain):
            return
        step = chain[pj.next_step]
        pj.next_step += 1
        ids = self._launch(pj, step)
        if ids is None:
            pj.failed = "COMPLETED_WALLTIME_REACHED"
        else:
            pj.step_left = ids

    # -- completions ---------------------------------------------------------------------------
    def on_job_completion(self, event) -> None:
        parent = self.phase_of_.pop(event.job_id, None)
        if parent is None:
            super().on_job_completion(event)
            return
        pj = self.phased_[parent]
        pj.running.pop(event.job_id, None)
        in_step = event.job_id in pj.step_left
        pj.step_left.pop(event.job_id, None)
        if event.job_state != "COMPLETED_SUCCESSFULLY":
            if pj.failed is None:
                pj.failed = event.job_state
                logger.info("job %s ends: phase %s %s", parent, event.job_id, event.job_state)
            self.to_kill_.extend(pj.running)
        elif pj.failed is None and in_step and not pj.step_left:
            done = pj.next_step - 1
            self._launch_next(pj)
            if pj.chain[done][0].kind == "checkpoint" and pj.failed is None:
                # the drain step follows its checkpoint in the chain and blocks nothing
                if self._launch(pj, pj.chain[done + 1]) is None:
                    pj.failed = "COMPLETED_WALLTIME_REACHED"
        if not pj.running and (pj.failed is not None or pj.next_step >= len(pj.chain)):
            del self.phased_[parent]
            self.runtime.complete(self.now, parent)

    def on_no_more_events(self) -> None:
        if self.to_kill_:
            alive = [j for j in dict.fromkeys(self.to_kill_) if j in self.phase_of_]
            self.to_kill_ = []
            if alive:
                self.kill_jobs(alive)
        super().on_no_more_events()
        if (self.static_done_ and not self.registration_done_ and not self.runtime.queue
                and not self.runtime.pending and all(_all_registered(pj) for pj in self.phased_.values())):
            self.notify_registration_finished()
            self.registration_done_ = True


def _all_registered(pj: PhasedJob) -> bool:
    return pj.failed is not None or pj.next_step >= len(pj.chain)


def job_is_phased(job: Job) -> bool:
    """Whether the I/O-phased model splits ``job`` (burst buffer and a splittable profile)."""
    prof = job.profile_data
    return bool(job.request.bb_total and prof and prof.get("type") in COMPUTE_TYPES)
