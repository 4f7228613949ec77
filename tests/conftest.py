"""Shared fixtures: paths to the repository and to ../shared (ground-truth runs and traces)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the checkout; tests that need it skip on a machine without it."""
    if not SHARED.is_dir():
        pytest.skip("../shared (reference runs and traces) is not present on this machine")
    return SHARED
