"""A Python stand-in for four variants of batsched 1.4.0 (hpc/batsched4 at bab23fa), so that the
recorded cases of ``cases/`` can be served live to the engine where batsched is not built.

Written from batsched's sources (``src/main.cpp`` ``run``: events read in order, then one
``make_decisions(now)``, the reply's ``now`` the latest decision date; ``src/algo/fcfs.cpp``,
``killer.cpp``, ``killer2.cpp``, ``submitter.cpp``; the "basic" selector takes the lowest free
ids; the FCFS queue orders jobs by release date, then id). Only what the recorded inputs
exercise: no rejection path beyond the size check, no other selector or queue order.
``test_batsim_cases.py`` checks its replies against batsched's recorded ones.
"""

from __future__ import annotations

from typing import Any


def _text(ids: list[int]) -> str:
    """Sorted ids -> batsched's interval text ("0-3 5")."""
    out, start = [], None
    for k, i in enumerate(ids):
        if start is None:
            start = i
        if k + 1 == len(ids) or ids[k + 1] != i + 1:
            out.append(str(start) if start == i else f"{start}-{i}")
            start = None
    return " ".join(out)


def _ids(text: str) -> list[int]:
    ids = []
    for token in text.split():
        lo, _, hi = token.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


#: the batsched variants stood in for here (the energy cases' ``sleeper`` has its own stand-in,
#: ``test_energy.py``)
VARIANTS = ("fcfs", "killer", "killer2", "submitter")


class BatschedStandIn:
    """``handle_message(dict) -> dict`` as batsched's ``-v VARIANT --variant_options OPTIONS``."""

    def __init__(self, variant: str, options: dict[str, Any] | None = None):
        if variant not in VARIANTS:
            raise ValueError(f"no stand-in for batsched variant {variant!r}")
        self.variant = variant
        opts = options or {}
        self.nb_kills = opts.get("nb_kills_per_job", 1)
        self.kill_delay = float(opts.get("delay_before_kill", 10))
        self.nb_to_submit = opts.get("nb_jobs_to_submit", 0)
        self.increase = opts.get("increase_jobs_duration", False)
        self.resend_profile = opts.get("send_profile_if_already_sent", False)
        self.separate_profile = opts.get("send_profiles_in_separate_event", False)
        self.nb_machines = 0
        self.free: list[int] = []
        self.alloc: dict[str, list[int]] = {}
        self.res: dict[str, int] = {}
        self.queue: list[tuple[float, str]] = []   # (release date, id): the FCFS order
        self.released: list[str] = []
        self.ended: list[str] = []
        self.ack = False
        self.nb_submitted = 0
        self.profiles_sent: set[str] = set()
        self.finished_sent = False
        self.out: list[dict] = []

    # -- the protocol loop (main.cpp run) ------------------------------------------------
    def handle_message(self, msg: dict) -> dict:
        now = msg["now"]
        self.out = []
        self.released, self.ended = [], []
        date = now
        for ev in msg["events"]:
            date, data = ev["timestamp"], ev["data"]
            kind = ev["type"]
            if kind == "SIMULATION_BEGINS":
                self.nb_machines = data["nb_compute_resources"]
                self.free = list(range(self.nb_machines))
                self.ack = data["config"]["dynamic-jobs-acknowledged"]
            elif kind == "SIMULATION_ENDS":
                return {"now": now, "events": []}
            elif kind == "JOB_SUBMITTED":
                self.res[data["job_id"]] = data["job"]["res"]
                self.released.append(data["job_id"])
            elif kind == "JOB_COMPLETED":
                self.ended.append(data["job_id"])
        self.release_date = date
        getattr(self, "_" + self.variant)(now)
        last = max((e["timestamp"] for e in self.out), default=now)
        return {"now": max(now, last), "events": self.out}

    def _add(self, kind: str, date: float, data: dict) -> None:
        self.out.append({"timestamp": date, "type": kind, "data": data})

    def _execute(self, job_id: str, date: float) -> None:
        n = self.res[job_id]
        used, self.free = self.free[:n], self.free[n:]
        self.alloc[job_id] = used
        self._add("EXECUTE_JOB", date, {"job_id": job_id, "alloc": _text(used)})

    def _release_ended(self) -> None:
        for jid in self.ended:   # (killer2 frees a job's machines when it kills it)
            self.free = sorted(self.free + self.alloc.pop(jid, []))

    def _enqueue_released(self, date: float) -> None:
        for jid in self.released:
            if self.res[jid] > self.nb_machines:
                self._add("REJECT_JOB", date, {"job_id": jid})
            else:
                self.queue.append((self.release_date, jid))
        self.queue.sort()

    # -- variants --------------------------------------------------------------------------
    def _fcfs(self, date: float) -> None:
        if self.ended:
            self._release_ended()
            while self.queue and self.res[self.queue[0][1]] <= len(self.free):
                self._execute(self.queue.pop(0)[1], date)
        for jid in self.released:
            if self.res[jid] > self.nb_machines:
                self._add("REJECT_JOB", date, {"job_id": jid})
            elif not self.queue and self.res[jid] <= len(self.free):
                self._execute(jid, date)
            else:
                self.queue.append((self.release_date, jid))

    def _killer(self, date: float) -> None:
        self._release_ended()
        self._enqueue_released(date)
        if self.queue and self.res[self.queue[0][1]] <= len(self.free):
            jid = self.queue.pop(0)[1]
            self._execute(jid, date)
            for _ in range(self.nb_kills):
                date += self.kill_delay
                self._add("KILL_JOB", date, {"job_ids": [jid]})

    def _killer2(self, date: float) -> None:
        self._release_ended()
        self._enqueue_released(date)
        if self.queue:
            jid = self.queue.pop(0)[1]
            if self.alloc:
                running = next(iter(self.alloc))
                self._add("KILL_JOB", date, {"job_ids": [running]})
                self.free = sorted(self.free + self.alloc.pop(running))
                date += 5
            self._execute(jid, date)

    def _submitter(self, date: float) -> None:
        self._release_ended()
        self._enqueue_released(date)
        if self.queue and self.res[self.queue[0][1]] <= len(self.free):
            self._execute(self.queue.pop(0)[1], date)
        if not self.queue and self.free and self.nb_submitted < self.nb_to_submit:
            delay = 1.0 + (self.nb_submitted * 10 if self.increase else 0)
            profile = f"delay_{delay:.6f}"
            local = str(self.nb_submitted)
            jid = f"dynamic!{local}"
            job = {"id": local, "subtime": float(f"{date:g}"), "walltime": float(f"{delay + 5:g}"),
                   "res": 1, "profile": profile}
            job = {k: (int(v) if isinstance(v, float) and v == int(v) else v)
                   for k, v in job.items()}
            send_profile = profile not in self.profiles_sent or self.resend_profile
            if send_profile and self.separate_profile:
                self._add("REGISTER_PROFILE", date, {
                    "workload_name": "dynamic", "profile_name": profile,
                    "profile": {"type": "delay", "delay": int(delay)
                                if delay == int(delay) else delay}})
            self._add("REGISTER_JOB", date, {"job_id": jid, "job": job})
            self.profiles_sent.add(profile)
            self.res[jid] = 1
            if not self.ack:
                date = date + 10
                self._execute(jid, date)
            self.nb_submitted += 1
        if self.nb_submitted >= self.nb_to_submit and not self.finished_sent:
            self._add("NOTIFY", date, {"type": "registration_finished"})
            self.finished_sent = True
