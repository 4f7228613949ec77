"""Typed Batsim v4 messages: one frozen dataclass per event type, in both directions.

``parse_message(dict) -> Message`` turns the JSON object on the wire into dataclasses;
``serialize_message(Message) -> dict`` gives back the wire object. Round trips are lossless:
numbers keep their JSON type (int stays int), dicts are kept as received (never deep-copied —
neither side mutates a message after handing it over), unknown data keys of a known event are
kept in ``extra``, and unknown event types become ``UnknownEvent``. Interval-set strings
(``alloc``, ``resources``) become ``procset.ProcSet``.

This module and ``intervals.py`` are the only places that know the wire format. Parsing sits
on the embedded engine's hot path, so each event type has a small
explicit parser dispatched through ``PARSERS`` and diagnostics are built only on failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from procset import ProcSet

from mrsched.errors import ProtocolError

from .intervals import format_intervals, parse_intervals

__all__ = [
    "Event", "Message", "Resource", "AdditionalIoJob",
    # Batsim -> scheduler
    "SimulationBegins", "JobSubmitted", "JobCompleted", "JobKilled", "RequestedCall",
    "Notify", "ResourceStateChanged", "Answer", "Query", "SimulationEnds",
    # scheduler -> Batsim
    "ExecuteJob", "RejectJob", "KillJob", "CallMeLater", "RegisterJob", "RegisterProfile",
    "SetResourceState", "SetJobMetadata", "ChangeJobState",
    "UnknownEvent", "PARSERS", "parse_message", "serialize_message", "parse_event",
    "serialize_event",
    "JOB_STATES", "NOTIFY_TYPES",
]

#: ``job_state`` values of ``JOB_COMPLETED`` (return codes 0, >0, -1, -2).
JOB_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED",
              "COMPLETED_KILLED")
#: ``NOTIFY`` types known to Batsim 4 (both directions); others are kept, not refused.
NOTIFY_TYPES = ("no_more_static_job_to_submit", "no_more_external_event_to_occur",
                "event_machine_unavailable", "event_machine_available",
                "registration_finished", "continue_registration")


#: Smallest delay (s) between Batsim's clock and a wake-up moved forward by ``call_me_later``.
#: Batsim aborts on a CALL_ME_LATER at or before its clock. 1 ms is 100x SimGrid's default
#: time precision (``surf/precision`` = 1e-5 s), so the wake-up is never rounded back onto
#: ``now``; it stays visible in Batsim's 6-decimal CSVs; and it is negligible against job
#: durations (seconds to days). The time the wake-up's message takes to reach Batsim's server
#: comes on top (``space_wakeups``).
MIN_WAKEUP_DELAY = 1e-3

def _extra(data: dict, known: int, names: tuple[str, ...]) -> dict | None:
    """Data keys this parser does not model, kept for a lossless round trip (rare path)."""
    if len(data) <= known:
        return None
    return {k: v for k, v in data.items() if k not in names} or None


def _with_extra(out: dict, extra: dict | None) -> dict:
    if extra:
        out.update(extra)
    return out


def _str(value: Any, name: str) -> str:
    if type(value) is not str:
        raise ProtocolError(f"must be a string, got {type(value).__name__} {value!r}",
                            field=name)
    return value


def _dict(value: Any, name: str) -> dict:
    if type(value) is not dict:
        raise ProtocolError(f"must be a JSON object, got {type(value).__name__}", field=name)
    return value


class Event:
    """Base of every event; subclasses are frozen slots dataclasses with a ``TYPE``."""

    __slots__ = ()
    TYPE: ClassVar[str] = ""

    def to_data(self) -> dict:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    @property
    def type(self) -> str:
        return self.TYPE


# --------------------------------------------------------------------------- shared pieces

@dataclass(frozen=True, slots=True)
class Resource:
    """A compute or storage resource of ``SIMULATION_BEGINS`` (id order = SimGrid's)."""

    id: int
    name: str
    state: str | None = None
    properties: dict = field(default_factory=dict)
    zone_properties: dict | None = None
    extra: dict | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("id", "name", "state", "properties", "zone_properties")

    @classmethod
    def from_data(cls, d: dict) -> Resource:
        _dict(d, "compute_resources[]")
        rid = d["id"]
        if type(rid) is not int:
            raise ProtocolError(f"resource id must be an int, got {rid!r}", field="id")
        props = d.get("properties")
        return cls(rid, _str(d["name"], "name"), d.get("state"),
                   {} if props is None else _dict(props, "properties"),
                   d.get("zone_properties"), _extra(d, 2, cls._KEYS))

    def to_data(self) -> dict:
        out = {"id": self.id, "name": self.name}
        if self.state is not None:
            out["state"] = self.state
        out["properties"] = self.properties
        if self.zone_properties is not None:
            out["zone_properties"] = self.zone_properties
        return _with_extra(out, self.extra)


@dataclass(frozen=True, slots=True)
class AdditionalIoJob:
    """``EXECUTE_JOB.additional_io_job``: an I/O ptask merged into the job's own."""

    alloc: ProcSet
    profile_name: str
    profile: dict

    @classmethod
    def from_data(cls, d: dict) -> AdditionalIoJob:
        _dict(d, "additional_io_job")
        return cls(parse_intervals(d["alloc"], field="additional_io_job.alloc"),
                   _str(d["profile_name"], "additional_io_job.profile_name"),
                   _dict(d["profile"], "additional_io_job.profile"))

    def to_data(self) -> dict:
        return {"alloc": format_intervals(self.alloc), "profile_name": self.profile_name,
                "profile": self.profile}


# --------------------------------------------------------------------------- Batsim -> scheduler

@dataclass(frozen=True, slots=True)
class SimulationBegins(Event):
    TYPE: ClassVar[str] = "SIMULATION_BEGINS"
    timestamp: float
    nb_resources: int
    nb_compute_resources: int | None = None
    nb_storage_resources: int | None = None
    allow_compute_sharing: bool | None = None
    allow_storage_sharing: bool | None = None
    config: dict = field(default_factory=dict)
    compute_resources: tuple[Resource, ...] = ()
    storage_resources: tuple[Resource, ...] = ()
    workloads: dict | None = None
    profiles: dict | None = None
    extra: dict | None = None

    _OPTIONAL: ClassVar[tuple[str, ...]] = (
        "nb_compute_resources", "nb_storage_resources", "allow_compute_sharing",
        "allow_storage_sharing", "workloads", "profiles")
    _KEYS: ClassVar[tuple[str, ...]] = ("nb_resources", "config", "compute_resources",
                                        "storage_resources") + _OPTIONAL

    @classmethod
    def from_data(cls, ts, d: dict) -> SimulationBegins:
        compute = tuple(Resource.from_data(r) for r in d["compute_resources"])
        storage = tuple(Resource.from_data(r) for r in d.get("storage_resources", ()))
        config = d.get("config")
        return cls(ts, d["nb_resources"], *(d.get(k) for k in cls._OPTIONAL[:4]),
                   {} if config is None else _dict(config, "config"), compute, storage,
                   d.get("workloads"), d.get("profiles"),
                   {k: v for k, v in d.items() if k not in cls._KEYS} or None)

    def to_data(self) -> dict:
        out: dict = {"nb_resources": self.nb_resources}
        for k in self._OPTIONAL[:4]:
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        out["config"] = self.config
        out["compute_resources"] = [r.to_data() for r in self.compute_resources]
        out["storage_resources"] = [r.to_data() for r in self.storage_resources]
        if self.workloads is not None:
            out["workloads"] = self.workloads
        if self.profiles is not None:
            out["profiles"] = self.profiles
        return _with_extra(out, self.extra)

    @property
    def resources(self) -> tuple[Resource, ...]:
        """Compute then storage resources, in id order."""
        return self.compute_resources + self.storage_resources


@dataclass(frozen=True, slots=True)
class JobSubmitted(Event):
    """``job`` is the workload's job dict as forwarded, every extra user field included."""

    TYPE: ClassVar[str] = "JOB_SUBMITTED"
    timestamp: float
    job_id: str
    job: dict
    profile: dict | None = None  # with --forward-profiles-on-submission
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> JobSubmitted:
        job_id = d["job_id"]
        job = d["job"]
        if type(job_id) is not str:
            _str(job_id, "job_id")
        if type(job) is not dict:
            _dict(job, "job")
        n = len(d)
        if n == 2:  # hot path
            return cls(ts, job_id, job)
        return cls(ts, job_id, job, d.get("profile"),
                   _extra(d, 3 if "profile" in d else 2, ("job_id", "job", "profile")))

    def to_data(self) -> dict:
        out = {"job_id": self.job_id, "job": self.job}
        if self.profile is not None:
            out["profile"] = self.profile
        return _with_extra(out, self.extra)


@dataclass(frozen=True, slots=True)
class JobCompleted(Event):
    TYPE: ClassVar[str] = "JOB_COMPLETED"
    timestamp: float
    job_id: str
    job_state: str
    return_code: int
    alloc: ProcSet
    extra: dict | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("job_id", "job_state", "return_code", "alloc")

    @classmethod
    def from_data(cls, ts, d: dict) -> JobCompleted:
        job_id = d["job_id"]
        if type(job_id) is not str:
            _str(job_id, "job_id")
        return cls(ts, job_id, d["job_state"], d["return_code"],
                   parse_intervals(d["alloc"], field="alloc"),
                   _extra(d, 4, cls._KEYS) if len(d) > 4 else None)

    def to_data(self) -> dict:
        return _with_extra({"job_id": self.job_id, "job_state": self.job_state,
                            "return_code": self.return_code,
                            "alloc": format_intervals(self.alloc)}, self.extra)


@dataclass(frozen=True, slots=True)
class JobKilled(Event):
    """Answer to ``KILL_JOB``; the killed jobs also get ``JOB_COMPLETED``."""

    TYPE: ClassVar[str] = "JOB_KILLED"
    timestamp: float
    job_ids: tuple[str, ...]
    job_progress: dict | None = None
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> JobKilled:
        ids = d["job_ids"]
        if type(ids) is not list:
            raise ProtocolError("must be a list of job ids", field="job_ids")
        return cls(ts, tuple(_str(j, "job_ids") for j in ids), d.get("job_progress"),
                   _extra(d, 1 + ("job_progress" in d), ("job_ids", "job_progress")))

    def to_data(self) -> dict:
        out: dict = {"job_ids": list(self.job_ids)}
        if self.job_progress is not None:
            out["job_progress"] = self.job_progress
        return _with_extra(out, self.extra)


@dataclass(frozen=True, slots=True)
class RequestedCall(Event):
    """Batsim's answer to ``CALL_ME_LATER``."""

    TYPE: ClassVar[str] = "REQUESTED_CALL"
    timestamp: float
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> RequestedCall:
        return cls(ts, dict(d) if d else None)

    def to_data(self) -> dict:
        return dict(self.extra) if self.extra else {}


@dataclass(frozen=True, slots=True)
class Notify(Event):
    """``NOTIFY`` in either direction (``type`` in ``NOTIFY_TYPES``; machine events carry
    ``resources``)."""

    TYPE: ClassVar[str] = "NOTIFY"
    timestamp: float
    notify_type: str
    resources: ProcSet | None = None
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> Notify:
        res = d.get("resources")
        return cls(ts, _str(d["type"], "type"),
                   None if res is None else parse_intervals(res, field="resources"),
                   _extra(d, 1 + ("resources" in d), ("type", "resources")))

    def to_data(self) -> dict:
        out: dict = {"type": self.notify_type}
        if self.resources is not None:
            out["resources"] = format_intervals(self.resources)
        return _with_extra(out, self.extra)


@dataclass(frozen=True, slots=True)
class ResourceStateChanged(Event):
    TYPE: ClassVar[str] = "RESOURCE_STATE_CHANGED"
    timestamp: float
    resources: ProcSet
    state: str
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> ResourceStateChanged:
        return cls(ts, parse_intervals(d["resources"], field="resources"), d["state"],
                   _extra(d, 2, ("resources", "state")))

    def to_data(self) -> dict:
        return _with_extra({"resources": format_intervals(self.resources), "state": self.state},
                           self.extra)


@dataclass(frozen=True, slots=True)
class Answer(Event):
    """``ANSWER`` in either direction; ``answers`` is the whole data object
    (e.g. ``{"consumed_energy": 12.5}``)."""

    TYPE: ClassVar[str] = "ANSWER"
    timestamp: float
    answers: dict

    @classmethod
    def from_data(cls, ts, d: dict) -> Answer:
        return cls(ts, d)

    def to_data(self) -> dict:
        return self.answers


@dataclass(frozen=True, slots=True)
class Query(Event):
    """``QUERY`` in either direction: ``{"requests": {name: {...}}}``."""

    TYPE: ClassVar[str] = "QUERY"
    timestamp: float
    requests: dict
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> Query:
        return cls(ts, _dict(d["requests"], "requests"), _extra(d, 1, ("requests",)))

    def to_data(self) -> dict:
        return _with_extra({"requests": self.requests}, self.extra)


@dataclass(frozen=True, slots=True)
class SimulationEnds(Event):
    TYPE: ClassVar[str] = "SIMULATION_ENDS"
    timestamp: float
    extra: dict | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> SimulationEnds:
        return cls(ts, dict(d) if d else None)

    def to_data(self) -> dict:
        return dict(self.extra) if self.extra else {}


# --------------------------------------------------------------------------- scheduler -> Batsim

@dataclass(frozen=True, slots=True)
class ExecuteJob(Event):
    """Start a job on ``alloc``; at most one of ``mapping`` / ``storage_mapping`` /
    ``additional_io_job`` (Batsim 4.2.1 asserts the data has 2 or 3 members)."""

    TYPE: ClassVar[str] = "EXECUTE_JOB"
    timestamp: float
    job_id: str
    alloc: ProcSet
    mapping: dict | None = None
    storage_mapping: dict | None = None
    additional_io_job: AdditionalIoJob | None = None

    def __post_init__(self):
        if self.mapping is None and self.storage_mapping is None:
            return  # hot path: at most additional_io_job given
        given = [n for n in ("mapping", "storage_mapping", "additional_io_job")
                 if getattr(self, n) is not None]
        if len(given) > 1:
            raise ProtocolError(f"EXECUTE_JOB takes at most one of mapping, storage_mapping "
                                f"and additional_io_job; got {' and '.join(given)}",
                                event="EXECUTE_JOB", job=self.job_id, field=given[1],
                                hint="Batsim 4.2.1 aborts on such a message")

    @classmethod
    def from_data(cls, ts, d: dict) -> ExecuteJob:
        job_id = d["job_id"]
        if type(job_id) is not str:
            _str(job_id, "job_id")
        alloc = parse_intervals(d["alloc"], field="alloc")
        if len(d) == 2:  # hot path
            return cls(ts, job_id, alloc)
        unknown = [k for k in d if k not in ("job_id", "alloc", "mapping", "storage_mapping",
                                             "additional_io_job")]
        if unknown:
            raise ProtocolError(f"unknown EXECUTE_JOB field(s) {', '.join(unknown)}",
                                field=unknown[0])
        io = d.get("additional_io_job")
        mapping = d.get("mapping")
        smap = d.get("storage_mapping")
        return cls(ts, job_id, alloc, None if mapping is None else _dict(mapping, "mapping"),
                   None if smap is None else _dict(smap, "storage_mapping"),
                   None if io is None else AdditionalIoJob.from_data(io))

    def to_data(self) -> dict:
        out: dict = {"job_id": self.job_id, "alloc": format_intervals(self.alloc)}
        if self.mapping is not None:
            out["mapping"] = self.mapping
        elif self.storage_mapping is not None:
            out["storage_mapping"] = self.storage_mapping
        elif self.additional_io_job is not None:
            out["additional_io_job"] = self.additional_io_job.to_data()
        return out


@dataclass(frozen=True, slots=True)
class RejectJob(Event):
    TYPE: ClassVar[str] = "REJECT_JOB"
    timestamp: float
    job_id: str

    @classmethod
    def from_data(cls, ts, d: dict) -> RejectJob:
        return cls(ts, _str(d["job_id"], "job_id"))

    def to_data(self) -> dict:
        return {"job_id": self.job_id}


@dataclass(frozen=True, slots=True)
class KillJob(Event):
    TYPE: ClassVar[str] = "KILL_JOB"
    timestamp: float
    job_ids: tuple[str, ...]

    def __post_init__(self):
        if not self.job_ids:
            raise ProtocolError("KILL_JOB needs at least one job id", event="KILL_JOB",
                                field="job_ids")

    @classmethod
    def from_data(cls, ts, d: dict) -> KillJob:
        ids = d["job_ids"]
        if type(ids) is not list:
            raise ProtocolError("must be a list of job ids", field="job_ids")
        return cls(ts, tuple(_str(j, "job_ids") for j in ids))

    def to_data(self) -> dict:
        return {"job_ids": list(self.job_ids)}


@dataclass(frozen=True, slots=True)
class CallMeLater(Event):
    """Ask for a ``REQUESTED_CALL`` at ``when`` (the data's ``timestamp``), strictly after
    Batsim's clock."""

    TYPE: ClassVar[str] = "CALL_ME_LATER"
    timestamp: float
    when: float

    @classmethod
    def from_data(cls, ts, d: dict) -> CallMeLater:
        when = d["timestamp"]
        if type(when) not in (int, float):
            raise ProtocolError(f"must be a number, got {when!r}", field="timestamp")
        return cls(ts, when)

    def to_data(self) -> dict:
        return {"timestamp": self.when}


@dataclass(frozen=True, slots=True)
class RegisterJob(Event):
    """Dynamic job: ``job_id`` is ``"workload!name"``; ``job`` has id, subtime, res,
    walltime, profile."""

    TYPE: ClassVar[str] = "REGISTER_JOB"
    timestamp: float
    job_id: str
    job: dict

    def __post_init__(self):
        if "!" not in self.job_id:
            raise ProtocolError(f"dynamic job id {self.job_id!r} must be 'workload!name'",
                                event="REGISTER_JOB", job=self.job_id, field="job_id")

    @classmethod
    def from_data(cls, ts, d: dict) -> RegisterJob:
        return cls(ts, _str(d["job_id"], "job_id"), _dict(d["job"], "job"))

    def to_data(self) -> dict:
        return {"job_id": self.job_id, "job": self.job}


@dataclass(frozen=True, slots=True)
class RegisterProfile(Event):
    TYPE: ClassVar[str] = "REGISTER_PROFILE"
    timestamp: float
    workload_name: str
    profile_name: str
    profile: dict

    @classmethod
    def from_data(cls, ts, d: dict) -> RegisterProfile:
        return cls(ts, _str(d["workload_name"], "workload_name"),
                   _str(d["profile_name"], "profile_name"), _dict(d["profile"], "profile"))

    def to_data(self) -> dict:
        return {"workload_name": self.workload_name, "profile_name": self.profile_name,
                "profile": self.profile}


@dataclass(frozen=True, slots=True)
class SetResourceState(Event):
    TYPE: ClassVar[str] = "SET_RESOURCE_STATE"
    timestamp: float
    resources: ProcSet
    state: str

    @classmethod
    def from_data(cls, ts, d: dict) -> SetResourceState:
        return cls(ts, parse_intervals(d["resources"], field="resources"), d["state"])

    def to_data(self) -> dict:
        return {"resources": format_intervals(self.resources), "state": self.state}


@dataclass(frozen=True, slots=True)
class SetJobMetadata(Event):
    """Free text written to ``_jobs.csv``; Batsim quotes it, so ``"`` is refused."""

    TYPE: ClassVar[str] = "SET_JOB_METADATA"
    timestamp: float
    job_id: str
    metadata: str

    def __post_init__(self):
        if type(self.metadata) is not str or '"' in self.metadata:
            raise ProtocolError(f"job metadata must be a string without '\"', got "
                                f"{self.metadata!r}", event="SET_JOB_METADATA",
                                job=self.job_id, field="metadata")

    @classmethod
    def from_data(cls, ts, d: dict) -> SetJobMetadata:
        return cls(ts, _str(d["job_id"], "job_id"), d["metadata"])

    def to_data(self) -> dict:
        return {"job_id": self.job_id, "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class ChangeJobState(Event):
    TYPE: ClassVar[str] = "CHANGE_JOB_STATE"
    timestamp: float
    job_id: str
    job_state: str
    kill_reason: str | None = None

    @classmethod
    def from_data(cls, ts, d: dict) -> ChangeJobState:
        return cls(ts, _str(d["job_id"], "job_id"), _str(d["job_state"], "job_state"),
                   d.get("kill_reason"))

    def to_data(self) -> dict:
        out = {"job_id": self.job_id, "job_state": self.job_state}
        if self.kill_reason is not None:
            out["kill_reason"] = self.kill_reason
        return out


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    """An event type this module does not know (e.g. one Batsim forwards with
    ``forward-unknown-events``); kept verbatim so it round-trips."""

    timestamp: float
    event_type: str
    data: Any

    @property
    def type(self) -> str:
        return self.event_type

    def to_data(self):
        return self.data


# --------------------------------------------------------------------------- envelope

@dataclass(frozen=True, slots=True)
class Message:
    """One protocol message: Batsim's clock ``now`` and its events in order."""

    now: float
    events: tuple[Event, ...] = ()


#: event type -> parser ``(timestamp, data) -> Event``: the dispatch table of ``parse_event``.
PARSERS: dict[str, Any] = {cls.TYPE: cls.from_data for cls in (
    SimulationBegins, JobSubmitted, JobCompleted, JobKilled, RequestedCall, Notify,
    ResourceStateChanged, Answer, Query, SimulationEnds, ExecuteJob, RejectJob, KillJob,
    CallMeLater, RegisterJob, RegisterProfile, SetResourceState, SetJobMetadata,
    ChangeJobState)}


_INF = float("inf")


def _is_number(x) -> bool:
    t = type(x)
    return t is float or t is int


def parse_event(ev: Any, index: int = 0) -> Event:
    """One wire event ``{"timestamp", "type", "data"}`` -> its dataclass."""
    try:
        etype = ev["type"]
        ts = ev["timestamp"]
        data = ev["data"]
    except (KeyError, TypeError):
        missing = ([k for k in ("timestamp", "type", "data") if k not in ev]
                   if isinstance(ev, dict) else None)
        etype = ev.get("type") if isinstance(ev, dict) and type(ev.get("type")) is str else None
        raise ProtocolError(
            f"events[{index}] is not an event object" if missing is None else
            f"events[{index}] lacks '{missing[0]}'", event=etype,
            field=None if not missing else missing[0],
            hint='an event is {"timestamp": float, "type": str, "data": {...}}') from None
    if not _is_number(ts):
        raise ProtocolError(f"events[{index}]: timestamp must be a number, got {ts!r}",
                            event=str(etype), field="timestamp")
    parser = PARSERS.get(etype)
    if parser is None:
        if type(etype) is not str:
            raise ProtocolError(f"events[{index}]: type must be a string, got {etype!r}",
                                field="type")
        return UnknownEvent(ts, etype, data)
    if type(data) is not dict:
        raise ProtocolError(f"events[{index}]: data must be a JSON object, got "
                            f"{type(data).__name__}", event=etype, field="data")
    try:
        return parser(ts, data)
    except KeyError as exc:
        raise ProtocolError(f"events[{index}] lacks data field '{exc.args[0]}'", event=etype,
                            field=str(exc.args[0]), job=_job_of(data)) from None
    except ProtocolError as exc:
        raise ProtocolError(f"events[{index}]: {exc.message}", event=etype,
                            field=exc.field, job=exc.job or _job_of(data),
                            hint=exc.hint) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"events[{index}] is malformed: {exc}", event=etype,
                            job=_job_of(data)) from None


def _job_of(data: dict) -> str | None:
    job = data.get("job_id")
    return job if isinstance(job, str) else None


def parse_message(msg: Any) -> Message:
    """Wire dict -> ``Message``; checks the envelope and the ordering rules (event timestamps
    non-decreasing and ``<= now``), raising ``ProtocolError`` naming the event and index."""
    try:
        now = msg["now"]
        events = msg["events"]
    except (KeyError, TypeError):
        if not isinstance(msg, dict):
            raise ProtocolError(f"a message must be a JSON object, got {type(msg).__name__}",
                                hint='{"now": float, "events": [...]}') from None
        key = "now" if "now" not in msg else "events"
        raise ProtocolError(f"message lacks '{key}'", field=key,
                            hint='{"now": float, "events": [...]}') from None
    if not _is_number(now):
        raise ProtocolError(f"'now' must be a number, got {now!r}", field="now")
    if not 0 <= now < _INF:  # NaN fails too
        raise ProtocolError(f"'now' must be a finite time >= 0, got {now!r}", field="now")
    if type(events) is not list:
        raise ProtocolError(f"'events' must be a list, got {type(events).__name__}",
                            field="events")
    parsed = []
    last = None
    parsers = PARSERS
    for i, ev in enumerate(events):
        # hot path (every event of every message): a well-formed known event is parsed here;
        # anything else goes through parse_event, which names what is wrong
        try:
            parser = parsers[ev["type"]]
            ts = ev["timestamp"]
            data = ev["data"]
            if (type(ts) is not float and type(ts) is not int) or type(data) is not dict:
                raise TypeError
            e = parser(ts, data)
        except Exception:
            e = parse_event(ev, i)
        ts = e.timestamp
        if ts > now:
            raise ProtocolError(f"events[{i}] is stamped {ts!r}, after the message's now "
                                f"{now!r}", event=e.type, field="timestamp",
                                hint="event timestamps must be <= now")
        if last is not None and ts < last:
            raise ProtocolError(f"events[{i}] is stamped {ts!r}, before the previous event "
                                f"({last!r})", event=e.type, field="timestamp",
                                hint="event timestamps must be non-decreasing")
        last = ts
        parsed.append(e)
    return Message(now, tuple(parsed))


def serialize_event(e: Event) -> dict:
    """Event dataclass -> wire event dict."""
    return {"timestamp": e.timestamp, "type": e.type, "data": e.to_data()}


def execute_job_data(timestamp: float, job_id: str, alloc: str, storage_mapping: dict | None = None) -> dict:
    """An EXECUTE_JOB event as its wire dict, from an alloc already written as an interval
    set (the policy runtime's hot path: no ProcSet, no dataclass)."""
    data = {"job_id": job_id, "alloc": alloc}
    if storage_mapping is not None:
        data["storage_mapping"] = storage_mapping
    return {"timestamp": timestamp, "type": "EXECUTE_JOB", "data": data}


def stamp_reply(reply: dict, clock: float, job_cost: Callable[[bool], float] | None = None,
                min_delay: float = MIN_WAKEUP_DELAY, latency: float = 0.0) -> dict:
    """A reply whose actions happen as the scheduler works (Batsim 4.2.1's costed replies):
    stamped in sequence from ``clock``, a start first adding ``job_cost(True)`` and a
    rejection ``job_cost(False)``; the reply's ``now`` is when the work ends. A wake-up is
    stamped at the end too, and one asked for at or before that time moves ``min_delay``
    after it, or after its message reaches Batsim's server (``space_wakeups``: Batsim aborts
    on a CALL_ME_LATER at or before its clock)."""
    events = reply.get("events") or []
    if not events and clock == reply["now"]:
        return reply
    out = []
    wakeups = []
    for ev in events:
        etype = ev.get("type")
        if job_cost is not None and etype in ("EXECUTE_JOB", "REJECT_JOB"):
            clock += job_cost(etype == "EXECUTE_JOB")
        if etype == "CALL_ME_LATER":
            wakeups.append(ev)
            continue
        out.append({**ev, "timestamp": clock})
    for ev in wakeups:   # stamped at the end of the work; never due before the reply's now
        data = ev.get("data") or {}
        when = data.get("timestamp", clock)
        if when <= clock:
            data = {**data, "timestamp": clock + min_delay}
        out.append({**ev, "timestamp": clock, "data": data})
    return {"now": clock, "events": space_wakeups(out, latency, min_delay) if wakeups else out}


def space_wakeups(events: list[dict], latency: float, min_delay: float = MIN_WAKEUP_DELAY) -> list[dict]:
    """``events`` with every CALL_ME_LATER due no later than its message reaches Batsim's
    server moved ``min_delay`` after that.

    Batsim's request-reply actor sends a reply's events to the server one at a time, each
    at its timestamp at the earliest and after the one before it arrived, each taking the
    master host's message time (``JsonProtocolReader::send_message_at_time``,
    ``src/protocol.cpp`` 1580); the server aborts on a CALL_ME_LATER whose time is not after
    its clock (``server_on_call_me_later``, ``src/server.cpp`` 922). So event ``k`` arrives by
    its timestamp + (k + 1) x ``latency``, the message time seen (an upper bound)."""
    if latency <= 0:
        return events
    out = None
    for k, ev in enumerate(events):
        if ev.get("type") != "CALL_ME_LATER":
            continue
        data = ev.get("data") or {}
        arrival = ev["timestamp"] + (k + 1) * latency
        when = data.get("timestamp")
        if type(when) in (int, float) and when <= arrival:
            if out is None:
                out = list(events)
            out[k] = {**ev, "data": {**data, "timestamp": arrival + min_delay}}
    return events if out is None else out


def serialize_message(message: Message) -> dict:
    """``Message`` -> the wire dict ``{"now": ..., "events": [...]}``."""
    return {"now": message.now,
            "events": [{"timestamp": e.timestamp, "type": e.type, "data": e.to_data()}
                       for e in message.events]}
