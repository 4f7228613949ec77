"""Campaigns: every run in its own directory, failures recorded without stopping the others,
resume after a kill without redoing finished runs, the dask executor."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import tiny_workload
from mrsched.cli import main
from mrsched.expe.executors import DaskExecutor, make_executor
from mrsched.expe.launch import campaign_status, run_campaign
from mrsched.expe.manifest import is_complete, read_manifest


def campaign_file(tmp_path: Path, inputs, *, policies: str, workloads: int = 1,
                  extra: str = "") -> Path:
    wls = [inputs["workload"]] + [tiny_workload(tmp_path / f"wl{i}.json", jobs=10, seed=i)
                                  for i in range(1, workloads)]
    path = tmp_path / "camp.yaml"
    path.write_text(f"""
name: tiny
timeout: 60
parallelism: 2
platforms:
  - {{generate: cluster, nodes: 4, storage: 1, bb_capacity: 10GB, name: c4}}
workloads: [{", ".join(str(w) for w in wls)}]
policies: {policies}
{extra}
""")
    return path


def run_dirs(campaign_dir: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted((campaign_dir / "runs").iterdir())}


def test_campaign_runs_records_failure_and_resumes(tmp_path, inputs, engine_env, capsys):
    path = campaign_file(tmp_path, inputs,
                         policies="[fcfs, {policy: fcfs-easy, options: {order: [fcfs, sjf]}}, "
                                  "'misbehaving:CrashingScheduler']")
    summary = run_campaign(path, progress=False, report=False)
    out = tmp_path / "results" / "tiny"
    assert summary.campaign_dir == out.resolve()
    assert summary.total == 4 and summary.ok == 3 and summary.skipped == 0
    assert list(summary.failed) == ["CrashingScheduler-c4-workload"]
    assert "policy exploded on purpose" in summary.failed["CrashingScheduler-c4-workload"]
    dirs = run_dirs(out)
    assert sorted(dirs) == ["CrashingScheduler-c4-workload", "fcfs-c4-workload",
                            "fcfs-easy_order=fcfs-c4-workload", "fcfs-easy_order=sjf-c4-workload"]
    # generated platform written once into inputs/ and named by what produced it
    [platform] = list((out / "inputs").iterdir())
    assert platform.name.startswith("platform-c4-") and platform.suffix == ".xml"
    assert read_manifest(dirs["fcfs-c4-workload"])["platform"] == str(platform)
    assert (out / "campaign.yaml").is_file()
    # status sees the same
    status = campaign_status(path)
    assert status["counts"] == {"ok": 3, "failed": 1}
    # re-run: finished runs skipped, the failed one redone
    before = {n: read_manifest(d)["started"] for n, d in dirs.items()}
    code = main(["campaign", "run", str(path), "--no-progress", "--no-report"])
    assert code == 1  # still one failure
    assert "3 skipped" in capsys.readouterr().out
    after = {n: read_manifest(d)["started"] for n, d in dirs.items()}
    for name in before:
        assert (before[name] == after[name]) == (name != "CrashingScheduler-c4-workload")


def _started(d: Path) -> tuple[str, int]:
    return read_manifest(d)["started"], (d / "manifest.json").stat().st_mtime_ns


@pytest.mark.parametrize("sig", [signal.SIGTERM,
                                 pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_killed_campaign_resumes_to_same_results(tmp_path, inputs, engine_env, sig):
    path = campaign_file(tmp_path, inputs, workloads=3, policies="[fcfs, fcfs-easy]")  # 6 runs
    out = tmp_path / "results" / "tiny"
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", "campaign", "run", str(path),
                             "--jobs", "1", "--no-progress", "--no-report"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = [d for d in (out / "runs").glob("*") if (d / "manifest.json").exists()] \
            if (out / "runs").exists() else []
        if len(done) >= 2:
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err  # 143 for SIGTERM, 130 for SIGINT
    [line] = err.strip().splitlines()[-1:]
    assert f"interrupted ({signal.Signals(sig).name})" in line
    assert "interrupted or not started" in line
    assert "run the same command again to resume" in line
    for child in children:  # the run in flight was killed with its whole group
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    dirs = run_dirs(out)
    finished = {n: _started(d) for n, d in dirs.items() if is_complete(d)}
    assert 2 <= len(finished) < 6
    # no run interrupted mid-way was recorded as failed
    assert all(read_manifest(d) is None or read_manifest(d)["status"] == "ok" for d in dirs.values())
    # resume
    summary = run_campaign(path, progress=False, report=False)
    assert summary.skipped == len(finished) and summary.ok == 6 - len(finished)
    assert summary.all_ok
    dirs = run_dirs(out)
    assert len(dirs) == 6 and all(is_complete(d) for d in dirs.values())
    for name, stamp in finished.items():
        assert _started(dirs[name]) == stamp  # not redone
    # same results as an uninterrupted campaign
    fresh = run_campaign(path, output=tmp_path / "fresh", progress=False, report=False)
    assert fresh.ok == 6
    for name, d in dirs.items():
        assert (d / "out_jobs.csv").read_text() == (fresh.campaign_dir / "runs" / name / "out_jobs.csv").read_text()
    from mrsched.analysis import campaign_metrics

    cols = lambda df: df.drop(columns=[c for c in df.columns if "wall" in c or "time_s" in c
                                       or c in ("dir", "path", "run_dir", "cpu_time", "peak_memory_mb")],
                           errors="ignore")
    assert (campaign_metrics(out)["cpu_time"] > 0).all()   # each run's cost, from its manifest
    assert (campaign_metrics(out)["peak_memory_mb"] > 0).all()
    a = cols(campaign_metrics(out)).sort_values("run_id").reset_index(drop=True)
    b = cols(campaign_metrics(fresh.campaign_dir)).sort_values("run_id").reset_index(drop=True)
    num = a.select_dtypes("number").columns
    assert list(num) and a[num].equals(b[num])


def test_dask_executor_runs_a_tiny_campaign(tmp_path, inputs, engine_env):
    import distributed
    path = campaign_file(tmp_path, inputs, policies="[fcfs, fcfs-easy]", workloads=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp", host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        executor = make_executor("dask://" + address[len("tcp://"):], jobs=1)
        assert isinstance(executor, DaskExecutor)
        summary = run_campaign(path, executor=executor, progress=False, report=False)
    assert summary.ok == 4 and summary.all_ok
    for d in run_dirs(summary.campaign_dir).values():
        assert is_complete(d)


def test_unknown_executor(tmp_path):
    from mrsched.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown executor"):
        make_executor("ray://x", jobs=1)


def test_campaign_on_the_batsim_engine_and_status_cli(tmp_path, inputs, engine_env, capsys):
    import shlex

    path = campaign_file(tmp_path, inputs, policies="[fcfs, filler]",
                         extra=f"engine: batsim\nbatsim: {shlex.quote(engine_env['batsim'])}")
    assert main(["campaign", "status", str(path)]) == 0
    assert "2 runs: 2 pending" in capsys.readouterr().out
    summary = run_campaign(path, progress=False, report=False)
    assert summary.ok == 2
    for d in run_dirs(summary.campaign_dir).values():
        manifest = read_manifest(d)
        assert manifest["engine"] == "batsim" and len(manifest["engine_commands"]) == 2
        assert (d / "scheduler.log").is_file() and (d / "batsim.log").is_file()
    assert main(["campaign", "status", str(path), "-v"]) == 0
    out = capsys.readouterr().out
    assert "2 runs: 2 ok" in out and "ok         fcfs-c4-workload" in out
    # a broken run directory (output deleted) is seen and redone
    (summary.campaign_dir / "runs" / "fcfs-c4-workload" / "out_jobs.csv").unlink()
    assert main(["campaign", "status", str(path)]) == 0
    assert "1 incomplete" in capsys.readouterr().out
    again = run_campaign(path, progress=False, report=False)
    assert again.skipped == 1 and again.ok == 1


def test_runs_of_changed_inputs_are_redone_not_skipped(tmp_path, inputs, engine_env):
    """A finished run whose workload file, generated input or options changed since is redone:
    resuming never mixes results of the old inputs into the campaign."""
    path = campaign_file(tmp_path, inputs, policies="[fcfs]")
    assert run_campaign(path, progress=False, report=False).ok == 1
    assert run_campaign(path, progress=False, report=False).skipped == 1
    tiny_workload(inputs["workload"], jobs=5, seed=7)            # the user edits the workload
    status = campaign_status(path)
    assert status["counts"] == {"outdated": 1}
    assert "workload file" in status["runs"][0]["error"] and "changed" in status["runs"][0]["error"]
    lines = []
    summary = run_campaign(path, progress=False, report=False, log=lines.append)
    assert summary.ok == 1 and summary.skipped == 0
    assert any(line.startswith("run fcfs-c4-workload is redone: its workload file") for line in lines)
    [run_dir] = run_dirs(tmp_path / "results" / "tiny").values()
    with open(run_dir / "out_jobs.csv") as fh:
        assert sum(1 for _ in fh) == 1 + 5
    # a generated platform produced by another command is another input: redone too
    path.write_text(path.read_text().replace("nodes: 4, storage: 1", "nodes: 5, storage: 1"))
    assert run_campaign(path, progress=False, report=False).skipped == 0


def test_a_campaign_folder_moved_elsewhere_keeps_its_finished_runs(tmp_path, inputs, engine_env):
    """Inputs are recognised by content: a copied folder (its generated platform now at another
    path, same bytes) is not 'outdated'; a changed input still is."""
    import shutil

    first = tmp_path / "first"
    first.mkdir()
    path = campaign_file(first, inputs, policies="[fcfs]")
    summary = run_campaign(path, progress=False, report=False)
    assert summary.ok == 1
    moved = tmp_path / "moved"
    shutil.copytree(first, moved)
    status = campaign_status(moved / "camp.yaml")
    assert status["counts"] == {"ok": 1}, status
    assert run_campaign(moved / "camp.yaml", progress=False, report=False).skipped == 1
    tiny_workload(inputs["workload"], jobs=5, seed=7)
    assert campaign_status(moved / "camp.yaml")["counts"] == {"outdated": 1}


def test_an_output_outside_the_campaign_folder_is_warned_about(tmp_path, inputs, engine_env):
    from mrsched.expe.campaign import load_campaign
    from mrsched.expe.launch import output_outside

    home = tmp_path / "home"
    home.mkdir()
    path = campaign_file(home, inputs, policies="[fcfs]", extra="output: ../elsewhere")
    warning = output_outside(load_campaign(path))
    assert warning and "writes outside the campaign file's folder" in warning and "elsewhere" in warning
    lines = []
    run_campaign(path, progress=False, report=False, log=lines.append)
    assert any("warning:" in line and "outside" in line for line in lines)
    inside = campaign_file(home, inputs, policies="[fcfs]", extra="output: results/here")
    assert output_outside(load_campaign(inside)) is None
    assert output_outside(load_campaign(path, output=tmp_path / "mine")) is None   # the user's choice
