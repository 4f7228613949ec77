"""The papers' policy names -> classes, and the factories every runner uses (DESIGN.md "Policies").

Registering a policy is one decorator: ``@register("plan-2")`` on the class (or
``POLICIES["name"] = Class``). Aliases point at the same class with different defaults only
through subclasses, so ``get_params()`` always tells the truth.
"""

from __future__ import annotations

from typing import Any, Callable

from mrsched.errors import ConfigError, suggest
from mrsched.schedulers.policies.backfilling import EasyBackfilling, FcfsBB, FcfsEasy, SjfBB
from mrsched.schedulers.model.params import RUNTIME_DEFAULTS, RUNTIME_PARAMS, Param
from mrsched.schedulers.model.contract import Policy
from mrsched.schedulers.policies.conservative import ConservativeBackfilling
from mrsched.schedulers.policies.fcfs import FCFS
from mrsched.schedulers.policies.filler import Filler
from mrsched.schedulers.policies.plan import Plan1, Plan2, Plan3, PlanBased
from mrsched.schedulers.policies.aucsched import AucSched
from mrsched.schedulers.policies.ipsched import IpSched
from mrsched.schedulers.policies.slurm_bf import SlurmBackfill

POLICIES: dict[str, type[Policy]] = {
    "fcfs": FCFS,
    "filler": Filler,
    "fcfs-easy": FcfsEasy,
    "fcfs-bb": FcfsBB,
    "sjf-bb": SjfBB,
    "easy-bf": EasyBackfilling,
    "conservative-bb": ConservativeBackfilling,
    "conservative": ConservativeBackfilling,
    "plan": PlanBased,
    "plan-1": Plan1,
    "plan-2": Plan2,
    "plan-3": Plan3,
    "slurm-bf": SlurmBackfill,      # seed 002 (CPU+GPU machines)
    "ipsched": IpSched,
    "aucsched": AucSched,
}


def register(name: str) -> Callable[[type[Policy]], type[Policy]]:
    """Class decorator adding a policy under ``name`` (refuses to overwrite another class)."""
    def wrap(cls: type[Policy]) -> type[Policy]:
        if name in POLICIES and POLICIES[name] is not cls:
            raise ConfigError(f"policy name '{name}' is already registered for {POLICIES[name].__name__}")
        POLICIES[name] = cls
        return cls
    return wrap


def policy_class(name: str) -> type[Policy]:
    try:
        return POLICIES[name]
    except KeyError:
        raise ConfigError(f"unknown policy '{name}'", hint=suggest(name, POLICIES)) from None


def make_policy(name: str, **options: Any) -> Policy:
    """A validated policy instance; ConfigError names the policy and option on any mistake."""
    cls = policy_class(name)
    cls.check_option_names(options)
    policy = cls(**options)
    policy.validate_params()
    return policy


def policy_parameters(name: str) -> dict[str, Any]:
    """Parameter -> default value of a registered policy."""
    return policy_class(name).param_defaults()


def parameter_table(name: str) -> dict[str, Param]:
    """Parameter -> declared constraint (type, choices, bounds, help)."""
    return policy_class(name).param_table()


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
            f = float(value)
            if f != int(f):
                raise ValueError(value)
            return int(f)
        if param.type is float:
            return float(value)
    except ValueError:
        raise ConfigError(f"policy '{policy}': option '{name}' must be {param.type.__name__}, got {value!r}",
                          field=name) from None
    return value


def make_scheduler(name: str, options: dict[str, Any] | None = None):
    """A ``PolicyScheduler`` (a BatsimScheduler) running policy ``name`` with coerced options."""
    from mrsched.schedulers.execution.runtime import PolicyScheduler

    from mrsched.schedulers.execution.cost import parse_decision_cost

    cls = policy_class(name)
    options = dict(options or {})
    own = cls.param_names()
    runtime = {k: coerce_option(name, k, options.pop(k), RUNTIME_PARAMS[k])
               for k in RUNTIME_PARAMS if k in options and k not in own}
    cls.check_option_names(options)
    table = cls.param_table()
    coerced = {k: coerce_option(name, k, v, table.get(k)) for k, v in options.items()}
    cost = parse_decision_cost(runtime.get("decision_cost", RUNTIME_DEFAULTS["decision_cost"]),
                               runtime.get("decision_scale", RUNTIME_DEFAULTS["decision_scale"]))
    policy = make_policy(name, **coerced)
    io_model = getattr(policy, "io_model", "none")
    if getattr(policy, "job_model", "alloc-only") == "io-phased":
        if io_model != "none":
            raise ConfigError(f"policy '{name}': io_model '{io_model}' and job_model 'io-phased' both say how "
                              "a job's I/O runs; choose one", field="io_model")
        from mrsched.schedulers.execution.iophased import IoPhasedScheduler
        scheduler = IoPhasedScheduler(policy)
    elif io_model == "contention":
        from mrsched.schedulers.execution.ioptask import IoPtaskScheduler
        scheduler = IoPtaskScheduler(policy)
    else:
        scheduler = PolicyScheduler(policy)
    scheduler.decision_cost = cost
    return scheduler


def scheduler_parameters(name: str) -> dict[str, Any]:
    """Every option ``make_scheduler(name, ...)`` takes: the policy's knobs and the
    scheduler's own (``decision_cost``, ``decision_scale``), with defaults."""
    return {**RUNTIME_DEFAULTS, **policy_parameters(name)}


def _discover() -> None:
    """Import every module of ``mrsched.schedulers.policies`` so that their policies register.

    A module registers with ``@register(name)``; a Policy subclass declaring its own ``name``
    and not registered yet is added under that name. A module that fails to import is
    reported (logged) and skipped, so one broken policy does not take the others down.
    """
    import importlib
    import inspect
    import logging
    import pkgutil

    from mrsched.schedulers import policies

    log = logging.getLogger(__name__)
    for info in pkgutil.iter_modules(policies.__path__):
        name = f"{policies.__name__}.{info.name}"
        try:
            module = importlib.import_module(name)
        except Exception as exc:   # noqa: BLE001 - reported, the other policies stay usable
            log.warning("policy module %s could not be imported: %s", name, exc)
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            own = cls.__dict__.get("name")
            if (issubclass(cls, Policy) and cls.__module__ == name and isinstance(own, str) and own
                    and own not in POLICIES and cls not in POLICIES.values()):
                POLICIES[own] = cls


_discover()
