"""Issue 13 item 3: a run is finished only when its manifest says so and the outputs it
records (rows, size, sha256) are there; outputs are written atomically; the manifest has
the permissions of the other outputs."""

from __future__ import annotations

import os
import stat

from mrsched.cli import main
from mrsched.expe.launch import campaign_status, run_campaign
from mrsched.expe.manifest import OUTPUT_FILES, is_complete, read_manifest
from mrsched.expe.runner import execute_run, run_status
from mrsched.expe.spec import RunSpec
from mrsched.expe.worker import ENGINE_ENV


def spec(inputs, out, **kw) -> RunSpec:
    return RunSpec(run_id=out.name, out_dir=str(out), platform=str(inputs["platform"]),
                   workload=str(inputs["workload"]), policy="fcfs", timeout=60, **kw)


def test_manifest_records_outputs_and_a_cut_csv_is_not_finished(tmp_path, inputs, engine_env):
    out = tmp_path / "r"
    manifest = execute_run(spec(inputs, out))
    assert manifest["status"] == "ok"
    jobs = manifest["outputs"]["out_jobs.csv"]
    assert jobs["rows"] == 12 and len(jobs["sha256"]) == 64
    assert set(manifest["outputs"]) == set(OUTPUT_FILES)
    assert is_complete(out) and run_status(out) == "ok"
    # cut at a line boundary: still a well-formed CSV, but not the run's output
    lines = (out / "out_jobs.csv").read_text().splitlines(keepends=True)
    (out / "out_jobs.csv").write_text("".join(lines[:6]))
    assert not is_complete(out) and run_status(out) == "incomplete"


def test_resume_redoes_a_run_whose_output_was_cut(tmp_path, inputs, engine_env):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: cut\nplatforms: [{inputs['platform']}]\n"
                    f"workloads: [{inputs['workload']}]\npolicies: [fcfs, filler]\n")
    first = run_campaign(path, progress=False, report=False)
    assert first.ok == 2
    run_dir = first.campaign_dir / "runs" / "fcfs-platform-workload"
    full = (run_dir / "out_jobs.csv").read_text()
    (run_dir / "out_jobs.csv").write_text("".join(full.splitlines(keepends=True)[:3]))
    status = campaign_status(path)
    row = next(r for r in status["runs"] if r["run_id"] == "fcfs-platform-workload")
    assert row["status"] == "incomplete" and "out_jobs.csv" in row["error"]
    again = run_campaign(path, progress=False, report=False)
    assert again.skipped == 1 and again.ok == 1
    assert (run_dir / "out_jobs.csv").read_text() == full


def test_engine_dying_midway_leaves_no_partial_output(tmp_path, inputs, helper_path, monkeypatch):
    monkeypatch.setenv(ENGINE_ENV, "misbehaving:crash_midway")
    out = tmp_path / "r"
    manifest = execute_run(spec(inputs, out))
    assert manifest["status"] == "failed" and "while writing its outputs" in manifest["error"]
    assert not any((out / n).exists() for n in OUTPUT_FILES)
    assert not list(out.glob(".partial-*"))


def test_manifest_has_the_permissions_of_the_outputs(tmp_path, inputs, engine_env):
    old = os.umask(0o022)
    try:
        out = tmp_path / "r"
        assert main(["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
                     "--policy", "fcfs", "--out", str(out)]) == 0
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)
    assert mode(out / "manifest.json") == 0o644
    assert mode(out / "manifest.json") == mode(out / "out_jobs.csv")
    assert read_manifest(out)["status"] == "ok"
