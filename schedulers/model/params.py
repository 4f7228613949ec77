"""The knobs: one declared table per knob (type, allowed values or bounds, help), checked in
one place (STYLE.md Do 2), and the knobs every policy shares, declared once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from mrsched.errors import ConfigError


@dataclass(frozen=True)
class Param:
    """One knob: its type, allowed values or bounds, and a one-line help."""

    type: type
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None
    help: str = ""

    def check(self, policy: str, name: str, value: Any) -> None:
        if self.type is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif self.type is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, self.type)
        if not ok:
            raise ConfigError(f"policy '{policy}': option '{name}' must be {self.type.__name__}, "
                              f"got {value!r}", field=name)
        if self.type is float and not math.isfinite(value):
            raise ConfigError(f"policy '{policy}': option '{name}' must be a finite number, got {value!r}",
                              field=name)
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"policy '{policy}': option '{name}' must be one of "
                              f"{', '.join(map(str, self.choices))}; got {value!r}", field=name)
        if self.min is not None and value < self.min:
            raise ConfigError(f"policy '{policy}': option '{name}' must be >= {self.min}, got {value!r}", field=name)
        if self.max is not None and value > self.max:
            raise ConfigError(f"policy '{policy}': option '{name}' must be <= {self.max}, got {value!r}", field=name)


JOB_MODELS = ("alloc-only", "io-phased")
ORDERS = ("fcfs", "sjf", "largest", "smallest")
#: where a policy's runtime and I/O-rate estimates come from (``execution/knowledge.py``)
KNOWLEDGE = ("requested", "perfect", "noisy", "learned")
IO_MODELS = ("none", "contention")

#: Knobs of the runtime that every policy takes (``execution/runtime.py``, ``execution/cost.py``):
#: how a start is executed, when rounds happen, the decision time charged to the simulation.
RUN_PARAMS: dict[str, Param] = {
    "job_model": Param(str, JOB_MODELS, help="how a started job is executed: alloc-only (one Batsim job) "
                                             "or io-phased (stage-in/compute/checkpoint/stage-out phases)"),
    "period": Param(float, min=0.0, help="seconds between scheduling rounds; 0 = on every event"),
    "decision_cost": Param(str, help="scheduler time charged to the simulation: none, measured, "
                                     "or per_event=S,per_job=S,per_start=S"),
    "decision_scale": Param(float, min=0.0, help="factor on measured CPU time (decision_cost=measured)"),
    "power_cap": Param(float, min=0.0, help="watts the whole machine (idle nodes at Idle, busy ones at their "
                                            "job's power) may draw, now and in reservations; 0 = no cap"),
    "idle_sleep": Param(float, min=0.0, help="seconds a free compute node stays idle, while no job waits, "
                                             "before it is switched to its sleep pstate (SET_RESOURCE_STATE; "
                                             "needs --energy); woken for waiting jobs; 0 = never"),
    "power_cap_share": Param(float, min=0.0, max=1.0, help="the cap as a share of the machine's peak (every "
                                                          "machine busy); 0 = none; power_cap wins"),
    "power_cap_steps": Param(str, help="the cap over time, 'time:watts,time:watts,...' (each holds until "
                                       "the next; wins over power_cap); '' = power_cap throughout"),
}

#: Knobs of the runtime's services that a policy opts into (``Policy.services``): the
#: bandwidth tree (seed 004 Ch. 3) and the source of runtime and I/O-rate estimates (Ch. 4).
IO_PARAMS: dict[str, Param] = {
    "io_aware": Param(bool, help="also allocate io_bandwidth_per_node on every level of the platform's "
                                 "bandwidth tree, now and in reservations (seed 004)"),
    "io_model": Param(str, IO_MODELS, help="contention: each job's I/O runs as an additional_io_job ptask "
                                           "beside its compute"),
    "knowledge": Param(str, KNOWLEDGE, help="where runtime and I/O-rate estimates come from: requested "
                                            "(walltime, stated rate), perfect, noisy, learned (seed 004 Ch. 4)"),
    "knowledge_noise": Param(float, min=0.0, max=10.0, help="knowledge=noisy: sigma of the log-normal error "
                                                            "factor"),
    "knowledge_seed": Param(int, min=0, help="knowledge=noisy: seed of the per-job errors"),
}

#: the service a policy declares for the knobs of ``IO_PARAMS``
IO_SERVICES = frozenset({"io"})


@dataclass(frozen=True)
class RunOptions:
    """The runtime's knobs for one run (``RUN_PARAMS`` and ``IO_PARAMS``), with their defaults."""

    job_model: str = "alloc-only"
    period: float = 0.0
    decision_cost: str = "none"
    decision_scale: float = 1.0
    power_cap: float = 0.0
    power_cap_steps: str = ""
    power_cap_share: float = 0.0
    idle_sleep: float = 0.0
    io_aware: bool = False
    io_model: str = "none"
    knowledge: str = "requested"
    knowledge_noise: float = 0.3
    knowledge_seed: int = 0

    def check(self, policy: str) -> None:
        """Every knob against its declared table (ConfigError naming the policy and option)."""
        table = {**RUN_PARAMS, **IO_PARAMS}
        for f in fields(self):
            table[f.name].check(policy, f.name, getattr(self, f.name))

    def changed(self) -> dict[str, Any]:
        """The knobs that differ from their defaults."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}


RUN_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RunOptions)}
