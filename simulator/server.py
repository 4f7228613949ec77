"""The Batsim server (``server.cpp``, ``server_process``): a handler per message type in one
table, and the loop that calls the scheduler.

Every message reaching the server (an actor's put, delivered by the kernel) is handled by its
type's handler in ``Server.handlers``, as Batsim's ``handler_map``: the internal messages of
Batsim's actors (a submitter's hello, batch and bye, a job's completion, a waiter's or a
killer's end, the scheduler's READY) and the scheduler's events, which the request-reply actor
(``network.cpp``, ``request_reply_scheduler_process``) posts one by one. A handler changes the
state and may append events for the scheduler; then, as in ``server_process``'s loop, the server
calls the scheduler when it is ready, its mailbox holds nothing else and there is something to
say (or, once everything is done, to say SIMULATION_ENDS). The scheduler's reply is checked
here (``check_reply``), an in-process one's numbers read as Batsim reads their text
(``read_as_batsim``), before its request-reply actor starts.

The scheduler is anything with ``handle_message(dict) -> dict`` (in process) or a
``ZmqScheduler`` connection (same method).
"""

from __future__ import annotations

import logging
import math
import os
import time as _time
from typing import Any, Callable

from mrsched.errors import MrschedError, ProtocolError, SimulationError, suggest
from mrsched.schedulers.batsim.intervals import parse_ids, read_alloc
from mrsched.simulator.jobs import DONE, ENDED, REJECTED, RUNNING, SUBMITTED, JobState, state_text
from mrsched.simulator.jsonnum import as_read, forwarded, numbers_read, rapidjson_float, written
from mrsched.simulator.outputs import JobRecord
from mrsched.simulator.profiles import check_profile, ptask_of
from mrsched.simulator.submitter import StaticSubmitter
from mrsched.simulator.unordered import kept_profiles
from mrsched.simulator.workload import Workload, parse_job

INF = math.inf
logger = logging.getLogger("mrsched.simulator.engine")   # one name for the engine's messages
ZERO_RUNTIME = 1e-5  # the runtime Batsim records for a job that took no time (jobs_execution.cpp)
WAITER_MIN_SLEEP = 1e-5  # a CALL_ME_LATER waiter sleeps at least this long (waiter_process, ditto)

# every event type a scheduler may send (each has its handler in Server.handlers)
SCHEDULER_EVENTS = ("EXECUTE_JOB", "REJECT_JOB", "KILL_JOB", "CALL_ME_LATER", "REGISTER_JOB",
                    "REGISTER_PROFILE", "NOTIFY", "SET_RESOURCE_STATE", "SET_JOB_METADATA",
                    "CHANGE_JOB_STATE", "QUERY", "ANSWER", "TO_JOB_MSG")


def check_reply(reply: Any, now: float) -> tuple[list[dict], float]:
    """A scheduler's reply to the message sent at ``now``: its events and its ``now``, or the
    one-line error Batsim's reader would abort with (protocol.cpp)."""
    if type(reply) is dict:     # the common reply of nothing to do, in a few tests
        rnow = reply.get("now")
        if (type(rnow) is float and rnow - rnow == 0.0 and rnow >= now - max(1e-6, 1e-15 * abs(now))
                and reply.get("events") == []):
            return reply["events"], rnow
    if not isinstance(reply, dict) or "now" not in reply or "events" not in reply:
        raise ProtocolError("the scheduler's reply must be an object with 'now' and 'events'",
                            hint=f"got {str(reply)[:80]!r}")
    rnow = reply["now"]
    events = reply["events"]
    if isinstance(rnow, bool) or not isinstance(rnow, (int, float)) or not math.isfinite(rnow):
        raise ProtocolError(f"'now' must be a finite number, got {rnow!r}", field="now")
    if not isinstance(events, list):
        raise ProtocolError("'events' must be a list", field="events")
    # schedulers echo the 6-decimal now; allow that rounding, and rapidjson's reading of a long
    # echo far in the future (jsonnum.py: a few ulps off)
    if rnow < now - max(1e-6, 1e-15 * abs(now)):
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
        if etype not in SCHEDULER_EVENTS:
            raise ProtocolError(f"unknown event type {etype!r}", event=str(etype),
                                job=_job_of(data), hint=suggest(str(etype), SCHEDULER_EVENTS))
        if type(ts) is not float and (isinstance(ts, bool) or not isinstance(ts, (int, float))):
            raise ProtocolError(f"timestamp must be a number, got {ts!r}", event=etype,
                                job=_job_of(data))
        if ts > rnow:
            raise SimulationError(f"event stamped {ts!r}, after the reply's now {rnow!r}",
                                  event=etype, job=_job_of(data))
        if ts < last:
            raise SimulationError("event timestamps must not decrease", event=etype,
                                  job=_job_of(data))
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
                    event=etype, job=data.get("job_id"),
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


