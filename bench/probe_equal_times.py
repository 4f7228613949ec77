"""Diagnostic (not a benchmark): replay a reference case and redo its arithmetic as SimGrid's
ptask_L07 full-update model would, to see which of several "equal-time" completions ends first.

Why: Batsim orders completions that are equal to the printed precision by SimGrid's float
accounting (docs/DESIGN.md, "Equal times"). The engine computes absolute times; this probe
records every action the engine creates (sleeps, message transfers, ptasks: when, how long)
and re-runs them as SimGrid does: ``delta`` = the smallest of every running action's remaining
sleep (``max_duration``), latency, or ``remains / rate``; ``clock += delta``; every action
decremented by ``delta`` (ptasks: ``remains -= rate * delta``, done below 1e-14; sleeps done
below 1e-9, surf/precision). The engine's step structure is kept (an action the engine ended
is ended here too, reported as NOT-YET when SimGrid's arithmetic would end it in a later step).

    python bench/probe_equal_times.py ties 803 813.1
    python bench/probe_equal_times.py kthties 5548 5562.1 --engine-sleeps

Scope: cases whose jobs are delays or CPU-only ptasks on 1-core hosts that end normally
(not killed, no walltime reached); others stop with a one-line error.

``--engine-sleeps``: a sleep lasts ``target - clock`` (the engine's absolute-time arithmetic)
instead of Batsim's ``subtime - (clock at the submitter's last wake-up)``
(``job_submitter.cpp``) and the delay itself for delay profiles.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "simulator"))

from test_fidelity import _run_engine  # noqa: E402

from mrsched.simulator import engine as E  # noqa: E402
from mrsched.simulator import ptask as P  # noqa: E402
from mrsched.simulator.replay import ReplayScheduler, load_transcript  # noqa: E402

REMAINS_PRECISION = P.REMAINS_PRECISION
SURF_PRECISION = P.SURF_PRECISION


def record(case_dir: Path) -> list[dict]:
    """Run the case through the engine; every action: kind, created (tc), ended (te), size."""
    acts: list[dict] = []
    engine: list = []
    split: dict[float, tuple[float, float]] = {}

    class Timer:  # the engine's timer, noting when it is cancelled
        __slots__ = ("t", "cb", "_alive", "rec")

        def __init__(self, t, cb):
            self.t, self.cb, self._alive = t, cb, True

        @property
        def alive(self):
            return self._alive

        @alive.setter
        def alive(self, value):
            if not value and self._alive:
                self.rec["te"], self.rec["cancel"] = engine[0].now, True
            self._alive = value

    orig_at, orig_transfer, orig_comm = E.Engine.at, E.Engine._start_transfer, E.Engine.comm_time
    orig_add = P.PtaskModel.add

    def at(self, t, cb):
        if not engine:
            engine.append(self)
        rec = {"kind": "sleep", "tc": self.now, "target": t, "te": None}

        def fired():
            rec["te"] = self.now
            cb()
        timer = orig_at(self, t, fired)
        timer.rec = rec
        caller = sys._getframe(1)
        if caller.f_code.co_name == "sleep_then":       # the static submitter
            rec["D"] = caller.f_locals["job"].subtime - caller.f_locals["state"]["c"]
        elif caller.f_code.co_name == "next_step" and "delay" in caller.f_locals:
            rec["D"] = caller.f_locals["delay"]
        acts.append(rec)
        return timer

    def start_transfer(self, message):
        orig_transfer(self, message)
        acts.append({"kind": "comm", "tc": self.now, "D": message[0], "te": self._transfer_end})

    def comm_time(self, src, dst, size=E.MESSAGE_SIZE):
        t = orig_comm(self, src, dst, size)
        route = self.platform.route(src, dst)
        bw = min((link.bandwidth for link in route.links), default=None)
        split[t] = (float(route.latency), size / bw if bw else t)
        return t

    def add(self, flops, bytes, now, tag=None, copies=None):
        task = orig_add(self, flops, bytes, now, tag, copies)
        if bytes or not any(a > 0 for a in flops.values()):
            raise ValueError("probe_equal_times models CPU-only ptasks (no bytes) alone")
        rate = min(self.platform.hosts[h].speed / a for h, a in flops.items() if a > 0)
        acts.append({"kind": "ptask", "tc": now, "task": task, "rate": rate, "id": task.id})
        return task

    saved = (E._Timer, orig_at, orig_transfer, orig_comm, orig_add)
    E._Timer, E.Engine.at, E.Engine._start_transfer = Timer, at, start_transfer
    E.Engine.comm_time, P.PtaskModel.add = comm_time, add
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _run_engine(case_dir, ReplayScheduler(load_transcript(case_dir / "transcript.jsonl")),
                        Path(tmp) / "out")
    finally:  # the engine as it was (the probe may run inside a test session)
        (E._Timer, E.Engine.at, E.Engine._start_transfer, E.Engine.comm_time,
         P.PtaskModel.add) = saved
    for a in acts:
        if a["kind"] == "ptask":
            a["te"] = a["task"].finish
        elif a["kind"] == "comm":
            a["lat"], a["bwt"] = split.get(a["D"], (0.0, a["D"]))
    return acts


def replay(acts: list[dict], lo: float, hi: float, engine_sleeps: bool,
           out=print) -> list[dict]:
    """SimGrid's arithmetic over the recorded actions; returns, for every step in [lo, hi]
    where the engine ends a ptask, the ptasks' times left before it (``before``), the ones
    SimGrid's arithmetic ends (``ended``) and those it would end later (``late``, s left)."""
    found: list[dict] = []
    before: dict = {}
    pending = sorted((dict(a) for a in acts), key=lambda a: a["tc"])  # the input stays as is
    alive: list[dict] = []
    clock, t_eng, i = 0.0, 0.0, 0

    def create_upto(t):
        nonlocal i
        while i < len(pending) and pending[i]["tc"] <= t:
            a = pending[i]
            i += 1
            if a["kind"] == "sleep":
                a["rem"] = a["target"] - clock if engine_sleeps or "D" not in a else a["D"]
            elif a["kind"] == "comm":
                a["rate"], a["rem"] = 1.0 / a["bwt"], 1.0
            else:
                a["rem"] = 1.0
            alive.append(a)

    def left(a):
        if a["kind"] == "comm" and a["lat"] > 0:
            return a["lat"]
        return a["rem"] / a["rate"] if a["kind"] != "sleep" else a["rem"]

    while i < len(pending) or alive:
        alive[:] = [a for a in alive if not (a.get("cancel") and a["te"] <= t_eng)]
        if not alive:
            create_upto(pending[i]["tc"])
            t_eng = pending[i - 1]["tc"]
            continue
        delta = min(left(a) for a in alive)
        before = {a["id"]: left(a) for a in alive if a["kind"] == "ptask" and left(a) < 60}
        if lo <= clock <= hi and out is not None:
            out(f"  step at {clock!r} + {delta!r}; ptask time left: {before}")
        clock += delta
        ended = []
        for a in alive:
            if a["kind"] == "comm" and a["lat"] > 0:
                a["lat"] = 0.0 if a["lat"] <= delta or a["lat"] - delta < SURF_PRECISION \
                    else a["lat"] - delta
                continue
            if a["kind"] == "sleep":
                a["rem"] -= delta
                if a["rem"] < SURF_PRECISION:
                    ended.append(a)
            else:
                a["rem"] -= a["rate"] * delta
                if a["rem"] < REMAINS_PRECISION:
                    ended.append(a)
        if not ended:
            continue
        for a in ended:
            alive.remove(a)
        t_eng = max(a["te"] for a in ended)
        late = [a for a in alive if not a.get("cancel") and a["te"] is not None
                and a["te"] <= t_eng]
        if lo <= t_eng <= hi and any(a["kind"] == "ptask" for a in ended + late):
            found.append({"engine": t_eng, "clock": clock, "before": before,
                          "ended": [a["id"] for a in ended if a["kind"] == "ptask"],
                          "late": {a["id"]: left(a) for a in late}})
        if lo <= t_eng <= hi and out is not None and found and found[-1]["engine"] == t_eng:
            out(f"engine {t_eng!r} SimGrid clock {clock!r}: ptasks ended "
                  f"{[a['id'] for a in ended if a['kind'] == 'ptask']}"
                  + (f"; NOT YET (s left) {[(a['id'], left(a)) for a in late]}" if late else ""))
        for a in late:
            alive.remove(a)
        create_upto(t_eng)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("lo", type=float)
    ap.add_argument("hi", type=float)
    ap.add_argument("--engine-sleeps", action="store_true")
    ap.add_argument("--reference", default=str(ROOT.parent / "shared" / "batsim-reference"))
    args = ap.parse_args()
    try:
        acts = record(Path(args.reference) / args.case)
    except (ValueError, OSError) as exc:
        sys.exit(f"probe_equal_times: {args.case}: {exc}")
    replay(acts, args.lo, args.hi, args.engine_sleeps)


if __name__ == "__main__":
    main()
