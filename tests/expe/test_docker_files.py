"""The docker files say what the engine code expects (no Docker engine here to run them)."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from mrsched.cli import build_parser
from mrsched.errors import SimulationError
from mrsched.expe import engines


@pytest.fixture()
def compose(repo_dir):
    return yaml.safe_load((repo_dir / "docker" / "docker-compose.yml").read_text())


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_compose_services_images_and_volumes(compose):
    services = compose["services"]
    assert set(services) == {"batsim", "scheduler"}
    assert re.fullmatch(r"\$\{BATSIM_IMAGE:-oarteam/batsim:4\.\d+\.\d+\}", services["batsim"]["image"])
    assert services["scheduler"]["build"]["dockerfile"] == "docker/Dockerfile"
    for svc in services.values():  # one shared volume: the run directory as /data
        assert svc["volumes"] == ["${MRSCHED_DATA:-./data}:/data"]
    assert services["batsim"]["depends_on"] == ["scheduler"]
    assert "ports" not in services["scheduler"]  # nothing published on the host


def test_compose_commands_match_the_engine(compose):
    sched = shlex.split(compose["services"]["scheduler"]["command"])
    assert sched[0] == "${MRSCHED_POLICY:-fcfs}"
    assert sched[sched.index("--socket") + 1] == "tcp://0.0.0.0:28000"
    assert "--allow-remote" in sched
    batsim = shlex.split(compose["services"]["batsim"]["command"])
    flags = dict(zip(batsim[::2], batsim[1::2]))
    assert flags["-s"] == "tcp://scheduler:28000"  # the scheduler service, port it binds
    assert flags["-e"] == "/data/${MRSCHED_EXPORT:-out}"
    # the variables run_docker sets are the ones the compose file reads
    text = (engines.compose_file()).read_text()
    for var in ("MRSCHED_DATA", "MRSCHED_POLICY", "MRSCHED_OPTIONS", "MRSCHED_PLATFORM",
                "MRSCHED_WORKLOAD", "MRSCHED_EXPORT", "MRSCHED_UID"):
        assert "${" + var in text


def test_serve_accepts_the_compose_command(compose):
    sched = shlex.split(compose["services"]["scheduler"]["command"].replace(
        "${MRSCHED_POLICY:-fcfs}", "fcfs-bb").replace("${MRSCHED_OPTIONS:-}", "--option=depth=1"))
    args = build_parser().parse_args(["serve", *sched])
    assert args.policy == "fcfs-bb" and args.allow_remote and args.option == ["depth=1"]


def test_dockerfile_stages(repo_dir):
    instr = dockerfile_instructions((repo_dir / "docker" / "Dockerfile").read_text())
    froms = [rest for word, rest in instr if word == "FROM"]
    assert froms == ["python:3.11-slim AS build", "python:3.11-slim AS runtime"]
    runtime = instr[[w for w, _ in instr].index("FROM", 1):]
    words = dict(runtime)
    assert words["ENTRYPOINT"] == '["mrsched", "serve"]'
    assert "--allow-remote" in words["CMD"] and "USER" in words
    assert any(w == "COPY" and r.startswith("--from=build") for w, r in runtime)
    # every package folder of pyproject is copied into the build stage
    copied = {r.split()[0].rstrip("/") for w, r in instr if w == "COPY" and not r.startswith("--")}
    for folder in ("mrsched", "schedulers", "simulator", "platforms", "workloads", "expe", "analysis"):
        assert folder in copied


def test_docker_engine_fails_clearly_without_docker(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker on PATH at all
    with pytest.raises(SimulationError, match="no Docker engine answers"):
        engines.docker_compose_argv()


def test_docker_engine_fails_clearly_when_no_daemon_answers():
    import shutil
    import subprocess

    if shutil.which("docker") is None:
        pytest.skip("no docker client on PATH (covered by the test above)")
    probe = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
    if probe.returncode == 0:
        pytest.skip("a Docker engine answers here")
    with pytest.raises(SimulationError) as info:
        engines.docker_compose_argv()
    assert "no Docker engine answers" in str(info.value) and "--engine embedded" in str(info.value)