def read_as_batsim(events: list[dict], rnow: float, sent: float,
                   write: Callable[[float], str] = repr) -> tuple[list[dict], float]:
    """A checked reply of an in-process scheduler to the message sent at ``sent``, its numbers
    as Batsim reads the text the scheduler would send (``jsonnum.as_read``; ``write``: the
    scheduler's number writer): a stamp such as ``982.0414259999999`` is read ``982.041426``,
    one ulp on, and the request-reply actor sleeps until then. An echo of ``sent`` (six
    decimals, below 1e9: at most 15 digits, which rapidjson reads exactly) is taken as it is,
    and so is an EXECUTE_JOB's data of a job id and an alloc; events are copied only where a
    number changes."""
    echo = sent if -1e9 < sent < 1e9 else None
    out = events
    for i, ev in enumerate(events):
        ts, data = ev["timestamp"], ev["data"]
        read_ts = ts if ts == echo or type(ts) is not float else as_read(ts, write)
        read_data = (data if ev["type"] == "EXECUTE_JOB" and len(data) == 2
                     else numbers_read(data, write))
        if read_ts is not ts or read_data is not data:
            if out is events:
                out = list(events)
            out[i] = {**ev, "timestamp": read_ts, "data": read_data}
    return out, rnow if rnow == echo else as_read(rnow, write)


def _job_of(data: Any) -> Any:
    """The job an event's data names, for an error message (None when it names none)."""
    return data.get("job_id") if isinstance(data, dict) else None


def check_query(data: Any) -> None:
    """A QUERY's data as Batsim's reader accepts it (``handle_query``, protocol.cpp 761-802):
    exactly ``{"requests": {...}}``, a non-empty object whose one known request,
    ``consumed_energy``, takes an empty object."""
    if not isinstance(data, dict) or set(data) != {"requests"}:
        raise ProtocolError("QUERY data must be exactly {\"requests\": {...}}", event="QUERY")
    requests = data["requests"]
    if not isinstance(requests, dict) or not requests:
        raise ProtocolError("QUERY 'requests' must be a non-empty object", event="QUERY")
    for key, value in requests.items():
        if key != "consumed_energy":
            raise ProtocolError(f"unknown QUERY request {key!r}", event="QUERY",
                                hint="Batsim 4.2.1 accepts consumed_energy only")
        if value != {}:
            raise ProtocolError("the consumed_energy request takes an empty object",
                                event="QUERY", field="consumed_energy")


