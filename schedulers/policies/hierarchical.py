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

Bounds (Sect. 5.3: children hold allocations "whose sum is less than the parent's", for
every resource): besides its nodes, a child gets burst-buffer bytes on each storage node (a
storage node's bytes go to the children holding the compute nodes it is nearest to, in
placement.py's distance), the I/O bandwidth of the edge switches over its nodes and a share
of the core and PFS levels (``bandwidth.py``'s tree), named counters, and a watt budget when
``power_cap`` is given (handed to each leaf policy as its own ``power_cap``); shares follow
the nodes unless the shape gives ``bb`` / ``bandwidth`` / ``power`` fractions. A leaf's
runtime sees its bounds as its machine, so its decisions never exceed them. With
``shares=queue`` the burst buffer is re-divided as jobs arrive, start and end: each child keeps
what its jobs hold, the rest goes by the bytes its waiting jobs ask (all of it toward the
oldest waiting job while that one would not fit); a leaf's machine then holds every byte and a
reservation holds what is beyond its bound. A job goes only to a child where some leaf can hold
it; one that fits the machine but no leaf is refused with a reason naming the bounds (Sect.
5.3.1 sizes a hierarchy by its largest job).

Shape (``shape`` option: JSON/YAML text or a file): ``{"policy": "fcfs", "options": {...},
"size": N, "bb": F, "bandwidth": F, "power": F, "children": [...]}``; a node with children
is a parent (its ``policy`` is ignored), ``size`` (resources) is optional (the rest is shared
evenly), the fractions (of the parent's) too (the rest follows the nodes). Without ``shape``:
``depth`` levels, ``branching`` children per parent ("4" or one value per level: "32,36"),
leaves running ``leaf_policy``.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mrsched.errors import ConfigError, SimulationError
from mrsched.schedulers.batsim.scheduler import MIN_WAKEUP_DELAY
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.execution.cost import DecisionCost, parse_decision_cost
from mrsched.schedulers.model.decisions import Allocation, Decision, Reject, Start, WakeUp
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import Policy, SchedulingContext
from mrsched.schedulers.profile.feasibility import infeasible_reason
from mrsched.sums import ordered_sum

DISTRIBUTIONS = ("round-robin", "weighted")
SHARES = ("static", "queue")
#: shares a shape may give a child, as fractions of its parent's (the rest follows the nodes)
FRACTIONS = ("bb", "bandwidth", "power")
#: instances a depth and branching may make (Herbein's deepest tree, 32 x 36 leaves: 1,185)
MAX_INSTANCES = 1 << 16
#: request shapes remembered per instance by the routing test (then forgotten all at once)
_FITS_MEMO = 1 << 14
EPS = 1e-9
#: Batsim writes times with 6 decimals: a REQUESTED_CALL asked for T may come with a ``now``
#: up to 5e-7 s before T. Held work due within this of ``now`` is done in that message.
DUE = 1e-5
# event kinds of the internal clockwork, in the order they run at equal times
_ARRIVE, _ROUND, _RELEASE = 0, 1, 2


TOP_LEVELS = ("core_bw", "pfs_bw")     # the PFS host's properties of the tree's global levels
INF = math.inf


def _count(mask: int, lo: int, hi: int) -> int:
    """Compute indices of ``mask`` in ``[lo, hi)``."""
    return ((mask >> lo) & ((1 << (hi - lo)) - 1)).bit_count()


def _storage_users(cl: Cluster) -> list[int]:
    """Per storage node, the compute nodes it is nearest to (a mask of compute indices): as
    placement.py's distance order sees them (same chassis, then same group, then any), each
    compute node counts for every storage node at its smallest distance. A storage node nearest
    to none gets an empty mask (its bytes then follow node counts)."""
    users = [0] * len(cl.storage)
    for k in range(cl.nb_nodes):
        g, c = cl.group[k], cl.chassis[k]
        dist = [(0 if c is not None and st.chassis == c else 1) if g is not None and st.group == g else 2
                for st in cl.storage]
        if not dist:
            break
        best = min(dist)
        for s, d in enumerate(dist):
            if d == best:
                users[s] |= 1 << k
    return users


def _bandwidth(value: Any) -> float:
    if value in (None, ""):
        return INF
    try:
        bw = float(value)
    except (TypeError, ValueError):
        return INF     # the tree's own reader refuses it, with the host's name, if a leaf reads it
    return bw if bw > 0 else INF


def _edges(cl: Cluster) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]:
    """The bandwidth tree's edge switches (``bandwidth.BandwidthTree``'s reading): per compute
    index its edge, per edge its node mask and capacity (the smallest ``edge_bw`` of its hosts)."""
    labels: dict[str, int] = {}
    edge_of, caps = [], []
    for k, rid in enumerate(cl.compute_ids):
        props = cl.properties.get(rid, {})
        e = labels.setdefault(str(props.get("edge", "")), len(labels))
        if e == len(caps):
            caps.append(INF)
        edge_of.append(e)
        caps[e] = min(caps[e], _bandwidth(props.get("edge_bw")))
    masks = [0] * len(caps)
    for k, e in enumerate(edge_of):
        masks[e] |= 1 << k
    return tuple(edge_of), tuple(masks), tuple(caps)


def _largest_remainders(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, in whole units summing to ``total``
    (the largest remainders get the leftover units; ties to the earlier)."""
    whole = sum(weights)
    parts = [total * w // whole for w in weights]
    left = total - sum(parts)
    order = sorted(range(len(weights)), key=lambda k: (-(total * weights[k] % whole), k))
    for k in order[:left]:
        parts[k] += 1
    return parts


def _fractions(cap: float, kids: list, nodes: list[int], key: str) -> list[float]:
    """A divisible capacity split: explicit fractions of ``cap``, the rest by node counts."""
    if cap == INF:
        return [INF] * len(kids)
    out = [cap * c.fractions[key] if key in c.fractions else 0.0 for c in kids]
    flex = [k for k, c in enumerate(kids) if key not in c.fractions]
    rest = max(0.0, cap - ordered_sum(out))
    whole = sum(nodes[k] for k in flex)
    for k in flex:
        out[k] = rest * nodes[k] / whole
    return out


@dataclass
class Instance:
    """One scheduler of the tree: its grant, its clock and (for a leaf) its own policy runtime."""

    path: str
    policy: str = "fcfs"
    options: dict = field(default_factory=dict)
    size: int | None = None
    children: list["Instance"] = field(default_factory=list)
    fractions: dict = field(default_factory=dict)   # shape's bb / bandwidth / power (of the parent's)
    # run time
    lo: int = 0                 # grant: global compute indices [lo, hi)
    hi: int = 0
    ready: float = 0.0          # launched
    free_at: float = 0.0        # busy until
    max_leaf: int = 0           # largest leaf partition below (or own size)
    cursor: int = 0             # round-robin
    load: list = field(default_factory=list)   # weighted: cores x walltime per resource, per child
    runtime: Any = None         # leaf: PolicyRuntime on the partition
    parent: "Instance | None" = field(default=None, repr=False, compare=False)
    # bounds besides the nodes [lo, hi): bytes per machine storage index, bytes/s per edge
    # switch (machine edge index) and of the core / PFS levels, counters, watts (None: no cap)
    bb: tuple = ()
    edge_bw: tuple = ()
    top_bw: tuple = ()
    counters: dict = field(default_factory=dict)
    power: float | None = None
    fits: dict = field(default_factory=dict, repr=False)   # request shape -> some leaf below holds it
    static_bb: tuple = ()       # the bytes of the static split (shares=queue: its fallback weights)
    max_bb: int = 0             # the most bytes it was ever bounded to (shares=queue moves them)
    cap: Any = None             # shares=queue, leaf: the reservation holding the bytes beyond its bound
    demand: int = 0             # shares=queue: bytes its waiting jobs ask
    need: list = field(default_factory=list)   # shares=queue: bytes per storage node it cannot give up
    # what its jobs (its leaves' jobs) hold now, at most, and over time
    held_nodes: int = 0
    held_bb: list = field(default_factory=list)
    peak_nodes: int = 0
    peak_bb: int = 0
    node_seconds: float = 0.0
    bb_byte_seconds: float = 0.0
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
    power_capped = False       # its own power_cap knob is split among the leaves' runtimes
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
        "power_cap": Param(float, min=0.0, help="watts for the whole tree, split among the children "
                                                 "(0: none); every leaf policy must take power_cap"),
        "shares": Param(str, SHARES, help="burst-buffer shares: static (by the shape) or queue (re-divided "
                                          "by the bytes each child's waiting jobs ask)"),
    }

    def __init__(self, *, depth: int = 1, branching: str = "2", shape: str = "", leaf_policy: str = "fcfs",
                 distribution: str = "round-robin", distribution_cost: float = 0.0, launch_cost: float = 0.0,
                 decision_cost: str = "none", decision_scale: float = 1.0, period: float = 0.0,
                 power_cap: float = 0.0, shares: str = "static"):
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
        self.power_cap = power_cap
        self.shares = shares

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
        if levels >= MAX_INSTANCES:     # every level holds one instance at least
            raise ConfigError(f"policy 'hierarchical': depth {self.depth} makes more than "
                              f"{MAX_INSTANCES:,} instances", field="depth")
        if len(values) == 1:
            values = values * levels
        if len(values) != levels:
            raise ConfigError(f"policy 'hierarchical': option 'branching' gives {len(values)} levels, "
                              f"depth {self.depth} needs {levels}", field="branching")
        total = width = 1
        for v in values:        # instances level by level, before any is built
            width *= v
            total += width
            if total > MAX_INSTANCES:   # (named: the option given, depth when branching is the default)
                given = self.branching != self.param_defaults()["branching"]
                raise ConfigError(f"policy 'hierarchical': depth {self.depth} and branching "
                                  f"{self.branching!r} make more than {MAX_INSTANCES:,} instances",
                                  field="branching" if given else "depth",
                                  hint="a shape file gives a tree of any form")
        return values

    def _build_spec(self) -> Instance:
        if self.shape:
            root = self._from_shape(_load_shape(self.shape), "0")   # (checks each leaf's policy)
        else:
            try:
                self._leaves().entry(self.leaf_policy)
            except ConfigError as exc:
                raise ConfigError(f"policy 'hierarchical': option 'leaf_policy': {exc.message}",
                                  field="leaf_policy", hint=exc.hint) from None
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
                if self.power_cap:
                    self._check_power_leaf(inst)
                self._leaves().make_runtime(inst.policy, **self._leaf_options(inst))   # refuses bad names and options now
        return root

    def _check_power_leaf(self, inst: Instance) -> None:
        """A cap is split among the leaves and enforced by each leaf policy: refused, not
        ignored, when a leaf policy cannot take it (or sets its own)."""
        cls = self._leaves().entry(inst.policy).cls
        if "power_cap" not in self._leaves().parameter_table(inst.policy) or not cls.power_capped:
            raise ConfigError(f"policy 'hierarchical': option 'power_cap' needs leaf policies that take "
                              f"power_cap; leaf {inst.path} runs '{inst.policy}', which does not",
                              field="power_cap")
        if "power_cap" in inst.options:
            raise ConfigError(f"policy 'hierarchical': leaf {inst.path} sets its own power_cap; with the "
                              "option power_cap the parents split it (give `power` fractions in the shape)",
                              field="shape")

    def _leaf_options(self, inst: Instance) -> dict:
        """The leaf policy's options; with ``power_cap``, its share of the watts (the whole cap
        before the run, when the shares are not known yet: only the names are checked)."""
        if not self.power_cap:
            return dict(inst.options)
        return {**inst.options, "power_cap": inst.power if inst.power is not None else self.power_cap}

    def _from_shape(self, node: Any, path: str) -> Instance:
        if not isinstance(node, dict):
            raise ConfigError(f"policy 'hierarchical': shape node {path} must be a mapping", field="shape")
        unknown = set(node) - {"policy", "options", "size", "children", *FRACTIONS}
        if unknown:
            raise ConfigError(f"policy 'hierarchical': shape node {path} has unknown key "
                              f"'{sorted(unknown)[0]}' (policy, options, size, children, "
                              f"{', '.join(FRACTIONS)})", field="shape")
        fractions = {}
        for key in FRACTIONS:
            if key in node:
                value = node[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                    raise ConfigError(f"policy 'hierarchical': shape node {path}: {key} must be a fraction "
                                      f"of the parent's, in (0, 1], got {value!r}", field="shape")
                fractions[key] = float(value)
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
            try:
                catalog.entry(policy)
            except ConfigError as exc:
                raise ConfigError(f"policy 'hierarchical': shape node {path}: {exc.message}",
                                  field="shape", hint=exc.hint) from None
            table = catalog.parameter_table(policy)
            options = {k: catalog.coerce_option(policy, k, v, table.get(k)) for k, v in options.items()}
        kids = [self._from_shape(c, f"{path}.{k}") for k, c in enumerate(children)]
        for key in FRACTIONS:
            total = ordered_sum(c.fractions.get(key, 0.0) for c in kids)
            if total > 1 + EPS:
                raise ConfigError(f"policy 'hierarchical': the children of shape node {path} ask {total:g} of "
                                  f"its {key}, more than all of it", field="shape")
        return Instance(path, policy, dict(options), size, kids, fractions)

    # -- simulation start -----------------------------------------------------------------
    def setup(self, cluster: Cluster) -> None:
        super().setup(cluster)
        self.root_ = root = self._build_spec()     # fresh run-time state every simulation
        for inst in root.walk():
            for c in inst.children:
                c.parent = inst
        self._grant(root, 0, cluster.nb_nodes, cluster)
        self._share(root, cluster)
        self._launch(root, 0.0)
        self.leaves_ = [i for i in root.walk() if i.leaf]
        for leaf in self.leaves_:
            leaf.runtime = self._leaves().make_runtime(leaf.policy, **self._leaf_options(leaf))
            leaf.runtime.begin(self._sub_cluster(cluster, leaf), 0.0)
        self.queue_shares_ = self.shares == "queue" and bool(cluster.storage) and not root.leaf
        if self.queue_shares_:
            for leaf in self.leaves_:
                self._set_cap(leaf, leaf.bb)
        self.where_: dict[str, Instance] = {}      # job id -> its leaf, until it ends
        self.placed_: dict[str, str] = {}          # job id -> path of the leaf that started it
        self.holding_: dict[str, tuple] = {}       # job id -> (leaf, start, nodes, bytes per storage index)
        self.bounds_log_: list[tuple] = []         # shares=queue: (time, instance, new bytes per storage node)
        self.arrival_: dict[str, int] = {}         # job id -> order of arrival at its leaf (shares=queue)
        self.storage_index_ = {st.id: k for k, st in enumerate(cluster.storage)}
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

    # -- bounds besides the nodes (Hierarchical Bounding Principle, seed 004 Sect. 5.3) ----
    def _share(self, root: Instance, cl: Cluster) -> None:
        """The root holds the machine; each parent splits what it holds among its children."""
        self.users_ = _storage_users(cl)
        self.edge_of_, self.edge_masks_, edge_caps = _edges(cl)
        root.bb = tuple(st.capacity for st in cl.storage)
        root.edge_bw = edge_caps
        pfs = cl.properties.get(cl.pfs_id, {}) if cl.pfs_id is not None else {}
        root.top_bw = tuple(_bandwidth(pfs.get(k)) for k in TOP_LEVELS)
        root.counters = dict(cl.counters)
        root.power = self.power_cap or None
        for inst in root.walk():
            inst.held_bb = [0] * len(root.bb)
            if not inst.leaf:
                self._split(inst)
            inst.static_bb = inst.bb
            inst.max_bb = sum(inst.bb)

    def _split(self, inst: Instance) -> None:
        """Children's bounds from the parent's: each sums to at most the parent's.

        Burst buffer, per storage node: explicit ``bb`` fractions first, the rest to the other
        children in proportion to the compute nodes they hold among those it is nearest to
        (``_storage_users``), so that a partition keeps its own chassis' storage whole; exact
        bytes (largest remainders). Edge switches go with their nodes; the core / PFS levels,
        watts and counters follow the explicit fractions, the rest the node counts."""
        kids = inst.children
        nodes = [c.hi - c.lo for c in kids]
        bb = [[0] * len(inst.bb) for _ in kids]
        for s, total in enumerate(inst.bb):
            rest = total
            for k, c in enumerate(kids):
                if "bb" in c.fractions:
                    bb[k][s] = int(total * c.fractions["bb"])
                    rest -= bb[k][s]
            flex = [k for k, c in enumerate(kids) if "bb" not in c.fractions]
            if not flex or rest <= 0:
                continue
            weights = [_count(self.users_[s], kids[k].lo, kids[k].hi) for k in flex]
            if not any(weights):
                weights = [nodes[k] for k in flex]
            for k, part in zip(flex, _largest_remainders(rest, weights)):
                bb[k][s] = part
        edge = []
        for e, cap in enumerate(inst.edge_bw):
            held = _count(self.edge_masks_[e], inst.lo, inst.hi)
            edge.append([cap if cap == INF else (cap * _count(self.edge_masks_[e], c.lo, c.hi) / held if held else 0.0)
                         for c in kids])
        top = [_fractions(cap, kids, nodes, "bandwidth") for cap in inst.top_bw]
        power = _fractions(inst.power, kids, nodes, "power") if inst.power is not None else None
        whole = sum(nodes)
        for k, c in enumerate(kids):
            c.bb = tuple(bb[k])
            c.edge_bw = tuple(row[k] for row in edge)
            c.top_bw = tuple(row[k] for row in top)
            c.power = power[k] if power is not None else None
            c.counters = {name: cap * nodes[k] / whole for name, cap in inst.counters.items()}

    # -- shares=queue: burst buffer re-divided by each child's waiting jobs ------------------
    def _set_cap(self, leaf: Instance, bound: tuple) -> None:
        """Make ``bound`` the leaf's bytes: its machine holds every storage node whole, and a
        reservation over ``[now, forever)`` holds the rest (released first, so that a policy
        keeping a release log sees the bytes it may gain)."""
        profile = leaf.runtime.profile
        if leaf.cap is not None:
            profile.release(leaf.cap, from_time=profile.now)
        rest = tuple(st.capacity - b for st, b in zip(self.cluster_.storage, bound))
        leaf.cap = profile.reserve(profile.now, INF, Allocation(0, rest), tag=f"bounds of leaf {leaf.path}")
        leaf.bb = tuple(bound)

    def _rebalance(self, t: float) -> None:
        """Re-divide every parent's burst buffer among its children (seed 004 Sect. 5.3: a
        parent may re-grant what its children do not use). A child keeps what it cannot give
        up (``need``: per storage node, the most its running jobs and kept reservations hold at
        any future time); the rest of the parent's bytes goes in proportion to the bytes its
        waiting jobs ask, or, when no child waits for any, as the static split. Proportions
        alone could leave two big jobs each waiting for more than its half forever: when the
        oldest waiting job asking burst buffer would not surely fit beside its leaf's needs,
        every parent above it gives that way all it does not need (a drain, as an EASY head
        reservation does for nodes) until it fits. Leaves gaining bytes with jobs waiting get
        a round."""
        order = list(self.root_.walk())
        nb = len(self.root_.bb)
        head = None                              # (arrival, leaf, job): the oldest waiting bb job
        for inst in reversed(order):             # children before parents
            if inst.leaf:
                rt = inst.runtime
                inst.demand = 0
                for job in rt.queue.values():
                    if job.request.bb_total:
                        inst.demand += job.request.bb_total
                        seq = self.arrival_[job.id]
                        if head is None or seq < head[0]:
                            head = (seq, inst, job)
                rows = rt.profile.bb
                inst.need = [b - min(row[s] for row in rows) for s, b in enumerate(inst.bb)]
            else:
                inst.demand = sum(c.demand for c in inst.children)
                inst.need = [sum(c.need[s] for c in inst.children) for s in range(nb)]
        bounds = self._divide(order, nb, ())
        if head is not None:
            _, leaf, job = head
            req = job.request
            extra = [b - n for b, n in zip(bounds[leaf.path], leaf.need)]
            if not leaf.runtime.profile.placer.surely_fits(-(-req.bb_total // req.nodes), req.nodes, extra):
                path, inst = set(), leaf
                while inst is not None:
                    path.add(inst.path)
                    inst = inst.parent
                bounds = self._divide(order, nb, path)
        for inst in order[1:]:
            bound = bounds[inst.path]
            if bound == inst.bb:
                continue
            if inst.leaf:
                gained = any(b > a for a, b in zip(inst.bb, bound))
                self._set_cap(inst, bound)
                if gained and inst.runtime.queue:
                    self._want_round(inst, t)
            else:
                inst.bb = bound
            inst.max_bb = max(inst.max_bb, sum(bound))
            self.bounds_log_.append((t, inst.path, bound))

    @staticmethod
    def _divide(order: list[Instance], nb: int, drain: set) -> dict[str, tuple]:
        """New bytes per storage node of every instance, top-down: each child its need, plus
        the parent's slack by its waiting bytes (static split, then node counts, when none
        waits); a child on the ``drain`` path gets all the slack."""
        bounds = {order[0].path: order[0].bb}
        for inst in order:
            if inst.leaf:
                continue
            kids = inst.children
            mine = bounds[inst.path]
            new = [[c.need[s] for s in range(nb)] for c in kids]
            chosen = [k for k, c in enumerate(kids) if c.path in drain]
            for s in range(nb):
                slack = mine[s] - sum(c.need[s] for c in kids)
                if slack <= 0:
                    continue
                if chosen:
                    weights = [1 if k == chosen[0] else 0 for k in range(len(kids))]
                else:
                    weights = [c.demand for c in kids]
                    if not any(weights):
                        weights = [c.static_bb[s] for c in kids]
                    if not any(weights):
                        weights = [c.hi - c.lo for c in kids]
                for k, part in enumerate(_largest_remainders(slack, weights)):
                    new[k][s] += part
            for k, c in enumerate(kids):
                bounds[c.path] = tuple(new[k])
        return bounds

    def _sub_cluster(self, cl: Cluster, inst: Instance) -> Cluster:
        """A leaf's view: its compute partition and its bounds (storage nodes with its bytes
        only, its bandwidth as the tree's host properties, its counters); the root as a leaf
        (depth 1) holds the whole machine."""
        if inst is self.root_:
            return cl
        lo, hi = inst.lo, inst.hi
        ids = cl.compute_ids[lo:hi]
        props = {i: cl.properties[i] for i in ids if i in cl.properties}
        for k, rid in enumerate(ids, lo):
            p = props.get(rid)
            if p and p.get("edge_bw") not in (None, "") and inst.edge_bw[self.edge_of_[k]] != INF:
                props[rid] = {**p, "edge_bw": repr(inst.edge_bw[self.edge_of_[k]])}
        if cl.pfs_id is not None:
            p = dict(cl.properties.get(cl.pfs_id, {}))
            for key, cap in zip(TOP_LEVELS, inst.top_bw):
                if p.get(key) not in (None, "") and cap != INF:
                    p[key] = repr(cap)
            props[cl.pfs_id] = p
        if self.shares == "queue":
            storage = cl.storage      # every byte may come its way: its bound is a reservation (_set_cap)
        else:
            storage = tuple(replace(st, capacity=b) for st, b in zip(cl.storage, inst.bb) if b > 0)
        return Cluster(compute_ids=ids, compute_names=cl.compute_names[lo:hi], gpus=cl.gpus[lo:hi],
                       group=cl.group[lo:hi], chassis=cl.chassis[lo:hi], storage=storage, pfs_id=cl.pfs_id,
                       properties=props, counters=dict(inst.counters), sched_config=cl.sched_config,
                       storage_ids=tuple(st.id for st in storage) + ((cl.pfs_id,) if cl.pfs_id is not None else ()))

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
            counted, reason = inst.runtime.counted(job)   # its power, when the leaf keeps a cap
            if reason is None:
                job = counted
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
            if self.queue_shares_ and job.request.bb_total:
                self.arrival_[job.id] = len(self.arrival_)
                self._rebalance(t)
            return
        start = max(t, inst.free_at)
        inst.free_at = start + self.distribution_cost
        inst.busy += self.distribution_cost
        child = self._pick(inst, job)
        if child is None:
            inst.rejected += 1
            self._push(inst.free_at, _RELEASE, inst, Reject(job.id, self._unfit_reason(inst, job.request)))
            return
        inst.handed += 1
        self._push(inst.free_at, _ARRIVE, child, job)

    def _pick(self, inst: Instance, job: Job) -> Instance | None:
        """The child a job goes to, among those with a leaf whose bounds hold it (None: none)."""
        req = job.request
        n = req.nodes
        kids = inst.children
        if self.distribution == "round-robin":
            # the child in turn; when it cannot hold the job, the next one that can (the turn
            # then moves past it); none: the turn moves on by one
            first = inst.cursor
            inst.cursor = (first + 1) % len(kids)
            for i in range(len(kids)):
                k = (first + i) % len(kids)
                if self._fits(kids[k], req):
                    inst.cursor = (k + 1) % len(kids)
                    return kids[k]
            return None
        wt = req.walltime
        weight = n * (wt if math.isfinite(wt) else 1.0)
        best = None
        for k, c in enumerate(kids):
            if (best is None or inst.load[k] < inst.load[best]) and self._fits(c, req):
                best = k
        if best is None:
            return None
        c = inst.children[best]
        inst.load[best] += weight / (c.hi - c.lo)
        return c

    def _fits(self, inst: Instance, req) -> bool:
        """Whether some leaf below ``inst`` (or ``inst`` itself) can ever run the request within
        its bounds: the largest leaf partition for plain node requests, else each leaf's own
        feasibility test on its bounded machine (remembered per request shape)."""
        if not (req.bb_total or req.gpus_per_node or req.counters or req.io_bandwidth_per_node):
            return inst.max_leaf >= req.nodes
        key = (req.nodes, req.bb_total, req.gpus_per_node, req.counters, req.io_bandwidth_per_node)
        memo = inst.fits
        known = memo.get(key)
        if known is None:
            if inst.leaf:
                known = self._leaf_reason(inst, req) is None
            else:
                known = any(self._fits(c, req) for c in inst.children)
            if len(memo) >= _FITS_MEMO:
                memo.clear()
            memo[key] = known
        return known

    @staticmethod
    def _leaf_reason(leaf: Instance, req) -> str | None:
        rt = leaf.runtime
        reason = infeasible_reason(rt.cluster, req, rt.profile.placer)
        if reason is None and rt.tree is not None:
            reason = rt.tree.infeasible_reason(req)
        return reason

    def _unfit_reason(self, inst: Instance, req) -> str:
        if not (req.bb_total or req.gpus_per_node or req.counters or req.io_bandwidth_per_node):
            return (f"asks {req.nodes} resources, more than the leaf partitions below instance {inst.path} "
                    f"can hold (seed 004 Sect. 5.3.1: every leaf a job may reach must fit it)")
        leaf = next(i for i in inst.walk() if i.leaf)
        return (f"fits the machine but no leaf's bounds below instance {inst.path} (with leaf {leaf.path}'s "
                f"bounds as the machine: {self._leaf_reason(leaf, req)}; seed 004 Sect. 5.3.1: size the shares "
                f"by the largest job)")

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
        moved_bb = False
        for d in decisions:
            if type(d) is WakeUp:
                self._want_round(leaf, max(d.time, t + EPS))
                continue
            moved_bb = moved_bb or bool(d.bb) if type(d) is Start else moved_bb
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
        if moved_bb and self.queue_shares_:   # waiting bytes became held: re-divide (ends a drain)
            self._rebalance(t)

    def _release(self, inst: Instance, d: Decision, out: list, now: float) -> None:
        if type(d) is Start:
            index_of = self.cluster_.index_of
            if not all(inst.lo <= index_of.get(r, -1) < inst.hi for r in d.nodes):
                raise SimulationError(f"policy 'hierarchical': leaf {inst.path} placed the job outside its "
                                      f"grant (compute indices {inst.lo}-{inst.hi - 1})", job=d.job_id)
            self._hold(inst, d, now)
        out.append(d)

    def _hold(self, leaf: Instance, d: Start, now: float) -> None:
        """Count a started job against its leaf and every ancestor; a bound exceeded at any
        level is a bug, reported, never sent."""
        bb = [0] * len(leaf.bb)
        if bb and d.bb:
            index = self.storage_index_
            for shares in d.bb.values():
                for sid, nbytes in shares.items():
                    bb[index[sid]] += nbytes
        n = len(d.nodes)
        inst = leaf
        while inst is not None:
            inst.held_nodes += n
            inst.peak_nodes = max(inst.peak_nodes, inst.held_nodes)
            if bb:
                held = inst.held_bb
                for s, nbytes in enumerate(bb):
                    if nbytes:
                        held[s] += nbytes
                        if held[s] > inst.bb[s]:
                            raise SimulationError(
                                f"policy 'hierarchical': instance {inst.path} would hold {held[s]} bytes on "
                                f"storage node {self.cluster_.storage[s].name}, its bound is {inst.bb[s]}",
                                job=d.job_id)
                inst.peak_bb = max(inst.peak_bb, sum(held))
            inst = inst.parent
        self.holding_[d.job_id] = (leaf, now, n, bb)

    def _unhold(self, job_id: str, now: float) -> None:
        held = self.holding_.pop(job_id, None)
        if held is None:
            return
        leaf, start, n, bb = held
        spent = max(0.0, now - start)
        nbytes = sum(bb)
        inst = leaf
        while inst is not None:
            inst.held_nodes -= n
            inst.node_seconds += n * spent
            if nbytes:
                inst.bb_byte_seconds += nbytes * spent
                for s, b in enumerate(bb):
                    inst.held_bb[s] -= b
            inst = inst.parent

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
                self._release(inst, payload, out, now)

    # -- the policy contract --------------------------------------------------------------
    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        now = ctx.now
        out: list[Decision] = []
        self._run_until(now, out, strict=True)          # what was due before this message
        for jid in ctx.ended:
            self._unhold(jid, now)
            leaf = self.where_.pop(jid, None)
            if leaf is not None:
                leaf.runtime.complete(now, jid)
                leaf.inbox += 1
                self._want_round(leaf, now)
        if self.queue_shares_ and ctx.ended:
            self._rebalance(now)
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
        """Per-depth totals: instances, jobs received (routed to it) / handed down / started /
        rejected, busy seconds, CPU, rounds, and the node-seconds and burst-buffer byte-seconds
        its jobs used (an instance counts its leaves' jobs: each depth sums to the machine's)."""
        out: dict[int, dict] = {}
        for inst in self.root_.walk():
            d = inst.path.count(".") + 1
            row = out.setdefault(d, {"instances": 0, "received": 0, "handed": 0, "started": 0, "rejected": 0,
                                     "busy": 0.0, "cpu": 0.0, "rounds": 0, "node_seconds": 0.0,
                                     "bb_byte_seconds": 0.0})
            row["instances"] += 1
            for k in ("received", "handed", "started", "rejected", "busy", "cpu", "rounds", "node_seconds",
                      "bb_byte_seconds"):
                row[k] += getattr(inst, k)
        return out

    def instance_stats(self) -> list[dict[str, Any]]:
        """One row per instance, root first: its bounds (nodes, burst-buffer bytes of the static
        split and the most it held under ``shares=queue``, core / PFS bytes/s, watts; empty
        when unbounded), the jobs routed to it, handed down, started and
        rejected by it, what its jobs held at most and used over the run (node-seconds,
        burst-buffer byte-seconds), its busy seconds, CPU seconds and rounds."""
        rows = []
        for inst in self.root_.walk():
            core, pfs = inst.top_bw if inst.top_bw else (INF, INF)
            rows.append({
                "instance": inst.path, "depth": inst.path.count(".") + 1,
                "policy": inst.policy if inst.leaf else "", "nodes": inst.hi - inst.lo, "bb_bytes": sum(inst.static_bb),
                "bb_bytes_max": inst.max_bb,
                "core_bw": "" if core == INF else core, "pfs_bw": "" if pfs == INF else pfs,
                "power_w": "" if inst.power is None else inst.power,
                "routed": inst.received, "handed": inst.handed, "started": inst.started, "rejected": inst.rejected,
                "peak_nodes": inst.peak_nodes, "peak_bb_bytes": inst.peak_bb,
                "node_seconds": round(inst.node_seconds, 6), "bb_byte_seconds": round(inst.bb_byte_seconds, 3),
                "busy": round(inst.busy, 6), "cpu": round(inst.cpu, 6), "rounds": inst.rounds})
        return rows

    def run_table(self) -> tuple[str, list[dict[str, Any]]] | None:
        """``out_hierarchy.csv``: ``instance_stats()`` (the metrics per level of a run)."""
        return ("hierarchy", self.instance_stats()) if getattr(self, "root_", None) is not None else None
