"""The fuzz suite's one invariant and its budget (issue 43 item 6, docs/TESTING.md "Fuzzing").

Every reader fed anything gives a correct result or a clean error: a project exception
(``mrsched/errors.py``) whose one line names where (file, job, element, field or event) --
never another exception, never a traceback. In the default suite each fuzz test runs a small,
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
