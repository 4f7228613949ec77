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


def reference() -> Path:
    """../shared's Batsim reference runs (``missing`` when they are absent)."""
    ref = SHARED / "batsim-reference"
    if not ref.is_dir():
        missing(f"../shared (Batsim reference runs) is not present at {ref}")
    return ref


def reference_case(name: str) -> tuple[Path, Path]:
    """The platform and the workload of Batsim reference run ``name``."""
    return reference() / name / "platform.xml", reference() / name / "workload.json"
