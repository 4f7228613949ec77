"""A scheduler that replays the decisions recorded in a Batsim transcript.

Used by the fidelity tests (drive the engine with what a real scheduler answered to real Batsim
and compare the outcome) and for debugging (re-run a recorded campaign run without its policy).
Each recorded reply is due once the engine's clock reaches the time of the Batsim message it
answered; its events keep their offset from that message (decision delays such as pybatsim's
``fillerSched`` +0.005 s are reproduced). A due reply whose jobs are not yet submitted, or whose
allocation is still busy in the engine (a KILL_JOB earlier in the reply frees its jobs'; a job
registered earlier in the reply may be executed), waits
for a later message, so a slightly early or late engine never makes the replay send an invalid
decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mrsched.errors import ConfigError, ProtocolError
from mrsched.simulator.grisu import rapidjson_text

#: a recorded scheduler's number writer: Python's ``json`` (``repr``, the shortest text) or
#: rapidjson's ``Writer`` (Grisu2: batsched and other C++ schedulers). The transcript's
#: recorder read either text back to its double, from which both give that text again.
WRITERS = {"python": repr, "rapidjson": rapidjson_text}


@dataclass
class RecordedReply:
    batsim_now: float
    reply_now: float
    events: list[dict]
    #: the job and NOTIFY events of the Batsim message it answered (``_named_events``)
    batsim_events: frozenset = frozenset()


def _named_events(events: list, notified: dict[str, int]) -> set[tuple]:
    """The (type, job id) events of a message, and its NOTIFY events as (NOTIFY, kind, k) for
    the k-th of that kind (``notified`` counts them; a message of a NOTIFY alone, such as
    ``no_more_static_job_to_submit``, names no job but is a message of its own)."""
    out: set[tuple] = set()
    for ev in events:
        if not isinstance(ev, dict) or not isinstance(ev.get("data"), dict):
            continue
        if "job_id" in ev["data"]:
            out.add((ev.get("type"), ev["data"]["job_id"]))
        elif ev.get("type") == "NOTIFY":
            kind = str(ev["data"].get("type"))
            notified[kind] = notified.get(kind, 0) + 1
            out.add(("NOTIFY", kind, notified[kind]))
    return out


def load_transcript(path: str | Path) -> list[dict]:
    """``transcript.jsonl`` lines -> [{"from": ..., "msg": ...}, ...]."""
    out = []
    try:
        fh = open(path)
    except OSError as exc:
        raise ConfigError(f"cannot read transcript: {exc.strerror}", file=str(path)) from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ProtocolError(f"malformed JSON: {exc.msg}", file=str(path),
                                    line=lineno) from None
            if (not isinstance(entry, dict) or entry.get("from") not in ("batsim", "scheduler")
                    or not isinstance(entry.get("msg"), dict)):
                raise ProtocolError("expected {\"from\": \"batsim\"|\"scheduler\", \"msg\": {...}}",
                                    file=str(path), line=lineno)
            out.append(entry)
    return out


def recorded_replies(transcript: list[dict]) -> list[RecordedReply]:
    replies = []
    last_now = 0.0
    last_events: frozenset = frozenset()
    notified: dict[str, int] = {}
    for entry in transcript:
        msg = entry["msg"]
        if entry["from"] == "batsim":
            last_now = float(msg["now"])
            last_events = frozenset(_named_events(msg["events"], notified))
        else:
            replies.append(RecordedReply(last_now, float(msg["now"]), list(msg["events"]),
                                         last_events))
    return replies


def _alloc_ids(text: str) -> set[int]:
    ids: set[int] = set()
    for token in text.split():
        lo, sep, hi = token.partition("-")
        ids.update(range(int(lo), int(hi) + 1) if sep else (int(lo),))
    return ids


class ReplayScheduler:
    """``handle_message`` answers with the recorded decisions that are due (see module doc)."""

    def __init__(self, transcript: list[dict] | str | Path, *, tolerance: float = 1e-3,
                 writer: str = "python"):
        if writer not in WRITERS:
            raise ConfigError(f"unknown number writer {writer!r}", field="writer",
                              hint=" or ".join(WRITERS))
        #: the text the recorded scheduler wrote for a double, which Batsim read
        #: (``server.read_as_batsim``): Python's ``repr``, or rapidjson's (batsched)
        self.number_text = WRITERS[writer]
        if isinstance(transcript, (str, Path)):
            transcript = load_transcript(transcript)
        self.pending = recorded_replies(transcript)
        self.tolerance = tolerance
        self.submitted: set[str] = set()
        self.busy: dict[int, str] = {}
        self.nb_compute: int | None = None
        self.sharing = False   # --enable-compute-sharing: several jobs per machine
        self.seen: set[tuple] = set()   # the job and NOTIFY events received so far (_named_events)
        self._notified: dict[str, int] = {}

    def _ready(self, rec: RecordedReply) -> bool:
        busy = dict(self.busy)
        registered = set()
        for ev in rec.events:
            data = ev["data"]
            if ev["type"] == "REGISTER_JOB":   # a dynamic job of this very reply
                registered.add(data["job_id"])
            elif ev["type"] in ("EXECUTE_JOB", "REJECT_JOB"):
                if data["job_id"] not in self.submitted and data["job_id"] not in registered:
                    return False
            if ev["type"] == "KILL_JOB":   # frees the killed jobs' machines for what follows
                killed = set(data["job_ids"])
                busy = {r: j for r, j in busy.items() if j not in killed}
            elif ev["type"] == "EXECUTE_JOB":
                ids = _alloc_ids(data["alloc"])
                for r in ids:
                    if self.nb_compute is not None and r >= self.nb_compute:
                        continue
                    if r in busy and not self.sharing:
                        return False
                    busy[r] = data["job_id"]
        return True

    def handle_message(self, msg: dict) -> dict:
        now = float(msg["now"])
        self.seen |= _named_events(msg["events"], self._notified)
        for ev in msg["events"]:
            etype, data = ev["type"], ev["data"]
            if etype == "SIMULATION_BEGINS":
                self.nb_compute = int(data["nb_compute_resources"])
                self.sharing = bool(data.get("allow_compute_sharing"))
            elif etype == "JOB_SUBMITTED":
                self.submitted.add(data["job_id"])
            elif etype == "JOB_COMPLETED":
                for r in _alloc_ids(data["alloc"]):
                    if self.busy.get(r) == data["job_id"]:
                        del self.busy[r]
            elif etype == "SIMULATION_ENDS":
                return {"now": now, "events": []}
        events: list[dict] = []
        reply_now = now
        last_ts = now
        taken = 0
        while self.pending:
            rec = self.pending[0]
            # the first reply may be due up to `tolerance` early (engine clock noise); further
            # ones only when their message time has really passed (the engine batched them)
            # and the jobs and NOTIFYs their message named have reached this scheduler (two
            # messages at one printed time are answered one at a time, as Batsim's
            # request-reply actor sends a reply's events, then READY, before the next message);
            # far in the future (Batsim's long workload, 1e13 s) a few ulps exceed `tolerance`
            tol = max(self.tolerance, abs(now) * 1e-15)
            if rec.batsim_now > now + (tol if taken == 0 else 1e-9):
                break
            if taken and not rec.batsim_events <= self.seen:
                break
            taken += 1
            if not self._ready(rec):
                break
            self.pending.pop(0)
            shift = now - rec.batsim_now
            for ev in rec.events:
                ev = json.loads(json.dumps(ev))
                ts = float(ev["timestamp"])
                if abs(shift) > tol:
                    ts += shift
                ts = max(last_ts, ts, now)
                ev["timestamp"] = ts
                last_ts = ts
                if ev["type"] == "CALL_ME_LATER":
                    target = float(ev["data"]["timestamp"])
                    if not target > now:
                        continue
                if ev["type"] == "EXECUTE_JOB":
                    for r in _alloc_ids(ev["data"]["alloc"]):
                        if self.nb_compute is None or r < self.nb_compute:
                            self.busy[r] = ev["data"]["job_id"]
                    self.submitted.discard(ev["data"]["job_id"])
                elif ev["type"] == "REJECT_JOB":
                    self.submitted.discard(ev["data"]["job_id"])
                elif ev["type"] == "KILL_JOB":
                    killed = set(ev["data"]["job_ids"])
                    self.busy = {r: j for r, j in self.busy.items() if j not in killed}
                events.append(ev)
            rnow = rec.reply_now + shift if abs(shift) > tol else rec.reply_now
            reply_now = max(reply_now, rnow, last_ts)
        return {"now": reply_now, "events": events}
