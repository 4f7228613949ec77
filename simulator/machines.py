"""The machines as Batsim sees them: resource ids, names and roles, the cost of a message to the
master host, and each machine's state over time.

Batsim 4.2.1 (``machines.cpp``) numbers the compute hosts first, then the storage hosts, in
platform order (``--mmax`` keeps the first compute hosts); the master host runs the server
and is no resource. A machine is idle or computing: Batsim accumulates its time in each state
at its state changes (a job starting or ending on it, no tail after the last), per machine in
long double, then sums the machines, which gives ``_schedule.csv``'s ``time_idle`` and
``time_computing``, and writes a ``_machine_states.csv`` row per job start and end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrsched.errors import MrschedError, PlatformError
from mrsched.simulator.outputs import MachineStateTracker

try:   # the machines' times in long double, in C (optional: without it, the twins below)
    from mrsched.simulator._steps import MACHINE_TIMES_SIZE, ld_stamp as _c_ld_stamp, \
        ld_totals as _c_ld_totals
except ImportError:   # pragma: no cover - an install without a C compiler
    MACHINE_TIMES_SIZE = _c_ld_stamp = _c_ld_totals = None

INF = math.inf
MESSAGE_SIZE = 1.0  # bytes of one Batsim inter-actor message (ipp.cpp)


def _ld_times(n: int):
    """The twins' per-machine times: (idle, computing, last change) rows of long doubles."""
    import numpy as np   # only for the twins: a compiled run's start-up does without it

    return np.zeros((n, 3), dtype=np.longdouble)


def _ld_stamp(times, now: float, lo: int, hi: int, computing: bool) -> None:
    """Machines ``lo..hi-1`` add ``now`` minus their last change to their idle or computing
    time, in long double, then change at ``now`` (``Machine::update_machine_state``,
    ``src/machines.cpp`` 694-705). ``_steps.ld_stamp`` is its compiled twin."""
    import numpy as np

    block = times[lo:hi]
    block[:, 1 if computing else 0] += np.longdouble(now) - block[:, 2]
    block[:, 2] = now


def _ld_totals(times) -> tuple[float, float]:
    """(idle, computing): each summed over the machines in their order in long double
    (``src/export.cpp`` 1078-1099; accumulate adds one by one), then cast to double."""
    import numpy as np

    if not len(times):
        return 0.0, 0.0
    return tuple(float(np.add.accumulate(times[:, c])[-1]) for c in (0, 1))


@dataclass
class Resource:
    id: int
    name: str
    role: str
    properties: dict[str, str]
    zone_properties: dict[str, str] = field(default_factory=dict)


def _load_platform(platform: Any, roles=()):
    """A path -> ``load_platform`` (Batsim's view); an already loaded Platform is kept."""
    if not isinstance(platform, (str, Path)):
        return platform
    from mrsched.simulator.platform import load_platform

    return load_platform(str(platform), roles=tuple(roles))


def mmax_of_workloads(workloads: list, mmax: int | None) -> int:
    """``--mmax-workload`` (``load_workloads_and_workflows``, ``src/batsim.cpp`` 659-671): the
    largest ``nb_res`` of the workloads, or ``--mmax`` when that is smaller."""
    sizes = [w.nb_res for w in workloads]
    if not sizes or any(n is None for n in sizes):
        missing = next((w.path for w in workloads if w.nb_res is None), None)
        raise PlatformError("--mmax-workload needs the workloads' 'nb_res' field", file=missing)
    limit = max(sizes)
    return min(mmax, limit) if mmax else limit


def _host_role(host: Any) -> str:
    role = getattr(host, "role", None)
    if role is None:
        role = (getattr(host, "properties", None) or {}).get("role", "")
    return role or ""


