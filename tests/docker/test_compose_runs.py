"""``--engine docker`` against a real Docker daemon, through docker/docker-compose.yml.

Batsim is the stand-in image (docker/standin: ``mrsched simulate``, Batsim's command line)
since oarteam/batsim cannot be pulled here; the scheduler image is docker/Dockerfile's. Runs
only under ``docker/ci-test.sh`` (tests/docker/conftest.py), which builds both images.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mrsched.cli import main
from mrsched.expe import engines
from mrsched.expe.launch import run_campaign
from mrsched.expe.manifest import is_complete, read_manifest
from mrsched.expe.spec import RunSpec

STANDIN = os.environ.get("STANDIN_IMAGE", "mrsched-batsim-standin:latest")
HANG = "mrsched-test-hang:latest"
FAIL = "mrsched-test-fail:latest"


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True,
                          timeout=120).stdout


def compose_leftovers() -> list[str]:
    """Containers and networks of mrsched's compose projects on the daemon (a user's own
    projects on a shared daemon do not count)."""
    fmt = '{{.Label "com.docker.compose.project"}} {{.Name}}'
    label = "label=com.docker.compose.project"
    found = docker("ps", "-a", "--filter", label, "--format", fmt.replace(".Name", ".Names"))
    found += docker("network", "ls", "--filter", label, "--format", fmt)
    return [line for line in found.splitlines() if line.startswith("mrsched-")]


@pytest.fixture(autouse=True)
def standin_batsim(monkeypatch):
    monkeypatch.setenv("BATSIM_IMAGE", STANDIN)
    monkeypatch.delenv("MRSCHED_IMAGE", raising=False)
    yield
    assert compose_leftovers() == []  # every test leaves the daemon as it found it


def write_inputs(folder: Path, jobs: int) -> dict[str, Path]:
    """A 4-node cluster and ``jobs`` delay jobs whose order differs between fcfs and SJF."""
    from mrsched.platforms.cluster import generate_cluster

    platform = folder / "platform.xml"
    platform.write_text(generate_cluster(nodes=4, storage=1, bb_capacity="10GB").xml)
    entries, profiles = [], {}
    for i in range(jobs):
        run = 40 + (i * 37) % 200
        profiles[f"d{run}"] = {"type": "delay", "delay": run}
        entries.append({"id": str(i), "subtime": 5.0 * i, "walltime": 2 * run,
                        "res": 1 + (i * 3) % 4, "profile": f"d{run}"})
    workload = folder / "workload.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": entries, "profiles": profiles}))
    return {"platform": platform, "workload": workload}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    return write_inputs(tmp_path_factory.mktemp("inputs"), 16)


@pytest.fixture(scope="module")
def long_inputs(tmp_path_factory) -> dict[str, Path]:
    """3000 jobs: a few seconds of simulation over ZeroMQ, time enough to kill a run mid-way."""
    return write_inputs(tmp_path_factory.mktemp("long"), 3000)


def run_cli(inputs, out: Path, *extra: str) -> int:
    return main(["run", "--platform", str(inputs["platform"]), "--workload",
                 str(inputs["workload"]), "--policy", "fcfs-easy", "--option", "order=sjf",
                 "--out", str(out), *extra])


def test_docker_run_gives_the_embedded_run_outputs(inputs, tmp_path):
    assert run_cli(inputs, tmp_path / "docker", "--engine", "docker") == 0
    assert run_cli(inputs, tmp_path / "embedded") == 0
    docker_jobs = (tmp_path / "docker" / "out_jobs.csv").read_text()
    assert docker_jobs == (tmp_path / "embedded" / "out_jobs.csv").read_text()
    assert len(docker_jobs.splitlines()) == 17
    manifest = read_manifest(tmp_path / "docker")
    assert manifest["status"] == "ok" and manifest["engine"] == "docker"
    assert " up --no-build " in manifest["engine_commands"][0]
    log = (tmp_path / "docker" / "docker.log").read_text()
    assert "simulated 16 jobs" in log  # the stand-in's summary line, via compose's log
    for path in (tmp_path / "docker").rglob("*"):  # everything the containers wrote: ours
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid()), path


def test_containers_run_as_the_uid_the_engine_passes(inputs, tmp_path, monkeypatch):
    """Outputs belong to the caller's uid:gid, root or not (here: a made-up user)."""
    out = tmp_path / "run"
    out.mkdir(mode=0o777)
    out.chmod(0o777)  # the made-up user must be able to write there
    monkeypatch.setattr(engines.os, "getuid", lambda: 4321)
    monkeypatch.setattr(engines.os, "getgid", lambda: 4322)
    spec = RunSpec(run_id="uid", out_dir=str(out), platform=str(inputs["platform"]),
                   workload=str(inputs["workload"]), policy="fcfs", engine="docker", timeout=120)
    result = engines.run_docker(spec)
    assert result.status == "ok", result.error
    for name in ("out_jobs.csv", "out_schedule.csv", "out_machine_states.csv"):
        st = (out / name).stat()
        assert (st.st_uid, st.st_gid) == (4321, 4322)


