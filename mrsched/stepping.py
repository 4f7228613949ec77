"""The step interface: the embedded engine stops at each scheduling point, hands the state to
Python and goes on with the decisions taken there (issue 45, item 3).

A run of ``mrsched.simulate`` whose policy is a :class:`StepPolicy`: each round the runtime
gives the policy its context (docs/DESIGN.md "The contract"), and the policy hands it to the
caller as a :class:`SchedulingPoint` (now, the waiting jobs with their requests, the running
jobs, the free amount of every resource, the availability profile) whenever a waiting job of
the window can start now. What the caller starts or rejects there goes through the same
``ctx.start`` / ``ctx.reject`` as a registered policy's decisions, so the runtime checks it and
the engine receives it over the protocol as any policy's (same messages, same outputs). When
the caller starts nothing, or nothing more fits, an optional base policy (a registered name)
decides on the jobs left, afresh each round (backfilling), and the engine goes on; a policy
that keeps a plan across rounds (conservative backfilling) cannot be a base. A stateless
base given a caller that decides nothing makes the registered policy's run exactly.

The engine runs in a thread of its own that waits while the caller decides: one of the two
runs at a time, so a run is as deterministic as any other. ``Stepper.close()`` (or leaving
its ``with`` block) ends an unfinished run without writing anything.
"""

from __future__ import annotations

import queue as _queue
import threading
from typing import Any

from mrsched.errors import ConfigError, SimulationError
from mrsched.schedulers.model.contract import Policy, SchedulingContext

#: how long (s) one side waits for the other before calling the run dead (a bug, not a load)
HANDOFF_TIMEOUT = 3600.0


class _Abort(BaseException):
    """Unwinds the engine's thread when the caller closes an unfinished run (not an
    ``Exception``: nothing on the way may take it for a failure of the run)."""


class SchedulingPoint:
    """One scheduling point: what a policy sees, and the decisions the caller takes on it.

    ``now``; ``window``: the first waiting jobs in submission order (``Job``: ``id``,
    ``subtime``, ``request`` with nodes, walltime, burst buffer, GPUs, counters);
    ``feasible``: those that can start now (a bool per window job: ``mask``); ``waiting``:
    how many jobs wait in all; ``running``: job id -> the runtime's record (``job``,
    ``start``, ``allocation``); ``started``: the jobs started earlier at this instant; ``free`` and ``capacity``: per resource kind (``nodes``,
    ``burst_buffer`` bytes, ``gpus``, each named counter); ``profile``: the availability
    profile (``fits_now``, ``earliest_start``, ...); ``cluster``; ``decided``: the jobs
    started or rejected here.
    """

    def __init__(self, ctx: SchedulingContext, window: list, feasible: list, done: set[str]):
        self._ctx = ctx
        self._done = done               # the round's decided jobs, this point's and earlier ones
        self.now = ctx.now
        self.window = window
        self.feasible = feasible
        ids = {job.id for job in feasible}
        self.mask = [job.id in ids for job in window]
        self.waiting = sum(1 for job in ctx.queue if job.id not in done)
        self.running = ctx.running
        #: the jobs started earlier at this instant (in ``free`` already, not yet in ``running``)
        self.started = [job for job in ctx.queue if job.id in ctx.reservations]
        self.profile = ctx.profile
        self.cluster = ctx.cluster
        self.decided: list[str] = []
        self.free, self.capacity = resources(ctx)

    def start(self, job) -> None:
        """Start ``job`` (a window job, or its index in the window) now, where the profile
        places it; ConfigError when it cannot start now."""
        job = self._job(job)
        allocation = self._ctx.profile.fits_now(job.request)
        if allocation is None:
            raise ConfigError(f"job {job.id} cannot start at {self.now}: its resources are not free",
                              job=job.id, hint="choose a job of point.feasible")
        self._ctx.start(job, allocation)
        self.decided.append(job.id)
        self._done.add(job.id)

    def reject(self, job, reason: str) -> None:
        """Reject a waiting job with a reason (its ``out_jobs.csv`` metadata)."""
        job = self._job(job)
        self._ctx.reject(job, reason)
        self.decided.append(job.id)
        self._done.add(job.id)

    def _job(self, job):
        if isinstance(job, int):
            if not 0 <= job < len(self.window):
                raise ConfigError(f"no job {job} in a window of {len(self.window)}", field="job")
            job = self.window[job]
        if job.id in self._done:
            raise ConfigError(f"job {job.id} was decided already", job=job.id)
        if job not in self.window and self._ctx.queue.get(job.id) is None:
            raise ConfigError(f"job {job.id} is not waiting", job=job.id)
        return job

    def __repr__(self) -> str:
        return (f"SchedulingPoint(now={self.now}, waiting={self.waiting}, "
                f"feasible={[j.id for j in self.feasible]}, free={self.free})")


def resources(ctx: SchedulingContext) -> tuple[dict[str, float], dict[str, float]]:
    """(free now, capacity) of every resource kind of the machine: compute nodes, burst-buffer
    bytes (all storage nodes), GPUs (of the free nodes), each named counter."""
    cluster = ctx.cluster
    mask, bb, counters = ctx.profile.free_at(ctx.now)
    gpus = cluster.gpus
    free = {"nodes": float(mask.bit_count()), "burst_buffer": float(sum(bb)),
            "gpus": float(sum(gpus[k] for k in range(len(gpus)) if mask >> k & 1))}
    capacity = {"nodes": float(cluster.nb_nodes),
                "burst_buffer": float(sum(s.capacity for s in cluster.storage)),
                "gpus": float(sum(gpus))}
    for name, value in zip(ctx.profile.counter_names, counters):
        free[name] = float(value)
        capacity[name] = float(cluster.counters[name])
    return free, capacity


