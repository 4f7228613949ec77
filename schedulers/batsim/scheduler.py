"""``BatsimScheduler``: the pybatsim-style base class for schedulers written by hand.

Subclasses override the ``on_*`` callbacks and call the actions (``execute_job``,
``reject_job``, ``call_me_later``, ...); ``handle_message(dict) -> dict`` is the only entry
point, used in-process by the embedded engine and over ZeroMQ by ``endpoint.serve``. The
class turns wire dicts into typed events (``messages.py``) and queued actions back into the
reply, and enforces the rules whose violation makes Batsim abort or hang: no wake-up at or
before Batsim's clock, at most one of mapping / storage_mapping / additional_io_job, no job
started twice, ``registration_finished`` sent once, nothing after ``SIMULATION_ENDS``.

Example
-------
>>> class Idle(BatsimScheduler):
...     def on_job_submission(self, event):
...         self.reject_job(event.job_id)
>>> s = Idle()
>>> _ = s.handle_message({"now": 0.0, "events": [{"timestamp": 0.0,
...     "type": "SIMULATION_BEGINS", "data": {"nb_resources": 1, "compute_resources":
...     [{"id": 0, "name": "n0", "properties": {}}]}}]})
>>> s.handle_message({"now": 1.0, "events": [{"timestamp": 1.0, "type": "JOB_SUBMITTED",
...     "data": {"job_id": "w0!1", "job": {"id": "w0!1", "res": 1}}}]})
{'now': 1.0, 'events': [{'timestamp': 1.0, 'type': 'REJECT_JOB', 'data': {'job_id': 'w0!1'}}]}
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from procset import ProcSet

from mrsched.errors import ProtocolError, SimulationError

from . import messages as m
from .messages import MIN_WAKEUP_DELAY
from .intervals import format_intervals, parse_intervals, text_of_runs

INF = math.inf

__all__ = ["BatsimScheduler", "MIN_WAKEUP_DELAY"]

logger = logging.getLogger(__name__)



#: the states of a JOB_COMPLETED (Batsim 4.2.1 src/jobs.cpp, job_state_to_string)
COMPLETED_STATES = frozenset({"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED",
                              "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED"})


def check_submitted_job(job_id: str, job: dict) -> None:
    """Refuse a JOB_SUBMITTED real Batsim never sends: an id that is not ``workload!name``
    (src/jobs.cpp 42-83), ``job.id`` other than ``job_id``, ``res`` not an integer, a walltime
    neither -1 nor positive (src/jobs.cpp 426-440)."""
    workload, sep, name = job_id.partition("!")
    if not sep or not workload or not name or "!" in name:
        raise ProtocolError(f"job id {job_id!r} is not 'workload!name' (Batsim's form)",
                            event="JOB_SUBMITTED", job=job_id, field="job_id")
    jid = job.get("id", job_id)
    if jid != job_id:
        raise ProtocolError(f"job.id is {jid!r}, not the job_id", event="JOB_SUBMITTED",
                            job=job_id, field="id")
    res = job.get("res")
    if res is not None and type(res) is not int:
        raise ProtocolError(f"res must be an integer, got {res!r}", event="JOB_SUBMITTED",
                            job=job_id, field="res")
    if "walltime" in job:
        wall = job["walltime"]
        if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not (wall == -1 or wall > 0) \
                or wall != wall or wall == INF:
            raise ProtocolError(f"walltime must be -1 (none) or a positive number, got {wall!r}",
                                event="JOB_SUBMITTED", job=job_id, field="walltime")


def completion_problem(scheduler: BatsimScheduler, job_id: str) -> str:
    """Why a JOB_COMPLETED for ``job_id`` cannot come from Batsim."""
    if job_id in scheduler._completed:
        return "job completed twice"
    if job_id in scheduler._decided:
        return "completion of a job that was rejected"
    if job_id in scheduler.jobs:
        return "completion of a job that was never started"
    return "completion of an unknown job"


class BatsimScheduler:
    """Base class: override the ``on_*`` callbacks, call the actions, never touch the wire.

    Parameters
    ----------
    options : mapping, optional
        Free-form options (``mrsched serve module:Class --option k=v`` passes them here as
        strings); stored unchanged as ``self.options``.

    Attributes available to subclasses (refreshed at ``SIMULATION_BEGINS``):
    ``jobs`` (job id -> submitted or registered job dict), ``compute_resources`` and
    ``storage_resources`` (tuples of ``messages.Resource`` in id order), ``config`` (Batsim's
    config dict), ``sched_config`` (its ``sched-config`` string parsed as JSON when possible,
    ``{}`` when empty, else the raw string), ``profiles`` and ``workloads`` (as sent by Batsim).
    """

    def __init__(self, options: Mapping[str, Any] | None = None):
        self.options = dict(options) if options else {}
        self._reset()

    # ------------------------------------------------------------------ state
    def _reset(self) -> None:
        """Run-time state, recreated at every SIMULATION_BEGINS."""
        self._now: float | None = None
        self._finished = False
        self._actions: list[m.Event] = []
        self._wakeups: set[float] = set()          # requested and not yet due
        self._asked = False                        # a CALL_ME_LATER queued in this round
        self._gap = INF                            # least (JOB_SUBMITTED time - subtime) seen
        self._started: set[str] = set()            # EXECUTE_JOB sent
        self._allocs: dict[str, Any] = {}          # running: the alloc sent (text or ProcSet)
        self._decided: set[str] = set()            # REJECT_JOB sent
        self._submitted: set[str] = set()          # JOB_SUBMITTED received
        self._completed: set[str] = set()          # JOB_COMPLETED received
        self._registered_profiles: set[tuple[str, str]] = set()
        self._registration_finished = False
        self._nb_resources: int | None = None
        self.jobs: dict[str, dict] = {}
        self.compute_resources: tuple[m.Resource, ...] = ()
        self.storage_resources: tuple[m.Resource, ...] = ()
        self.config: dict = {}
        self.sched_config: Any = {}
        self.profiles: dict = {}
        self.workloads: dict = {}

    # ------------------------------------------------------------------ the lean path
    #: set while the lean path runs ``on_no_more_events`` (``in_lean_round``)
    _lean_now: float | None = None

    @property
    def in_lean_round(self) -> bool:
        """Whether the message being handled took the lean path (``handle_lean``)."""
        return self._lean_now is not None

    def lean_submitted(self, now: float, job_id: str, job: dict) -> None:
        """The lean path's JOB_SUBMITTED (the job's dict as Batsim sent it, not copied)."""
        raise NotImplementedError

    def lean_completed(self, now: float, job_id: str) -> None:
        """The lean path's JOB_COMPLETED of a job this scheduler started."""
        raise NotImplementedError

    def handle_lean(self, msg: Any) -> dict | None:
        """The reply to the common messages (JOB_SUBMITTED, JOB_COMPLETED of a job started
        with an alloc text seen before, REQUESTED_CALL; well-formed, time not going back),
        handed to ``lean_submitted`` / ``lean_completed`` without building event objects,
        then ``on_no_more_events``; None for any other message, which ``handle_message``
        then parses, checks and reports. For a subclass that keeps its own record of jobs
        and overrides no ``on_*`` callback of the events it takes."""
        lean = self._lean_events(msg)
        if lean is None:
            return None
        now = msg["now"]
        self._now = now
        self._actions = []
        if self._wakeups:
            self._wakeups = {t for t in self._wakeups if t > now}
        jobs = self.jobs
        for etype, data, ts in lean:
            if etype == "JOB_SUBMITTED":
                job_id = data["job_id"]
                job = data["job"]
                if job_id not in jobs:     # a static job (not registered by this scheduler)
                    self._submission_gap(ts, job)
                jobs[job_id] = job
                self._submitted.add(job_id)
                self.lean_submitted(now, job_id, job)
            elif etype == "JOB_COMPLETED":
                self._completed.add(data["job_id"])
                del self._allocs[data["job_id"]]
                self.lean_completed(now, data["job_id"])
        self._lean_now = now
        try:
            self.on_no_more_events()
        finally:
            self._lean_now = None
        actions = self._actions
        self._actions = []
        if not actions:     # most rounds of an overloaded machine
            return {"now": now, "events": actions}
        # starts may be queued as ready wire dicts (execute_job_runs), other actions as events
        events = [a if type(a) is dict else m.serialize_event(a) for a in actions]
        return {"now": now, "events": self._spaced(events)}

    # ------------------------------------------------------------------ wake-up spacing
    @property
    def message_latency(self) -> float:
        """An upper bound of the time a message takes from Batsim's master host to its server:
        the least gap between a static job's ``subtime`` and its JOB_SUBMITTED (both printed
        with six decimals, hence one more microsecond), 0 before any submission. A reply's
        wake-ups are kept after their messages' arrival with it (``messages.space_wakeups``)."""
        gap = self._gap
        return 0.0 if gap == INF else gap + 1e-6 if gap > 0 else 0.0

    def _submission_gap(self, ts: Any, job: dict) -> None:
        sub = job.get("subtime")
        if type(sub) in (float, int) and type(ts) in (float, int) and 0 <= ts - sub < self._gap:
            self._gap = ts - sub

    def _spaced(self, events: list[dict]) -> list[dict]:
        """The reply's events, its wake-ups past their messages' arrival at the server."""
        if not self._asked:
            return events
        self._asked = False
        spaced = m.space_wakeups(events, self.message_latency)
        if spaced is not events:
            self._wakeups.update(e["data"]["timestamp"] for e in spaced if e["type"] == "CALL_ME_LATER")
        return spaced

    def execute_job_runs(self, job_id: str, runs: list[tuple[int, int]],
                         storage_mapping: dict | None = None) -> None:
        """``execute_job`` on the resource ids of ``runs`` (ascending, disjoint ``(first,
        last)``) for a caller that checked the start itself (a submitted job, not started,
        free resources): the EXECUTE_JOB is written without a ProcSet."""
        text = text_of_runs(runs)
        self._actions.append(m.execute_job_data(self._now, job_id, text, storage_mapping))
        self._started.add(job_id)
        self._allocs[job_id] = text

    def _lean_events(self, msg: Any) -> list[tuple[str, dict, float]] | None:
        """The (type, data, timestamp) of each event of a message the lean path may take, else
        None (the full path then parses, checks and reports whatever is unusual or wrong)."""
        if self._finished or self._now is None or type(msg) is not dict:
            return None
        now = msg.get("now")
        events = msg.get("events")
        # `not self._now <= now < INF` also sends NaN to the full path, which refuses it
        if (type(now) is not float and type(now) is not int) or not self._now <= now < INF or type(events) is not list:
            return None
        out = []
        last = -INF
        seen: set[str] = set()   # job ids submitted or completed in this message
        submitted = self._submitted
        profiles = self.profiles
        if type(profiles) is not dict:
            profiles = None      # (then _profile_known decides)
        for ev in events:
            if type(ev) is not dict:
                return None
            ts = ev.get("timestamp")
            etype = ev.get("type")
            data = ev.get("data")
            if (type(ts) is not float and type(ts) is not int) or type(data) is not dict or not last <= ts <= now:
                return None
            last = ts
            if etype == "JOB_SUBMITTED":
                # anything Batsim would not send (a job seen before, job.id other than job_id,
                # res not an int) goes to the full path, which names it
                job_id = data.get("job_id")
                job = data.get("job")
                if len(data) != 2 or type(job_id) is not str or type(job) is not dict:
                    return None
                wall = job.get("walltime", -1)
                workload, _, name = job_id.partition("!")
                if (job_id in submitted or job_id in seen or job.get("id", job_id) != job_id
                        or type(job.get("res", 0)) is not int
                        or not workload or not name or "!" in name
                        or (type(wall) is not float and type(wall) is not int)
                        or not (wall == -1 or 0 < wall < INF)):
                    return None
                # _profile_known, its common case inline: the workload's listed profiles
                listed = profiles.get(workload) if profiles is not None else None
                if type(listed) is dict:
                    if listed:
                        name = job.get("profile")
                        if type(name) is not str or (name not in listed and (workload, name)
                                                     not in self._registered_profiles):
                            return None
                elif not self._profile_known(job_id, job.get("profile")):
                    return None
                seen.add(job_id)
            elif etype == "JOB_COMPLETED":
                # the runtime frees what it allocated: the alloc text must be the one we sent
                job_id = data.get("job_id")
                state = data.get("job_state")
                if (len(data) != 4 or type(job_id) is not str or type(state) is not str
                        or state not in COMPLETED_STATES or "return_code" not in data):
                    return None
                sent = self._allocs.get(job_id)
                if job_id in seen or type(sent) is not str or data.get("alloc") != sent:
                    return None
                seen.add(job_id)
            elif etype != "REQUESTED_CALL" or data:
                return None
            out.append((etype, data, ts))
        return out

    # ------------------------------------------------------------------ properties
    @property
    def now(self) -> float:
        """Batsim's clock as of the message being handled (0.0 before the first one)."""
        return 0.0 if self._now is None else self._now

    @property
    def finished(self) -> bool:
        """True once SIMULATION_ENDS was received."""
        return self._finished

    # ------------------------------------------------------------------ entry point
    def handle_message(self, msg: dict) -> dict:
        """Handle one Batsim message (the wire dict) and return the reply dict.

        Events are dispatched in order, then ``on_no_more_events()`` is called (not after
        SIMULATION_ENDS), then the queued actions are returned stamped at the message's
        ``now``. Raises ``ProtocolError`` on a malformed message.
        """
        if getattr(self, "_actions", None) is None:  # subclass forgot super().__init__()
            self.options = getattr(self, "options", {})
            self._reset()
        message = m.parse_message(msg)
        now = message.now
        events = message.events
        if self._finished:
            if events and type(events[0]) is m.SimulationBegins:
                self._reset()
            else:
                raise ProtocolError("message received after SIMULATION_ENDS",
                                    event=events[0].type if events else None)
        if self._nb_resources is None and events and type(events[0]) is not m.SimulationBegins:
            raise ProtocolError(f"{events[0].type} before SIMULATION_BEGINS",
                                event=events[0].type,
                                hint="Batsim's first message is SIMULATION_BEGINS")
        if self._now is not None and now < self._now:
            raise ProtocolError(f"message now={now!r} goes back in time (previous "
                                f"{self._now!r})", field="now")
        self._now = now
        self._actions = []
        # wake-ups at or before now are due (their REQUESTED_CALL is here or was earlier)
        if self._wakeups:
            self._wakeups = {t for t in self._wakeups if t > now}
        handlers = self._handlers
        for i, event in enumerate(events):
            etype = type(event)
            if etype is m.SimulationEnds:
                if i != len(events) - 1:
                    raise ProtocolError("SIMULATION_ENDS must be the last event of its message",
                                        event="SIMULATION_ENDS")
                self._h_ends(event)
                self._finished = True
                dropped = self._actions
                self._actions = []
                if dropped:
                    logger.warning("simulation ended: %d queued action(s) not sent",
                                   len(dropped))
                self.on_simulation_ends(event)
                return {"now": now, "events": []}
            handler = handlers.get(etype)
            if handler is None:
                if not self.config.get("forward-unknown-events"):
                    raise ProtocolError(f"unknown event type {event.type!r} (Batsim forwards events it "
                                        "does not know only with --forward-unknown-events)", event=event.type)
                self.on_unknown_event(event)
            else:
                handler(self, event)
        self.on_no_more_events()
        actions = self._actions
        self._actions = []
        return {"now": now, "events": self._spaced([m.serialize_event(a) for a in actions])}

    # built-in bookkeeping before the user's callbacks (kept tiny: hot path)
    def _h_begins(self, e: m.SimulationBegins) -> None:
        if self._nb_resources is not None:
            raise ProtocolError("SIMULATION_BEGINS sent twice", event="SIMULATION_BEGINS")
        resources = e.compute_resources + e.storage_resources
        if e.nb_resources != len(resources):
            raise ProtocolError(f"nb_resources is {e.nb_resources!r} but {len(e.compute_resources)} "
                                f"compute and {len(e.storage_resources)} storage resources are "
                                "listed", event="SIMULATION_BEGINS", field="nb_resources")
        ids = [r.id for r in resources]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ProtocolError(f"resource id {dup} is listed twice", event="SIMULATION_BEGINS",
                                field="id")
        self._nb_resources = e.nb_resources
        self.compute_resources = e.compute_resources
        self.storage_resources = e.storage_resources
        self.config = e.config
        self.workloads = e.workloads or {}
        self.profiles = e.profiles or {}
        raw = e.config.get("sched-config", "")
        if isinstance(raw, str):
            if not raw.strip():
                self.sched_config = {}
            else:
                try:
                    self.sched_config = json.loads(raw)
                except ValueError:
                    self.sched_config = raw
        else:
            self.sched_config = raw
        self.on_simulation_begins(e)

    def _h_submitted(self, e: m.JobSubmitted) -> None:
        job_id = e.job_id
        if job_id in self._submitted:
            raise ProtocolError("job submitted twice (Batsim submits a job once)",
                                event="JOB_SUBMITTED", job=job_id)
        check_submitted_job(job_id, e.job)
        if e.profile is None and not self._profile_known(job_id, e.job.get("profile")):
            raise ProtocolError(f"profile {e.job.get('profile')!r} is not among its workload's profiles",
                                event="JOB_SUBMITTED", job=job_id, field="profile")
        self._submitted.add(job_id)
        if job_id not in self.jobs:      # a static job (not registered by this scheduler)
            self._submission_gap(e.timestamp, e.job)
        self.jobs[job_id] = e.job
        self.on_job_submission(e)

    def _profile_known(self, job_id: str, name: Any) -> bool:
        """Whether a submitted job's profile exists: among its workload's profiles when
        SIMULATION_BEGINS listed them, or registered by this scheduler (dynamic jobs)."""
        workload = job_id.partition("!")[0]
        listed = self.profiles.get(workload) if isinstance(self.profiles, dict) else None
        if not isinstance(listed, dict) or not listed:
            return True          # not listed: nothing to check against
        # Batsim names profiles by strings (a list here is no profile, not a TypeError)
        return isinstance(name, str) and (name in listed or (workload, name) in self._registered_profiles)

    def _h_completed(self, e: m.JobCompleted) -> None:
        job_id = e.job_id
        if job_id not in self._started or job_id in self._completed:
            raise ProtocolError(completion_problem(self, job_id), event="JOB_COMPLETED",
                                job=job_id)
        if e.job_state not in COMPLETED_STATES:
            raise ProtocolError(f"job_state {e.job_state!r} is not one of {', '.join(sorted(COMPLETED_STATES))}",
                                event="JOB_COMPLETED", job=job_id, field="job_state")
        sent = self._allocs.pop(job_id)
        if e.alloc != (parse_intervals(sent, field="alloc") if type(sent) is str else sent):
            raise ProtocolError(f"alloc {format_intervals(e.alloc)!r} is not the job's "
                                f"{sent if type(sent) is str else format_intervals(sent)!r}",
                                event="JOB_COMPLETED", job=job_id, field="alloc")
        self._completed.add(job_id)
        self.on_job_completion(e)

    def _h_killed(self, e: m.JobKilled) -> None:
        for job_id in e.job_ids:
            if job_id not in self._started:
                raise ProtocolError("JOB_KILLED names a job this scheduler never started",
                                    event="JOB_KILLED", job=job_id, field="job_ids")
        self.on_job_killed(e)

    def _h_state_changed(self, e: m.ResourceStateChanged) -> None:
        known = {r.id for r in self.compute_resources} | {r.id for r in self.storage_resources}
        unknown = [i for i in e.resources if i not in known]
        if unknown:
            raise ProtocolError(f"RESOURCE_STATE_CHANGED names resource {unknown[0]}, which the "
                                "machine does not have", event="RESOURCE_STATE_CHANGED", field="resources")
        self.on_resource_state_changed(e)

    def _h_ends(self, e: m.SimulationEnds) -> None:
        running = [j for j in self._started if j not in self._completed]
        if running:
            raise ProtocolError(f"SIMULATION_ENDS while {len(running)} job(s) run "
                                f"({', '.join(sorted(running)[:3])}{', ...' if len(running) > 3 else ''})",
                                event="SIMULATION_ENDS")

    _handlers = {
        m.SimulationBegins: _h_begins,
        m.JobSubmitted: _h_submitted,
        m.JobCompleted: _h_completed,
        m.JobKilled: _h_killed,
        m.RequestedCall: lambda self, e: self.on_requested_call(e),
        m.Notify: lambda self, e: self.on_notify(e),
        m.ResourceStateChanged: _h_state_changed,
        m.Answer: lambda self, e: self.on_answer(e),
        m.Query: lambda self, e: self.on_query(e),
    }

    # ------------------------------------------------------------------ callbacks
    def on_simulation_begins(self, event: m.SimulationBegins) -> None:
        """Resources, config and workloads are known (already stored on ``self``)."""

    def on_job_submission(self, event: m.JobSubmitted) -> None:
        """A job arrived (``event.job_id``, ``event.job`` with every workload field)."""

    def on_job_completion(self, event: m.JobCompleted) -> None:
        """A job finished (``event.job_state``, ``event.alloc`` as a ProcSet)."""

    def on_job_killed(self, event: m.JobKilled) -> None:
        """Jobs killed on our request (they also get ``JOB_COMPLETED``)."""

    def on_requested_call(self, event: m.RequestedCall) -> None:
        """A wake-up asked with ``call_me_later`` is due."""

    def on_notify(self, event: m.Notify) -> None:
        """``event.notify_type``: no_more_static_job_to_submit, machine (un)available, ..."""

    def on_resource_state_changed(self, event: m.ResourceStateChanged) -> None:
        """Resources reached a new power state."""

    def on_answer(self, event: m.Answer) -> None:
        """Answer to one of our queries (e.g. consumed energy)."""

    def on_query(self, event: m.Query) -> None:
        """Batsim asks something (e.g. estimate_waiting_time)."""

    def on_unknown_event(self, event: m.UnknownEvent) -> None:
        """An event type this version does not know; ignored with a debug log."""
        logger.debug("ignoring unknown event %s", event.type)

    def on_no_more_events(self) -> None:
        """Every event of the message was dispatched: the place to take decisions."""

    def on_simulation_ends(self, event: m.SimulationEnds) -> None:
        """Batsim is done; actions are refused from now on."""

    # ------------------------------------------------------------------ actions
    def _queue(self, event: m.Event) -> None:
        if self._finished:
            raise SimulationError(f"cannot send {event.type}: the simulation has ended",
                                  event=event.type)
        if self._now is None:
            raise SimulationError(f"cannot send {event.type} before the first message",
                                  event=event.type)
        self._actions.append(event)

    def _alloc(self, alloc, job_id: str | None, field: str,
               event: str = "EXECUTE_JOB") -> ProcSet:
        """Any accepted resource-set form -> a non-empty ProcSet of existing ids."""
        if isinstance(alloc, ProcSet):
            ps = alloc
        else:
            if not isinstance(alloc, str):
                alloc = format_intervals(alloc)
            ps = parse_intervals(alloc, field=field)
        if not ps:
            raise SimulationError("empty resource set", event=event, job=job_id, field=field)
        if self._nb_resources is not None and ps.max >= self._nb_resources:
            raise SimulationError(f"resource id {ps.max} does not exist (the platform has "
                                  f"{self._nb_resources} resources)", event=event,
                                  job=job_id, field=field)
        return ps

    def execute_job(self, job_id: str, alloc: ProcSet | str | Iterable[int], *,
                    mapping: dict | None = None, storage_mapping: dict | None = None,
                    additional_io_job: m.AdditionalIoJob | dict | None = None) -> None:
        """Start ``job_id`` on ``alloc`` (ProcSet, ``"0-3 7"`` or ids).

        At most one of ``mapping`` (executor -> resource), ``storage_mapping``
        (label -> storage resource id) and ``additional_io_job`` (``AdditionalIoJob`` or a dict
        ``{alloc, profile_name, profile}``) — Batsim 4.2.1 aborts otherwise.
        """
        if self._now is not None and job_id not in self.jobs:
            raise SimulationError("cannot start a job that was never submitted",
                                  event="EXECUTE_JOB", job=job_id)
        if job_id in self._started or job_id in self._decided:
            raise SimulationError("job already started or rejected", event="EXECUTE_JOB",
                                  job=job_id)
        ps = self._alloc(alloc, job_id, "alloc")
        if isinstance(additional_io_job, Mapping):
            try:
                additional_io_job = m.AdditionalIoJob(
                    self._alloc(additional_io_job["alloc"], job_id, "additional_io_job.alloc"),
                    additional_io_job["profile_name"], additional_io_job["profile"])
            except KeyError as exc:
                raise ProtocolError(f"additional_io_job lacks '{exc.args[0]}'",
                                    event="EXECUTE_JOB", job=job_id,
                                    field="additional_io_job") from None
        self._queue(m.ExecuteJob(self.now, job_id, ps, mapping, storage_mapping,
                                 additional_io_job))
        self._started.add(job_id)
        self._allocs[job_id] = ps

    def reject_job(self, job_id: str) -> None:
        """Refuse a submitted job (``REJECTED`` in ``_jobs.csv``)."""
        if self._now is not None and job_id not in self.jobs:
            raise SimulationError("cannot reject a job that was never submitted",
                                  event="REJECT_JOB", job=job_id)
        if job_id in self._started or job_id in self._decided:
            raise SimulationError("job already started or rejected", event="REJECT_JOB",
                                  job=job_id)
        self._queue(m.RejectJob(self.now, job_id))
        self._decided.add(job_id)

    def kill_jobs(self, job_ids: Iterable[str]) -> None:
        """Kill running jobs (Batsim answers JOB_KILLED, then JOB_COMPLETED)."""
        ids = (job_ids,) if isinstance(job_ids, str) else tuple(job_ids)
        self._queue(m.KillJob(self.now, ids))

    def call_me_later(self, when: float) -> None:
        """Ask for a REQUESTED_CALL at ``when``; a time at or before ``now`` is moved to
        ``now + MIN_WAKEUP_DELAY``, and a wake-up already pending is not asked twice."""
        if type(when) not in (int, float):
            try:
                when = float(when)
            except (TypeError, ValueError):
                raise SimulationError(f"wake-up time must be a number, got {when!r}",
                                      event="CALL_ME_LATER") from None
        if when != when or when in (float("inf"), float("-inf")):
            raise SimulationError(f"wake-up time must be finite, got {when!r}",
                                  event="CALL_ME_LATER")
        now = self.now
        if when <= now:
            when = now + MIN_WAKEUP_DELAY
        if when in self._wakeups:
            return
        self._queue(m.CallMeLater(now, when))
        self._wakeups.add(when)
        self._asked = True

    def register_profile(self, workload: str, name: str, profile: dict) -> None:
        """Declare a profile for dynamic jobs (before the jobs using it)."""
        self._require_dynamic("REGISTER_PROFILE")
        key = (workload, name)
        if key in self._registered_profiles:
            raise SimulationError(f"profile '{name}' of workload '{workload}' is already "
                                  "registered", event="REGISTER_PROFILE", field="profile_name")
        self._queue(m.RegisterProfile(self.now, workload, name, profile))
        self._registered_profiles.add(key)

    def register_job(self, job_id: str, job: dict) -> None:
        """Submit a dynamic job ``"workload!name"``; ``job`` holds res, profile, subtime,
        walltime (``id`` is filled in when missing)."""
        self._require_dynamic("REGISTER_JOB")
        if not isinstance(job_id, str) or "!" not in job_id:
            raise SimulationError(f"dynamic job id {job_id!r} must be 'workload!name'",
                                  event="REGISTER_JOB", field="job_id")
        if job_id in self.jobs:
            raise SimulationError("job id already exists", event="REGISTER_JOB", job=job_id)
        if "id" not in job:
            job = {"id": job_id, **job}
        elif job["id"] != job_id:
            raise SimulationError(f"job['id'] is {job['id']!r}, not the job id",
                                  event="REGISTER_JOB", job=job_id, field="id")
        workload = job_id.split("!", 1)[0]
        profile = job.get("profile")
        if ((workload, profile) not in self._registered_profiles
                and profile not in self.profiles.get(workload, {})):
            raise SimulationError(f"profile {profile!r} is not registered in workload "
                                  f"'{workload}'", event="REGISTER_JOB", job=job_id,
                                  field="profile", hint="call register_profile() first")
        self._queue(m.RegisterJob(self.now, job_id, job))
        self.jobs[job_id] = job

    def notify_registration_finished(self) -> None:
        """Tell Batsim no more dynamic jobs will come (mandatory for the simulation to end);
        sent once, later calls do nothing."""
        if self._registration_finished:
            return
        self._require_dynamic("NOTIFY")
        self._queue(m.Notify(self.now, "registration_finished"))
        self._registration_finished = True

    def set_job_metadata(self, job_id: str, text: str) -> None:
        """Attach free text (no ``"``) to a job, written in ``_jobs.csv``."""
        self._queue(m.SetJobMetadata(self.now, job_id, text))

    def set_resource_state(self, resources: ProcSet | str | Iterable[int], state) -> None:
        """Switch resources to a power state (pstate number)."""
        ps = self._alloc(resources, None, "resources", "SET_RESOURCE_STATE")
        self._queue(m.SetResourceState(self.now, ps, str(state)))

    def _require_dynamic(self, what: str) -> None:
        if self._registration_finished:
            raise SimulationError("dynamic registration already finished",
                                  event=what, hint="notify_registration_finished() was called")
        if self.config and self.config.get("dynamic-jobs-enabled") is False:
            raise SimulationError("Batsim was started without dynamic jobs", event=what,
                                  hint="run Batsim with --enable-dynamic-jobs")
