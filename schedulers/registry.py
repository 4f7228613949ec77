"""The papers' policy names: one table from a name to an algorithm's class and the defaults
that make the variant (DESIGN.md "Policies"), and the factories every runner uses.

A variant is data, not a subclass: ``fcfs-easy`` is :class:`EasyBackfilling` with
``reserve="nodes"``, ``plan-2`` is :class:`PlanBased` with ``alpha=2``. Options given by a user
override the entry's defaults; ``get_params()`` of the policy made tells the truth.

An option is either one of the policy's own knobs or one of the runtime's (``RUN_PARAMS``:
job model, period, decision cost; ``IO_PARAMS`` for policies with the ``io`` service): the
factories split them, the policy gets its knobs and the runtime a :class:`RunOptions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mrsched.errors import ConfigError, suggest
from mrsched.schedulers.model.params import IO_PARAMS, RUN_DEFAULTS, RUN_PARAMS, Param, RunOptions

if TYPE_CHECKING:
    from mrsched.schedulers.execution.runtime import PolicyRuntime, PolicyScheduler
    from mrsched.schedulers.model.contract import Policy

_POLICIES = "mrsched.schedulers.policies"


@dataclass(frozen=True)
class Entry:
    """A registered name: the algorithm's class (``"module:Class"`` under
    ``mrsched.schedulers.policies``, imported when first asked for, so that a command imports
    only the policy it runs), the defaults of this variant, one line."""

    target: str | type[Policy]   # or the class itself (a policy registered at run time)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    summary: str = ""

    @property
    def cls(self) -> type[Policy]:
        if isinstance(self.target, type):
            return self.target
        found = _CLASSES.get(self.target)
        if found is None:
            import importlib

            module, _, name = self.target.partition(":")
            found = _CLASSES[self.target] = getattr(importlib.import_module(f"{_POLICIES}.{module}"), name)
        return found


_CLASSES: dict[str, type] = {}


POLICIES: dict[str, Entry] = {
    "fcfs": Entry("fcfs:FCFS", {}, "first come first served, no backfilling"),
    "filler": Entry("filler:Filler", {}, "start any queued job that fits now, in queue order, no reservation"),
    "fcfs-easy": Entry("backfilling:EasyBackfilling", {"reserve": "nodes"},
                       "EASY backfilling; the head's reservation covers nodes only (seed 001)"),
    "fcfs-bb": Entry("backfilling:EasyBackfilling", {"reserve": "all"},
                     "EASY backfilling; the head's reservation covers nodes and burst buffer (seed 001 Alg. 1)"),
    "sjf-bb": Entry("backfilling:EasyBackfilling", {"order": "sjf", "reserve": "all"},
                    "fcfs-bb with the queue sorted by walltime (seed 001)"),
    "easy-bf": Entry("backfilling:EasyBackfilling", {}, "EASY backfilling with every knob open (order, reserve, depth)"),
    "conservative-bb": Entry("conservative:ConservativeBackfilling", {},
                             "conservative backfilling over every resource (batsched's compression)"),
    "conservative": Entry("conservative:ConservativeBackfilling", {}, "the same as conservative-bb"),
    "plan": Entry("plan:PlanBased", {}, "plan-based scheduling with simulated annealing (seed 001 Alg. 2)"),
    "plan-1": Entry("plan:PlanBased", {"alpha": 1.0}, "plan with alpha = 1: the total waiting time (seed 001)"),
    "plan-2": Entry("plan:PlanBased", {"alpha": 2.0}, "plan with alpha = 2 (seed 001's best on the whole trace)"),
    "plan-3": Entry("plan:PlanBased", {"alpha": 3.0}, "plan with alpha = 3: the strongest penalty on postponing a job"),
    "bbsched": Entry("bbsched:BBSched", {}, "window of jobs, Pareto set of node and burst-buffer use, 2x rule (seed 000)"),
    "naive": Entry("bbsched:Naive", {}, "window jobs in order until one does not fit, then EASY (seed 000's baseline)"),
    "weighted": Entry("bbsched:Weighted", {}, "weighted sum of node and burst-buffer use, 0.5 / 0.5 (seed 000)"),
    "weighted-cpu": Entry("bbsched:Weighted", {"node_weight": 0.8}, "weighted with 0.8 node / 0.2 burst buffer (seed 000)"),
    "weighted-bb": Entry("bbsched:Weighted", {"node_weight": 0.2}, "weighted with 0.2 node / 0.8 burst buffer (seed 000)"),
    "constrained": Entry("bbsched:Constrained", {}, "maximise one resource's use under the others' capacity"),
    "constrained-cpu": Entry("bbsched:Constrained", {"target": "nodes"},
                             "max node use under the burst-buffer constraint (seed 000)"),
    "constrained-bb": Entry("bbsched:Constrained", {"target": "burst_buffer"},
                            "max burst-buffer use under the node constraint (seed 000)"),
    "bin-packing": Entry("bbsched:BinPacking", {}, "Tetris alignment score, greedy (seed 000)"),
    "multisched": Entry("multisched:MultiSched", {}, "window of k% of the queue over many resources (seed 003)"),
    "hierarchical": Entry("hierarchical:Hierarchical", {}, "a tree of scheduler instances, each bounded to a share of every resource (seed 004 Ch. 5)"),
    "slurm-bf": Entry("slurm_bf:SlurmBackfill", {}, "SLURM's backfill with best fit of cores and GPUs (seed 002's baseline)"),
    "ipsched": Entry("ipsched:IpSched", {}, "a window of jobs placed by one MILP (seed 002)"),
    "aucsched": Entry("aucsched:AucSched", {}, "contiguity-aware auction solved as a MILP (seed 002)"),
}


def policy_names() -> list[str]:
    """The registered policy names, in table order."""
    return list(POLICIES)


def entry(name: str) -> Entry:
    try:
        return POLICIES[name]
    except KeyError:
        raise ConfigError(f"unknown policy '{name}'", hint=suggest(name, POLICIES)) from None


def policy_class(name: str) -> type[Policy]:
    return entry(name).cls


def policy_parameters(name: str) -> dict[str, Any]:
    """The policy's own knobs -> their defaults in this variant."""
    e = entry(name)
    return {**e.cls.param_defaults(), **e.defaults}


