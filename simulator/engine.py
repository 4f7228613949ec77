"""The embedded Batsim 4.2.1-compatible engine: the REQ side of the protocol, message for message.

Batsim is a set of SimGrid actors talking through one ``server`` mailbox on the master host; each
internal message (1 byte) takes the route latency (+ 1 byte / bottleneck bandwidth) from its
sender's host to the master, and the server receives them one at a time, in the order they
were posted. That queue is what produces Batsim's time offsets (JOB_SUBMITTED at 4.5e-05 on
``small_platform``, +0.0006 s per hop on ``cluster512``), so this engine models it explicitly:

- the static submitter (master host) sleeps until a submission time, then ``put``s the batch;
  it re-reads the clock after each sleep exactly as Batsim's ``static_job_submitter_process``;
- each scheduler reply is replayed by a request-reply actor (master host) that puts every event
  at ``max(event timestamp, its clock)`` and finally SCHED_READY at the reply's ``now``;
- a job executor (on the allocation's first host) runs the profile (delay = timer, other
  profiles = one ``PtaskModel`` ptask each, composed = in sequence) under the walltime, then
  puts JOB_COMPLETED;
- CALL_ME_LATER starts a waiter (master host), KILL_JOB a killer (master host).

Time advances in SimGrid's steps: the actors whose actions end in a step run in the order those
actions were created, and their messages are posted after all of them ran (docs/DESIGN.md,
"Equal times"), which decides what the server sees at equal times. The steps are taken by
``Engine._py_steps`` or, when built, by its compiled twin ``_steps.c`` (the same operations in
the same order on C arrays; the actors stay Python either way).

The scheduler is anything with ``handle_message(dict) -> dict`` (in process) or a
``ZmqScheduler`` connection (same method).
"""

from __future__ import annotations

import gc
import logging
import math
from functools import reduce
from operator import attrgetter, itemgetter, lt as _lt, ne, sub
import os
import time as _time
from contextlib import contextmanager
from dataclasses import dataclass, field
from bisect import bisect_left, bisect_right
from itertools import chain, compress
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mrsched.errors import MrschedError, PlatformError, ProtocolError, SimulationError, suggest
from mrsched import native
from mrsched.simulator import outputs as out
from mrsched.simulator.profiles import PtaskSpec, flatten, merge, ptask_of, check_profile
from mrsched.simulator.workload import Job, Workload, load_workloads, parse_job, submission_order

try:   # the step loop in C (optional: without it, Engine._py_steps)
    from mrsched.simulator import _steps
except ImportError:   # pragma: no cover - an install without a C compiler
    _steps = None

INF = math.inf
logger = logging.getLogger(__name__)
MESSAGE_SIZE = 1.0  # bytes of one Batsim inter-actor message (ipp.cpp)
#: SimGrid 3.32's precisions (kernel/lmm/System.cpp): ``surf/precision`` (a sleep or latency
#: left below it is over) and maxmin x surf (work left below it is done, Action::update_remains)
SURF_PRECISION = 1e-9
TIME_PRECISION = SURF_PRECISION
REMAINS_PRECISION = 1e-5 * SURF_PRECISION
RUN_GC_THRESHOLD = (20_000, 20, 20)  # gc thresholds during a run (see Engine.run)
_NUMPY_RUN = 64  # machines in a run from which a start sums their idle times in numpy
ZERO_RUNTIME = 1e-5  # the runtime Batsim records for a job that took no time (jobs_execution.cpp)
WAITER_MIN_SLEEP = 1e-5  # a CALL_ME_LATER waiter sleeps at least this long (waiter_process, ditto)
_UNIFORM = ("parallel_homogeneous", "parallel_homogeneous_total")   # profiles of one flop count per host

# every event type a scheduler may send (Engine._event_handlers maps each to its handler)
SCHEDULER_EVENTS = ("EXECUTE_JOB", "REJECT_JOB", "KILL_JOB", "CALL_ME_LATER", "REGISTER_JOB",
                    "REGISTER_PROFILE", "NOTIFY", "SET_RESOURCE_STATE", "SET_JOB_METADATA",
                    "CHANGE_JOB_STATE", "QUERY", "ANSWER", "TO_JOB_MSG")

_compiled_steps = False   # whether new engines step in C (use_compiled_steps)


def use_compiled_steps(compiled: bool) -> bool:
    """Step the engines created from now on in C (``_steps.c``, when built) or in Python
    (``Engine._py_steps``); whether C is now in use. ``MRSCHED_PURE_PYTHON=1`` starts with
    Python. Both give the same runs: the same operations in the same order."""
    global _compiled_steps
    _compiled_steps = compiled and _steps is not None
    return _compiled_steps


use_compiled_steps(native.wanted())

# job states
SUBMITTED, RUNNING, DONE = "SUBMITTED", "RUNNING", "DONE"


# --------------------------------------------------------------------------------------------
# interval sets (hot path: one parse per EXECUTE_JOB, one format per JOB_COMPLETED)

def parse_alloc(text: Any, *, job: str | None, field_name: str = "alloc") -> list[int]:
    """``"0-3 7"`` -> [0, 1, 2, 3, 7] (sorted, unique)."""
    if not isinstance(text, str) or not text.strip():
        raise ProtocolError(f"'{field_name}' must be a non-empty interval set string, got {text!r}",
                            event="EXECUTE_JOB", job=job, field=field_name)
    # fast paths: canonical text (sorted, disjoint), which schedulers normally send
    if "-" not in text:
        try:
            out = list(map(int, text.split()))
        except ValueError:
            out = []
        if out and out[0] >= 0 and all(map(_lt, out, out[1:])):
            return out
    out = []
    prev = -1
    try:
        for token in text.split():
            lo, sep, hi = token.partition("-")
            a = int(lo)
            b = int(hi) if sep else a
            if a <= prev or b < a:
                break
            out.extend(range(a, b + 1))
            prev = b
        else:
            if out:
                return out
    except ValueError:
        pass
    ids: set[int] = set()
    try:
        for token in text.split():
            lo, sep, hi = token.partition("-")
            if sep:
                a, b = int(lo), int(hi)
                if a > b or a < 0:
                    raise ValueError(token)
                ids.update(range(a, b + 1))
            else:
                a = int(lo)
                if a < 0:
                    raise ValueError(token)
                ids.add(a)
    except ValueError:
        raise ProtocolError(f"invalid interval set {text!r}", event="EXECUTE_JOB", job=job,
                            field=field_name, hint="expected e.g. '0-3 7'") from None
    return sorted(ids)


def _idle_sum(idle: float, now: float, last: np.ndarray) -> float:
    """``idle`` plus ``now - t`` for each ``t`` of ``last``, added one by one in order (so
    time_idle in _schedule.csv is bit for bit the node-by-node sum): a Python loop for a few
    machines; for many, numpy's accumulate, which adds in sequence (``idle + d[0]`` is
    ``d[0] + idle``), ~15x faster on a thousand machines."""
    if len(last) < _NUMPY_RUN:
        for t in last.tolist():
            idle += now - t
        return idle
    d = now - last
    d[0] += idle
    return np.add.accumulate(d, out=d)[-1].item()


def _idle_stamp(idle: float | None, now: float, last: np.ndarray, lo: int, hi: int) -> float | None:
    """A job's start on machines ``lo..hi-1``: ``idle`` plus their idle times since their last
    change (``_idle_sum``), then their change stamped at ``now``; ``idle`` None (a job's end):
    the stamp only. ``_steps.idle_stamp`` is its compiled twin (the same additions)."""
    if idle is not None:
        idle = _idle_sum(idle, now, last[lo:hi])
    last[lo:hi] = now
    return idle


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    """Sorted unique ids -> their maximal ``(first, last)`` ranges."""
    n = len(ids)
    if ids[-1] - ids[0] == n - 1:   # one range (sorted, unique): no walk over the ids
        return [(ids[0], ids[-1])]
    # where an id is not the previous one plus one, found in C (wide allocations)
    cuts = list(compress(range(1, n), map(ne, ids[1:], map((1).__add__, ids))))
    return [(ids[a], ids[b - 1]) for a, b in zip([0] + cuts, cuts + [n])]


def _runs_text(runs: list[tuple[int, int]]) -> str:
    """Maximal ranges -> Batsim's canonical text."""
    return " ".join([f"{lo}-{hi}" if hi != lo else str(lo) for lo, hi in runs])


def format_alloc(ids: list[int]) -> str:
    """Sorted unique ids -> Batsim's canonical ``"0-3 7"``."""
    return _runs_text(_runs(ids)) if ids else ""


def _canonical_runs(text: str) -> list[tuple[int, int]] | None:
    """The ranges of a canonical interval text (what schedulers normally send: sorted,
    disjoint, non-adjacent, as Batsim writes it), read token by token, not id by id; None
    for any other text (``parse_alloc`` then reads and checks it)."""
    runs = []
    prev = -2
    try:
        for token in text.split(" "):
            lo, sep, hi = token.partition("-")
            a = int(lo)
            b = int(hi) if sep else a
            if a <= prev + 1 or b < a:
                return None
            runs.append((a, b))
            prev = b
    except ValueError:
        return None
    return runs if _runs_text(runs) == text else None


