"""Fixtures for the experiment tests: tiny inputs written into tmp_path, helper schedulers."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

HERE = Path(__file__).resolve().parent


def tiny_workload(path: Path, jobs: int = 12, nodes: int = 4, seed: int = 0) -> Path:
    """A deterministic delay-profile workload: ``jobs`` jobs on at most ``nodes`` nodes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    entries, profiles = [], {}
    t = 0.0
    for i in range(jobs):
        t += float(rng.integers(0, 30))
        run = int(rng.integers(10, 200))
        res = int(rng.integers(1, nodes + 1))
        profiles[f"d{run}"] = {"type": "delay", "delay": run}
        entries.append({"id": str(i), "subtime": t, "walltime": run * 2, "res": res,
                        "profile": f"d{run}"})
    data = {"nb_res": nodes, "jobs": entries, "profiles": profiles}
    path.write_text(json.dumps(data, indent=1))
    return path


def tiny_platform(path: Path, nodes: int = 4) -> Path:
    """A flat cluster (``mrsched platform cluster``'s generator)."""
    from mrsched.platforms.cluster import generate_cluster

    path.write_text(generate_cluster(nodes=nodes, storage=1, bb_capacity="10GB").xml)
    return path


@pytest.fixture()
def inputs(tmp_path: Path) -> dict[str, Path]:
    return {"platform": tiny_platform(tmp_path / "platform.xml"),
            "workload": tiny_workload(tmp_path / "workload.json")}


@pytest.fixture()
def helper_path(monkeypatch) -> Path:
    """Make ``misbehaving:...`` importable here and in child processes."""
    import os

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p))
    return HERE


@pytest.fixture()
def engine_env(monkeypatch, helper_path) -> dict[str, str]:
    """The real embedded engine in process and ``mrsched simulate`` as the ``batsim`` engine's
    binary (no override of the engine from the environment); returns ``{"batsim": command}``."""
    from mrsched.expe.worker import ENGINE_ENV

    monkeypatch.delenv(ENGINE_ENV, raising=False)
    return {"batsim": "mrsched simulate"}


def marked(mark: str) -> list[psutil.Process]:
    """Every live process whose environment carries ``mark`` (all descendants inherit it)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("MRSCHED_TEST_MARK") == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found