def run_parameters(cls: type[Policy]) -> dict[str, Param]:
    """The runtime's knobs a policy of this class takes (beside its own)."""
    table = dict(RUN_PARAMS)
    if "io" in cls.services:
        table.update(IO_PARAMS)
    return table


def scheduler_parameters(name: str) -> dict[str, Any]:
    """Every option ``make_scheduler(name, ...)`` takes, with its default: the runtime's knobs
    then the policy's own (a knob the policy declares itself keeps the policy's default)."""
    cls = policy_class(name)
    run = {k: RUN_DEFAULTS[k] for k in run_parameters(cls)}
    return {**run, **policy_parameters(name)}


def class_parameters(cls: type[Policy]) -> dict[str, Any]:
    """``scheduler_parameters`` of a user's own :class:`Policy` subclass."""
    return {**{k: RUN_DEFAULTS[k] for k in run_parameters(cls)}, **cls.param_defaults()}


def parameter_table(name: str) -> dict[str, Param]:
    """Every option of ``scheduler_parameters(name)`` -> its declared constraint."""
    cls = policy_class(name)
    return {**run_parameters(cls), **cls.param_table()}


def coerce_option(policy: str, name: str, value: Any, param: Param | None) -> Any:
    """Turn a command-line string into the declared type of the option."""
    if param is None or not isinstance(value, str):
        return value
    try:
        if param.type is bool:
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if param.type is int:
            try:
                return int(value)       # exact, however many digits
            except ValueError:
                f = float(value)        # "1e3", "2.0"
            if f != int(f):
                raise ValueError(value)
            return int(f)
        if param.type is float:
            return float(value)
    except (ValueError, OverflowError):
        raise ConfigError(f"policy '{policy}': option '{name}' must be {param.type.__name__}, got {value!r}",
                          field=name) from None
    return value


def _split(name: str, cls: type[Policy], defaults: Mapping[str, Any], options: Mapping[str, Any] | None
           ) -> tuple[dict[str, Any], RunOptions]:
    """Options -> (the policy's knobs over the variant's ``defaults``, the runtime's), each
    coerced to its declared type.

    A runtime knob the policy declares as its own goes to the policy, and the runtime takes
    the policy's value too (``period``: ipsched's MILP interval is also its round period),
    except ``decision_cost`` / ``decision_scale``, which such a policy applies itself
    (``hierarchical`` charges them to its leaves).
    """
    options = dict(options or {})
    own = cls.param_names()
    run_table = run_parameters(cls)
    valid = [*own, *(k for k in run_table if k not in own)]
    for key in options:
        if key not in valid:
            raise ConfigError(f"policy '{name}': unknown option '{key}'", field=key, hint=suggest(key, valid))
    table = {**run_table, **_inferred(cls), **cls.param_table()}
    coerced = {k: coerce_option(name, k, v, table.get(k)) for k, v in options.items()}
    knobs = {**defaults, **{k: v for k, v in coerced.items() if k in own}}
    run = {k: v for k, v in coerced.items() if k not in own}
    if "period" in own:
        run["period"] = knobs.get("period", cls.param_defaults()["period"])
    return knobs, RunOptions(**run)


def _inferred(cls: type[Policy]) -> dict[str, Param]:
    """A type for each knob declared without a table entry, from its default (a user's class)."""
    return {k: Param(type(v)) for k, v in cls.param_defaults().items()
            if type(v) in (bool, int, float, str)}