class _RunIds:
    """The resource ids of an allocation given as sorted disjoint ranges ``(first, last)``, read
    from the ranges (``len``, an index, iteration, membership) rather than held one by one: a
    wide job of a 10,000-node machine names ~1,000 ids, and a list of them built and freed per
    allocation read (the engine's alloc cache) cost ~2 % of a run (py-spy, ``fcfs-bb``, 100k
    jobs on that machine). A one-range allocation is a plain ``range``."""

    __slots__ = ("runs", "_ends")

    def __init__(self, runs: list[tuple[int, int]]):
        self.runs = runs
        ends, n = [], 0
        for lo, hi in runs:
            n += hi + 1 - lo
            ends.append(n)
        self._ends = ends       # ids in the ranges up to and including each one

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, k: int) -> int:
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"index {k} of an allocation of {n} resources")
        r = bisect_right(self._ends, k)
        return self.runs[r][1] + 1 - (self._ends[r] - k)

    def __iter__(self):
        return chain.from_iterable(range(lo, hi + 1) for lo, hi in self.runs)

    def __contains__(self, rid: object) -> bool:
        if type(rid) is not int:
            return False
        r = bisect_left(self.runs, (rid + 1,)) - 1
        return r >= 0 and rid <= self.runs[r][1]

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (_RunIds, list, range)) else NotImplemented

    def __repr__(self) -> str:
        return f"_RunIds({self.runs!r})"


# --------------------------------------------------------------------------------------------
# platform view

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


def _host_role(host: Any) -> str:
    role = getattr(host, "role", None)
    if role is None:
        role = (getattr(host, "properties", None) or {}).get("role", "")
    return role or ""


# --------------------------------------------------------------------------------------------
# engine state

@dataclass(slots=True)
class JobState:
    """The engine's view of one job until it ends; then replaced by ENDED or REJECTED."""

    job: Job | None
    state: str = "PENDING"
    alloc: "list[int] | range" = ()   # type: ignore[assignment]  (shared, read-only)
    alloc_text: str = ""
    ncomp: int = 0               # how many of alloc's ids are compute resources
    comp_runs: list = ()         # type: ignore[assignment]  those ids as (first, last) ranges
    start: float = -1.0
    finish: float = -1.0
    final_state: str = ""
    return_code: int = 0
    metadata: str = ""
    executor: "_Executor | None" = None
    kill_requested: bool = False


# What stays of a job once it ended and its row was written (shared by all: the per-job state
# of a million-job run is not held to the end). Only the state checks of late events read them.
ENDED = JobState(None, state=DONE, final_state="COMPLETED")
REJECTED = JobState(None, state=DONE, final_state="REJECTED")


@dataclass
class SimulationResult:
    """What a run produced: job records (unless the run was asked not to keep them: ``[]``),
    makespan, output paths and the message count."""

    jobs: list[out.JobRecord]
    makespan: float
    nb_messages: int
    scheduling_time: float
    simulation_time: float
    paths: dict[str, Path]
    transcript: list[dict] | None = None
    nb_jobs: int = 0             # jobs recorded (finished or rejected), kept or not


# wake-ups by creation rank; the sort is stable, so a received message's server (appended
# first) runs before its sender, which shares the rank of their comm
_wake_order = itemgetter(0)
_alive = attrgetter("alive")


class _PtaskEnd:
    """Wakes the actor of a ptask that ended in this step, unless it was stopped meanwhile."""

    __slots__ = ("e", "p", "cb")

    def __init__(self, engine: "Engine", p, cb: Callable[[], None]):
        self.e, self.p, self.cb = engine, p, cb

    def __call__(self) -> None:
        if self.e._ending.pop(id(self.p), None) is not None:
            self.cb()


class _Timer:
    """A SimGrid sleep action (its remaining max duration lives in ``Engine._sleep_md``, ``md``
    is 0 once it ended); ``seq`` its creation rank."""

    __slots__ = ("md", "cb", "alive", "seq")

    def __init__(self, md: float, cb: Callable[[], None], seq: int):
        self.md, self.cb, self.alive, self.seq = md, cb, True, seq


class _Executor:
    """Runs one job's profile on its allocation: a state machine driven by timers and ptasks."""

    __slots__ = ("e", "js", "host_ids", "steps", "storage_mapping", "extra", "index",
                 "step_start", "timer", "wall_timer", "ptask", "trace_run", "deadline")

    def __init__(self, engine: "Engine", js: JobState, host_ids: list[int],
                 steps: list[tuple[str, dict]], storage_mapping, extra: PtaskSpec | None):
        self.e, self.js, self.host_ids, self.steps = engine, js, host_ids, steps
        self.storage_mapping, self.extra = storage_mapping, extra
        self.index = 0
        self.step_start = 0.0
        self.timer: _Timer | None = None
        self.wall_timer: _Timer | None = None
        self.ptask = None
        self.trace_run = None
        wt = js.job.walltime
        self.deadline = engine.now + wt if wt > 0 else INF

    def start(self) -> None:
        if self.deadline < INF:
            steps = self.steps
            # a lone delay that ends strictly before the walltime never meets it: no timer
            # (at equal times the walltime timer, armed first, would fire first: kept)
            # (durations compared, as Batsim's do_delay_task: far in the future, at 1e300 s,
            # now + delay == now + walltime, yet the delay is the shorter and ends the job)
            if not (len(steps) == 1 and steps[0][1]["type"] == "delay"
                    and float(steps[0][1]["delay"]) < self.js.job.walltime):
                # the timeout Batsim waits the job's task with (wait_for(walltime))
                self.wall_timer = self.e.sleep(self.js.job.walltime, self.on_walltime)
        self.next_step()

    def next_step(self) -> None:
        e = self.e
        if self.index >= len(self.steps):
            self.finish("COMPLETED_SUCCESSFULLY", 0)
            return
        name, prof = self.steps[self.index]
        self.step_start = e.now
        if prof["type"] == "usage_trace":
            from mrsched.simulator.usage_trace import UsageTraceRun

            ranks = e.wl_by_name[self.js.job.workload].traces[name]
            hosts = list(map(e.names.__getitem__, self.host_ids))
            self.trace_run = UsageTraceRun(e, ranks, hosts, self.js.job.res, self.on_step_done)
            self.trace_run.start()
        elif prof["type"] == "delay":
            delay = float(prof["delay"])
            end = e.now + delay
            # (no walltime timer armed: a lone delay shorter than the walltime, see start)
            if end <= self.deadline or (self.wall_timer is None and self.index == 0):
                self.timer = e.sleep(delay, self.on_step_done)   # do_delay_task: sleep_for
            # else: the walltime timer fires first
        elif (prof["type"] in _UNIFORM and not prof["com"] and self.host_ids is self.js.alloc
              and self.js.ncomp == len(self.host_ids) and (self.extra is None or self.index > 0)):
            # the same flops on every allocated machine, nothing else: the ptask model takes
            # the allocation's id ranges (ptask_of's flops, without a step per machine)
            cpu = float(prof["cpu"])
            if prof["type"] == "parallel_homogeneous_total":
                cpu = cpu / len(self.host_ids)
            self.ptask = e.start_ptask(None, self.on_step_done, uniform=(self.js.comp_runs, cpu))
        else:
            hosts = list(map(e.names.__getitem__, self.host_ids))
            spec = ptask_of(prof, hosts, storage_mapping=self.storage_mapping,
                            storage_names=e.storage_names, job=self.js.job.id)
            if self.extra is not None and self.index == 0:
                spec = merge(spec, self.extra)
            self.ptask = e.start_ptask(spec, self.on_step_done)

    def on_step_done(self) -> None:
        self.timer = None
        self.ptask = None
        self.trace_run = None
        self.index += 1
        self.next_step()

    def on_walltime(self) -> None:
        self.wall_timer = None
        self.stop()
        self.finish("COMPLETED_WALLTIME_REACHED", -1)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.alive = False
            self.timer = None
        if self.ptask is not None:
            self.e.stop_ptask(self.ptask)
            self.ptask = None
        if self.trace_run is not None:
            self.trace_run.stop()
            self.trace_run = None

    def progress(self) -> dict:
        """Batsim's progress tree for JOB_KILLED."""
        e = self.e
        name, prof = self.steps[min(self.index, len(self.steps) - 1)]
        if prof["type"] == "delay":
            d = float(prof["delay"])
            frac = (e.now - self.step_start) / d if d > 0 else 1.0
        else:
            frac = 0.0
            p = self.ptask
            remaining = getattr(p, "remaining", None) if p is not None else None
            if isinstance(remaining, (int, float)):
                frac = 1.0 - remaining  # PtaskModel keeps the fraction of work left
        leaf = {"profile_name": name, "progress": min(max(frac, 0.0), 1.0)}
        top = self.js.job.profile
        if e.profiles_of(self.js.job)[top]["type"] == "composed":
            return {"profile_name": top, "current_task_index": self.index, "current_task": leaf}
        return leaf

    def kill(self) -> dict:
        prog = self.progress()
        if self.wall_timer is not None:
            self.wall_timer.alive = False
            self.wall_timer = None
        self.stop()
        self.e.job_ended(self.js, "COMPLETED_KILLED", -2, notify=False)
        return prog

    def finish(self, state: str, code: int) -> None:
        if self.wall_timer is not None:
            self.wall_timer.alive = False
            self.wall_timer = None
        self.e.job_ended(self.js, state, code, notify=True)