class _ReplyActor:
    """Batsim's request-reply actor for one scheduler reply: hands its events to the server one
    at a time, then READY (at the reply's ``now`` when that is ahead). An object, not a closure
    that names itself: that made a garbage cycle per reply for the collector to find."""

    __slots__ = ("k", "master", "it", "reply_now")

    def __init__(self, kernel: Any, master: str, events: list[dict], reply_now: float):
        self.k, self.master, self.it, self.reply_now = kernel, master, iter(events), reply_now

    def next(self) -> None:
        k = self.k
        ev = next(self.it, None)
        if ev is None:
            if self.reply_now > k.now:
                k.at(self.reply_now, self.ready)
            else:
                k.put(self.master, "SCHED_READY", None)
            return
        ts = ev["timestamp"]
        if ts > k.now:
            k.at(ts, lambda: k.put(self.master, ev["type"], ev["data"], self.next))
        else:
            k.put(self.master, ev["type"], ev["data"], self.next)

    def ready(self) -> None:
        self.k.put(self.master, "SCHED_READY", None)


class Server:
    """The server of one run: its handlers (``handlers``, by message type), the scheduler
    calls, and the counters that tell when the simulation is over."""

    def __init__(self, kernel: Any, machines: Any, jobs: Any, executors: Any, recorder: Any,
                 workloads: list[Workload], scheduler: Any, *, dynamic_jobs: bool = False,
                 compute_sharing: bool = False, sched_cfg: str = "",
                 forward_profiles: bool = False, record_transcript: bool = False,
                 ack_dynamic_jobs: bool = False, storage_sharing: bool = True,
                 redis: dict | None = None):
        self.k = kernel
        self.machines = machines
        self.master = machines.master
        self.jobs = jobs                 # the Jobs table
        self.states = jobs.states        # its dict: job id -> Job, JobState, ENDED or REJECTED
        self.executors = executors
        self.out = recorder
        self.workloads = workloads
        self.scheduler = scheduler
        # a connection's replies are decoded from the scheduler's text as Batsim decodes them
        # (``connection.parse_reply``); an in-process scheduler's are read here, as if written
        # by its number writer (``number_text``: Python's ``repr`` unless it says otherwise)
        self._text_replies = bool(getattr(scheduler, "text_replies", False))
        self._number_text = getattr(scheduler, "number_text", repr)
        self.dynamic_jobs = dynamic_jobs
        self.ack_dynamic_jobs = ack_dynamic_jobs   # --acknowledge-dynamic-jobs
        self.compute_sharing = compute_sharing   # Batsim's --enable-compute-sharing
        self.storage_sharing = storage_sharing   # not --disable-storage-sharing
        self.sched_cfg = sched_cfg
        self.forward_profiles = forward_profiles
        #: Batsim's --redis-* values, only forwarded in SIMULATION_BEGINS' config
        self.redis = {"hostname": "127.0.0.1", "port": 6379, "prefix": "default", **(redis or {})}
        self.transcript: list[dict] | None = [] if record_transcript else None
        self._alloc_cache: dict[str, tuple] = {}   # alloc text -> ids, canonical text, ranges
        self._stamp_at: float | None = None   # the instant _stamp_value was rounded at
        self._stamp_value = 0.0
        # Batsim's handler_map: every message the server can receive, by type
        self.handlers: dict[str, Callable[[Any], None]] = {
            # from Batsim's own actors (ipp.hpp's IPMessageType)
            "SUBMITTER_HELLO": self._on_hello, "SUBMITTER_BYE": self._on_bye,
            "JOB_SUBMITTED": self._on_submitted, "JOB_COMPLETED": self._on_completed,
            "SCHED_READY": self._on_ready, "WAITING_DONE": self._on_requested_call,
            "KILLING_DONE": self._on_killing_done,
            # the scheduler's events, from its request-reply actor
            "EXECUTE_JOB": self._execute, "REJECT_JOB": self._reject,
            "CALL_ME_LATER": self._call_me_later, "KILL_JOB": self._kill_jobs,
            "NOTIFY": self._notify, "REGISTER_PROFILE": self._register_profile,
            "REGISTER_JOB": self._register_job, "SET_JOB_METADATA": self._set_job_metadata,
            "CHANGE_JOB_STATE": self._ignored, "SET_RESOURCE_STATE": self._no_energy,
            "QUERY": self._no_energy_query, "ANSWER": self._ignored, "TO_JOB_MSG": self._ignored,
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
        self._kill_requested: set[str] = set()   # KILL_JOB asked once (later ones are skipped)
        self._unsent: list[str] = []   # jobs ended or rejected since the last message was sent
        self.sched_time = 0.0
        self.nb_messages = 0

    # -- the loop --------------------------------------------------------------------------
    def begin(self) -> None:
        """The simulation starts: the submitters (created before the server's first
        request-reply actor: their SUBMITTER_HELLO messages reach the mailbox first), then
        SIMULATION_BEGINS to the scheduler."""
        for w in self.workloads:
            self._submitter(w).start()
        self._append("SIMULATION_BEGINS", self._simulation_begins())
        self._send_to_scheduler()

    def _submitter(self, workload: Workload) -> StaticSubmitter:
        return StaticSubmitter(self.k, self.master, workload)

    def receive(self, mtype: str, payload: Any) -> None:
        """One turn of ``server_process``'s loop: the message is handled, then the scheduler
        is called if it is ready, the mailbox holds nothing else (messages posted in this
        sub-round are not there yet) and there is something to say."""
        self.handlers[mtype](payload)
        if self.sched_ready and self.buffer and not self.finished and self.k.mailbox_empty():
            self._send_to_scheduler()

    def stalled(self) -> None:
        """No action is left to end, yet the simulation is not over: Batsim would wait
        forever here."""
        waiting = [j for j, s in self.states.items()
                   if type(s) is JobState and s.state == SUBMITTED]
        detail = f"{len(waiting)} submitted job(s) never executed nor rejected"
        if waiting:
            detail += f" (first: {waiting[0]})"
        if self.dynamic_jobs and not self.registration_finished:
            detail += "; dynamic registration never finished (send NOTIFY registration_finished)"
        raise SimulationError(f"the simulation cannot progress: {detail}", event="SIMULATION_ENDS",
                              hint="Batsim would wait forever here")

    def _append(self, etype: str, data: dict) -> None:
        self.buffer.append({"timestamp": self._stamp(), "type": etype, "data": data})

    def _stamp(self) -> float:
        """The clock as Batsim's JSON writer prints it (6 decimals), rounded once an instant
        (several messages a job carry it)."""
        now = self.k.now
        if now != self._stamp_at:
            self._stamp_at = now
            self._stamp_value = round(now, 6)
        return self._stamp_value

    def _send_to_scheduler(self) -> None:
        # Batsim writes its JSON doubles with 6 decimals: schedulers only ever see rounded times
        msg = {"now": self._stamp(), "events": self.buffer}
        self.buffer = []
        if self._unsent:
            self._unsent.clear()
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
        sent = msg["now"]
        events, reply_now = check_reply(reply, sent)
        if not self._text_replies and (events or reply_now != sent):
            events, reply_now = read_as_batsim(events, reply_now, sent, self._number_text)
        if ends:
            self.finished = True
            self.k.stop()
            return
        self.k.spawn(self._start_reqrep, events, reply_now)

    def _start_reqrep(self, events: list[dict], reply_now: float) -> None:
        if not events and reply_now <= self.k.now:   # the common empty reply: READY at once
            self.k.put(self.master, "SCHED_READY", None)
            return
        _ReplyActor(self.k, self.master, events, reply_now).next()

    # -- messages from Batsim's actors -------------------------------------------------------
    def _on_submitted(self, batch: list) -> None:
        fwd = self.forward_profiles
        stamp = self._stamp()
        jobs = self.states
        for job in batch:
            js = jobs[job.id]
            if type(js) is JobState:   # given metadata before its submission
                js.state = SUBMITTED
            else:
                jobs[job.id] = JobState(job, SUBMITTED)
            self.nb_submitted += 1
            data = {"job_id": job.id, "job": job.json}
            if fwd:
                data["profile"] = forwarded(self.jobs.profiles_of(job)[job.profile])
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
        """``server_on_killing_done`` (``src/server.cpp`` 616-670): each job this killer killed
        is reported completed (in the order asked), then JOB_KILLED names every job of the kill
        with the progress of those that were running."""
        ids, progress = payload
        jobs = self.states
        for jid in ids:
            js = jobs[jid]
            if type(js) is JobState and js.final_state == "COMPLETED_KILLED":
                self._on_completed(js)
        self._append("JOB_KILLED", {"job_ids": list(ids), "job_progress": progress})
        self.nb_killers -= 1

    def _is_finished(self) -> bool:
        return (self.submitters_done == len(self.workloads) and self.nb_running == 0
                and self.nb_completed == self.nb_submitted and self.nb_waiters == 0
                and self.nb_killers == 0 and self.registration_finished and not self.end_sent)

    def _record(self, js: JobState) -> None:
        j = js.job
        if j.dynamic:
            self.jobs.release_profile(j)
        finish, runtime = js.finish, None
        if finish == js.start and js.final_state != "REJECTED":
            # Batsim: "computed in null time. Putting epsilon instead."
            runtime = ZERO_RUNTIME
            finish = js.start + runtime
        ran = js.final_state != "REJECTED"
        # (positional: local_id, workload, profile, submission_time, res, walltime, final_state,
        # starting_time, finish_time, alloc, metadata, runtime)
        self.out.add(JobRecord(j.local_id, j.workload, j.profile, j.subtime, j.res, j.walltime,
                               js.final_state, js.start if ran else None,
                               finish if ran else None, js.alloc_text, js.metadata, runtime))
        # written: the job's state is dropped (late events about it only need to know it ended)
        self.states[j.id] = REJECTED if js.final_state == "REJECTED" else ENDED
        self._unsent.append(j.id)   # Batsim forgets it once the next message is sent

    # -- the scheduler's events ------------------------------------------------------------
    def _reject(self, data: dict) -> None:
        js = self.jobs.get(data.get("job_id"), "REJECT_JOB")
        if js.state != SUBMITTED or js.final_state:
            raise SimulationError(f"cannot reject a job that is {state_text(js)}",
                                  event="REJECT_JOB", job=data["job_id"])
        js.state = DONE
        js.final_state = "REJECTED"
        js.return_code = 0
        self.nb_completed += 1
        self._record(js)

    def _call_me_later(self, data: dict) -> None:
        now = self.k.now
        when = float(data["timestamp"])
        if not when > now:
            raise SimulationError(f"You asked to be awaken in the past! (you ask: {when!r}, "
                                  f"it is: {now!r})", event="CALL_ME_LATER",
                                  field="timestamp")
        # Batsim's waiter sleeps ``when - now``, but never less than 1e-5 s (shorter sleeps
        # "do not affect" SimGrid, found by trial and error there): an earlier target is late
        wait = when - now
        self.nb_waiters += 1
        k, master = self.k, self.master
        k.sleep(wait if wait >= WAITER_MIN_SLEEP else WAITER_MIN_SLEEP,
                lambda: k.put(master, "WAITING_DONE", None))

    def _kill_jobs(self, data: dict) -> None:
        """``server_on_kill_jobs`` (``src/server.cpp`` 877-915): a job whose kill was already
        asked is skipped; the others must be running or complete (a job is forgotten once the
        message reporting its end was sent: Batsim then aborts, ``Jobs::operator[]``); if any
        remain, a killer actor is created, which runs once this step's actors ran."""
        to_kill = []
        for jid in data["job_ids"]:
            js = self.jobs.get(jid, "KILL_JOB")
            if jid in self._kill_requested:
                continue
            if js.state != RUNNING and not js.final_state:
                raise SimulationError("cannot kill a job that is not running nor complete "
                                      f"(it is {state_text(js)})", event="KILL_JOB", job=jid)
            if js.job is None and jid not in self._unsent:
                raise SimulationError("cannot kill a job whose end was already reported: Batsim "
                                      "4.2.1 forgets it then and aborts (\"Cannot get job\")",
                                      event="KILL_JOB", job=jid)
            self._kill_requested.add(jid)
            to_kill.append(jid)
        if to_kill:
            self.nb_killers += 1
            self.k.spawn(self._killer, to_kill)

    def _killer(self, ids: list[str]) -> None:
        """``killer_process`` (``src/jobs_execution.cpp`` 640-722): the running jobs of ``ids``
        are stopped, then KILLING_DONE goes to the server."""
        progress: dict[str, Any] = {}
        jobs = self.states
        for jid in ids:
            js = jobs[jid]
            if type(js) is JobState and js.state == RUNNING and js.executor is not None:
                progress[jid] = js.executor.kill()
        self.k.put(self.master, "KILLING_DONE", (ids, progress))

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
        js = self.jobs.get(data.get("job_id"), "SET_JOB_METADATA")
        meta = data.get("metadata", "")
        if not isinstance(meta, str) or '"' in meta:
            raise SimulationError("metadata must be a string without '\"'",
                                  event="SET_JOB_METADATA", job=data["job_id"], field="metadata")
        if js.job is not None:   # an ended job's row is written: no effect, as before
            js.metadata = meta

    def _ignored(self, data: dict) -> None:
        """CHANGE_JOB_STATE, ANSWER and TO_JOB_MSG: accepted, no effect here."""

    def _no_energy(self, data: dict) -> None:
        """SET_RESOURCE_STATE without ``-E``: Batsim aborts (``server_on_pstate_modification``,
        server.cpp 424)."""
        raise SimulationError("a pstate modification request needs the energy model (Batsim "
                              "aborts without it)", event="SET_RESOURCE_STATE",
                              hint="run the engine with -E/--energy")

    def _no_energy_query(self, data: dict) -> None:
        """QUERY without ``-E``: read as Batsim reads it, then refused as its server does
        (``server_on_sched_tell_me_energy``, server.cpp 562)."""
        check_query(data)
        raise SimulationError("a consumed_energy QUERY needs the energy model (Batsim aborts "
                              "without it)", event="QUERY", hint="run the engine with -E/--energy")

    def _execute(self, data: dict) -> None:
        etype = "EXECUTE_JOB"
        jid = data.get("job_id")
        js = self.jobs.get(jid, etype)
        if js.state != SUBMITTED or js.final_state:
            raise SimulationError(f"cannot execute a job that is {state_text(js)}",
                                  event=etype, job=jid)
        text = data["alloc"]
        cached = self._alloc_cache.get(text) if type(text) is str else None
        if cached is None:
            # (ids, canonical text, ranges); a canonical text gives no list of every id
            cached = read_alloc(text, job=jid)
            if len(self._alloc_cache) >= 4096:
                self._alloc_cache.clear()
            self._alloc_cache[text] = cached
        alloc, alloc_text, runs = cached     # shared: read-only from here on
        top = runs[-1][1]                    # alloc[-1], the largest id
        count = len(alloc)
        machines = self.machines
        nres = len(machines.resources)
        if top >= nres:
            raise SimulationError(f"alloc {data['alloc']!r} names resource {alloc[-1]}, the "
                                  f"platform has ids 0-{nres - 1}", event=etype, job=jid,
                                  field="alloc")
        profiles = self.jobs.profiles_of(js.job)
        prof = profiles[js.job.profile]
        plain = len(data) == 2   # job_id and alloc only (check_reply allows one more field)
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
            if count != js.job.res and prof["type"] != "parallel_homogeneous_total":
                raise SimulationError(f"alloc {data['alloc']!r} has {count} resources, the "
                                      f"job requests {js.job.res}", event=etype, job=jid,
                                      field="alloc")
        nc = machines.nb_compute
        # hot path: compute ids are below nc, and alloc is sorted
        storage = ()
        if top < nc:
            comp, comp_runs, ncomp = alloc, runs, count
        else:
            comp = [r for r in alloc if r < nc]
            comp_runs = [(lo, hi if hi < nc else nc - 1) for lo, hi in runs if lo < nc]
            ncomp = len(comp)
            storage = [r for lo, hi in runs if hi >= nc for r in range(max(lo, nc), hi + 1)]
        if not self.compute_sharing:
            busy = machines.busy
            for lo, hi in comp_runs:
                if busy >> lo & ((2 << (hi - lo)) - 1):
                    r = next(r for r in comp if busy >> r & 1)
                    holder = next((j for j, s in self.states.items() if type(s) is JobState
                                   and s.state == RUNNING and r in s.alloc), "?")
                    raise SimulationError(f"resource {r} ({machines.names[r]}) is busy with "
                                          f"job {holder} (no compute sharing)", event=etype,
                                          job=jid, field="alloc")
        if not self.storage_sharing and top >= nc:
            # --disable-storage-sharing (server_on_execute_job, src/server.cpp 956-977)
            users = machines.storage_users
            for r in alloc:
                if r >= nc and r in users:
                    raise SimulationError(f"storage resource {r} ({machines.names[r]}) is busy "
                                          f"with job {users[r]} (storage sharing disabled)",
                                          event=etype, job=jid, field="alloc")
            for r in alloc:
                if r >= nc:
                    users[r] = jid
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
            io_alloc = parse_ids(io["alloc"], job=jid, field="additional_io_job.alloc")
            io_prof = written(io["profile"], rapidjson_float)   # as REGISTER_PROFILE's
            check_profile(io.get("profile_name", "additional_io_job"), io_prof, profiles)
            if io_prof["type"] in ("delay", "composed"):
                raise SimulationError("additional_io_job must be a parallel profile",
                                      event=etype, job=jid, field="additional_io_job")
            extra = ptask_of(io_prof, [machines.names[i] for i in io_alloc],
                             storage_mapping=storage_mapping,
                             storage_names=machines.storage_names, job=jid)
        now = self.k.now
        js.state = RUNNING
        js.alloc = alloc
        js.alloc_text = alloc_text
        js.start = now
        self.nb_running += 1
        js.ncomp = ncomp
        js.comp_runs = comp_runs
        js.storage = storage
        machines.job_starts(now, comp, comp_runs, storage)
        steps = self.jobs.steps(js.job, profiles, prof)
        self.executors.launch(js, hosts_ids, steps, storage_mapping, extra)

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
        store = self.jobs.dyn_profiles.setdefault(wl, {})
        static = self.jobs.workloads.get(wl)
        if name in store or (static is not None and name in static.profiles):
            raise SimulationError(f"profile '{wl}!{name}' already exists", event=etype)
        prof = written(prof, rapidjson_float)   # loaded from Batsim's own writing of it
        known = dict(static.profiles) if static is not None else {}
        known.update(store)
        known[name] = prof
        check_profile(name, prof, known)
        store[name] = prof

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
        if jid in self.states:
            raise SimulationError("job id already exists", event=etype, job=jid)
        obj = written(obj, rapidjson_float)   # Batsim loads the job from its own writing of it
        wl = jid.partition("!")[0]
        workloads = self.jobs.workloads
        if wl not in workloads and wl not in self.jobs.dyn_profiles:
            # handle_register_job (src/protocol.cpp 1427-1429): "Workload should exist"
            raise SimulationError(f"workload '{wl}' does not exist: register a profile in it "
                                  "first (Batsim 4.2.1 aborts)", event=etype, job=jid)
        # Job::from_json (src/jobs.cpp 382-425): the job object names itself and gives its
        # submission time, which Batsim keeps (out_jobs.csv, waiting times) whatever the clock
        for key in ("id", "subtime"):
            if key not in obj:
                raise SimulationError(f"the registered job has no '{key}' field (Batsim 4.2.1 "
                                      "requires it)", event=etype, job=jid, field=key)
        own = obj["id"]
        if isinstance(own, bool) or not isinstance(own, (str, int)) or (
                str(own) if "!" in str(own) else f"{wl}!{own}") != jid:
            raise SimulationError(f"the registered job's 'id' ({own!r}) is not its job_id",
                                  event=etype, job=jid, field="id")
        profiles = dict(workloads[wl].profiles) if wl in workloads else {}
        profiles.update(self.jobs.dyn_profiles.get(wl, {}))
        try:
            job = parse_job(obj, wl, profiles, file=None, dynamic=True, full_id=jid)
        except MrschedError as exc:
            hint = exc.hint
            if exc.field == "profile" and not self.jobs.profile_reuse:
                hint = ("profiles of finished dynamic jobs are dropped unless "
                        "--enable-profile-reuse")
            raise SimulationError(exc.message, event=etype, job=jid, field=exc.field,
                                  hint=hint) from None
        self.jobs.use_profile(job)
        if wl not in workloads:
            workloads[wl] = Workload(name=wl, path="")
        if not self.jobs.fits(job, self.machines.nb_compute):
            logger.warning("registered job %s requests %d resources, the platform has %d compute "
                           "resources: the scheduler must reject it", jid, job.res,
                           self.machines.nb_compute)
        js = JobState(job, state=SUBMITTED)
        self.states[jid] = js
        self.nb_submitted += 1
        if self.ack_dynamic_jobs:
            # server_on_register_job (src/server.cpp 687-716): JOB_SUBMITTED as for a static job
            data = {"job_id": jid, "job": job.json}
            if self.forward_profiles:
                data["profile"] = forwarded(self.jobs.profiles_of(job)[job.profile])
            self._append("JOB_SUBMITTED", data)

    # -- SIMULATION_BEGINS -----------------------------------------------------------------
    def _simulation_begins(self) -> dict:
        def res_obj(r) -> dict:
            role = r.properties.get("role", "") if r.role in ("", "compute") else r.role
            props = {"role": role}
            for k, v in r.properties.items():
                if k != "role":
                    props[k] = v
            return {"id": r.id, "name": r.name, "state": "idle", "properties": props,
                    "zone_properties": dict(r.zone_properties)}

        m = self.machines
        return {
            "nb_resources": len(m.resources),
            "nb_compute_resources": len(m.compute),
            "nb_storage_resources": len(m.storage),
            "allow_compute_sharing": self.compute_sharing,
            "allow_storage_sharing": self.storage_sharing,
            "config": {
                "redis-enabled": False, "redis-hostname": self.redis["hostname"],
                "redis-port": self.redis["port"], "redis-prefix": self.redis["prefix"],
                "profiles-forwarded-on-submission": self.forward_profiles,
                "dynamic-jobs-enabled": self.dynamic_jobs,
                "dynamic-jobs-acknowledged": self.ack_dynamic_jobs,
                "profile-reuse-enabled": self.jobs.profile_reuse,
                "sched-config": self.sched_cfg,
                "forward-unknown-events": False,
            },
            "compute_resources": [res_obj(r) for r in m.compute],
            "storage_resources": [res_obj(r) for r in m.storage],
            "workloads": {w.name: os.path.abspath(w.path) for w in self.workloads},
            "profiles": {w.name: forwarded(_referenced_profiles(w)) for w in self.workloads},
        }


def _referenced_profiles(w: Workload) -> dict[str, dict]:
    """The profiles Batsim keeps after loading a workload (``unordered.kept_profiles``: those a
    job or a kept composed profile names; the others are dropped from memory and from
    SIMULATION_BEGINS), in the file's order."""
    kept = kept_profiles(w.profiles, [j.profile for j in w.jobs])
    return {name: prof for name, prof in w.profiles.items() if name in kept}