def campaign_file(tmp_path: Path, inputs, engine: str) -> Path:
    path = tmp_path / f"camp-{engine}.yaml"
    path.write_text(f"""
name: dock
engine: {engine}
timeout: 120
parallelism: 2
platforms: [{inputs['platform']}]
workloads: [{inputs['workload']}]
policies: [fcfs, {{policy: fcfs-easy, options: {{order: sjf}}}}]
""")
    return path


def jobs_csvs(campaign_dir: Path) -> dict[str, str]:
    return {d.name: (d / "out_jobs.csv").read_text() for d in (campaign_dir / "runs").iterdir()}


def test_two_run_campaign_on_docker_matches_embedded(inputs, tmp_path, capsys):
    code = main(["campaign", "run", str(campaign_file(tmp_path, inputs, "docker")),
                 "--out", str(tmp_path / "docker"), "--no-progress", "--no-report"])
    assert code == 0, capsys.readouterr()
    assert "2 ok, 0 skipped" in capsys.readouterr().out
    embedded = run_campaign(campaign_file(tmp_path, inputs, "embedded"),
                            output=tmp_path / "embedded", progress=False, report=False)
    assert embedded.all_ok
    docker_runs = jobs_csvs(tmp_path / "docker")
    assert len(docker_runs) == 2 and docker_runs == jobs_csvs(embedded.campaign_dir)
    assert len(set(docker_runs.values())) == 2  # the two policies did schedule differently


def test_killed_docker_campaign_leaves_no_container_and_resumes(long_inputs, tmp_path):
    inputs = long_inputs
    path = campaign_file(tmp_path, inputs, "docker")
    out = tmp_path / "results" / "dock"
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", "campaign", "run", str(path),
                             "--jobs", "1", "--no-progress", "--no-report"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:  # the first run done, the second one's Batsim container up: kill then
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        done = [d for d in out.glob("runs/*") if is_complete(d)]
        if done and docker("ps", "-q", "--filter", "label=com.docker.compose.service=batsim"):
            break
        time.sleep(0.1)
    assert compose_leftovers()  # the in-flight run's containers and network, seen
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "interrupted (SIGTERM)" in err, err  # 128 + SIGTERM
    assert compose_leftovers() == []  # containers and network gone with the campaign
    dirs = sorted(out.glob("runs/*"))
    assert len(dirs) == 2 and [is_complete(d) for d in dirs].count(True) == 1
    summary = run_campaign(path, progress=False, report=False)
    assert (summary.skipped, summary.ok, summary.all_ok) == (1, 1, True)
    embedded = run_campaign(campaign_file(tmp_path, inputs, "embedded"),
                            output=tmp_path / "embedded", progress=False, report=False)
    assert jobs_csvs(out) == jobs_csvs(embedded.campaign_dir)


@pytest.fixture(scope="module")
def hanging_batsim() -> str:
    """A Batsim image that never connects (as a Batsim stuck on a huge platform would)."""
    dockerfile = f'FROM {STANDIN}\nENTRYPOINT ["sh", "-c", "sleep 600", "hang"]\n'
    subprocess.run(["docker", "build", "-q", "-t", HANG, "-"], input=dockerfile, text=True,
                   check=True, capture_output=True, timeout=120)
    yield HANG
    subprocess.run(["docker", "rmi", "-f", HANG], capture_output=True, timeout=120)