class _ReplyActor:
    """Batsim's request-reply actor for one scheduler reply: hands its events to the server one
    at a time, then READY (at the reply's ``now`` when that is ahead). An object, not a closure
    that names itself: that made a garbage cycle per reply for the collector to find."""

    __slots__ = ("e", "it", "reply_now")

    def __init__(self, engine: "Engine", events: list[dict], reply_now: float):
        self.e, self.it, self.reply_now = engine, iter(events), reply_now

    def next(self) -> None:
        e = self.e
        ev = next(self.it, None)
        if ev is None:
            if self.reply_now > e.now:
                e.at(self.reply_now, self.ready)
            else:
                e.put(e.master, e._on_ready, None)
            return
        ts = ev["timestamp"]
        if ts > e.now:
            e.at(ts, lambda: e.put(e.master, e._on_event, ev, self.next))
        else:
            e.put(e.master, e._on_event, ev, self.next)

    def ready(self) -> None:
        self.e.put(self.e.master, self.e._on_ready, None)


class Engine:
    """One simulation run (see the module docstring for the time model)."""

    #: Shortcuts of the step arithmetic (the same operations in the same order, less work):
    #: sleeps' subtractions batched until one ends, a message's latency step done together
    #: with its transfer step. False: one plain step at a time (tests compare both).
    _batch_sleeps = True
    _fold_latency = True

    def __init__(self, platform: Any, workloads: list[Workload], scheduler: Any, *,
                 export_prefix: str | Path | None, roles=(), mmax: int | None = None,
                 dynamic_jobs: bool = False, profile_reuse: bool = False, sched_cfg: str = "",
                 compute_sharing: bool = False,
                 forward_profiles: bool = False, record_transcript: bool = False,
                 keep_records: bool = True):
        self.platform = _load_platform(platform, roles)
        self.workloads = workloads
        self.scheduler = scheduler
        self.export_prefix = export_prefix
        self.dynamic_jobs = dynamic_jobs
        self.compute_sharing = compute_sharing   # Batsim's --enable-compute-sharing
        self.profile_reuse = profile_reuse
        self.sched_cfg = sched_cfg
        self.forward_profiles = forward_profiles
        self.transcript: list[dict] | None = [] if record_transcript else None

        self._setup_resources(mmax)

        self.now = 0.0                   # SimGrid's clock: the running sum of the steps' deltas
        # sleep actions and their remaining max durations (parallel lists; a cancelled one is
        # dropped when one ends or when it is the next to end), the least and its sleep
        self._sleeps: list[_Timer] = []
        self._sleep_md: list[float] = []
        self._sleep_least = INF
        self._sleep_first: _Timer | None = None
        self._sleep_pend: list[float] = []   # deltas not yet subtracted from _sleep_md
        self._stamp_at: float | None = None   # the instant _stamp_value was rounded at
        self._stamp_value = 0.0
        self._seq = 0
        # server mailbox: FIFO of posted puts, one transfer at a time
        self._queue: list = []          # deque-like list with head index
        self._qhead = 0
        self._transfer = None            # (spec, handler, payload, on_sent) of the message in flight
        # its SimGrid comm action (an L07 ptask of 1 byte): latency left, work left, rate
        self._tr_lat = self._tr_rem = self._tr_rate = 0.0
        self._transfer_seq = 0           # creation rank of its SimGrid comm action
        self._server_waiting = True      # the server is blocked in its mailbox get()
        # Simcalls of the actors woken in one SimGrid sub-round (puts, the server's next get),
        # applied in the order those actors ran once all of them ran; None outside a step.
        self._simcalls: list | None = None
        self._ptasks: dict[int, tuple[Any, Callable[[], None]]] = {}
        self._ptask_model = None
        self._ending: dict[int, Any] = {}   # ptasks ending in the current step, not yet handled
        # scheduler replies whose request-reply actor starts once this step's actors ran
        self._replies: list[tuple[list[dict], float]] = []

        # job id -> its Job until submitted (no state to hold yet), then its JobState, then
        # ENDED / REJECTED once its row is written
        self.jobs: dict[str, JobState | Job] = {}
        self.wl_by_name = {w.name: w for w in workloads}
        self.dyn_profiles: dict[str, dict[str, dict]] = {}
        self._profile_users: dict[tuple[str, str], int] = {}
        self._steps_cache: dict[tuple[int, str], list] = {}
        self._alloc_cache: dict[str, tuple] = {}   # alloc text -> ids, canonical text, ranges
        oversized = []
        for w in workloads:
            for j in w.jobs:
                if not self._fits(j):
                    oversized.append(j)
                self.jobs[j.id] = j
        if oversized:
            first = oversized[0]
            logger.warning("%d job(s) request more than the %d compute resources (first: %s, %d "
                           "resources); Batsim loads them and leaves them to the scheduler, which "
                           "must reject them", len(oversized), self.nb_compute, first.id, first.res)
        self._event_handlers: dict[str, Callable[[dict], None]] = {
            "EXECUTE_JOB": self._execute, "REJECT_JOB": self._reject,
            "CALL_ME_LATER": self._call_me_later, "KILL_JOB": self._kill_jobs,
            "NOTIFY": self._notify, "REGISTER_PROFILE": self._register_profile,
            "REGISTER_JOB": self._register_job, "SET_JOB_METADATA": self._set_job_metadata,
            "CHANGE_JOB_STATE": self._ignored, "SET_RESOURCE_STATE": self._ignored,
            "QUERY": self._ignored, "ANSWER": self._ignored, "TO_JOB_MSG": self._ignored,
        }
        self.buffer: list[dict] = []
        self.sched_ready = False
        self.end_sent = False
        self.finished = False
        self.nb_submitted = 0
        self.nb_completed = 0
        self.nb_running = 0
        self.submitters_done = 0
        self.nb_waiters = 0
        self.nb_killers = 0
        self.registration_finished = not dynamic_jobs
        # finished jobs' records: written as they come when exporting, kept only if asked
        self.records: list[out.JobRecord] | None = [] if keep_records else None
        self.stats = out.ScheduleStats()
        self._outputs: out.StreamedOutputs | None = None
        self.tracker = out.MachineStateTracker(len(self.compute))
        self.time_computing = 0.0
        # Batsim accumulates a machine's idle time at its state changes (no tail after the last)
        self.time_idle = 0.0
        #: per compute machine, the time of its last state change (an array: a start sums its
        #: machines' idle times in one C loop, ``_steps.idle_stamp``, or in numpy in the twin)
        self._last_change = np.zeros(self.nb_compute)
        self.sched_time = 0.0
        self.nb_messages = 0
        self.makespan = 0.0
        # The compiled step loop owns the clock's steps, the sleeps, the mailbox and the
        # message in flight; the actors call its sleep and put (the Python attributes above
        # are then unused).
        self._k = _steps.Kernel(self, SURF_PRECISION, REMAINS_PRECISION) if _compiled_steps \
            else None
        if self._k is not None:
            self.sleep, self.put = self._k.sleep, self._k.put
        self._idle_stamp = _steps.idle_stamp if _compiled_steps else _idle_stamp

    # -- platform --------------------------------------------------------------------------
    def _setup_resources(self, mmax: int | None) -> None:
        p = self.platform
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
        self.busy = 0       # bit r: machine r runs a job (no compute sharing)
        self._nusers = [0] * len(self.resources)   # jobs per machine (compute sharing)
        self._comm_cache: dict[tuple[str, str], float] = {}
        self._spec_cache: dict[str, tuple[float, float, float]] = {}
        self.loopback = self.comm_spec(self.master)

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

    def comm_spec(self, src: str) -> tuple[float, float, float]:
        """SimGrid's comm action for one Batsim message from ``src`` to the master (an L07 ptask
        of ``MESSAGE_SIZE`` bytes, ``NetworkL07Model::communicate``): (latency, rate, work).
        The rate is the fair-bottleneck share of a lone variable, ``bandwidth / bytes`` on its
        tightest link, bounded by TCP-gamma over twice latency x bytes (``L07Action::
        update_bound``); work is 1 (the action's cost), 0 for a route of no link (done at once)."""
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
                spec = (0.0, 1.0, 0.0)
            else:
                lat = float(getattr(route, "latency", 0.0))
                rate = min(getattr(link, "bandwidth", INF) / MESSAGE_SIZE for link in links)
                if lat * MESSAGE_SIZE > 0:
                    gamma = float(getattr(self.platform, "tcp_gamma", 4194304.0))
                    rate = min(rate, gamma / (2.0 * (lat * MESSAGE_SIZE)))
                spec = (lat, rate, 1.0) if rate < INF else (lat, 1.0, 0.0)
            self._spec_cache[src] = spec
        return spec

    def _fits(self, j: Job) -> bool:
        prof = self.profiles_of(j)[j.profile]
        return j.res <= self.nb_compute or prof.get("type") == "parallel_homogeneous_total"

    def profiles_of(self, job: Job) -> dict[str, dict]:
        wl = self.wl_by_name.get(job.workload)
        if wl is not None and job.profile in wl.profiles:
            return wl.profiles
        return self.dyn_profiles.get(job.workload, {})

    # -- scheduling primitives -------------------------------------------------------------
    def sleep(self, duration: float, cb: Callable[[], None]) -> _Timer:
        """An actor sleeps ``duration`` seconds (``this_actor::sleep_for``): a new sleep action
        whose max duration every step decrements; ``cb`` resumes the actor when it ends."""
        self._seq += 1
        timer = _Timer(duration, cb, self._seq)
        if self._sleep_pend:
            self._flush_sleeps()
        self._sleeps.append(timer)
        self._sleep_md.append(duration)
        if duration < self._sleep_least:
            self._sleep_least = duration
            self._sleep_first = timer
        return timer

    def _flush_sleeps(self) -> list[float]:
        """Every sleep's max duration now: the steps' deltas since the last flush subtracted
        one after the other (the same operations as one subtraction per step)."""
        pend = self._sleep_pend
        if pend:
            n = len(pend)
            if n == 1:
                d = pend[0]
                self._sleep_md = [m - d for m in self._sleep_md]
            elif n == 2:
                d, e = pend
                self._sleep_md = [m - d - e for m in self._sleep_md]
            elif n == 3:
                d, e, f = pend
                self._sleep_md = [m - d - e - f for m in self._sleep_md]
            else:
                self._sleep_md = [reduce(sub, pend, m) for m in self._sleep_md]
            pend.clear()
        return self._sleep_md

    def _forget_cancelled(self) -> None:
        """The sleep with the least time left was cancelled: drop the cancelled ones and find
        the next (a cancelled sleep is no candidate for SimGrid's next step)."""
        keep = [(s, m) for s, m in zip(self._sleeps, self._flush_sleeps()) if s.alive]
        self._sleeps = [s for s, _m in keep]
        self._sleep_md = [m for _s, m in keep]
        self._sleep_least = min(self._sleep_md, default=INF)
        if self._sleep_least < INF:
            self._sleep_first = self._sleeps[self._sleep_md.index(self._sleep_least)]

    def at(self, t: float, cb: Callable[[], None]) -> _Timer:
        """Sleep until ``t``: for ``t - now`` seconds, as Batsim's ``send_message_at_time``."""
        return self.sleep(t - self.now, cb)

    def put(self, src: str, handler: Callable[[Any], None], payload: Any,
            on_sent: Callable[[], None] | None = None) -> None:
        """An actor on host ``src`` sends one message to the server (synchronous for it:
        ``on_sent`` resumes the actor once the server received it)."""
        dt = self.comm_spec(src) if src != self.master else self.loopback
        if self._simcalls is not None:
            self._simcalls.append((dt, handler, payload, on_sent))
        elif self._server_waiting:
            self._start_transfer((dt, handler, payload, on_sent))
        else:
            self._queue.append((dt, handler, payload, on_sent))

    def _start_transfer(self, message: tuple) -> None:
        """A message (dt, handler, payload, on_sent) starts its way to the server: a new comm
        action, ranked among the actions by creation."""
        self._server_waiting = False
        self._transfer = message
        self._tr_lat, self._tr_rate, self._tr_rem = message[0]
        self._seq += 1
        self._transfer_seq = self._seq

    def _server_get(self) -> None:
        """The server's next ``get()``: the oldest queued message, or wait for the next put."""
        if self._qhead < len(self._queue):
            entry = self._queue[self._qhead]
            self._queue[self._qhead] = None
            self._qhead += 1
            if self._qhead > 1024 and self._qhead * 2 > len(self._queue):
                del self._queue[:self._qhead]
                self._qhead = 0
            self._start_transfer(entry)
        else:
            self._server_waiting = True

    def _wake(self, wakes: list, received) -> None:
        """Several actors woken in one step: they run in the order their actions were created
        (the server and then the sender of a received message at the rank of its comm)."""
        wakes.sort(key=_wake_order)
        for _seq, fn in wakes:
            if fn is None:
                self._receive(received[1], received[2])
            elif type(fn) is _Timer:
                if fn.alive:    # not cancelled by an actor woken before it
                    fn.cb()
            else:
                fn()

    def _apply_simcalls(self, calls: list) -> None:
        for call in calls:
            if call is None:
                self._server_get()
            elif self._server_waiting:
                self._start_transfer(call)
            else:
                self._queue.append(call)

    def start_ptask(self, spec: PtaskSpec | None, on_done: Callable[[], None], *,
                    copies: dict[str, int] | None = None, uniform: tuple[list, float] | None = None):
        """Run ``spec`` (or, ``uniform = (id ranges, flops)``, the same flops on every resource
        of those ranges) as one ptask; ``on_done`` when it ends."""
        if self._ptask_model is None:
            try:
                from mrsched.simulator.ptask import PtaskModel
            except ImportError:
                raise SimulationError("this workload needs the ptask_L07 model "
                                      "(mrsched.simulator.ptask), which is not available") from None
            self._ptask_model = PtaskModel(self.platform, stepped=True, hosts=self.names)
        if uniform is not None:
            p = self._ptask_model.add_uniform(uniform[0], uniform[1], self.now)
        else:
            p = self._ptask_model.add(spec.flops, spec.bytes, self.now, copies=copies)
        if self._k is not None:
            seq = self._k.next_seq()
        else:
            self._seq += 1
            seq = self._seq
        self._ptasks[id(p)] = (p, on_done, seq)
        return p

    def _ptask_ends(self, now: float, delta: float) -> list[tuple[int, _PtaskEnd]]:
        """The ptasks that end in this step, as wake-ups (creation rank, actor)."""
        ends = []
        ptasks = self._ptasks
        for p in self._ptask_model.step(now, delta):
            entry = ptasks.pop(id(p), None)
            if entry is not None:
                # a ptask ending now may still be stopped now (a walltime, a kill)
                self._ending[id(p)] = p
                ends.append((entry[2], _PtaskEnd(self, p, entry[1])))
        return ends

    def stop_ptask(self, p) -> None:
        if self._ptasks.pop(id(p), None) is not None:
            self._ptask_model.remove(p, self.now)
        else:
            self._ending.pop(id(p), None)   # ended in this step, its actor not woken yet

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> SimulationResult:
        # The inputs (platform, every job of the workloads) live for the whole run: frozen,
        # the garbage collector's full passes skip them. What the run allocates is mostly
        # messages freed by reference counting, or jobs and records that live to the end;
        # cycles are rare (a job's executor link is cut when it ends, a reply's actor is a plain
        # object: a 28,000-job delay run leaves 15 cyclic objects). So the collector runs
        # ~30x less often: the default's frequent passes over the young queued jobs cost
        # ~6% of a 28,000-job delay run's CPU time (interleaved fresh-process runs).
        freeze = gc.isenabled() and gc.get_freeze_count() == 0
        threshold = gc.get_threshold()
        if freeze:
            gc.freeze()
            gc.set_threshold(max(threshold[0], RUN_GC_THRESHOLD[0]), *(
                max(a, b) for a, b in zip(threshold[1:], RUN_GC_THRESHOLD[1:])))
        if self.export_prefix is not None:
            self._outputs = out.StreamedOutputs(self.export_prefix, self.tracker)
        try:
            return self._run()
        finally:
            if self._outputs is not None:
                self._outputs.abort()   # no-op after a finished run: its files were renamed
            if freeze:
                gc.set_threshold(*threshold)
                gc.unfreeze()

    def _run(self) -> SimulationResult:
        wall0 = _time.perf_counter()
        self._begin()
        if self._k is not None:
            self._k.run()
        else:
            self._py_steps()
        self.makespan = self.stats.makespan
        sim_time = _time.perf_counter() - wall0
        paths: dict[str, Path] = {}
        if self._outputs is not None:
            schedule = self.stats.row(nb_machines=len(self.resources), makespan=self.makespan,
                                      time_computing=self.time_computing, time_idle=self.time_idle,
                                      scheduling_time=self.sched_time, simulation_time=sim_time)
            paths = self._outputs.finish(schedule)
            self._outputs = None
        return SimulationResult(jobs=self.records if self.records is not None else [],
                                makespan=self.makespan, nb_messages=self.nb_messages,
                                scheduling_time=self.sched_time, simulation_time=sim_time,
                                paths=paths, transcript=self.transcript,
                                nb_jobs=self.stats.nb_jobs)

    def _py_steps(self) -> None:
        """SimGrid's steps until the run is finished (``_steps.c`` is its compiled twin)."""
        ptasks = self._ptasks
        pend = self._sleep_pend   # the same list throughout (flushes clear it)
        P_SURF, P_WORK, inf = SURF_PRECISION, REMAINS_PRECISION, INF
        fold, batch = self._fold_latency, self._batch_sleeps
        while not self.finished:
            # One SimGrid step (docs/DESIGN.md, "Equal times"). EngineImpl::solve: delta is the
            # smallest time left of any action (HostL07Model::next_occurring_event: a sleep's
            # max duration, a progressing action's work / rate, a comm's latency); the clock
            # advances by it (now_ += delta) and every action is decremented by it
            # (HostL07Model::update_actions_state), ending those that reach zero within
            # SimGrid's precisions.
            delta = self._sleep_least
            if delta < inf and not self._sleep_first.alive:   # cancelled since: look again
                self._forget_cancelled()
                delta = self._sleep_least
            mds = self._sleep_md
            transfer = self._transfer
            if transfer is not None:
                left = self._tr_lat
                if left <= 0:
                    left = self._tr_rem / self._tr_rate if self._tr_rem > 0 else 0.0
                if left < delta:
                    delta = left
            if ptasks:
                left = self._ptask_model.time_left()
                if left < delta:
                    delta = left
            if delta == inf:
                self._stalled()
            pre = 0.0
            if (transfer is not None and delta == self._tr_lat > 0 and not ptasks and fold
                    and self._sleep_least - delta >= P_SURF):
                # the common step where only a message's latency ends (nothing else does, no
                # actor runs) is done here with the next one: the same operations in the same
                # order (clock, sleeps: minus this delta, then minus the next)
                pre = delta
                self.now = self.now + delta
                self._tr_lat = 0.0
                delta = self._tr_rem / self._tr_rate if self._tr_rem > 0 else 0.0
                least = self._sleep_least - pre
                if least < delta:
                    delta = least
            now = self.now = self.now + delta
            # the actors woken by the actions that ended, then (below) run in creation order,
            # the server among them (it handles the message and decides whether to call the
            # scheduler, seeing only the messages posted before this step); their puts and the
            # server's next get are then applied in that same order; actors created meanwhile
            # run after.
            wakes = []
            if mds:
                # Action::update_max_duration: every sleep loses delta, below surf/precision it
                # is over (double_update). The others' subtractions wait in ``_sleep_pend``
                # until one ends (the least one, which is tracked exactly: subtracting the
                # same delta keeps the order), then are done in order, as SimGrid's.
                if pre:
                    pend.append(pre)
                    least = self._sleep_least - pre - delta
                else:
                    least = self._sleep_least - delta
                pend.append(delta)
                if not batch:
                    self._flush_sleeps()
                if least < P_SURF:
                    mds = self._flush_sleeps()
                    timers = self._sleeps
                    if all(map(_alive, timers)):
                        # nothing cancelled to drop (the common case): the ended sleeps, the
                        # least ones, are taken out in place, the others keep their order
                        least = min(mds)
                        while least < P_SURF:
                            i = mds.index(least)
                            del mds[i]
                            s = timers.pop(i)
                            s.md = 0.0
                            wakes.append((s.seq, s))
                            least = min(mds) if mds else inf
                    else:
                        for i, m in enumerate(mds):
                            if m < P_SURF:
                                s = timers[i]
                                s.md = 0.0
                                if s.alive:
                                    wakes.append((s.seq, s))
                        keep = [i for i, m in enumerate(mds) if m >= P_SURF and timers[i].alive]
                        timers = self._sleeps = [timers[i] for i in keep]
                        mds = self._sleep_md = [mds[i] for i in keep]
                        least = min(mds) if mds else inf
                    if least < inf:
                        self._sleep_first = timers[mds.index(least)]
                self._sleep_least = least
            if ptasks:
                wakes.extend(self._ptask_ends(now, delta))
            arrived = False
            if transfer is not None:
                lat = self._tr_lat
                if lat > 0:   # paying its latency: no progress in this step (rate 0 when solved)
                    if lat > delta:
                        lat -= delta
                        if lat < P_SURF:
                            lat = 0.0
                    else:
                        lat = 0.0
                    self._tr_lat = lat
                else:
                    rem = self._tr_rem
                    if rem > 0:
                        rem -= self._tr_rate * delta
                        if rem < P_WORK:
                            rem = self._tr_rem = 0.0
                        else:
                            self._tr_rem = rem
                    arrived = rem <= 0
            if not arrived and not wakes:   # e.g. a message's latency paid: no actor runs
                continue
            calls = self._simcalls = []
            if arrived:
                received = transfer
                self._transfer = None
                if not wakes:   # the common step: one message, nothing else ends
                    self._receive(received[1], received[2])
                    if received[3] is not None:
                        received[3]()
                else:
                    seq = self._transfer_seq
                    wakes.append((seq, None))      # the server: receives `received`
                    if received[3] is not None:
                        wakes.append((seq, received[3]))   # then the sender resumes
                    self._wake(wakes, received)
            elif len(wakes) == 1:   # one sleep or execution ends
                fn = wakes[0][1]
                if type(fn) is _Timer:
                    fn.cb()
                else:
                    fn()
            elif wakes:
                self._wake(wakes, None)
            self._simcalls = None
            if calls:
                self._apply_simcalls(calls)
            if self._ending:
                self._ending.clear()
            while self._replies:
                replies, self._replies = self._replies, []
                calls = self._simcalls = []
                for events, reply_now in replies:
                    self._start_reqrep(events, reply_now)
                self._simcalls = None
                if calls:
                    self._apply_simcalls(calls)

    def _stalled(self) -> None:
        waiting = [j for j, s in self.jobs.items()
                   if type(s) is JobState and s.state == SUBMITTED]
        detail = f"{len(waiting)} submitted job(s) never executed nor rejected"
        if waiting:
            detail += f" (first: {waiting[0]})"
        if self.dynamic_jobs and not self.registration_finished:
            detail += "; dynamic registration never finished (send NOTIFY registration_finished)"
        raise SimulationError(f"the simulation cannot progress: {detail}", event="SIMULATION_ENDS",
                              hint="Batsim would wait forever here")

    def _receive(self, handler, payload) -> None:
        """The server got a message: it handles it, calls the scheduler if its mailbox holds
        nothing else (messages posted in this sub-round are not there yet), then asks for the
        next message (a simcall, applied in turn)."""
        handler(payload)
        if (self.sched_ready and self.buffer and self._qhead >= len(self._queue)
                and not self.finished):
            self._send_to_scheduler()
        self._simcalls.append(None)

    # -- actors ----------------------------------------------------------------------------
    def _begin(self) -> None:
        # Batsim creates the submitters before the server's first request-reply actor: their
        # SUBMITTER_HELLO messages reach the server mailbox first.
        for w in self.workloads:
            self._start_submitter(w)
        self._append("SIMULATION_BEGINS", self._simulation_begins())
        self._send_to_scheduler()
        replies, self._replies = self._replies, []
        for events, reply_now in replies:
            self._start_reqrep(events, reply_now)

    def _start_submitter(self, w: Workload) -> None:
        jobs = submission_order(w.jobs)
        master = self.master
        state = {"i": 0, "c": 0.0}

        def after_hello():
            state["c"] = self.now
            step()

        def step():
            i = state["i"]
            batch: list[Job] = []
            while i < len(jobs):
                job = jobs[i]
                if job.subtime > state["c"]:
                    if batch:
                        state["i"] = i
                        self.put(master, self._on_submitted, batch,
                                 lambda: sleep_then(jobs[state["i"]]))
                        return
                    state["i"] = i
                    sleep_then(job)
                    return
                batch.append(job)
                i += 1
            state["i"] = i
            if batch:
                self.put(master, self._on_submitted, batch,
                         lambda: self.put(master, self._on_bye, w.name))
            else:
                self.put(master, self._on_bye, w.name)

        def sleep_then(job: Job):
            self.sleep(job.subtime - state["c"], woke)

        def woke():
            state["c"] = self.now
            step()

        self.put(master, self._on_hello, w.name, after_hello)

    def _start_reqrep(self, events: list[dict], reply_now: float) -> None:
        master = self.master
        if not events and reply_now <= self.now:   # the common empty reply: READY at once
            self.put(master, self._on_ready, None)
            return
        _ReplyActor(self, events, reply_now).next()

    # -- server ----------------------------------------------------------------------------
    def _append(self, etype: str, data: dict) -> None:
        self.buffer.append({"timestamp": self._stamp(), "type": etype, "data": data})

    def _stamp(self) -> float:
        """The clock as Batsim's JSON writer prints it (6 decimals), rounded once an instant
        (several messages a job carry it)."""
        now = self.now
        if now != self._stamp_at:
            self._stamp_at = now
            self._stamp_value = round(now, 6)
        return self._stamp_value

    # Internal messages reaching the server; each put() names its handler directly (the
    # mailbox carries (handler, payload), so delivery is one call: hot path).
    def _on_event(self, ev: dict) -> None:
        handler = self._event_handlers.get(ev["type"])
        if handler is not None:
            handler(ev["data"])

    def _on_submitted(self, batch: list[Job]) -> None:
        fwd = self.forward_profiles
        stamp = self._stamp()
        jobs = self.jobs
        for job in batch:
            js = jobs[job.id]
            if type(js) is JobState:   # given metadata before its submission
                js.state = SUBMITTED
            else:
                jobs[job.id] = JobState(job, SUBMITTED)
            self.nb_submitted += 1
            data = {"job_id": job.id, "job": job.json}
            if fwd:
                data["profile"] = self.profiles_of(job)[job.profile]
            self.buffer.append({"timestamp": stamp, "type": "JOB_SUBMITTED", "data": data})

    def _on_completed(self, js: JobState) -> None:
        self.nb_running -= 1
        self.nb_completed += 1
        self.buffer.append({"timestamp": self._stamp(), "type": "JOB_COMPLETED",
                            "data": {"job_id": js.job.id, "job_state": js.final_state,
                                     "return_code": js.return_code, "alloc": js.alloc_text}})
        self._record(js)

    def _on_ready(self, _payload: Any) -> None:
        self.sched_ready = True
        if not self.buffer and self._is_finished():
            self._append("SIMULATION_ENDS", {})
            self.end_sent = True

    def _on_hello(self, _payload: Any) -> None:
        pass

    def _on_bye(self, _workload: str) -> None:
        self.submitters_done += 1
        if self.submitters_done == len(self.workloads):
            self._append("NOTIFY", {"type": "no_more_static_job_to_submit"})

    def _on_requested_call(self, _payload: Any) -> None:
        self.nb_waiters -= 1
        self._append("REQUESTED_CALL", {})

    def _on_killing_done(self, payload: tuple) -> None:
        ids, progress, killed = payload
        for js in killed:
            self._on_completed(js)
        self._append("JOB_KILLED", {"job_ids": ids, "job_progress": progress})
        self.nb_killers -= 1

    def _is_finished(self) -> bool:
        return (self.submitters_done == len(self.workloads) and self.nb_running == 0
                and self.nb_completed == self.nb_submitted and self.nb_waiters == 0
                and self.nb_killers == 0 and self.registration_finished and not self.end_sent)

    def _record(self, js: JobState) -> None:
        j = js.job
        if j.dynamic:
            self._release_profile(j)
        finish, runtime = js.finish, None
        if finish == js.start and js.final_state != "REJECTED":
            # Batsim: "computed in null time. Putting epsilon instead."
            runtime = ZERO_RUNTIME
            finish = js.start + runtime
        ran = js.final_state != "REJECTED"
        # (positional: local_id, workload, profile, submission_time, res, walltime, final_state,
        # starting_time, finish_time, alloc, metadata, runtime)
        rec = out.JobRecord(j.local_id, j.workload, j.profile, j.subtime, j.res, j.walltime,
                            js.final_state, js.start if ran else None, finish if ran else None,
                            js.alloc_text, js.metadata, runtime)
        self.stats.add(rec)
        if self._outputs is not None:
            self._outputs.add(rec)
        if self.records is not None:
            self.records.append(rec)
        # written: the job's state is dropped (late events about it only need to know it ended)
        self.jobs[j.id] = REJECTED if js.final_state == "REJECTED" else ENDED

    def _send_to_scheduler(self) -> None:
        # Batsim writes its JSON doubles with 6 decimals: schedulers only ever see rounded times
        msg = {"now": self._stamp(), "events": self.buffer}
        self.buffer = []
        ends = self.end_sent
        self.sched_ready = False
        self.nb_messages += 1
        if self.transcript is not None:
            self.transcript.append({"from": "batsim", "msg": msg})
        t0 = _time.perf_counter()
        reply = self.scheduler.handle_message(msg)
        self.sched_time += _time.perf_counter() - t0
        if self.transcript is not None:
            self.transcript.append({"from": "scheduler", "msg": reply})
        events, reply_now = self._check_reply(reply, msg["now"])
        if ends:
            self.finished = True
            return
        self._replies.append((events, reply_now))

    def _check_reply(self, reply: Any, now: float) -> tuple[list[dict], float]:
        if not isinstance(reply, dict) or "now" not in reply or "events" not in reply:
            raise ProtocolError("the scheduler's reply must be an object with 'now' and 'events'",
                                hint=f"got {str(reply)[:80]!r}")
        rnow = reply["now"]
        events = reply["events"]
        if isinstance(rnow, bool) or not isinstance(rnow, (int, float)) or not math.isfinite(rnow):
            raise ProtocolError(f"'now' must be a finite number, got {rnow!r}", field="now")
        if not isinstance(events, list):
            raise ProtocolError("'events' must be a list", field="events")
        if rnow < now - 1e-6:  # schedulers echo the 6-decimal now; allow that rounding
            raise SimulationError(f"the reply's now ({rnow!r}) is before Batsim's clock ({now!r})",
                                  field="now")
        if not events:
            return events, float(rnow)
        last = -INF
        for ev in events:
            if (type(ev) is not dict or "timestamp" not in ev or "type" not in ev
                    or "data" not in ev):
                raise ProtocolError("every event needs 'timestamp', 'type' and 'data'",
                                    hint=f"got {str(ev)[:80]!r}")
            etype, ts, data = ev["type"], ev["timestamp"], ev["data"]
            job = data.get("job_id") if isinstance(data, dict) else None
            if etype not in SCHEDULER_EVENTS:
                raise ProtocolError(f"unknown event type {etype!r}", event=str(etype), job=job,
                                    hint=suggest(str(etype), SCHEDULER_EVENTS))
            if type(ts) is not float and (isinstance(ts, bool) or not isinstance(ts, (int, float))):
                raise ProtocolError(f"timestamp must be a number, got {ts!r}", event=etype, job=job)
            if ts > rnow:
                raise SimulationError(f"event stamped {ts!r}, after the reply's now {rnow!r}",
                                      event=etype, job=job)
            if ts < last:
                raise SimulationError("event timestamps must not decrease", event=etype, job=job)
            last = ts
            if type(data) is not dict:
                raise ProtocolError("'data' must be an object", event=etype)
            if etype == "EXECUTE_JOB":
                n = len(data)
                if "job_id" not in data or "alloc" not in data or n not in (2, 3):
                    extra = sorted(set(data) & {"mapping", "storage_mapping", "additional_io_job"})
                    raise SimulationError(
                        "EXECUTE_JOB data must hold job_id, alloc and at most one of mapping, "
                        f"storage_mapping, additional_io_job (got {sorted(data)})",
                        event=etype, job=job,
                        hint="Batsim 4.2.1 asserts this" if len(extra) > 1 else None)
            elif etype == "CALL_ME_LATER":
                when = data.get("timestamp")
                if (isinstance(when, bool) or not isinstance(when, (int, float))
                        or not math.isfinite(when)):
                    raise ProtocolError(f"CALL_ME_LATER needs a finite 'timestamp', got {when!r}",
                                        event=etype)
            elif etype == "KILL_JOB":
                ids = data.get("job_ids")
                if not isinstance(ids, list) or not ids:
                    raise ProtocolError("KILL_JOB needs a non-empty 'job_ids' list", event=etype)
        return events, float(rnow)

    # -- scheduler events, applied at the server ---------------------------------------------
    def _job(self, job_id: Any, etype: str) -> JobState:
        js = self.jobs.get(job_id) if isinstance(job_id, str) else None
        if js is None:
            raise SimulationError(f"unknown job {job_id!r}", event=etype, job=str(job_id),
                                  hint="job ids look like 'w0!1'")
        if type(js) is not JobState:   # not submitted yet: its state is made on demand
            js = self.jobs[job_id] = JobState(js)
        return js

    def _reject(self, data: dict) -> None:
        js = self._job(data.get("job_id"), "REJECT_JOB")
        if js.state != SUBMITTED or js.final_state:
            raise SimulationError(f"cannot reject a job that is {self._state_text(js)}",
                                  event="REJECT_JOB", job=data["job_id"])
        js.state = DONE
        js.final_state = "REJECTED"
        js.return_code = 0
        self.nb_completed += 1
        self._record(js)

    def _call_me_later(self, data: dict) -> None:
        when = float(data["timestamp"])
        if not when > self.now:
            raise SimulationError(f"You asked to be awaken in the past! (you ask: {when!r}, "
                                  f"it is: {self.now!r})", event="CALL_ME_LATER",
                                  field="timestamp")
        # Batsim's waiter sleeps ``when - now``, but never less than 1e-5 s (shorter sleeps
        # "do not affect" SimGrid, found by trial and error there): an earlier target is late
        wait = when - self.now
        self.nb_waiters += 1
        master = self.master
        self.sleep(wait if wait >= WAITER_MIN_SLEEP else WAITER_MIN_SLEEP,
                   lambda: self.put(master, self._on_requested_call, None))

    def _kill_jobs(self, data: dict) -> None:
        self._kill(data["job_ids"])

    def _notify(self, data: dict) -> None:
        ntype = data.get("type")
        if ntype == "registration_finished":
            if not self.dynamic_jobs:
                raise SimulationError("registration_finished needs --enable-dynamic-jobs",
                                      event="NOTIFY")
            self.registration_finished = True
        elif ntype == "continue_registration":
            self.registration_finished = False

    def _set_job_metadata(self, data: dict) -> None:
        js = self._job(data.get("job_id"), "SET_JOB_METADATA")
        meta = data.get("metadata", "")
        if not isinstance(meta, str) or '"' in meta:
            raise SimulationError("metadata must be a string without '\"'",
                                  event="SET_JOB_METADATA", job=data["job_id"], field="metadata")
        if js.job is not None:   # an ended job's row is written: no effect, as before
            js.metadata = meta

    def _ignored(self, data: dict) -> None:
        """CHANGE_JOB_STATE, energy and external-event requests: accepted, no effect here."""

    @staticmethod
    def _state_text(js: JobState) -> str:
        if js.final_state:
            return "finished" if js.final_state != "REJECTED" else "rejected"
        return {SUBMITTED: "submitted", RUNNING: "running"}.get(js.state, "not submitted yet")

    def _execute(self, data: dict) -> None:
        etype = "EXECUTE_JOB"
        jid = data.get("job_id")
        js = self._job(jid, etype)
        if js.state != SUBMITTED or js.final_state:
            raise SimulationError(f"cannot execute a job that is {self._state_text(js)}",
                                  event=etype, job=jid)
        text = data["alloc"]
        cached = self._alloc_cache.get(text) if type(text) is str else None
        if cached is None:
            runs = _canonical_runs(text) if type(text) is str and "-" in text else None
            if runs is not None:
                # no list of every id: a range, or the ranges themselves
                alloc = range(runs[0][0], runs[0][1] + 1) if len(runs) == 1 else _RunIds(runs)
                canonical = text
            else:
                alloc = parse_alloc(text, job=jid)
                runs = _runs(alloc)
                canonical = _runs_text(runs)
            cached = (alloc, text if canonical == text else canonical, runs)
            if len(self._alloc_cache) >= 4096:
                self._alloc_cache.clear()
            self._alloc_cache[text] = cached
        alloc, alloc_text, runs = cached     # shared: read-only from here on
        nres = len(self.resources)
        if alloc[-1] >= nres:
            raise SimulationError(f"alloc {data['alloc']!r} names resource {alloc[-1]}, the "
                                  f"platform has ids 0-{nres - 1}", event=etype, job=jid,
                                  field="alloc")
        profiles = self.profiles_of(js.job)
        prof = profiles[js.job.profile]
        plain = len(data) == 2   # job_id and alloc only (_check_reply allows one more field)
        mapping = None if plain else data.get("mapping")
        if mapping is not None:
            if not isinstance(mapping, dict) or not mapping:
                raise ProtocolError("'mapping' must be an object {executor: resource}",
                                    event=etype, job=jid, field="mapping")
            # executor rank -> rank of a machine inside the allocation (Batsim's semantics)
            try:
                ranks = [int(mapping[str(i)] if str(i) in mapping else mapping[i])
                         for i in range(len(mapping))]
            except (KeyError, ValueError, TypeError):
                raise ProtocolError("'mapping' keys must be executor indexes 0..n-1 and values "
                                    "machine ranks in 'alloc'", event=etype, job=jid,
                                    field="mapping") from None
            if any(not 0 <= k < len(alloc) for k in ranks):
                raise SimulationError(f"'mapping' uses a machine rank outside the {len(alloc)} "
                                      "allocated machines", event=etype, job=jid, field="mapping")
            hosts_ids = [alloc[k] for k in ranks]
            if len(hosts_ids) != js.job.res:
                raise SimulationError(f"mapping has {len(hosts_ids)} executors, the job requests "
                                      f"{js.job.res}", event=etype, job=jid, field="mapping")
        else:
            hosts_ids = alloc
            if len(alloc) != js.job.res and prof["type"] != "parallel_homogeneous_total":
                raise SimulationError(f"alloc {data['alloc']!r} has {len(alloc)} resources, the "
                                      f"job requests {js.job.res}", event=etype, job=jid,
                                      field="alloc")
        nc = self.nb_compute
        # hot path: compute ids are below nc, and alloc is sorted
        if alloc[-1] < nc:
            comp, comp_runs = alloc, runs
        else:
            comp = [r for r in alloc if r < nc]
            comp_runs = [(lo, hi if hi < nc else nc - 1) for lo, hi in runs if lo < nc]
        if not self.compute_sharing:
            busy = self.busy
            for lo, hi in comp_runs:
                if busy >> lo & ((2 << (hi - lo)) - 1):
                    r = next(r for r in comp if busy >> r & 1)
                    holder = next((j for j, s in self.jobs.items() if type(s) is JobState
                                   and s.state == RUNNING and r in s.alloc), "?")
                    raise SimulationError(f"resource {r} ({self.resources[r].name}) is busy with "
                                          f"job {holder} (no compute sharing)", event=etype,
                                          job=jid, field="alloc")
        storage_mapping = None if plain else data.get("storage_mapping")
        if storage_mapping is not None and not isinstance(storage_mapping, dict):
            raise ProtocolError("'storage_mapping' must be an object {label: storage id}",
                                event=etype, job=jid, field="storage_mapping")
        extra = None
        io = None if plain else data.get("additional_io_job")
        if io is not None:
            if not isinstance(io, dict) or "alloc" not in io or "profile" not in io:
                raise ProtocolError("'additional_io_job' needs alloc and profile", event=etype,
                                    job=jid, field="additional_io_job")
            io_alloc = parse_alloc(io["alloc"], job=jid, field_name="additional_io_job.alloc")
            io_prof = io["profile"]
            check_profile(io.get("profile_name", "additional_io_job"), io_prof, profiles)
            if io_prof["type"] in ("delay", "composed"):
                raise SimulationError("additional_io_job must be a parallel profile",
                                      event=etype, job=jid, field="additional_io_job")
            extra = ptask_of(io_prof, [self.resources[i].name for i in io_alloc],
                             storage_mapping=storage_mapping, storage_names=self.storage_names,
                             job=jid)
        js.state = RUNNING
        js.alloc = alloc
        js.alloc_text = alloc_text
        js.start = self.now
        self.nb_running += 1
        last = self._last_change
        now = self.now
        js.ncomp = len(comp)
        js.comp_runs = comp_runs
        if self.compute_sharing:
            if comp:
                self.tracker.change(now, self._share_machines(comp, +1))
        else:
            idle = 0.0
            stamp = self._idle_stamp
            for lo, hi in comp_runs:   # ascending ids: the same sum as node by node
                hi += 1
                idle = stamp(idle, now, last, lo, hi)
                busy |= (1 << hi) - (1 << lo)
            self.busy = busy
            self.time_idle += idle
            if comp:
                self.tracker.change(now, len(comp))
        if prof["type"] != "composed":
            steps = [(js.job.profile, prof)]   # (not cached: a trace may have a profile per job)
        else:
            key = (id(profiles), js.job.profile)
            steps = self._steps_cache.get(key) if not js.job.dynamic else None
            if steps is None:
                steps = flatten(js.job.profile, profiles)
                if not js.job.dynamic:
                    self._steps_cache[key] = steps
        ex = _Executor(self, js, hosts_ids, steps, storage_mapping, extra)
        js.executor = ex
        ex.start()

    def _share_machines(self, comp: list[int], delta: int) -> int:
        """Compute sharing: a job starts (+1) or ends (-1) on machines that may run others.
        As Batsim's machines, each accumulates its time in its current state (computing while
        it runs a job) at every job start and end on it; returns how many changed state."""
        users, last, now = self._nusers, self._last_change, self.now
        changed = 0
        for r in comp:
            if users[r]:
                self.time_computing += now - last.item(r)
            else:
                self.time_idle += now - last.item(r)
            last[r] = now
            users[r] += delta
            if users[r] == (1 if delta > 0 else 0):
                changed += 1
        return changed

    def job_ended(self, js: JobState, state: str, code: int, *, notify: bool) -> None:
        """The executor stopped (success, walltime or kill): free the machines."""
        js.final_state = state
        js.return_code = code
        js.finish = self.now
        js.state = DONE
        js.executor = None
        ncomp = js.ncomp
        last = self._last_change
        now = self.now
        if self.compute_sharing:
            if ncomp:
                comp = [r for lo, hi in js.comp_runs for r in range(lo, hi + 1)]
                self.tracker.change(now, -self._share_machines(comp, -1))
        else:
            busy = self.busy
            stamp = self._idle_stamp
            for lo, hi in js.comp_runs:
                hi += 1
                busy &= ~((1 << hi) - (1 << lo))
                stamp(None, now, last, lo, hi)
            self.busy = busy
            if ncomp:
                self.time_computing += (self.now - js.start) * ncomp
                self.tracker.change(self.now, -ncomp)
        if notify:
            # Batsim's executor frees the machines, then posts JOB_COMPLETED; as every put in
            # a step, it is applied after all the actors woken in that step ran (Engine._py_steps)
            src = self.resources[js.alloc[0]].name
            self.put(src, self._on_completed, js)

    def _kill(self, ids: list) -> None:
        progress: dict[str, Any] = {}
        killed: list[JobState] = []
        for jid in ids:
            js = self._job(jid, "KILL_JOB")
            if js.kill_requested:
                continue
            if js.state == RUNNING and js.executor is not None:
                js.kill_requested = True
                progress[js.job.id] = js.executor.kill()
                killed.append(js)
            elif js.state == SUBMITTED and not js.final_state:
                raise SimulationError("cannot kill a job that is not running", event="KILL_JOB",
                                      job=js.job.id)
        self.nb_killers += 1
        self.put(self.master, self._on_killing_done, (list(ids), progress, killed))

    def _register_profile(self, data: dict) -> None:
        etype = "REGISTER_PROFILE"
        if not self.dynamic_jobs:
            raise SimulationError("REGISTER_PROFILE needs --enable-dynamic-jobs", event=etype)
        wl, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile")
        if not isinstance(wl, str) or not isinstance(name, str):
            raise ProtocolError("REGISTER_PROFILE needs workload_name and profile_name",
                                event=etype)
        if isinstance(prof, dict) and prof.get("type") == "usage_trace":
            raise SimulationError("a usage_trace profile can only come from a workload file "
                                  "(Batsim does not implement registering one)", event=etype)
        store = self.dyn_profiles.setdefault(wl, {})
        static = self.wl_by_name.get(wl)
        if name in store or (static is not None and name in static.profiles):
            raise SimulationError(f"profile '{wl}!{name}' already exists", event=etype)
        known = dict(static.profiles) if static is not None else {}
        known.update(store)
        known[name] = prof
        check_profile(name, prof, known)
        store[name] = prof

    def _release_profile(self, job: Job) -> None:
        """Without --enable-profile-reuse Batsim drops a dynamic profile once unused."""
        key = (job.workload, job.profile)
        users = self._profile_users.get(key)
        if users is None:
            return
        users -= 1
        self._profile_users[key] = users
        if users <= 0 and not self.profile_reuse:
            del self._profile_users[key]
            self.dyn_profiles.get(job.workload, {}).pop(job.profile, None)

    def _register_job(self, data: dict) -> None:
        etype = "REGISTER_JOB"
        if not self.dynamic_jobs:
            raise SimulationError("REGISTER_JOB needs --enable-dynamic-jobs", event=etype)
        if self.registration_finished:
            raise SimulationError("REGISTER_JOB after registration_finished", event=etype,
                                  job=data.get("job_id"))
        jid, obj = data.get("job_id"), data.get("job")
        if not isinstance(jid, str) or "!" not in jid or not isinstance(obj, dict):
            raise ProtocolError("REGISTER_JOB needs job_id 'workload!name' and a job object",
                                event=etype, job=str(jid))
        if jid in self.jobs:
            raise SimulationError("job id already exists", event=etype, job=jid)
        wl = jid.partition("!")[0]
        profiles = dict(self.wl_by_name[wl].profiles) if wl in self.wl_by_name else {}
        profiles.update(self.dyn_profiles.get(wl, {}))
        obj = dict(obj)
        obj.setdefault("id", jid)
        obj.setdefault("subtime", self.now)
        try:
            job = parse_job(obj, wl, profiles, file=None, dynamic=True, full_id=jid)
        except MrschedError as exc:
            hint = exc.hint
            if exc.field == "profile" and not self.profile_reuse:
                hint = ("profiles of finished dynamic jobs are dropped unless "
                        "--enable-profile-reuse")
            raise SimulationError(exc.message, event=etype, job=jid, field=exc.field,
                                  hint=hint) from None
        if job.profile in self.dyn_profiles.get(wl, {}):
            key = (wl, job.profile)
            self._profile_users[key] = self._profile_users.get(key, 0) + 1
        job.subtime = self.now
        if wl not in self.wl_by_name:
            self.wl_by_name[wl] = Workload(name=wl, path="")
        if not self._fits(job):
            logger.warning("registered job %s requests %d resources, the platform has %d compute "
                           "resources: the scheduler must reject it", jid, job.res, self.nb_compute)
        js = JobState(job, state=SUBMITTED)
        self.jobs[jid] = js
        self.nb_submitted += 1

    # -- SIMULATION_BEGINS -----------------------------------------------------------------
    def _simulation_begins(self) -> dict:
        def res_obj(r: Resource) -> dict:
            role = r.properties.get("role", "") if r.role in ("", "compute") else r.role
            props = {"role": role}
            for k, v in r.properties.items():
                if k != "role":
                    props[k] = v
            return {"id": r.id, "name": r.name, "state": "idle", "properties": props,
                    "zone_properties": dict(r.zone_properties)}

        return {
            "nb_resources": len(self.resources),
            "nb_compute_resources": len(self.compute),
            "nb_storage_resources": len(self.storage),
            "allow_compute_sharing": self.compute_sharing,
            "allow_storage_sharing": True,
            "config": {
                "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
                "redis-prefix": "default",
                "profiles-forwarded-on-submission": self.forward_profiles,
                "dynamic-jobs-enabled": self.dynamic_jobs,
                "dynamic-jobs-acknowledged": False,
                "profile-reuse-enabled": self.profile_reuse,
                "sched-config": self.sched_cfg,
                "forward-unknown-events": False,
            },
            "compute_resources": [res_obj(r) for r in self.compute],
            "storage_resources": [res_obj(r) for r in self.storage],
            "workloads": {w.name: os.path.abspath(w.path) for w in self.workloads},
            "profiles": {w.name: _referenced_profiles(w) for w in self.workloads},
        }


