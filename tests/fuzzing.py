"""The fuzz suite's invariants and its budget (issue 43 item 6, docs/TESTING.md "Fuzzing").

Every reader fed anything gives a correct result or a clean error: a project exception
(``mrsched/errors.py``) whose one line names where (file, job, element, field or event) --
never another exception, never a traceback. A generated simulation (``fuzz_run``) ends with
every job run or rejected with its reason and nothing over-allocated, or with such an error
that is not the scheduler's own bug. In the default suite each fuzz test runs a small,
derandomized number of examples (the same inputs on every machine, so CI is reproducible);
``MRSCHED_FUZZ=N`` multiplies them by N and draws fresh random inputs (the long run).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from mrsched.errors import MrschedError

LONG = int(os.environ.get("MRSCHED_FUZZ", "0") or 0)


def budget(examples: int):
    """Hypothesis settings for ``examples`` inputs (times MRSCHED_FUZZ in a long run)."""
    return settings(max_examples=examples * max(LONG, 1), derandomize=not LONG, deadline=None,
                    database=None, print_blob=bool(LONG),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])


def clean(call, *args, whole: str | None = None, **kwargs):
    """``call(*args, **kwargs)``'s result, or None after checking that the exception it raised
    is a clean one: a MrschedError of one line that says where (or, for a problem of the
    whole input, says ``whole``: serve's endpoint prefixes such lines with "message N")."""
    try:
        return call(*args, **kwargs)
    except MrschedError as exc:
        assert_clean(exc, whole=whole)
        return None


def assert_clean(exc: MrschedError, *, whole: str | None = None) -> None:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text, text
    located = any(getattr(exc, k) not in (None, "") for k in ("file", "job", "element", "field", "event"))
    assert located or (whole is not None and whole in text), \
        f"names no file, job, element, field or event: {text}"



def fuzz_run(platform, workload: dict, policy, options: dict | None = None, *,
             energy: bool = False, inspect=None) -> bool:
    """One generated simulation (``mrsched.simulate`` into a temporary run directory) held
    to the invariant of a run: a clean error that is not the scheduler's own bug (a stall,
    or a decision the runtime refuses: its checks name the policy), or a run of every job
    completed, killed at its walltime or rejected with its reason, no resource running two
    jobs at once, no start before submission. ``inspect(run_dir)`` then checks more while
    the files exist. Returns whether the run finished (for ``hypothesis.event``)."""
    import csv
    import tempfile
    from pathlib import Path

    from mrsched.api import simulate
    from mrsched.errors import SimulationError
    from mrsched.schedulers.batsim.intervals import parse_ids

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        try:
            simulate(platform, workload, policy, options or {}, out=out, energy=energy)
        except MrschedError as exc:
            text = str(exc)
            bug = "cannot progress" in text or (type(exc) is SimulationError and bool(exc.job)
                                                and "policy '" in text)
            assert not bug, (policy, options, text)
            assert_clean(exc)
            return False
        with open(out / "out_jobs.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == len(workload["jobs"])
        spans: dict[int, list[tuple[float, float]]] = {}
        for r in rows:
            if r["final_state"] == "REJECTED":      # with its reason
                assert r["metadata"].startswith("rejected: ") and len(r["metadata"]) > 20, r
                continue
            assert r["final_state"] in ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"), r
            start, end = float(r["starting_time"]), float(r["finish_time"])
            assert start >= float(r["submission_time"]) - 1e-6, r
            for rid in parse_ids(r["allocated_resources"], job=r["job_id"]):
                spans.setdefault(rid, []).append((start, end))
        for rid, busy in spans.items():          # never two jobs on one resource at once
            busy.sort()
            assert all(a[1] <= b[0] + 1e-6 for a, b in zip(busy, busy[1:])), (policy, options, rid, busy)
        if inspect is not None:
            inspect(out)
        return True
