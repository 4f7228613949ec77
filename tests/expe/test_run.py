"""`mrsched run`: one run directory per simulation, on the embedded engine (child process) and
on a Batsim binary over ZeroMQ; crashing or hanging schedulers end failed/timeout with the
reason, within the timeout, and leave no process behind."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import psutil
import pytest

from mrsched.cli import main
from mrsched.expe.manifest import OUTPUT_FILES, read_manifest
from mrsched.expe.runner import execute_run
from mrsched.expe.spec import RunSpec


def spec_for(inputs, out: Path, policy="fcfs-easy", engine="embedded", **kw) -> RunSpec:
    return RunSpec(run_id=out.name, out_dir=str(out), platform=str(inputs["platform"]),
                   workload=str(inputs["workload"]), policy=policy, engine=engine, **kw)


def jobs_rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "out_jobs.csv") as fh:
        return list(csv.DictReader(fh))


def assert_gone(pids: list[int]) -> None:
    for pid in pids:
        if psutil.pid_exists(pid):
            try:
                assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, f"pid {pid} survived"
            except psutil.NoSuchProcess:
                pass


def no_children_left() -> None:
    assert psutil.Process().children(recursive=True) == []


def test_cli_run_embedded_writes_manifest_and_outputs(tmp_path, inputs, engine_env, capsys):
    out = tmp_path / "run1"
    code = main(["run", "--platform", str(inputs["platform"]), "--workload", str(inputs["workload"]),
                 "--policy", "fcfs-easy", "--option", "order=sjf", "--out", str(out),
                 "--timeout", "60", "--seed", "3"])
    assert code == 0, capsys.readouterr()
    manifest = read_manifest(out)
    assert manifest["status"] == "ok" and manifest["error"] is None
    assert manifest["policy"] == "fcfs-easy" and manifest["options"] == {"order": "sjf"}
    assert manifest["seed"] == 3 and manifest["engine"] == "embedded"
    assert manifest["platform"] == str(inputs["platform"].resolve())
    assert len(manifest["workload_sha256"]) == 64 and manifest["versions"]["mrsched"]
    assert manifest["command"].startswith("mrsched run --platform")
    assert manifest["wall_time"] > 0 and manifest["started"] <= manifest["finished"]
    # the simulation process's CPU: positive, and no more than its single thread could use
    assert 0 < manifest["cpu_time"] <= 1.5 * manifest["wall_time"]
    # its peak resident memory: a Python process holding the engine and the policy
    assert 20 < manifest["peak_memory_mb"] < 4096
    printed = capsys.readouterr().out
    assert f"peak memory {manifest['peak_memory_mb']:.0f} MB" in printed and "run ok in" in printed
    for name in OUTPUT_FILES:
        assert (out / name).is_file()
    rows = jobs_rows(out)
    assert len(rows) == 12 and {r["final_state"] for r in rows} == {"COMPLETED_SUCCESSFULLY"}
    no_children_left()


def test_cli_run_refuses_bad_input_before_running(tmp_path, inputs, capsys):
    out = tmp_path / "r"
    code = main(["run", "-p", str(tmp_path / "missing.xml"), "-w", str(inputs["workload"]),
                 "--policy", "fcfs", "--out", str(out)])
    assert code == 2 and "platform file not found" in capsys.readouterr().err
    code = main(["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
                 "--policy", "fcfs-easy", "--option", "ordr=sjf", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "unknown option 'ordr'" in err and "did you mean 'order'" in err
    assert not out.exists()


def test_cli_run_o_is_the_output_and_O_the_option(tmp_path, inputs, engine_env, capsys):
    """-o is the output in `run` as in every command; policy options are -O/--option."""
    out = tmp_path / "r"
    base = ["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]), "--policy", "fcfs-easy"]
    assert main([*base, "-O", "order=sjf", "-o", str(out)]) == 0, capsys.readouterr().err
    assert read_manifest(out)["options"] == {"order": "sjf"}
    assert main([*base, "--option", "order=sjf", "--output", str(tmp_path / "r2")]) == 0
    assert read_manifest(tmp_path / "r2")["status"] == "ok"


@pytest.mark.parametrize("args", [["-o", "order=sjf"], ["-o", "order=sjf", "--out", "{tmp}/x"],
                                  ["--out", "{tmp}/x", "-o", "order=sjf"]])
def test_cli_run_old_o_option_gets_a_one_line_hint(tmp_path, inputs, capsys, monkeypatch, args):
    """The old `run -o key=value` (beside --out or alone) is refused with the new spelling,
    never taken as a directory named 'order=sjf' nor dropped for the last -o."""
    monkeypatch.chdir(tmp_path)
    code = main(["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]), "--policy",
                 "fcfs-easy", *[a.format(tmp=tmp_path) for a in args]])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert "'-o order=sjf' looks like a policy option" in err and "-O/--option KEY=VALUE" in err
    assert not (tmp_path / "order=sjf").exists() and not (tmp_path / "x").exists()


def test_cli_serve_old_o_option_gets_a_one_line_hint(capsys):
    assert main(["serve", "fcfs", "-o", "order=sjf"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "-O/--option KEY=VALUE" in err


def test_crashing_scheduler_is_reported_failed(tmp_path, inputs, engine_env):
    manifest = execute_run(spec_for(inputs, tmp_path / "crash", policy="misbehaving:CrashingScheduler",
                                    timeout=60))
    assert manifest["status"] == "failed"
    assert "RuntimeError: policy exploded on purpose" in manifest["error"]
    assert read_manifest(tmp_path / "crash")["status"] == "failed"
    no_children_left()


def test_hanging_scheduler_times_out_and_leaves_nothing(tmp_path, inputs, engine_env, monkeypatch):
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("MRSCHED_TEST_PIDFILE", str(pidfile))
    t0 = time.monotonic()
    # long enough for the scheduler to start its helper on a loaded machine
    manifest = execute_run(spec_for(inputs, tmp_path / "hang", policy="misbehaving:HangingScheduler",
                                    timeout=5))
    elapsed = time.monotonic() - t0
    assert manifest["status"] == "timeout" and "5 s timeout" in manifest["error"]
    assert elapsed < 5 + 10  # the timeout, plus the SIGTERM grace and process start-up
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2  # the scheduler's process and the helper it started
    assert_gone(pids)
    no_children_left()


def test_batsim_engine_two_processes(tmp_path, inputs, engine_env):
    out = tmp_path / "bat"
    manifest = execute_run(spec_for(inputs, out, engine="batsim", batsim=engine_env["batsim"],
                                    timeout=60))
    assert manifest["status"] == "ok", manifest["error"]
    serve_cmd, batsim_cmd = manifest["engine_commands"]
    assert " serve fcfs-easy --socket tcp://127.0.0.1:" in serve_cmd
    port = serve_cmd.rsplit(":", 1)[1]
    assert batsim_cmd.endswith(f"-s tcp://127.0.0.1:{port}") and port != "28000"
    # same schedule as the embedded engine (same policy, same inputs)
    embedded = tmp_path / "emb"
    assert execute_run(spec_for(inputs, embedded, timeout=60))["status"] == "ok"
    strip = lambda rows: sorted((r["job_id"], r["starting_time"], r["allocated_resources"])
                                for r in rows)
    assert strip(jobs_rows(out)) == strip(jobs_rows(embedded))
    no_children_left()


@pytest.mark.parametrize("policy,status,reason,timeout,helpers", [
    ("misbehaving:CrashingScheduler", "failed", "scheduler", 60, 0),
    # long enough for both processes to start and the scheduler to start its helper
    ("misbehaving:HangingScheduler", "timeout", "timeout", 5, 2),
])
def test_batsim_engine_kills_both_sides(tmp_path, inputs, engine_env, monkeypatch, policy, status,
                                        reason, timeout, helpers):
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("MRSCHED_TEST_PIDFILE", str(pidfile))
    manifest = execute_run(spec_for(inputs, tmp_path / "b", policy=policy, engine="batsim",
                                    batsim=engine_env["batsim"], timeout=timeout))
    assert manifest["status"] == status and reason in manifest["error"]
    pids = [int(p) for p in pidfile.read_text().split()] if helpers else []
    assert len(pids) == helpers  # the hanging scheduler's process and the helper it started
    assert pidfile.exists() == bool(helpers)
    assert_gone(pids)
    no_children_left()


def test_batsim_command_not_found(tmp_path, inputs, capsys):
    code = main(["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
                 "--policy", "fcfs", "--out", str(tmp_path / "r"), "--engine", "batsim",
                 "--batsim", "/nonexistent/batsim"])
    assert code == 2 and "Batsim command not found" in capsys.readouterr().err


def test_docker_engine_without_docker_fails_clearly(tmp_path, inputs, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    code = main(["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
                 "--policy", "fcfs", "--out", str(tmp_path / "r"), "--engine", "docker"])
    assert code == 2 and "no Docker engine answers" in capsys.readouterr().err


def test_rerun_cleans_previous_attempt(tmp_path, inputs, engine_env):
    out = tmp_path / "again"
    out.mkdir()
    (out / "out_jobs.csv").write_text("stale")
    (out / "manifest.json").write_text(json.dumps({"status": "failed"}))
    manifest = execute_run(spec_for(inputs, out, timeout=60))
    assert manifest["status"] == "ok" and len(jobs_rows(out)) == 12
