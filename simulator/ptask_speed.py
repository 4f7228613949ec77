"""A host's speed change in the ptask_L07 model (a pstate change, ``Host::set_pstate``).

SimGrid 3.32 (``src/surf/ptask_L07.cpp``, ``CpuL07::on_speed_change``) sets the CPU
constraint's bound to cores x speed and bounds every action on it anew (slowest core, TCP
window: ``L07Action::update_bound``); the work left is unchanged and the new rates come out of
the next solve. This module does that to a ``ptask.PtaskModel`` (its own file: the model's
module is at its size limit).
"""

from __future__ import annotations

import math

import numpy as np


def set_speed(model, name: str, speed: float, now: float) -> None:
    """Host ``name`` computes at ``speed`` flop/s per core from ``now`` on. An isolated task
    on it joins the solver (whose solve gives a lone task the same rate)."""
    cpu = model._cpus.get(name)
    if cpu is None:
        cpu = model._cpu(name)
    if cpu[0] == speed:
        return
    if now != model.now:
        model._catch_up(now)
    c = cpu[1]
    model._cpus[name] = (speed, c)
    model._speed[c] = speed
    model._cap_list[c] = float(model.platform.hosts[name].cores * speed)
    model._cap = np.zeros(0)   # rebuilt from _cap_list by the next numpy solve
    n = len(model._hosts)
    model._same_cpus = None
    if n and len(set(model._speed[:n])) == 1 and len(set(model._cap_list[:n])) == 1:
        model._same_cpus = (model._speed[0], model._cap_list[0])
    model._solved.clear()   # the cached rates assumed the former capacity
    if model._busy[c]:
        owner = model._owner[c]
        if owner is None:
            owner = model._range_owner(c)
        if owner is not None:
            model._materialise(owner)
    for task in model._act:
        if c in task._cnsts:
            task._bound = bound_of(model, task)
    model._dirty = True
    model._lookahead = None
    model._ahead = None


def bound_of(model, task) -> float:
    """A task's rate bound as ``PtaskModel.add`` computes it, from the CPUs' speeds now."""
    bound = math.inf
    for name, amount in task.flops.items():
        amount = float(amount)
        if amount > 0 and amount != math.inf:
            cpu = model._cpus.get(name) or model._cpu(name)
            bound = min(bound, cpu[0] / amount)
    lat_current = 0.0
    for (src, dst), amount in task.bytes.items():
        if float(amount) > 0:
            lat_current = max(lat_current, model.platform.route(src, dst).latency * float(amount))
    if lat_current > 0:
        bound = min(bound, model._tcp_gamma / (2.0 * lat_current))
    return bound