class Machines:
    """The resources of one run and the machines' states.

    ``platform`` is a path or a loaded Platform. ``compiled``: the machines' times are kept by
    ``_steps.ld_stamp`` (else by its twin ``_ld_stamp``, the same long-double operations)."""

    def __init__(self, platform: Any, *, roles=(), mmax: int | None = None,
                 compute_sharing: bool = False, compiled: bool = False):
        self.platform = p = _load_platform(platform, roles)
        compute = list(p.compute_hosts())
        if mmax is not None and mmax > 0:
            if mmax > len(compute):
                raise PlatformError(f"--mmax {mmax} exceeds the {len(compute)} compute hosts")
            compute = compute[:mmax]
        storage = list(p.storage_hosts())
        master = p.master_host()
        if master is None:
            raise PlatformError("no master host (a host with role 'master' or named "
                                "'master_host'): Batsim refuses such platforms",
                                file=getattr(p, "path", None))
        self.master = master.name
        self.compute: list[Resource] = []
        self.resources: list[Resource] = []
        for h in compute:
            r = Resource(len(self.resources), h.name, _host_role(h), dict(h.properties or {}),
                         dict(getattr(h, "zone_properties", None) or {}))
            self.compute.append(r)
            self.resources.append(r)
        self.storage: list[Resource] = []
        for h in storage:
            r = Resource(len(self.resources), h.name, "storage", dict(h.properties or {}),
                         dict(getattr(h, "zone_properties", None) or {}))
            self.storage.append(r)
            self.resources.append(r)
        self.nb_compute = len(self.compute)
        self.names = [r.name for r in self.resources]   # by resource id (hot: one per host run)
        self.storage_names = {r.id: r.name for r in self.storage}
        self._comm_cache: dict[tuple[str, str], float] = {}
        self._spec_cache: dict[str, tuple[float, float, float, str]] = {}
        self.message_size = MESSAGE_SIZE
        self.loopback = self.comm_spec(self.master)

        # the compute machines' states
        self.compute_sharing = compute_sharing   # Batsim's --enable-compute-sharing
        self.busy = 0       # bit r: machine r runs a job (no compute sharing)
        #: storage id -> the job using it (only under --disable-storage-sharing)
        self.storage_users: dict[int, str] = {}
        self._nusers = [0] * len(self.resources)   # jobs per machine (compute sharing)
        self.tracker = MachineStateTracker(self.nb_compute)
        #: per machine (compute, then storage): its idle and computing times and its last
        #: change, in long double (a buffer for ``_steps.ld_stamp``, else the twins' array)
        n = len(self.resources)
        if compiled and _c_ld_stamp is not None:
            self._times = bytearray(n * MACHINE_TIMES_SIZE)
            self._stamp, self._totals = _c_ld_stamp, _c_ld_totals
        else:
            self._times = _ld_times(n)
            self._stamp, self._totals = _ld_stamp, _ld_totals

    # -- messages ----------------------------------------------------------------------------
    def comm_time(self, src: str, dst: str, size: float = MESSAGE_SIZE) -> float:
        """Time of one Batsim message (1 byte) from src to dst (latency + size / bottleneck)."""
        key = (src, dst) if size == MESSAGE_SIZE else (src, dst, size)
        t = self._comm_cache.get(key)
        if t is None:
            route_fn = getattr(self.platform, "route", None)
            if route_fn is None:
                t = 0.0
            else:
                try:
                    route = route_fn(src, dst)
                except MrschedError:
                    route = None
                if route is None:
                    t = 0.0
                else:
                    links = getattr(route, "links", ())
                    bws = [getattr(link, "bandwidth", INF) for link in links]
                    bw = min(bws) if bws else INF
                    t = float(getattr(route, "latency", 0.0))
                    if bw < INF:
                        t += size / bw
            self._comm_cache[key] = t
        return t

    def comm_spec(self, src: str) -> tuple[float, float, float, str]:
        """SimGrid's comm action for one Batsim message from ``src`` to the master (an L07 ptask
        of ``MESSAGE_SIZE`` bytes, ``NetworkL07Model::communicate``): (latency, rate, work,
        src). The rate is the fair-bottleneck share of a lone variable, ``bandwidth / bytes``
        on its tightest link, bounded by TCP-gamma over twice latency x bytes (``L07Action::
        update_bound``); work is 1 (the action's cost), 0 for a route of no link (done at once).
        The kernel hands a message sharing a link with a running ptask to the ptask model
        (``KernelBase._contend``), which routes it from ``src``."""
        spec = self._spec_cache.get(src)
        if spec is None:
            route_fn = getattr(self.platform, "route", None)
            route = None
            if route_fn is not None:
                try:
                    route = route_fn(src, self.master)
                except MrschedError:
                    route = None
            links = tuple(getattr(route, "links", ())) if route is not None else ()
            if not links:
                spec = (0.0, 1.0, 0.0, src)
            else:
                lat = float(getattr(route, "latency", 0.0))
                rate = min(getattr(link, "bandwidth", INF) / MESSAGE_SIZE for link in links)
                if lat * MESSAGE_SIZE > 0:
                    gamma = float(getattr(self.platform, "tcp_gamma", 4194304.0))
                    rate = min(rate, gamma / (2.0 * (lat * MESSAGE_SIZE)))
                spec = (lat, rate, 1.0, src) if rate < INF else (lat, 1.0, 0.0, src)
            self._spec_cache[src] = spec
        return spec

    # -- states ------------------------------------------------------------------------------
    def job_starts(self, now: float, comp, comp_runs: list[tuple[int, int]], storage=()) -> None:
        """A job starts on the compute machines ``comp`` (their ids; ``comp_runs`` as ranges):
        each one's idle time since its last change is added, then it computes; then one
        machine-states row. ``storage``: the storage ids of its allocation, which Batsim's
        machines count too (``update_machines_on_job_run``, ``src/machines.cpp`` 476-509):
        computing while a job uses them, their idle and computing times in the totals, and in
        the rows' counts, taken from the compute machines' idle count (``machines.cpp`` 311:
        ``nb_idle`` starts at the number of compute machines), a row at every such job's start."""
        if self.compute_sharing:
            changed = self._share_machines(now, comp, +1) if comp else 0
        else:
            busy = self.busy
            stamp, times = self._stamp, self._times
            for lo, hi in comp_runs:
                hi += 1
                stamp(times, now, lo, hi, False)
                busy |= (1 << hi) - (1 << lo)
            self.busy = busy
            changed = len(comp)
        if storage:
            changed += self._share_machines(now, storage, +1)
        if comp or storage:
            self.tracker.change(now, changed)

    def job_ends(self, now: float, ncomp: int, comp_runs: list[tuple[int, int]],
                 storage=()) -> None:
        """A job on ``ncomp`` compute machines (``comp_runs``) and the storage machines
        ``storage`` ends: they are idle again once no job uses them (each
        one's computing time is added); then one machine-states row."""
        changed = 0
        if self.compute_sharing:
            if ncomp:
                comp = [r for lo, hi in comp_runs for r in range(lo, hi + 1)]
                changed = self._share_machines(now, comp, -1)
        else:
            busy = self.busy
            stamp, times = self._stamp, self._times
            for lo, hi in comp_runs:
                hi += 1
                busy &= ~((1 << hi) - (1 << lo))
                stamp(times, now, lo, hi, True)
            self.busy = busy
            changed = ncomp
        if storage:
            changed += self._share_machines(now, storage, -1)
        if ncomp or storage:
            self.tracker.change(now, -changed)

    def _share_machines(self, now: float, comp, delta: int) -> int:
        """Machines that may run several jobs (compute sharing, storage): a job starts (+1) or
        ends (-1) on them; returns how many changed state. As Batsim's
        (``update_machines_on_job_run`` / ``_end``, ``src/machines.cpp`` 476-552), a start adds
        each machine's time in its current state, an end only when it leaves it idle."""
        users, stamp, times = self._nusers, self._stamp, self._times
        changed = 0
        for r in comp:
            if delta > 0:
                stamp(times, now, r, r + 1, users[r] > 0)
                users[r] += 1
                changed += users[r] == 1
            else:
                users[r] -= 1
                if not users[r]:
                    stamp(times, now, r, r + 1, True)
                    changed += 1
        return changed

    def state_times(self) -> tuple[float, float]:
        """(time idle, time computing): the machines' times summed (Batsim's long doubles,
        then doubles), for ``_schedule.csv``."""
        return self._totals(self._times)
