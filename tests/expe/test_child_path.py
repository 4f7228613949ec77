"""Issue 13 item 12: a folder named ``mrsched`` in the working directory does not shadow the
installed package in the processes a run starts (``python -m`` puts the cwd first)."""

from __future__ import annotations

import pytest

from mrsched.expe.manifest import read_manifest
from mrsched.expe.runner import execute_run
from mrsched.expe.spec import RunSpec


@pytest.mark.parametrize("engine", ["embedded", "batsim"])
def test_a_mrsched_folder_in_cwd_does_not_shadow_the_package(tmp_path, inputs, engine_env,
                                                             monkeypatch, engine):
    work = tmp_path / "work"
    (work / "mrsched").mkdir(parents=True)
    (work / "mrsched" / "__init__.py").write_text("raise ImportError('shadowed by the cwd')\n")
    monkeypatch.chdir(work)
    out = tmp_path / "run"
    spec = RunSpec(run_id="run", out_dir=str(out), platform=str(inputs["platform"]),
                   workload=str(inputs["workload"]), policy="fcfs", engine=engine,
                   batsim=engine_env["batsim"] if engine == "batsim" else None, timeout=60)
    manifest = execute_run(spec)
    assert manifest["status"] == "ok", manifest["error"]
    assert read_manifest(out)["status"] == "ok"
