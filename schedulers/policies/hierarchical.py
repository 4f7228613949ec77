"""``hierarchical``: a tree of scheduler instances, each with its own clock (seed 004 Sect. 5.2-5.3).

Why: a centralized scheduler's sequential work bounds throughput (Sect. 5.1.1); Flux's fully
hierarchical model spreads it over instances that work in parallel. Here the root owns the
machine; a parent grants each child a fixed partition of its resources (uniform by default,
Sect. 5.3.1: "a static, uniform number of resources") and hands jobs down (``round-robin``
by default, or ``weighted`` by cores x walltime); leaves are registered policies of their own
(``fcfs``, ``conservative-bb``, ..., per level or per child through ``shape``) that place
jobs on their partition only (Hierarchical Bounding Principle).

Time: every instance is sequential and has its own clock. A leaf round costs
``decision_cost`` (``mrsched.schedulers.execution.cost``: per ingested event, per decided job, per
start; or its measured CPU time x ``decision_scale``) and its k-th decision takes effect when
its own work is done; handing one job down costs its parent ``distribution_cost``; an
instance is ready ``launch_cost`` after its parent, which launches its children one by one.
Children therefore work in parallel. Decisions due later than Batsim's clock are held and
released on a REQUESTED_CALL at their time (not a costed reply: that would stall every
instance on the busiest one). All instances run in this one process.

A job wider than every leaf under the child it would go to is refused with a reason
(Sect. 5.3.1 bounds a uniform hierarchy by the largest job). Partitions cover compute
resources only: burst buffer and counters are not split, so a leaf refuses jobs asking them
(except at depth 1, the default, where the one instance holds the whole machine).

Shape (``shape`` option: JSON/YAML text or a file): ``{"policy": "fcfs", "options": {...},
"size": N, "children": [...]}``; a node with children is a parent (its ``policy`` is
ignored), ``size`` (resources) is optional (the rest is shared evenly). Without ``shape``:
``depth`` levels, ``branching`` children per parent ("4" or one value per level: "32,36"),
leaves running ``leaf_policy``.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrsched.errors import ConfigError, SimulationError
from mrsched.schedulers.batsim.scheduler import MIN_WAKEUP_DELAY
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.execution.cost import DecisionCost, parse_decision_cost
from mrsched.schedulers.model.decisions import Decision, Reject, Start, WakeUp
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import Policy, SchedulingContext
from mrsched.schedulers.profile.feasibility import infeasible_reason

DISTRIBUTIONS = ("round-robin", "weighted")
EPS = 1e-9
#: Batsim writes times with 6 decimals: a REQUESTED_CALL asked for T may come with a ``now``
#: up to 5e-7 s before T. Held work due within this of ``now`` is done in that message.
DUE = 1e-5
# event kinds of the internal clockwork, in the order they run at equal times
_ARRIVE, _ROUND, _RELEASE = 0, 1, 2


@dataclass
class Instance:
    """One scheduler of the tree: its grant, its clock and (for a leaf) its own policy runtime."""

    path: str
    policy: str = "fcfs"
    options: dict = field(default_factory=dict)
    size: int | None = None
    children: list["Instance"] = field(default_factory=list)
    # run time
    lo: int = 0                 # grant: global compute indices [lo, hi)
    hi: int = 0
    ready: float = 0.0          # launched
    free_at: float = 0.0        # busy until
    max_leaf: int = 0           # largest leaf partition below (or own size)
    cursor: int = 0             # round-robin
    load: list = field(default_factory=list)   # weighted: cores x walltime per resource, per child
    runtime: Any = None         # leaf: PolicyRuntime on the partition
    inbox: int = 0              # events not ingested yet (per_event cost)
    round_at: float | None = None
    received: int = 0
    handed: int = 0
    started: int = 0
    rejected: int = 0
    rounds: int = 0
    busy: float = 0.0           # simulated seconds spent deciding / distributing
    cpu: float = 0.0            # real CPU seconds of its rounds

    @property
    def leaf(self) -> bool:
        return not self.children

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def _load_shape(text: str) -> dict:
    """The ``shape`` option: a JSON/YAML mapping, given inline or as a file path."""
    src = text
    path = Path(text)
    if not text.lstrip().startswith(("{", "[")) and path.suffix in (".json", ".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(f"policy 'hierarchical': shape file '{text}' does not exist", field="shape")
        src = path.read_text()
    try:
        import yaml
        shape = yaml.safe_load(src)
    except Exception as exc:   # noqa: BLE001 - yaml raises many kinds; one line for the user
        raise ConfigError(f"policy 'hierarchical': shape is not JSON/YAML: {str(exc).splitlines()[0]}",
                          field="shape") from None
    if not isinstance(shape, dict):
        raise ConfigError("policy 'hierarchical': shape must be a mapping with policy / size / children",
                          field="shape")
    return shape


class Hierarchical(Policy):
    """``hierarchical``: a tree of scheduler instances working in parallel (seed 004 Ch. 5)."""

    name = "hierarchical"
    io_phased = False          # every instance keeps its own clock: no phases
    power_capped = False       # leaves do not split counters: no power_cap (issue 44 item 4)
    _parameter_constraints = {
        "depth": Param(int, min=1, help="levels of the tree (1 = one centralized instance)"),
        "branching": Param(str, help="children per parent: one number, or one per level ('32,36')"),
        "shape": Param(str, help="explicit tree as JSON/YAML text or file (overrides depth/branching)"),
        "leaf_policy": Param(str, help="registered policy of every leaf without a shape"),
        "distribution": Param(str, DISTRIBUTIONS, help="how a parent hands jobs to its children"),
        "distribution_cost": Param(float, min=0.0, help="seconds a parent spends handing one job down"),
        "launch_cost": Param(float, min=0.0, help="seconds a parent spends launching each child"),
        "decision_cost": Param(str, help="leaf decision time: none, measured, or per_event=S,per_job=S,per_start=S"),
        "decision_scale": Param(float, min=0.0, help="factor on measured CPU time"),
    }

    def __init__(self, *, depth: int = 1, branching: str = "2", shape: str = "", leaf_policy: str = "fcfs",
                 distribution: str = "round-robin", distribution_cost: float = 0.0, launch_cost: float = 0.0,
                 decision_cost: str = "none", decision_scale: float = 1.0, period: float = 0.0):
        self.depth = depth
        # a campaign file's `branching: 36` arrives as an int
        self.branching = str(branching) if type(branching) is int else branching
        self.shape = shape
        self.leaf_policy = leaf_policy
        self.distribution = distribution
        self.distribution_cost = distribution_cost
        self.launch_cost = launch_cost
        self.decision_cost = decision_cost
        self.decision_scale = decision_scale
        self.period = period

    def bind_catalog(self, catalog) -> None:
        self._catalog = catalog         # the registry: leaves are registered policies

    def _leaves(self):
        catalog = getattr(self, "_catalog", None)
        if catalog is None:
            raise ConfigError("policy 'hierarchical' builds its leaves from the registry: make it with "
                              "mrsched.schedulers.registry.make_policy('hierarchical', ...)")
        return catalog

    def validate_params(self) -> None:
        super().validate_params()
        if self.period:
            raise ConfigError("policy 'hierarchical': option 'period' must be 0 (every instance keeps its "
                              "own clock)", field="period")
        self.cost_: DecisionCost = parse_decision_cost(self.decision_cost, self.decision_scale)
        self.tree_ = self._build_spec()

    # -- the tree's shape ------------------------------------------------------------------
    def _branching(self) -> list[int]:
        try:
            values = [int(v) for v in str(self.branching).split(",")]
        except ValueError:
            values = []
        if not values or any(v < 1 for v in values):
            raise ConfigError(f"policy 'hierarchical': option 'branching' must be whole numbers >= 1, "
                              f"got {self.branching!r}", field="branching")
        levels = self.depth - 1
        if levels == 0:
            return []   # one instance: branching does not apply
        if len(values) == 1:
            values = values * levels
        if len(values) != levels:
            raise ConfigError(f"policy 'hierarchical': option 'branching' gives {len(values)} levels, "
                              f"depth {self.depth} needs {levels}", field="branching")
        return values

    def _build_spec(self) -> Instance:
        if self.shape:
            root = self._from_shape(_load_shape(self.shape), "0")
        else:
            def grow(path: str, levels: list[int]) -> Instance:
                if not levels:
                    return Instance(path, self.leaf_policy)
                return Instance(path, children=[grow(f"{path}.{k}", levels[1:]) for k in range(levels[0])])
            root = grow("0", self._branching())
        for inst in root.walk():
            if inst.leaf:
                if inst.policy == self.name:
                    raise ConfigError(f"policy 'hierarchical': instance {inst.path} cannot itself be "
                                      "'hierarchical' (nest children in the shape instead)", field="shape")
                self._leaves().make_runtime(inst.policy, **inst.options)   # refuses bad names and options now
        return root

    def _from_shape(self, node: Any, path: str) -> Instance:
        if not isinstance(node, dict):
            raise ConfigError(f"policy 'hierarchical': shape node {path} must be a mapping", field="shape")
        unknown = set(node) - {"policy", "options", "size", "children"}
        if unknown:
            raise ConfigError(f"policy 'hierarchical': shape node {path} has unknown key "
                              f"'{sorted(unknown)[0]}' (policy, options, size, children)", field="shape")
        size = node.get("size")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ConfigError(f"policy 'hierarchical': shape node {path}: size must be a whole number >= 1, "
                              f"got {size!r}", field="shape")
        options = node.get("options") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"policy 'hierarchical': shape node {path}: options must be a mapping", field="shape")
        children = node.get("children") or []
        if not isinstance(children, list):
            raise ConfigError(f"policy 'hierarchical': shape node {path}: children must be a list", field="shape")
        policy = node.get("policy", self.leaf_policy)
        if not isinstance(policy, str):
            raise ConfigError(f"policy 'hierarchical': shape node {path}: policy must be a name", field="shape")
        if not children:
            catalog = self._leaves()
            table = catalog.parameter_table(policy)
            options = {k: catalog.coerce_option(policy, k, v, table.get(k)) for k, v in options.items()}
        return Instance(path, policy, dict(options), size,
                        [self._from_shape(c, f"{path}.{k}") for k, c in enumerate(children)])

    # -- simulation start -----------------------------------------------------------------
    def setup(self, cluster: Cluster) -> None:
        super().setup(cluster)
        self.root_ = root = self._build_spec()     # fresh run-time state every simulation
        self._grant(root, 0, cluster.nb_nodes, cluster)
        self._launch(root, 0.0)
        self.leaves_ = [i for i in root.walk() if i.leaf]
        for leaf in self.leaves_:
            leaf.runtime = self._leaves().make_runtime(leaf.policy, **leaf.options)
            leaf.runtime.begin(self._sub_cluster(cluster, leaf.lo, leaf.hi), 0.0)
        self.where_: dict[str, Instance] = {}      # job id -> its leaf, until it ends
        self.placed_: dict[str, str] = {}          # job id -> path of the leaf that started it
        self.heap_: list = []
        self.seq_ = 0

    def _grant(self, inst: Instance, lo: int, hi: int, cluster: Cluster) -> None:
        """Fixed partitions: explicit sizes first, the rest split evenly (earlier children get
        the remainder's extra resource)."""
        inst.lo, inst.hi = lo, hi
        if inst.leaf:
            inst.max_leaf = hi - lo
            return
        n = hi - lo
        fixed = sum(c.size for c in inst.children if c.size is not None)
        flexible = [c for c in inst.children if c.size is None]
        rest = n - fixed
        if rest < 0 or (flexible and rest < len(flexible)):
            raise ConfigError(f"policy 'hierarchical': instance {inst.path} holds {n} resources, too few for "
                              f"its {len(inst.children)} children ({fixed} given by size)", field="shape")
        if not flexible and rest:
            raise ConfigError(f"policy 'hierarchical': the children of instance {inst.path} have sizes summing to "
                              f"{fixed}, it holds {n} resources", field="shape")
        share, extra = divmod(rest, len(flexible)) if flexible else (0, 0)
        at = lo
        k = 0
        for c in inst.children:
            size = c.size if c.size is not None else share + (1 if k < extra else 0)
            if c.size is None:
                k += 1
            self._grant(c, at, at + size, cluster)
            at += size
        inst.max_leaf = max(c.max_leaf for c in inst.children)
        inst.load = [0.0] * len(inst.children)

    def _launch(self, inst: Instance, ready: float) -> None:
        """A parent launches its children one after the other (``launch_cost`` each)."""
        inst.ready = ready
        t = ready
        for c in inst.children:
            t += self.launch_cost
            self._launch(c, t)
        inst.free_at = t
        inst.busy += t - ready

    @staticmethod
    def _sub_cluster(cl: Cluster, lo: int, hi: int) -> Cluster:
        """A leaf's view: its compute partition; a leaf holding the whole machine (depth 1)
        also gets the storage and counters, which partitions do not split."""
        if lo == 0 and hi == cl.nb_nodes:
            return cl
        ids = cl.compute_ids[lo:hi]
        return Cluster(compute_ids=ids, compute_names=cl.compute_names[lo:hi], gpus=cl.gpus[lo:hi],
                       group=cl.group[lo:hi], chassis=cl.chassis[lo:hi],
                       properties={i: cl.properties[i] for i in ids if i in cl.properties},
                       sched_config=cl.sched_config)

    # -- the clockwork --------------------------------------------------------------------
    def _push(self, t: float, kind: int, inst: Instance, payload: Any = None) -> None:
        self.seq_ += 1
        heapq.heappush(self.heap_, (t, kind, self.seq_, inst, payload))

    def _want_round(self, leaf: Instance, t: float) -> None:
        at = max(t, leaf.free_at)
        if leaf.round_at is None or at < leaf.round_at - EPS:
            leaf.round_at = at
            self._push(at, _ROUND, leaf)

    def _arrive(self, t: float, inst: Instance, job: Job) -> None:
        inst.received += 1
        if inst.leaf:
            reason = infeasible_reason(inst.runtime.cluster, job.request, inst.runtime.profile.placer)
            if reason is not None:
                inst.rejected += 1
                self._push(t, _RELEASE, inst, Reject(job.id, f"leaf {inst.path}: {reason}"))
                return
            rt = inst.runtime
            rt.queue[job.id] = job
            rt.submitted.append(job.id)
            self.where_[job.id] = inst
            inst.inbox += 1
            self._want_round(inst, t)
            return
        start = max(t, inst.free_at)
        inst.free_at = start + self.distribution_cost
        inst.busy += self.distribution_cost
        child = self._pick(inst, job)
        if child is None:
            inst.rejected += 1
            self._push(inst.free_at, _RELEASE, inst, Reject(job.id, (
                f"asks {job.request.nodes} resources, more than the leaf partitions below instance {inst.path} "
                f"can hold (seed 004 Sect. 5.3.1: every leaf a job may reach must fit it)")))
            return
        inst.handed += 1
        self._push(inst.free_at, _ARRIVE, child, job)

    def _pick(self, inst: Instance, job: Job) -> Instance | None:
        n = job.request.nodes
        if self.distribution == "round-robin":
            child = inst.children[inst.cursor]
            inst.cursor = (inst.cursor + 1) % len(inst.children)
            return child if child.max_leaf >= n else None
        wt = job.request.walltime
        weight = n * (wt if math.isfinite(wt) else 1.0)
        best = None
        for k, c in enumerate(inst.children):
            if c.max_leaf >= n and (best is None or inst.load[k] < inst.load[best]):
                best = k
        if best is None:
            return None
        c = inst.children[best]
        inst.load[best] += weight / (c.hi - c.lo)
        return c

    def _round(self, t: float, leaf: Instance) -> None:
        if leaf.round_at is None or abs(leaf.round_at - t) > EPS:
            return   # superseded by an earlier round
        leaf.round_at = None
        rt = leaf.runtime
        t = max(t, rt.profile.now, leaf.free_at)
        cost = self.cost_
        ingested, leaf.inbox = leaf.inbox, 0
        c0 = time.process_time()
        decisions = rt.step(t, force=True)
        spent = time.process_time() - c0
        leaf.cpu += spent
        leaf.rounds += 1
        clock = t
        if cost.kind == "model":
            clock += cost.per_event * ingested
        elif cost.kind == "measured":
            clock += spent * cost.scale
        for d in decisions:
            if type(d) is WakeUp:
                self._want_round(leaf, max(d.time, t + EPS))
                continue
            if cost.kind == "model":
                clock += cost.job_cost(type(d) is Start)
            if type(d) is Start:
                leaf.started += 1
                self.placed_[d.job_id] = leaf.path
                self._push(clock, _RELEASE, leaf, Start(d.job_id, tuple(d.nodes), d.bb))
            else:
                leaf.rejected += 1
                self.where_.pop(d.job_id, None)
                self._push(clock, _RELEASE, leaf, Reject(d.job_id, f"leaf {leaf.path}: {d.reason}"))
        leaf.busy += clock - t
        leaf.free_at = clock
        if leaf.inbox:   # events that came while it worked
            self._want_round(leaf, clock)

    def _release(self, inst: Instance, d: Decision, out: list) -> None:
        if type(d) is Start:
            index_of = self.cluster_.index_of
            if not all(inst.lo <= index_of.get(r, -1) < inst.hi for r in d.nodes):
                raise SimulationError(f"policy 'hierarchical': leaf {inst.path} placed the job outside its "
                                      f"grant (compute indices {inst.lo}-{inst.hi - 1})", job=d.job_id)
        out.append(d)

    def _run_until(self, now: float, out: list, strict: bool) -> None:
        heap = self.heap_
        limit = now - DUE if strict else now + DUE
        while heap and heap[0][0] <= limit:
            t, kind, _, inst, payload = heapq.heappop(heap)
            if kind == _ARRIVE:
                self._arrive(t, inst, payload)
            elif kind == _ROUND:
                self._round(t, inst)
            else:
                self._release(inst, payload, out)

    # -- the policy contract --------------------------------------------------------------
    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        now = ctx.now
        out: list[Decision] = []
        self._run_until(now, out, strict=True)          # what was due before this message
        for jid in ctx.ended:
            leaf = self.where_.pop(jid, None)
            if leaf is not None:
                leaf.runtime.complete(now, jid)
                leaf.inbox += 1
                self._want_round(leaf, now)
        root = self.root_
        for jid in ctx.submitted:
            job = ctx.queue.get(jid)
            if job is not None:
                self._arrive(now, root, job)
        self._run_until(now, out, strict=False)
        if self.heap_:
            # Batsim's clock may already be a few microseconds past the message's `now` when
            # it reads the reply (and aborts on a wake-up in its past): never ask closer than
            # MIN_WAKEUP_DELAY, so held work may run up to that late, never early
            out.append(WakeUp(max(self.heap_[0][0], now + MIN_WAKEUP_DELAY)))
        return out

    # -- results --------------------------------------------------------------------------
    def instances(self) -> list[Instance]:
        """Every instance of the current run, root first (depth-first)."""
        return list(self.root_.walk())

    def stats(self) -> dict[str, Any]:
        """Per-depth totals: instances, jobs received / started / rejected, busy seconds, CPU."""
        out: dict[int, dict] = {}
        for inst in self.root_.walk():
            d = inst.path.count(".") + 1
            row = out.setdefault(d, {"instances": 0, "received": 0, "handed": 0, "started": 0, "rejected": 0,
                                     "busy": 0.0, "cpu": 0.0, "rounds": 0})
            row["instances"] += 1
            for k in ("received", "handed", "started", "rejected", "busy", "cpu", "rounds"):
                row[k] += getattr(inst, k)
        return out
