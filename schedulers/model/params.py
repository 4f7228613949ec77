"""The knobs: one declared table per knob (type, allowed values or bounds, help), checked in
one place (STYLE.md Do 2), and the knobs every policy shares, declared once.
"""

from __future__ import annotations

from dataclasses import dataclass
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
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"policy '{policy}': option '{name}' must be one of "
                              f"{', '.join(map(str, self.choices))}; got {value!r}", field=name)
        if self.min is not None and value < self.min:
            raise ConfigError(f"policy '{policy}': option '{name}' must be >= {self.min}, got {value!r}", field=name)
        if self.max is not None and value > self.max:
            raise ConfigError(f"policy '{policy}': option '{name}' must be <= {self.max}, got {value!r}", field=name)


JOB_MODELS = ("alloc-only", "io-phased")
ORDERS = ("fcfs", "sjf", "largest", "smallest")

# Knobs every policy accepts (consumed by the runtime, declared once here).
COMMON_PARAMS: dict[str, Param] = {
    "job_model": Param(str, JOB_MODELS, help="how a started job is executed: alloc-only (one Batsim job) "
                                             "or io-phased (stage-in/compute/checkpoint/stage-out phases)"),
    "period": Param(float, min=0.0, help="seconds between scheduling rounds; 0 = on every event"),
}

# Knobs every policy accepts that its scheduler applies, not the policy (schedulers/execution/cost.py):
# the policy's decision time charged to the simulation. A policy declaring one of them as its
# own knob (``hierarchical``) receives it instead.
RUNTIME_PARAMS: dict[str, Param] = {
    "decision_cost": Param(str, help="scheduler time charged to the simulation: none, measured, "
                                     "or per_event=S,per_job=S,per_start=S"),
    "decision_scale": Param(float, min=0.0, help="factor on measured CPU time (decision_cost=measured)"),
}
RUNTIME_DEFAULTS: dict[str, Any] = {"decision_cost": "none", "decision_scale": 1.0}


#: where a policy's runtime and I/O-rate estimates come from (``execution/knowledge.py``)
KNOWLEDGE = ("requested", "perfect", "noisy", "learned")

#: the knobs of the policies whose estimates can come from a knowledge source (declared once)
KNOWLEDGE_PARAMS: dict[str, Param] = {
    "knowledge": Param(str, KNOWLEDGE, help="where runtime and I/O-rate estimates come from: requested "
                                            "(walltime, stated rate), perfect, noisy, learned (seed 004 Ch. 4)"),
    "knowledge_noise": Param(float, min=0.0, help="knowledge=noisy: sigma of the log-normal error factor"),
    "knowledge_seed": Param(int, min=0, help="knowledge=noisy: seed of the per-job errors"),
}

#: the knobs of the policies that can be made I/O-aware (declared once), with where their
#: runtime and I/O-rate estimates come from
IO_PARAMS: dict[str, Param] = {
    "io_aware": Param(bool, help="also allocate io_bandwidth_per_node on every level of the platform's "
                                 "bandwidth tree, now and in reservations (seed 004)"),
    "io_model": Param(str, ("none", "contention"), help="contention: each job's I/O runs as an "
                                                        "additional_io_job ptask beside its compute"),
    **KNOWLEDGE_PARAMS,
}
