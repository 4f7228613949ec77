"""Power as a managed resource: the machine's power cap and each job's power, carried as one
more named counter of the availability profile (the profile's scalar row per interval), so
that every policy that places counters now and in reservations also keeps under the cap.

The model (docs/DESIGN.md "Power cap"): the cap bounds the whole machine's power, idle
machines included. Every machine draws its Idle wattage whatever runs (``base``: the compute
and burst-buffer machines' Idle of pstate 0, SimGrid ``host_energy.cpp``'s
``Idle:Epsilon:AllCores``); a running job adds its ``delta`` over the Idle of its nodes. So
the profile's counter ``power`` has capacity ``cap - base`` and a job asks ``delta``:

- from the workload field ``power`` (the job's watts at full load): ``power - nodes x
  the lowest Idle of a compute node``;
- else from the platform: ``nodes x the largest (AllCores - Idle) of a compute node`` (its
  nodes' wattage at full load, for whichever nodes it gets).

Both bound the job's real increase from above, so the sum never passes the cap whichever
nodes a policy picks. A cap over time (``power_cap_steps``) lowers the counter by ``highest
cap - cap`` over each step with reservations that hold no node; a job whose delta passes the
cap that holds from the last step on (forever) is rejected with the reason: it could wait
forever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mrsched.errors import ConfigError, MrschedError
from mrsched.sums import ordered_sum

#: the profile counter that carries power (watts over the machine's idle power)
POWER = "power"


def cap_steps(power_cap: float = 0.0, power_cap_steps: str = "") -> tuple[tuple[float, float], ...]:
    """The cap over time as sorted ``(time, watts)`` steps (each holds until the next, the last
    forever) from the ``power_cap`` option (watts from time 0; 0 = none) and the
    ``power_cap_steps`` option (``"time:watts,time:watts,..."``, which wins); () when none."""
    text = str(power_cap_steps or "").strip()
    if not text:
        cap = float(power_cap or 0.0)
        return ((0.0, cap),) if cap > 0 else ()
    steps = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            t, w = (float(p) for p in parts)
        except ValueError:
            raise ConfigError(f"power_cap_steps: cannot read {item.strip()!r}, expected "
                              "time:watts", field="power_cap_steps") from None
        if not (math.isfinite(t) and t >= 0 and math.isfinite(w) and w > 0):
            raise ConfigError(f"power_cap_steps: {item.strip()!r} needs a time >= 0 and watts > 0",
                              field="power_cap_steps")
        steps.append((t, w))
    steps.sort()
    if any(a[0] == b[0] for a, b in zip(steps, steps[1:])):
        raise ConfigError("power_cap_steps: two steps at the same time", field="power_cap_steps")
    if steps[0][0] > 0:      # before the first step: the first step's cap (or power_cap)
        first = float(power_cap or 0.0) or steps[0][1]
        steps.insert(0, (0.0, first))
    return tuple(steps)


def _pstates(text: str | None, where: str) -> list[list[float]]:
    """The values of each pstate in a host's ``wattage_per_state`` property
    (``Idle:Epsilon:AllCores`` or ``Idle:AllCores`` per pstate, comma-separated); [] when the
    host has none."""
    if text is None or str(text).strip() == "":
        return []
    out = []
    for entry in str(text).split(","):
        try:
            values = [float(v) for v in entry.strip().split(":")]
        except ValueError:
            raise MrschedError(f"host {where}: cannot read wattage_per_state {text!r}",
                               field="wattage_per_state") from None
        if len(values) not in (2, 3) or any(not math.isfinite(v) or v < 0 for v in values):
            raise MrschedError(f"host {where}: wattage_per_state {text!r} is not Idle:AllCores or "
                               "Idle:Epsilon:AllCores", field="wattage_per_state")
        out.append(values)
    return out


def pstate0_wattage(text: str | None, where: str) -> tuple[float, float] | None:
    """(Idle, AllCores) of pstate 0 from a host's ``wattage_per_state`` property; None when the
    host has none."""
    states = _pstates(text, where)
    return (states[0][0], states[0][-1]) if states else None


@dataclass
class PowerCap:
    """One run's power cap and the machine's wattage, as the scheduler sees them."""

    steps: tuple[tuple[float, float], ...]   # (time, watts), sorted
    base: float                               # every machine idle (W)
    min_idle: float                           # the lowest Idle of a compute node (W)
    max_delta: float | None                   # the largest AllCores - Idle of a compute node

    @property
    def highest(self) -> float:
        return max(w for _, w in self.steps)

    @property
    def capacity(self) -> float:
        """The counter's capacity: the highest cap over the idle machine's power."""
        return self.highest - self.base

    def cap_at(self, t: float) -> float:
        cap = self.steps[0][1]
        for s, w in self.steps:
            if s <= t:
                cap = w
        return cap

    def next_rise(self, now: float) -> float | None:
        """The first step after ``now`` whose cap is above the one before it: a job waiting
        for power may start then with no job ending and no submission to call the scheduler
        (None when the cap never rises again)."""
        for (_, before), (t, watts) in zip(self.steps, self.steps[1:]):
            if t > now and watts > before:
                return t
        return None

    def job_delta(self, job) -> tuple[float | None, str | None]:
        """(watts the job adds over its nodes' Idle, None) or (None, why it cannot run)."""
        nodes = job.request.nodes
        given = job.fields.get("power") if job.fields else None
        if given is not None:
            if isinstance(given, bool) or not isinstance(given, (int, float)) \
                    or not math.isfinite(given) or given < 0:
                return None, f"invalid request: field 'power' must be watts >= 0, got {given!r}"
            delta = max(float(given) - nodes * self.min_idle, 0.0)
        elif self.max_delta is not None:
            delta = nodes * self.max_delta
        else:
            return None, ("under power_cap the job needs a power: no 'power' field and the "
                          "platform's compute nodes have no wattage_per_state")
        last = self.steps[-1][1] - self.base
        if delta > last + 1e-9:
            return None, (f"its power ({self.base + delta:.6g} W with the idle machine) exceeds "
                          f"the power cap of {self.steps[-1][1]:.6g} W")
        return delta, None


def capped(power_cap: float, power_cap_steps: str, power_cap_share: float = 0.0) -> bool:
    """Whether the options ask for a cap at all (``power_cap_of`` builds it)."""
    return bool(cap_steps(power_cap, power_cap_steps) or power_cap_share)


def power_cap_of(cluster, power_cap: float, power_cap_steps: str,
                 power_cap_share: float = 0.0) -> PowerCap | None:
    """The run's ``PowerCap`` from the options and SIMULATION_BEGINS' host properties; None
    without a cap. ``power_cap_share``: the cap as a share of the machine's peak (``base`` +
    every compute node's ``AllCores - Idle``), when ``power_cap`` and ``power_cap_steps`` give
    none. ConfigError when the idle machine alone draws more than the cap."""
    if not capped(power_cap, power_cap_steps, power_cap_share):
        return None
    steps = cap_steps(power_cap, power_cap_steps)
    if POWER in cluster.counters:
        raise ConfigError(f"power_cap: the machine already has a counter named '{POWER}' "
                          "(sched-config counters)", field="power_cap")
    props = cluster.properties
    compute = [pstate0_wattage(props.get(rid, {}).get("wattage_per_state"), name)
               for rid, name in zip(cluster.compute_ids, cluster.compute_names)]
    # every storage machine Batsim counts (burst buffer and PFS) draws its Idle throughout
    storage = [pstate0_wattage(props.get(rid, {}).get("wattage_per_state"), str(rid))
               for rid in (cluster.storage_ids or tuple(st.id for st in cluster.storage))]
    known = [w for w in compute if w is not None]
    storage_idle = ordered_sum(w[0] for w in storage if w is not None)
    base = ordered_sum(w[0] for w in known) + storage_idle
    min_idle = min((w[0] for w in known), default=0.0)
    max_delta = max(w[1] - w[0] for w in known) if len(known) == len(compute) and known else None
    if len(known) != len(compute):
        base = storage_idle    # no idle model: the jobs' power alone
        min_idle = 0.0
    if not steps:
        if max_delta is None:
            raise ConfigError("power_cap_share needs the compute nodes' wattage_per_state (the "
                              "machine's peak power)", field="power_cap_share")
        steps = ((0.0, power_cap_share * (base + max_delta * len(compute))),)
    cap = PowerCap(steps, base, min_idle, max_delta)
    low = min(w for _, w in steps)
    if low < base - 1e-9:
        raise ConfigError(f"power_cap {low:.6g} W is below the idle machine's power "
                          f"({base:.6g} W)", field="power_cap")
    return cap


def with_power(request, delta: float):
    """``request`` also asking ``delta`` watts of the ``power`` counter."""
    return replace(request, counters=tuple(request.counters) + ((POWER, float(delta)),))


def pstate_watts(text: str | None, where: str) -> list[float]:
    """The most a host draws in each of its pstates (the largest of ``Idle[:Epsilon]:AllCores``)
    from its ``wattage_per_state`` property; [] when it has none."""
    return [max(values) for values in _pstates(text, where)]


def sleep_holds(cluster) -> tuple[float, ...]:
    """Per compute node, the watts of the cap a sleeping node holds (``idle_sleep`` with a cap;
    docs/DESIGN.md "Idle nodes under a power cap"): the most it draws above its pstate-0 Idle
    in its sleep pstate or either virtual switch pstate of its first ``sleep_pstates`` triplet
    (``sleep:off:on``, Batsim ``src/machines.cpp`` 123-125). A switch runs 1 flop in the virtual
    pstate, so the host draws that pstate's AllCores (load 1); asleep it draws the sleep
    pstate's Idle (no load; Batsim ``src/pstate.cpp`` 17-84, SimGrid ``host_energy.cpp``). The
    largest of the three bounds each; ConfigError when a node has no wattage for them."""
    props = cluster.properties
    holds = []
    for rid, name in zip(cluster.compute_ids, cluster.compute_names):
        p = props.get(rid, {})
        watts = pstate_watts(p.get("wattage_per_state"), name)
        triplet = str(p.get("sleep_pstates", "")).split(",")[0].split(":")
        try:
            states = [int(s.strip()) for s in triplet]
        except ValueError:
            states = []
        if len(states) != 3 or not watts or max(states) >= len(watts):
            raise ConfigError(f"idle_sleep with power_cap: compute host {name} has no wattage for "
                              "its sleep and switch pstates (wattage_per_state, sleep_pstates)",
                              field="idle_sleep")
        idle0 = pstate0_wattage(p.get("wattage_per_state"), name)[0]
        holds.append(max(0.0, max(watts[s] for s in states) - idle0))
    return tuple(holds)
