"""Diagnostic (not a benchmark): replay a reference case and print the engine's SimGrid steps
around equal-time completions: each step's clock, delta, and every running ptask's time left.

Why: Batsim orders completions that are equal to the printed precision by SimGrid's float
accounting (docs/DESIGN.md, "Equal times"), which the engine now redoes step by step: the clock
is the running sum of the deltas, each delta the smallest time left of any action, and every
action loses ``delta`` (sleeps, latencies) or ``rate * delta`` (work) per step. This probe shows
those numbers for the steps in a window, e.g. which job had the least time left and by how much:

    python bench/probe_equal_times.py ties 812.9 813.1
    python bench/probe_equal_times.py kthties 5561.9 5562.1

Scope: any case; ptasks are listed when the ptask model runs them isolated (CPU-only jobs on
exclusive hosts, SimGrid's full-update arithmetic applied to each), the others by their count.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "simulator"))

from test_fidelity import _run_engine  # noqa: E402

from mrsched.simulator import ptask as P  # noqa: E402
from mrsched.simulator.replay import ReplayScheduler, load_transcript  # noqa: E402


def record(case_dir: Path, lo: float, hi: float) -> list[dict]:
    """Run the case through the engine; for every step ending in [lo, hi] while ptasks run:
    ``clock`` before it, ``delta``, ``left`` (isolated ptask id -> time left before the step,
    seconds) and ``ended`` (ptask ids finished by it, in id order)."""
    steps: list[dict] = []
    orig_step = P.PtaskModel.step

    def step(self, now, delta):
        rec = None
        if lo <= now <= hi:
            rec = {"clock": self.now, "delta": delta,
                   "left": {t.id: (t._rem0 / t._irate if t._rem0 > 0 else 0.0)
                            for t in self._iso_tasks.values()},
                   "solver": len(self._act)}
        done = orig_step(self, now, delta)
        if rec is not None:
            rec["ended"] = sorted(t.id for t in done)
            steps.append(rec)
        return done

    P.PtaskModel.step = step
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _run_engine(case_dir, ReplayScheduler(load_transcript(case_dir / "transcript.jsonl")),
                        Path(tmp) / "out")
    finally:  # the engine as it was (the probe may run inside a test session)
        P.PtaskModel.step = orig_step
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("lo", type=float)
    ap.add_argument("hi", type=float)
    ap.add_argument("--reference", default=str(ROOT.parent / "shared" / "batsim-reference"))
    args = ap.parse_args()
    try:
        steps = record(Path(args.reference) / args.case, args.lo, args.hi)
    except (ValueError, OSError) as exc:
        sys.exit(f"probe_equal_times: {args.case}: {exc}")
    for s in steps:
        near = {k: v for k, v in s["left"].items() if v < 60}
        print(f"step at {s['clock']!r} + {s['delta']!r}: ended {s['ended']}; "
              f"time left {near}" + (f"; {s['solver']} in the solver" if s["solver"] else ""))


if __name__ == "__main__":
    main()
