"""Whether the optional compiled extensions run (``_mintree.c``, ``_shares.c``, ``_profile.c``,
and the engine's ``simulator/_steps.c`` with ``_idle.c`` and ``_maxmin.c``): each has a
pure-Python twin giving the same answers, and ``MRSCHED_PURE_PYTHON=1`` (or true, yes) asks
for the twins, e.g. to compare them or to rule the C code out."""

from __future__ import annotations

import os


def wanted() -> bool:
    """Whether the environment lets the compiled extensions run (when they were built)."""
    return os.environ.get("MRSCHED_PURE_PYTHON", "").strip().lower() not in ("1", "true", "yes")