def _made(name: str, cls: type[Policy], knobs: Mapping[str, Any]) -> Policy:
    policy = cls(**knobs)
    policy.name = name                  # the registered name, for messages (not a knob)
    policy.bind_catalog(CATALOG)
    policy.validate_params()
    return policy


def make_policy(name: str, **knobs: Any) -> Policy:
    """A validated policy instance from its own knobs (the runtime's knobs go to
    ``make_runtime`` / ``make_scheduler``); ConfigError names the policy and option."""
    e = entry(name)
    own = e.cls.param_names()
    for key in knobs:
        if key not in own:
            if key in run_parameters(e.cls):
                raise ConfigError(f"policy '{name}': '{key}' is an option of the runtime, not a knob of "
                                  "the policy", field=key, hint="give it to make_runtime or make_scheduler")
            raise ConfigError(f"policy '{name}': unknown option '{key}'", field=key, hint=suggest(key, own))
    policy_knobs, _ = _split(name, e.cls, e.defaults, knobs)
    return _made(name, e.cls, policy_knobs)


def make_runtime(name: str, **options: Any) -> PolicyRuntime:
    """The protocol-free runtime of policy ``name`` (tests, in-process drivers)."""
    from mrsched.schedulers.execution.runtime import PolicyRuntime

    e = entry(name)
    knobs, run = _split(name, e.cls, e.defaults, options)
    policy = _made(name, e.cls, knobs)
    _check_run(name, policy, run)
    return PolicyRuntime(policy, run)


def _check_run(name: str, policy: Policy, run: RunOptions) -> None:
    run.check(name)
    if (run.power_cap or run.power_cap_steps or run.power_cap_share) and not policy.power_capped:
        raise ConfigError(f"policy '{name}': power_cap is not available for this policy (it does not "
                          "place the profile's counters)", field="power_cap",
                          hint="docs/POLICIES.md lists the policies that keep a power cap")
    if run.idle_sleep and not policy.power_capped:
        raise ConfigError(f"policy '{name}': idle_sleep is not available for this policy (its resources "
                          "are not whole nodes of the runtime's profile)", field="idle_sleep")
    if run.job_model == "io-phased" and not policy.io_phased:
        raise ConfigError(f"policy '{name}': job_model 'io-phased' is not available for this policy",
                          field="job_model", hint="use job_model=alloc-only")
    if run.job_model == "io-phased" and run.io_model != "none":
        raise ConfigError(f"policy '{name}': io_model '{run.io_model}' and job_model 'io-phased' both say how "
                          "a job's I/O runs; choose one", field="io_model")


def scheduler_for(policy: Policy, run: RunOptions) -> PolicyScheduler:
    """The BatsimScheduler running ``policy`` under the job model ``run`` asks for."""
    _check_run(policy.policy_name(), policy, run)
    if run.job_model == "io-phased":
        from mrsched.schedulers.execution.iophased import IoPhasedScheduler
        return IoPhasedScheduler(policy, run)
    if run.io_model == "contention":
        from mrsched.schedulers.execution.ioptask import IoPtaskScheduler
        return IoPtaskScheduler(policy, run)
    from mrsched.schedulers.execution.runtime import PolicyScheduler

    return PolicyScheduler(policy, run)


def make_scheduler(name: str, options: dict[str, Any] | None = None) -> PolicyScheduler:
    """A ``PolicyScheduler`` (a BatsimScheduler) running policy ``name`` with coerced options."""
    e = entry(name)
    knobs, run = _split(name, e.cls, e.defaults, options)
    return scheduler_for(_made(name, e.cls, knobs), run)


def make_scheduler_of_class(cls: type[Policy], options: dict[str, Any] | None = None) -> PolicyScheduler:
    """A ``PolicyScheduler`` for a user's own :class:`Policy` subclass (``module:Class``)."""
    name = cls.name or cls.__name__
    knobs, run = _split(name, cls, {}, options)
    return scheduler_for(_made(name, cls, knobs), run)


def make_scheduler_of_instance(policy: Policy, options: dict[str, Any] | None = None) -> PolicyScheduler:
    """A ``PolicyScheduler`` running a policy object the caller made (``mrsched.simulate``):
    its knobs are set already; ``options`` may hold only the runtime's (``RUN_PARAMS``...)."""
    cls = type(policy)
    name = policy.policy_name()
    own = cls.param_names()
    for key in options or {}:
        if key in own:
            raise ConfigError(f"policy '{name}': '{key}' is a knob of the policy object, not an "
                              "option of the run", field=key,
                              hint=f"make the object with {key}=... instead")
    _, run = _split(name, cls, {}, options)
    policy.bind_catalog(CATALOG)
    policy.validate_params()
    return scheduler_for(policy, run)


class _Catalog:
    """What a policy made of other policies (``hierarchical``) may ask of the registry."""

    entry = staticmethod(entry)
    parameter_table = staticmethod(parameter_table)
    coerce_option = staticmethod(coerce_option)
    make_runtime = staticmethod(make_runtime)


CATALOG = _Catalog()