class StepPolicy(Policy):
    """The policy of a stepped run: hands each scheduling point to its :class:`Stepper`."""

    name = "step"

    def __init__(self) -> None:
        self.stepper_: Stepper | None = None     # set by the Stepper that runs it

    def schedule(self, ctx: SchedulingContext):
        stepper = self.stepper_
        done: set[str] = set()
        while True:
            waiting = [job for job in ctx.queue if job.id not in done]
            window = waiting[:stepper.window] if stepper.window else waiting
            feasible = [job for job in window if ctx.profile.fits_now(job.request) is not None]
            if not feasible:
                break
            point = SchedulingPoint(ctx, window, feasible, done)
            stepper._hand(point)
            if not point.decided:
                break
        if stepper.base is not None:
            self._base_round(ctx, done)
        return ctx.decisions

    def _base_round(self, ctx: SchedulingContext, done: set[str]) -> None:
        """The base policy on the jobs left, as a fresh instance (its plan made again, as EASY
        and the filler make theirs every round), its decisions added to the round's."""
        from mrsched.schedulers.model.contract import WaitingQueue
        from mrsched.schedulers.registry import make_policy

        base = make_policy(self.stepper_.base)
        base.setup(ctx.cluster)
        left = {job.id: job for job in ctx.queue if job.id not in done}
        sub = SchedulingContext(ctx.now, ctx.cluster, ctx.profile, WaitingQueue(left), ctx.running,
                                ctx.submitted, ctx.ended, estimates=ctx.estimates)
        base.schedule(sub)
        ctx.decisions.extend(sub.decisions)
        ctx.reservations.update(sub.reservations)


class Stepper:
    """A run of the embedded engine that stops at every scheduling point.

    ``Stepper(platform, workload, base=None, window=None, options=None, **simulate_keywords)``:
    the inputs as ``mrsched.simulate`` takes them; ``base`` a registered policy deciding what
    the caller leaves (``"filler"``, ``"fcfs-easy"``...); ``window`` how many waiting jobs a
    point shows (None: all); ``options`` the runtime's (``decision_cost``...).
    ``next()`` runs to the next point and returns it (None when the run has ended); decide
    on it, then call ``next()`` again. ``result`` is the run's ``mrsched.Result`` once ended;
    ``run(agent)`` drives a whole run with ``agent(point)`` and returns it.
    """

    def __init__(self, platform: Any, workload: Any, *, base: str | None = None,
                 window: int | None = None, options: dict | None = None, **simulate_kw: Any):
        if base is not None:
            from mrsched.schedulers.registry import policy_class

            cls = policy_class(base)   # an unknown name is refused now, not in the engine's thread
            if cls.kept_reservations is not Policy.kept_reservations:
                raise ConfigError(f"base policy '{base}' keeps a plan across rounds; a base runs "
                                  "afresh each round", field="base",
                                  hint="a policy that plans each round: fcfs, filler, fcfs-easy, sjf-bb...")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise ConfigError(f"window must be a positive number of jobs, got {window!r}", field="window")
        self.base, self.window = base, window
        self._args = (platform, workload)
        self._options = dict(options or {})
        self._kw = simulate_kw
        self._to_caller: _queue.Queue = _queue.Queue(maxsize=1)
        self._to_engine: _queue.Queue = _queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self._point: SchedulingPoint | None = None
        self.result = None
        self.done = False

    # -- the caller's side ---------------------------------------------------------------
    def next(self) -> SchedulingPoint | None:
        """Go on to the next scheduling point (the first one on the first call)."""
        if self.done:
            return None
        if self._thread is None:
            self._thread = threading.Thread(target=self._engine, name="mrsched-stepped-engine",
                                            daemon=True)
            self._thread.start()
        else:
            self._to_engine.put("go")
        kind, value = self._receive()
        if kind == "point":
            self._point = value
            return value
        self.done, self._point = True, None
        self._thread.join()
        if kind == "error":
            raise value
        self.result = value
        return None

    def run(self, agent) -> Any:
        """Drive the whole run: ``agent(point)`` decides at every point; returns the result."""
        point = self.next()
        while point is not None:
            agent(point)
            point = self.next()
        return self.result

    def close(self) -> None:
        """End the run where it is (nothing is written for an unfinished run)."""
        if self._thread is not None and not self.done:
            self._to_engine.put("abort")
            self._receive()
            self._thread.join()
        self.done = True

    def __enter__(self) -> "Stepper":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _receive(self):
        try:
            return self._to_caller.get(timeout=HANDOFF_TIMEOUT)
        except _queue.Empty:
            raise SimulationError(f"the stepped engine gave no scheduling point in "
                                  f"{HANDOFF_TIMEOUT:g} s") from None

    # -- the engine's side ---------------------------------------------------------------
    def _engine(self) -> None:
        from mrsched.api import simulate

        try:
            policy = StepPolicy()
            policy.stepper_ = self
            result = simulate(*self._args, policy, self._options, **self._kw)
        except _Abort:
            self._to_caller.put(("aborted", None))
        except BaseException as exc:   # handed to the caller, raised there
            self._to_caller.put(("error", exc))
        else:
            self._to_caller.put(("done", result))

    def _hand(self, point: SchedulingPoint) -> None:
        """In the engine's thread: give ``point`` to the caller, wait until it goes on."""
        self._to_caller.put(("point", point))
        try:
            what = self._to_engine.get(timeout=HANDOFF_TIMEOUT)
        except _queue.Empty:
            what = "abort"
        if what == "abort":
            raise _Abort()
