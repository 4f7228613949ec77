"""The one rule for inputs a machine may lack (``conftest.py`` explains it), importable by a
test module's own helpers, where fixtures do not reach (``conftest`` names several modules)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ON_CI = os.environ.get("CI", "").strip().lower() in ("true", "1")


def missing(reason: str) -> NoReturn:
    """An input this machine lacks: skip with ``reason`` here, fail with it under CI=true."""
    if ON_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)