def test_timeout_stops_the_containers(inputs, tmp_path, monkeypatch, hanging_batsim, capsys):
    monkeypatch.setenv("BATSIM_IMAGE", hanging_batsim)
    started = time.monotonic()
    assert run_cli(inputs, tmp_path / "r", "--engine", "docker", "--timeout", "4") == 2
    elapsed = time.monotonic() - started
    assert capsys.readouterr().err.startswith(
        "mrsched run: error: run timeout: no result within the 4 s timeout: containers stopped")
    assert read_manifest(tmp_path / "r")["status"] == "timeout"
    # the containers are removed right after the timeout, not stopped gracefully
    assert elapsed < 4 + 20, elapsed
    assert compose_leftovers() == []


def test_malformed_platform_is_refused_before_any_container(inputs, tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<platform version='4.1'><zone")
    code = main(["run", "--platform", str(bad), "--workload", str(inputs["workload"]),
                 "--policy", "fcfs", "--out", str(tmp_path / "r"), "--engine", "docker"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"mrsched run: error: {bad}:1: malformed XML"), err


@pytest.fixture(scope="module")
def failing_batsim() -> str:
    """A Batsim image that stops at once with an error of its own, as Batsim does on input
    it refuses that the host's checks let through."""
    script = "echo 'batsim: the platform has no master host' >&2; exit 3"
    dockerfile = f'FROM {STANDIN}\nENTRYPOINT ["sh", "-c", "{script}", "fail"]\n'
    subprocess.run(["docker", "build", "-q", "-t", FAIL, "-"], input=dockerfile, text=True,
                   check=True, capture_output=True, timeout=120)
    yield FAIL
    subprocess.run(["docker", "rmi", "-f", FAIL], capture_output=True, timeout=120)


def test_failing_batsim_is_reported_in_one_line(inputs, tmp_path, monkeypatch, failing_batsim,
                                                capsys):
    monkeypatch.setenv("BATSIM_IMAGE", failing_batsim)
    assert run_cli(inputs, tmp_path / "r", "--engine", "docker") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("mrsched run: error: run failed: batsim"), err
    assert "the platform has no master host" in err, err
    assert read_manifest(tmp_path / "r")["status"] == "failed"


def test_missing_image_and_daemon_are_one_line_errors(inputs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MRSCHED_IMAGE", "mrsched-absent:0")
    assert run_cli(inputs, tmp_path / "a", "--engine", "docker") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("docker image 'mrsched-absent:0' (scheduler service) "
                                     "is not here (") in err
    assert re.search(r"is not here \((docker compose|docker-compose) -f \S+/docker/docker-compose\.yml "
                     r"build\)", err)  # the command that builds it, with this machine's compose
    with monkeypatch.context() as patch:  # undone before the leftovers check
        patch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
        assert run_cli(inputs, tmp_path / "b", "--engine", "docker") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Docker engine answers (docker info: " in err


def test_interrupted_run_removes_its_containers(inputs, tmp_path, hanging_batsim):
    env = dict(os.environ, BATSIM_IMAGE=hanging_batsim)
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", "run", "--platform",
                             str(inputs["platform"]), "--workload", str(inputs["workload"]),
                             "--policy", "fcfs", "--out", str(tmp_path / "r"), "--engine", "docker"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not docker("ps", "-q", "--filter", "label=com.docker.compose.service=batsim"):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "mrsched run: interrupted" in err, err
    assert compose_leftovers() == []


def test_failing_scheduler_is_reported_in_one_line(inputs, tmp_path):
    """A policy the image does not have (say, a user's module.path:Class): the scheduler
    container exits 2 and the run fails at once with its error line, Batsim stopped."""
    out = tmp_path / "r"
    out.mkdir()
    spec = RunSpec(run_id="bad", out_dir=str(out), platform=str(inputs["platform"]),
                   workload=str(inputs["workload"]), policy="mymodule:MyScheduler",
                   engine="docker", timeout=120)
    started = time.monotonic()
    result = engines.run_docker(spec)
    assert result.status == "failed"
    assert result.error.startswith("scheduler: mrsched serve: error: ") and "mymodule" in result.error
    assert time.monotonic() - started < 60  # not Batsim's 300 s wait for an answer
