"""Which jobs of a scheduling window to start: BBSched's rule and the paper's baselines.

Seed 000 Sect. 4.3 compares methods that differ only in how they pick jobs from the same
window (then all run EASY backfilling). Each is a rule over a
:class:`~mrsched.schedulers.optim.pareto.WindowProblem` returning a boolean selection:

- ``tradeoff``: BBSched/MultiSched, a Pareto set (genetic or exact) and the decision rule
  of 000 Sect. 3.2.4 (:func:`~mrsched.schedulers.optim.pareto.choose_tradeoff`);
- ``naive``: in window order until a job does not fit (Slurm, 000 Sect. 1);
- ``weighted``: maximise a weighted sum of utilisations (000 Sect. 4.3);
- ``constrained``: maximise one resource's utilisation under the others' capacity;
- ``bin-packing``: Tetris alignment score, greedy (000 Sect. 4.3, after Grandl et al.).

Decision: weighted and constrained optima are read off the Pareto front (a weighted sum
with positive weights and a lexicographic optimum are both attained on it), computed
exactly by default; ties go to the jobs nearest the window front.

The second half is :class:`WindowPolicy`, the scheduling loop all of them share (000
Sect. 3.1 and 4.3): base order (FCFS or WFP), window, starvation bound, the selection,
then the core's EASY backfilling. Concrete policies live in ``bbsched.py`` and
``multisched.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mrsched.errors import ConfigError, suggest
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Decision
from mrsched.schedulers.optim.genetic import GeneticSolver
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.optim.pareto import (ParetoSet, WindowProblem, choose_tradeoff,
                                       exact_front, frontmost)
from mrsched.schedulers.policies.backfilling import RESERVE, EasyBackfilling
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import Policy, SchedulingContext

__all__ = [
    "METHODS",
    "SOLVERS",
    "WindowSelector",
    "select_in_order",
    "fill_in_order",
    "select_bin_packing",
    "pick_weighted",
    "pick_constrained",
    "solve_front",
    "trivial_selection",
    "WindowPolicy",
    "WINDOW_PARAMS",
    "base_order",
    "wfp_priority",
    "resource_names",
    "parse_counters",
]

METHODS = ("tradeoff", "naive", "weighted", "constrained", "bin-packing")
SOLVERS = ("ga", "exact")


def select_in_order(problem: WindowProblem) -> np.ndarray:
    """Naive method: start window jobs in order until one does not fit (000 Sect. 1)."""
    x = np.zeros(problem.n_jobs, dtype=bool)
    left = problem.free.copy()
    for i in range(problem.n_jobs):
        if np.any(problem.demands[i] > left):
            break
        x[i] = True
        left -= problem.demands[i]
    return x


def fill_in_order(problem: WindowProblem, selected: np.ndarray) -> np.ndarray:
    """Add, in window order, every unselected job that fits beside the selection.

    This is what EASY backfilling does with the window when every job has the same
    walltime (000 Table 1: naive "selects J1 and backfills J4").
    """
    x = np.asarray(selected, dtype=bool).copy()
    left = problem.free - problem.evaluate(x)[0]
    for i in np.flatnonzero(~x):
        if np.all(problem.demands[i] <= left):
            x[i] = True
            left -= problem.demands[i]
    return x


def select_bin_packing(problem: WindowProblem) -> np.ndarray:
    """Tetris-style packing (000 Sect. 4.3): repeatedly start the fitting job whose demand
    vector best aligns with the free resources (dot product, both normalised by total
    capacity); ties go to the job nearest the window front."""
    x = np.zeros(problem.n_jobs, dtype=bool)
    left = problem.free.copy()
    need = problem.demands / problem.total
    while True:
        fits = ~x & np.all(problem.demands <= left, axis=1)
        if not fits.any():
            return x
        score = np.where(fits, need @ (left / problem.total), -np.inf)
        i = int(np.argmax(score))  # first maximum = nearest the front
        x[i] = True
        left -= problem.demands[i]


def pick_weighted(front: ParetoSet, total: np.ndarray, weights) -> int:
    """Index of the front solution maximising sum_r weights[r] * utilisation_r."""
    u = front.objectives / np.asarray(total, dtype=float)
    score = u @ np.asarray(weights, dtype=float)
    return frontmost(front.selections, np.flatnonzero(score == score.max()))


def pick_constrained(front: ParetoSet, total: np.ndarray, resource: int) -> int:
    """Index of the front solution maximising one resource's utilisation (the others are
    constraints). Decision: ties go to the larger sum of the other utilisations, then to
    the front-most jobs."""
    u = front.objectives / np.asarray(total, dtype=float)
    top = np.flatnonzero(u[:, resource] == u[:, resource].max())
    rest = np.delete(u[top], resource, axis=1).sum(axis=1)
    return frontmost(front.selections, top[rest == rest.max()])


def trivial_selection(problem: WindowProblem) -> np.ndarray | None:
    """The answer every method gives when there is no choice, else None: the whole window
    when it fits at once (it dominates every other selection), nothing when no job fits
    alone. Skipping the solver then is exact and saves most rounds of a simulation."""
    everything = np.ones(problem.n_jobs, dtype=bool)
    if problem.feasible(everything)[0]:
        return everything
    if not np.all(problem.demands <= problem.free, axis=1).any():
        return np.zeros(problem.n_jobs, dtype=bool)
    return None


def solve_front(problem: WindowProblem, solver: str, rng: np.random.Generator,
                genetic: GeneticSolver | None = None, *, max_states: int = 2_000_000
                ) -> ParetoSet:
    """The Pareto set of ``problem`` by ``solver`` (``ga`` or ``exact``)."""
    if solver == "exact":
        return exact_front(problem, max_states=max_states)
    if solver == "ga":
        return (genetic or GeneticSolver()).solve(problem, rng)
    raise ConfigError(f"unknown solver {solver!r}", field="solver", hint=suggest(solver, SOLVERS))


@dataclass(frozen=True)
class WindowSelector:
    """One selection method with its knobs; ``select(problem, rng)`` returns the jobs.

    ``weights`` (weighted) has one entry per resource; ``resource`` (constrained) is the
    column maximised; ``factor`` (tradeoff) is the gain/loss ratio of 000 Sect. 3.2.4
    (None: the number of resources).
    """

    method: str = "tradeoff"
    solver: str = "ga"
    weights: tuple[float, ...] = ()
    resource: int = 0
    factor: float | None = None
    genetic: GeneticSolver = field(default_factory=GeneticSolver)
    max_states: int = 2_000_000

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"unknown selection method {self.method!r}", field="method",
                              hint=suggest(self.method, METHODS))
        if self.solver not in SOLVERS:
            raise ConfigError(f"unknown solver {self.solver!r}", field="solver",
                              hint=suggest(self.solver, SOLVERS))
        if any(not np.isfinite(v) or v < 0 for v in self.weights):
            raise ConfigError(f"weights must be finite and >= 0, got {self.weights}",
                              field="weights")
        if self.factor is not None and not (np.isfinite(self.factor) and self.factor >= 0):
            raise ConfigError(f"tradeoff factor must be finite and >= 0, got {self.factor!r}",
                              field="tradeoff_factor")

    def select(self, problem: WindowProblem, rng: np.random.Generator) -> np.ndarray:
        """Boolean selection over the window; always fits in ``problem.free``."""
        trivial = trivial_selection(problem)
        if trivial is not None:
            return trivial
        if self.method == "naive":
            return select_in_order(problem)
        if self.method == "bin-packing":
            return select_bin_packing(problem)
        front = solve_front(problem, self.solver, rng, self.genetic, max_states=self.max_states)
        if self.method == "tradeoff":
            index = choose_tradeoff(front, problem.total, factor=self.factor)
        elif self.method == "weighted":
            weights = self.weights or (1.0 / problem.n_resources,) * problem.n_resources
            if len(weights) != problem.n_resources:
                raise ConfigError(f"{len(weights)} weights for {problem.n_resources} resources "
                                  f"({', '.join(problem.resources)})", field="weights")
            index = pick_weighted(front, problem.total, weights)
        else:
            if not 0 <= self.resource < problem.n_resources:
                raise ConfigError(f"constrained resource index {self.resource} out of range "
                                  f"for {problem.resources}", field="resource")
            index = pick_constrained(front, problem.total, self.resource)
        return front.selections[index].copy()


# --------------------------------------------------------------------------------------
# The window policy: base order, window, starvation bound, selection, then EASY.
# --------------------------------------------------------------------------------------
BASE_ORDERS = ("fcfs", "wfp")
BUILTIN_RESOURCES = ("nodes", "burst_buffer", "gpus")


def wfp_priority(job: Job, now: float) -> float:
    """Cobalt's WFP utility (000 Sect. 2.1). Decision: (wait / walltime)^3 x nodes; a job
    without walltime gets priority 0 (it cannot be weighed against its own length)."""
    if not job.request.has_walltime:
        return 0.0
    wait = max(now - job.subtime, 0.0)
    return (wait / job.request.walltime) ** 3 * job.request.nodes


def base_order(queue: list[Job], order: str, now: float) -> list[Job]:
    """The base scheduler's queue: submission order (fcfs) or WFP priority, highest first;
    ties keep submission order."""
    if order == "fcfs":
        return list(queue)
    return sorted(queue, key=lambda j: -wfp_priority(j, now))


def resource_names(spec: str, cluster: Cluster) -> tuple[str, ...]:
    """Resources a window policy optimises, nodes first; ``auto`` = every resource the
    machine has (burst buffer, GPUs, ``sched-config`` counters). Resources with no
    capacity on this machine are dropped (nothing can use them)."""
    valid = BUILTIN_RESOURCES + tuple(cluster.counters)
    if spec.strip() == "auto":
        names = list(valid)
    else:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        for n in names:
            if n not in valid:
                raise ConfigError(f"unknown resource '{n}' for this machine", field="resources",
                                  hint=suggest(n, valid + ("auto",)))
    names = ["nodes"] + [n for n in dict.fromkeys(names) if n != "nodes"]
    return tuple(n for n in names if resource_total(cluster, n) > 0)


def resource_total(cluster: Cluster, name: str) -> float:
    """Capacity of one resource on the whole machine."""
    if name == "nodes":
        return float(cluster.nb_nodes)
    if name == "burst_buffer":
        return float(sum(s.capacity for s in cluster.storage))
    if name == "gpus":
        return float(sum(cluster.gpus))
    return float(cluster.counters.get(name, 0.0))


def resource_free(profile, cluster: Cluster, names: tuple[str, ...]) -> np.ndarray:
    """Free amount of each resource now. Running jobs only ever give resources back, so
    what is free now stays free over any future window of this round."""
    mask, bb, cnt = profile.free_at(profile.now)
    out = []
    for n in names:
        if n == "nodes":
            out.append(mask.bit_count())
        elif n == "burst_buffer":
            out.append(sum(bb))
        elif n == "gpus":
            out.append(sum(g for k, g in enumerate(cluster.gpus) if mask >> k & 1))
        else:
            out.append(cnt[profile.counter_names.index(n)])
    return np.asarray(out, dtype=float)


def resource_demand(job: Job, names: tuple[str, ...]) -> list[float]:
    """What one job takes of each resource (burst buffer as the per-node shares placed)."""
    r = job.request
    counters = dict(r.counters)
    out = []
    for n in names:
        if n == "nodes":
            out.append(r.nodes)
        elif n == "burst_buffer":
            out.append(r.bb_per_node * r.nodes)
        elif n == "gpus":
            out.append(r.gpus_per_node * r.nodes)
        else:
            out.append(counters.get(n, 0.0))
    return out


def parse_counters(text: str, *, policy: str = "") -> dict[str, float]:
    """``"memory=24576,licences=48"`` -> ``{"memory": 24576.0, "licences": 48.0}``."""
    out: dict[str, float] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        try:
            cap = float(value)
        except ValueError:
            cap = float("nan")
        if not sep or not name.strip() or not np.isfinite(cap) or cap < 0:
            raise ConfigError(f"{'policy ' + repr(policy) + ': ' if policy else ''}cannot read counter "
                              f"capacity '{item}'", field="counters",
                              hint="expected name=capacity[,name=capacity...] with capacity >= 0")
        if name.strip() in BUILTIN_RESOURCES:
            raise ConfigError(f"'{name.strip()}' is a built-in resource, not a counter", field="counters")
        out[name.strip()] = cap
    return out


WINDOW_PARAMS: dict[str, Param] = {
    "window": Param(int, min=1, help="jobs at the front of the base queue considered together (000: 20)"),
    "base_order": Param(str, BASE_ORDERS, help="base scheduler order: fcfs (Cori) or wfp (Theta, Cobalt)"),
    "starvation_bound": Param(int, min=0, help="invocations a job may spend in the window before it "
                                               "must start (000 Sect. 3.1: 50)"),
    "resources": Param(str, help="comma-separated resources to optimise, nodes first "
                                 "(nodes, burst_buffer, gpus, counters) or 'auto'"),
    "reserve": Param(str, RESERVE, help="EASY backfilling's head reservation: nodes only or all resources"),
    "counters": Param(str, help="machine capacities of countable resources read from job fields, "
                                "'name=capacity,...' (sched-config's counters win); e.g. "
                                "`mrsched workload multires` prints them"),
    "solver": Param(str, SOLVERS, help="Pareto set solver: ga (000's genetic algorithm) or exact"),
    "generations": Param(int, min=0, help="genetic algorithm generations (000: 500)"),
    "population": Param(int, min=2, help="genetic algorithm population (000: 20)"),
    "mutation": Param(float, min=0.0, max=1.0, help="bit-flip probability per gene (000: 0.0005)"),
    "seed": Param(int, min=0, help="seed of the genetic algorithm's random generator"),
}


class WindowPolicy(Policy):
    """Window-based scheduling (000 Sect. 3.1) followed by EASY backfilling (000 Sect. 4.3).

    Each round: order the queue by the base policy; take
    the window; start the jobs that have spent ``starvation_bound`` invocations in the
    window (the first that does not fit becomes the head of EASY with a reservation, and
    no optimisation happens this round); otherwise start the jobs the selection method
    picks from the window; finally run the core's EASY backfilling over what is left, in
    base order. A selected job that does not fit once placed (burst buffer split over
    storage nodes, GPUs per node) stays queued.
    """

    _parameter_constraints = WINDOW_PARAMS

    def make_selector(self, resources: tuple[str, ...]):
        """The rule choosing jobs from a window (``select(problem, rng) -> bool array``)."""
        raise NotImplementedError

    def window_size(self, queue_length: int) -> int:
        return min(self.window, queue_length)

    def declared_counters(self) -> dict[str, float]:
        """Capacities of the ``counters`` knob. The runtime adds them to the machine's
        counters before the simulation starts (campaign runs have no ``sched-config``), so
        that jobs' fields of these names become requests that every start must fit."""
        return parse_counters(self.counters or "", policy=self.policy_name())

    # -- run time ------------------------------------------------------------------------
    def setup(self, cluster: Cluster) -> None:
        super().setup(cluster)
        self.resources_ = resource_names(self.resources, cluster)
        self.totals_ = np.array([resource_total(cluster, n) for n in self.resources_])
        self.selector_ = self.make_selector(self.resources_)
        self.rng_ = np.random.default_rng(getattr(self, "seed", 0))
        self.easy_ = EasyBackfilling(order="fcfs", reserve=self.reserve, depth=1)
        self.easy_.setup(cluster)
        self.in_window_: dict[str, int] = {}
        self.forced_: list[str] = []   # ids started by the starvation bound, in order (diagnostics)

    def problem(self, jobs: list[Job], profile, cluster: Cluster) -> WindowProblem:
        return WindowProblem.build([resource_demand(j, self.resources_) for j in jobs],
                                   resource_free(profile, cluster, self.resources_), self.totals_,
                                   self.resources_, jobs=[j.id for j in jobs])

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        if not hasattr(self, "rng_"):
            self.setup(ctx.cluster)
        profile, cluster = ctx.profile, ctx.cluster
        # Jobs that can never run were rejected at submission by the runtime
        # (infeasible_reason); one that cannot fit now simply never gets selected.
        queue = ctx.queue
        ordered = base_order(queue, self.base_order, ctx.now)
        window = ordered[:self.window_size(len(ordered))]
        seen = self.in_window_
        alive = {j.id for j in queue}
        for jid in [jid for jid in seen if jid not in alive]:
            del seen[jid]
        for job in window:
            seen[job.id] = seen.get(job.id, 0) + 1
        started: set[str] = set()
        blocked = None
        for job in window:
            if seen[job.id] <= self.starvation_bound:
                continue
            alloc = profile.fits_now(job.request)
            if alloc is None:
                blocked = job
                break
            ctx.start(job, alloc)
            started.add(job.id)
            self.forced_.append(job.id)
        if blocked is None:
            candidates = [j for j in window if j.id not in started]
            if candidates:
                chosen = self.selector_.select(self.problem(candidates, profile, cluster), self.rng_)
                for job, take in zip(candidates, chosen):
                    if take:
                        alloc = profile.fits_now(job.request)
                        if alloc is not None:
                            ctx.start(job, alloc)
                            started.add(job.id)
        rest = [j for j in ordered if j.id not in started]
        if blocked is not None:
            # The starving job heads EASY: it gets the reservation, the rest backfill.
            rest.remove(blocked)
            rest.insert(0, blocked)
        queue_before = ctx.queue
        ctx.queue = rest
        try:
            self.easy_.schedule(ctx)
        finally:
            ctx.queue = queue_before
        return ctx.decisions
