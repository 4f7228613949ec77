"""The machines as Batsim sees them: resource ids, names and roles, the cost of a message to the
master host, and each compute machine's state over time.

Batsim 4.2.1 (``machines.cpp``) numbers the compute hosts first, then the storage hosts, in
platform order (``--mmax`` keeps the first compute hosts); the master host runs the server
and is no resource. A machine is idle or computing: Batsim accumulates its time in each state
at its state changes (a job starting or ending on it, no tail after the last), which gives
``_schedule.csv``'s ``time_idle`` and ``time_computing``, and writes a ``_machine_states.csv``
row per job start and end.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrsched.errors import MrschedError, PlatformError
from mrsched.simulator.outputs import MachineStateTracker

try:   # a start's idle-time sum in C (optional: without it, _idle_stamp)
    from mrsched.simulator._steps import idle_stamp as _compiled_idle_stamp
except ImportError:   # pragma: no cover - an install without a C compiler
    _compiled_idle_stamp = None

INF = math.inf
MESSAGE_SIZE = 1.0  # bytes of one Batsim inter-actor message (ipp.cpp)
_NUMPY_RUN = 64  # machines in a run from which a start sums their idle times in numpy


def _idle_sum(idle: float, now: float, last) -> float:
    """``idle`` plus ``now - t`` for each ``t`` of ``last`` (float64s: an ``array('d')`` or a
    numpy array), added one by one in order (so time_idle in _schedule.csv is bit for bit the
    node-by-node sum): a Python loop for a few machines; for many, numpy's accumulate, which
    adds in sequence (``idle + d[0]`` is ``d[0] + idle``)."""
    if len(last) < _NUMPY_RUN:
        for t in last.tolist():
            idle += now - t
        return idle
    import numpy as np   # only here: a small run's start-up does without it

    d = now - np.asarray(last)
    d[0] += idle
    return np.add.accumulate(d, out=d)[-1].item()


def _idle_stamp(idle: float | None, now: float, last, lo: int, hi: int) -> float | None:
    """A job's start on machines ``lo..hi-1``: ``idle`` plus their idle times since their last
    change (``_idle_sum``), then their change stamped at ``now``; ``idle`` None (a job's end):
    the stamp only. ``_steps.idle_stamp`` is its compiled twin (the same additions)."""
    if idle is not None:
        idle = _idle_sum(idle, now, last[lo:hi])
    last[lo:hi] = array("d", [now]) * (hi - lo)
    return idle


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
    """The resources of one run and the compute machines' states.

    ``platform`` is a path or a loaded Platform. ``compiled``: a start's idle times are summed
    by ``_steps.idle_stamp`` (else by its twin ``_idle_stamp``, the same additions)."""

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
        self.time_computing = 0.0
        self.time_idle = 0.0
        #: per machine (compute, then storage), the time of its last state change (float64s: a
        #: start sums its machines' idle times in one C loop, ``_steps.idle_stamp``, or in the twin)
        self._last_change = array("d", bytes(8 * len(self.resources)))
        self._idle_stamp = _compiled_idle_stamp if compiled and _compiled_idle_stamp else \
            _idle_stamp

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
            last = self._last_change
            idle = 0.0
            stamp = self._idle_stamp
            for lo, hi in comp_runs:   # ascending ids: the same sum as node by node
                hi += 1
                idle = stamp(idle, now, last, lo, hi)
                busy |= (1 << hi) - (1 << lo)
            self.busy = busy
            self.time_idle += idle
            changed = len(comp)
        if storage:
            changed += self._share_machines(now, storage, +1)
        if comp or storage:
            self.tracker.change(now, changed)

    def job_ends(self, now: float, start: float, ncomp: int,
                 comp_runs: list[tuple[int, int]], storage=()) -> None:
        """A job that started at ``start`` on ``ncomp`` compute machines (``comp_runs``) and the
        storage machines ``storage`` ends: they are idle again once no job uses them (each
        one's computing time is added); then one machine-states row."""
        changed = 0
        if self.compute_sharing:
            if ncomp:
                comp = [r for lo, hi in comp_runs for r in range(lo, hi + 1)]
                changed = self._share_machines(now, comp, -1)
        else:
            busy = self.busy
            last = self._last_change
            stamp = self._idle_stamp
            for lo, hi in comp_runs:
                hi += 1
                busy &= ~((1 << hi) - (1 << lo))
                stamp(None, now, last, lo, hi)
            self.busy = busy
            if ncomp:
                self.time_computing += (now - start) * ncomp
                changed = ncomp
        if storage:
            changed += self._share_machines(now, storage, -1)
        if ncomp or storage:
            self.tracker.change(now, -changed)

    def _share_machines(self, now: float, comp: list[int], delta: int) -> int:
        """Compute sharing: a job starts (+1) or ends (-1) on machines that may run others.
        As Batsim's machines, each accumulates its time in its current state (computing while
        it runs a job) at every job start and end on it; returns how many changed state."""
        users, last = self._nusers, self._last_change
        changed = 0
        for r in comp:
            if users[r]:
                self.time_computing += now - last[r]
            else:
                self.time_idle += now - last[r]
            last[r] = now
            users[r] += delta
            if users[r] == (1 if delta > 0 else 0):
                changed += 1
        return changed