def _referenced_profiles(w: Workload) -> dict[str, dict]:
    """The profiles Batsim keeps after loading a workload (``remove_unreferenced_profiles``):
    those a job or a composed profile's ``seq`` names; the others are dropped from memory and
    from SIMULATION_BEGINS."""
    used = {j.profile for j in w.jobs}
    for prof in w.profiles.values():
        if isinstance(prof, dict) and prof.get("type") == "composed":
            used.update(prof.get("seq", ()))
    return {name: prof for name, prof in w.profiles.items() if name in used}


def simulate(platform: Any, workloads: Any, scheduler: Any, *, export_prefix: str | Path | None,
             roles=(), mmax: int | None = None, dynamic_jobs: bool = False,
             profile_reuse: bool = False, sched_cfg: str = "", forward_profiles: bool = False,
             record_transcript: bool = False, compute_sharing: bool = False,
             keep_records: bool = True) -> SimulationResult:
    """Run one simulation; ``platform`` is a path or a loaded Platform, ``workloads`` paths or
    loaded :class:`Workload` objects (named w0, w1, ... in order). ``keep_records=False``: the
    result's ``jobs`` stays empty (rows go only to ``_jobs.csv``; memory does not grow with
    the jobs run)."""
    if isinstance(workloads, (str, Path, Workload)):
        workloads = [workloads]
    workloads = list(workloads)
    with _collector_paused():
        if workloads and not isinstance(workloads[0], Workload):
            workloads = load_workloads(workloads)
        engine = Engine(platform, workloads, scheduler, export_prefix=export_prefix, roles=roles,
                        mmax=mmax, dynamic_jobs=dynamic_jobs, profile_reuse=profile_reuse,
                        sched_cfg=sched_cfg, forward_profiles=forward_profiles,
                        record_transcript=record_transcript, compute_sharing=compute_sharing,
                        keep_records=keep_records)
    return engine.run()


@contextmanager
def _collector_paused():
    """Loading the platform and the workloads builds trees of parsed containers without
    cycles: the cyclic collector, at its default threshold, would scan them again and again
    as they grow and free nothing (a million-job workload: 7.6 CPU s to load, 6.0 paused;
    ``bench/bench_load.py``). ``Engine.run`` then freezes them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
