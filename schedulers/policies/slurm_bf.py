"""``slurm-bf``: seed 002's baseline, SLURM's backfill with its best fit of cores and GPUs.

Priority order, one job at a time: a job that fits now (SLURM's best fit, see
:mod:`mrsched.schedulers.optim.bestfit`) starts. Decision (reservation depth): the first job
that does not fit gets a reservation at the earliest time running jobs' walltimes free enough
cores and GPUs for its best fit (depth 1, EASY-like; SLURM's ``bf_*`` defaults plan many jobs,
knob ``reservations`` keeps more), and a later job is backfilled only if it ends before every
reservation or leaves each reservation's cores and GPUs per node free.
"""

from __future__ import annotations

from mrsched.schedulers.optim.bestfit import best_fit_counts
from mrsched.schedulers.model.nodes import Layout
from mrsched.schedulers.policies.cpugpu import CpuGpuPolicy
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import SchedulingContext


class SlurmBackfill(CpuGpuPolicy):
    """SLURM backfill with its best fit of cores and GPUs (seed 002's baseline)."""

    name = "slurm-bf"
    _parameter_constraints = {
        "reservations": Param(int, min=0, max=100, help="jobs that get a reservation (SLURM backfill depth); "
                                                        "0 = no backfilling past a blocked job"),
    }

    def __init__(self, *, priority: str = "basic", priority_max_age: float = 7 * 86400.0, reservations: int = 1):
        self.priority = priority
        self.priority_max_age = priority_max_age
        self.reservations = reservations

    def _future(self, machine, now: float):
        """Free counts at each expected end of running jobs (ascending time)."""
        free, gpus = machine.counts()
        held = machine.holdings
        events = sorted((max(h.end, now), jid) for jid, h in held.items())
        for t, jid in events:
            h = held[jid]
            for n, c in h.per_node:
                free[n] += c
                gpus[n] += h.gpus_per_node
            yield t, free, gpus

    def _reserve(self, job, machine, now: float, holds: list) -> tuple[float, Layout] | None:
        """Earliest time and best fit of ``job`` beside running jobs and earlier reservations."""
        req = self.requests_[job.id]
        for t, free, gpus in self._future(machine, now):
            f, g = list(free), list(gpus)
            for _, layout, _ in holds:
                for n, c in layout.per_node:
                    f[n] -= c
                    g[n] -= layout.gpus_per_node
            if sum(f) < req.cores or min(f, default=0) < 0 or min(g, default=0) < 0:
                continue
            layout = best_fit_counts(f, g, req)
            if layout is not None:
                return t, layout
        return None

    def _respects(self, layout: Layout, end: float, holds: list, free_at: dict) -> bool:
        """Whether a job on ``layout`` until ``end`` leaves every reservation its resources
        (``free_at``: reservation time -> free cores and GPUs then, earlier holds taken)."""
        for t, _, _ in holds:
            if end <= t:
                continue
            f, g = free_at[t]
            g_need = layout.gpus_per_node
            if any(f[n] < c or g[n] < g_need for n, c in layout.per_node):
                return False
        return True

    def _free_at(self, machine, t: float, now: float, holds: list) -> tuple[list[int], list[int]]:
        free, gpus = machine.counts()
        for h in machine.holdings.values():
            if max(h.end, now) <= t:
                for n, c in h.per_node:
                    free[n] += c
                    gpus[n] += h.gpus_per_node
        for _, other, _ in holds:
            for n, c in other.per_node:
                free[n] -= c
                gpus[n] -= other.gpus_per_node
        return free, gpus

    def decide(self, ctx: SchedulingContext, jobs: list) -> None:
        holds: list = []          # (time, layout, job id) reservations, depth <= self.reservations
        free_at: dict = {}        # reservation time -> free cores and GPUs then, reservations taken
        failed: set = set()       # request shapes that did not fit now (starts only take resources)
        machine = ctx.machine     # free cores and GPUs per node now, this round's starts taken
        for job in jobs:
            req = self.requests_[job.id]
            layout = None
            if req not in failed and req.cores <= machine.total_free:
                layout = best_fit_counts(machine.free_count, machine.free_gpus, req)
                if layout is None:
                    failed.add(req)
            end = ctx.now + job.request.walltime
            if layout is not None and (not holds or self._respects(layout, end, holds, free_at)) \
                    and self.start(ctx, job, layout):
                for t, (f, g) in free_at.items():
                    if end > t:
                        for n, c in layout.per_node:
                            f[n] -= c
                            g[n] -= layout.gpus_per_node
                continue
            if len(holds) >= self.reservations:
                if not self.reservations:
                    return
                continue
            found = self._reserve(job, machine, ctx.now, holds)
            if found is not None:
                holds.append((found[0], found[1], job.id))
                free_at = {t: self._free_at(machine, t, ctx.now, holds) for t, _, _ in holds}
