"""The docker engine's command construction, checked without a Docker daemon: the compose
file, the Dockerfiles, the variables and commands ``run_docker`` would use, its one-line
errors (against stand-in ``docker`` executables), and the Batsim stand-in's relay.

The same files run for real in tests/docker/ (``bash docker/ci-test.sh``)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import socket
import tomllib
from pathlib import Path

import pytest
import yaml

from mrsched.cli import build_parser
from mrsched.errors import SimulationError
from mrsched.expe import engines
from mrsched.expe.spec import RunSpec


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


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR:-default}`` / ``${VAR}`` substitution (all the file uses)."""
    def one(match):
        value = env.get(match["name"])
        return value if value else (match["default"] or "")
    return re.sub(r"\$\{(?P<name>\w+)(?::-(?P<default>[^}]*))?\}", one, text)


def spec_for(tmp_path: Path, **kw) -> RunSpec:
    base = dict(run_id="fcfs-easy_order=sjf-c4-w0", out_dir=str(tmp_path / "run"),
                platform=str(tmp_path / "p.xml"), workload=str(tmp_path / "w.json"),
                policy="fcfs-easy", options={"order": "sjf"}, engine="docker")
    base.update(kw)
    return RunSpec(**base)


# ---- the compose file ------------------------------------------------------------------


def test_compose_services_images_and_volumes(compose):
    assert "name" not in compose  # compose v1 (docker-compose 1.29) refuses a top-level name
    services = compose["services"]
    assert set(services) == {"batsim", "scheduler"}
    assert services["batsim"]["image"] == "${BATSIM_IMAGE:-%s}" % engines.DEFAULT_BATSIM_IMAGE
    assert services["scheduler"]["image"] == "${MRSCHED_IMAGE:-%s}" % engines.DEFAULT_MRSCHED_IMAGE
    assert re.fullmatch(r"oarteam/batsim:4\.\d+\.\d+", engines.DEFAULT_BATSIM_IMAGE)
    assert services["scheduler"]["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    for svc in services.values():
        assert svc["volumes"] == ["${MRSCHED_DATA:-./data}:/data"]  # the run directory
        assert svc["user"] == "${MRSCHED_UID:-1000:1000}"  # outputs owned by the caller
        assert svc["init"] is True  # SIGTERM reaches the process: `down` is prompt
    assert services["batsim"]["depends_on"] == ["scheduler"]
    assert "ports" not in services["scheduler"]  # nothing published on the host


def test_compose_commands_as_the_engine_fills_them(compose, tmp_path):
    """With run_docker's variables, each service's command parses with its own CLI."""
    spec = spec_for(tmp_path, options={"order": "sjf", "note": "a b"},
                    run_id="io", policy="fcfs-bb")
    env = engines.compose_environment(spec)
    sched = shlex.split(interpolate(compose["services"]["scheduler"]["command"], env))
    args = build_parser().parse_args(["serve", *sched])
    assert args.policy == "fcfs-bb" and args.allow_remote
    assert args.option == ["order=sjf", "note=a b"]  # quoted through the shell-like split
    assert args.socket == "tcp://0.0.0.0:28000"
    batsim = shlex.split(interpolate(compose["services"]["batsim"]["command"], env))
    args = build_parser().parse_args(["simulate", *batsim])
    assert args.platform == "/data/inputs/platform.xml"
    assert args.workload == ["/data/inputs/workload.json"]
    assert args.export == "/data/out"  # -> out_jobs.csv in the run directory
    assert args.socket_endpoint == "tcp://scheduler:28000"  # the service the scheduler is
    assert not args.enable_dynamic_jobs


def test_compose_environment(tmp_path):
    spec = spec_for(tmp_path, options={"job_model": "io-phased"})
    env = engines.compose_environment(spec)
    assert env == {
        "MRSCHED_DATA": str((tmp_path / "run").resolve()), "MRSCHED_POLICY": "fcfs-easy",
        "MRSCHED_OPTIONS": "--option=job_model=io-phased",
        "MRSCHED_PLATFORM": "inputs/platform.xml", "MRSCHED_WORKLOAD": "inputs/workload.json",
        "MRSCHED_EXPORT": "out", "MRSCHED_UID": f"{os.getuid()}:{os.getgid()}",
        "MRSCHED_BATSIM_FLAGS": "--enable-dynamic-jobs"}
    compose_text = engines.compose_file().read_text()
    for var in env:  # every variable the engine sets is read by the compose file
        assert "${" + var + ":-" in compose_text


def test_compose_project_names(tmp_path):
    a = engines.compose_project(spec_for(tmp_path))
    assert a == engines.compose_project(spec_for(tmp_path))  # a rerun finds its leftovers
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", a) and a.startswith("mrsched-fcfs-easy-order-sjf")
    other = engines.compose_project(spec_for(tmp_path, out_dir=str(tmp_path / "b" / "run")))
    assert other != a  # same run id in another campaign: another project
    assert re.fullmatch(r"mrsched-[0-9a-f]{8}", engines.compose_project(spec_for(tmp_path, run_id="++")))


def test_compose_commands(tmp_path):
    spec = spec_for(tmp_path)
    cfile = tmp_path / "c.yml"
    cmds = engines.compose_commands(spec, ["docker-compose"], cfile)
    assert cmds.project == engines.compose_project(spec)
    # no --abort-on-container-exit: the scheduler ending first must not stop Batsim
    assert cmds.up == ["docker-compose", "-f", str(cfile), "-p", cmds.project,
                       "up", "--no-build", "--no-color"]
    v2 = engines.compose_commands(spec, ["docker", "compose"], cfile)
    assert v2.up[:2] == ["docker", "compose"] and v2.up[2:] == cmds.up[1:]
    assert cmds.env == engines.compose_environment(spec)


# ---- the Dockerfiles ---------------------------------------------------------------------


def test_dockerfile_online_default_and_offline_arguments(repo_dir):
    text = (repo_dir / "docker" / "Dockerfile").read_text()
    assert not text.startswith("# syntax=")  # BuildKit would pull its frontend: no offline build
    instr = dockerfile_instructions(text)
    assert instr[0] == ("ARG", "BASE_IMAGE=python:3.11-slim")  # users: a normal online build
    froms = [rest for word, rest in instr if word == "FROM"]
    assert froms == ["${BASE_IMAGE} AS build", "${BASE_IMAGE} AS runtime"]
    runs = " ".join(rest for word, rest in instr if word == "RUN")
    assert "pip install ${PIP_INSTALL_OPTIONS} /src" in runs
    assert ("ARG", 'PIP_INSTALL_OPTIONS=""') in instr
    assert ("COPY", "docker/wheelhouse/ /wheelhouse/") in instr
    runtime = instr[[w for w, _ in instr].index("FROM", 2):]
    words = dict(runtime)
    assert words["ENTRYPOINT"] == '["mrsched", "serve"]'
    assert "--allow-remote" in words["CMD"] and "USER" in words
    assert ("COPY", "--from=build /opt/mrsched /opt/mrsched") in runtime


def test_dockerfile_copies_every_package_folder(repo_dir):
    instr = dockerfile_instructions((repo_dir / "docker" / "Dockerfile").read_text())
    copied = {r.split()[0].rstrip("/") for w, r in instr if w == "COPY" and not r.startswith("--")}
    pyproject = tomllib.loads((repo_dir / "pyproject.toml").read_text())
    folders = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    assert folders <= copied
    script = (repo_dir / "docker" / "build-offline.sh").read_text()
    for folder in folders:  # the offline build context holds them too
        assert re.search(rf"\b{folder}\b", script.split("tar --exclude")[1].split("|")[0])


def test_wheelhouse_folder_exists_for_online_builds(repo_dir):
    """COPY of a missing folder fails the build: the folder is committed, its wheels are not."""
    folder = repo_dir / "docker" / "wheelhouse"
    assert (folder / "README.md").is_file()
    assert (folder / ".gitignore").read_text().split() == ["*", "!README.md", "!.gitignore"]


def test_standin_dockerfile(repo_dir):
    instr = dockerfile_instructions((repo_dir / "docker" / "standin" / "Dockerfile").read_text())
    assert instr[0] == ("ARG", f"MRSCHED_IMAGE={engines.DEFAULT_MRSCHED_IMAGE}")
    assert ("FROM", "${MRSCHED_IMAGE}") in instr
    assert dict(instr)["ENTRYPOINT"] == '["python3", "/opt/batsim_standin.py"]'
    assert ("COPY", "batsim_standin.py /opt/batsim_standin.py") in instr


# ---- the one-line errors, against stand-in docker executables ----------------------------

FAKE_DOCKER = """#!/bin/sh
# docker stand-in: behaviour from FAKE_* variables
case "$1" in
  info) [ -n "$FAKE_NO_DAEMON" ] && { echo "Cannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?" >&2; exit 1; }; echo 20.10.24; exit 0;;
  compose) [ -n "$FAKE_COMPOSE_V2" ] && { echo "Docker Compose version v2.20.0"; exit 0; }; echo "docker: 'compose' is not a docker command." >&2; exit 1;;
  image) for a; do last=$a; done
         case " $FAKE_IMAGES " in *" $last "*) echo sha256:1; exit 0;; esac
         echo "Error: No such image: $last" >&2; exit 1;;
esac
exit 3
"""
FAKE_COMPOSE_V1 = "#!/bin/sh\necho 'docker-compose version 1.29.2, build unknown'\n"


@pytest.fixture()
def fake_bin(tmp_path, monkeypatch):
    """A PATH holding only stand-in executables (and the shell they need)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(engines, "_COMPOSE", {})  # found compose commands are remembered
    for var in ("FAKE_NO_DAEMON", "FAKE_COMPOSE_V2", "FAKE_IMAGES", "MRSCHED_IMAGE", "BATSIM_IMAGE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FAKE_IMAGES", f"{engines.DEFAULT_MRSCHED_IMAGE} {engines.DEFAULT_BATSIM_IMAGE}")

    def add(name: str, text: str) -> None:
        (folder / name).write_text(text.replace("#!/bin/sh", f"#!{_sh()}", 1))
        (folder / name).chmod(0o755)
    return add


def _sh() -> str:
    for candidate in ("/bin/sh", "/usr/bin/sh"):
        if Path(candidate).exists():
            return candidate
    pytest.fail("no /bin/sh")


def test_no_docker_on_path(fake_bin):
    with pytest.raises(SimulationError) as info:
        engines.docker_compose_argv()
    assert str(info.value) == ("field 'engine': no Docker engine answers ('docker' is not on PATH) "
                               "(install Docker, or use --engine embedded / --engine batsim)")


def test_no_daemon(fake_bin, monkeypatch):
    fake_bin("docker", FAKE_DOCKER)
    monkeypatch.setenv("FAKE_NO_DAEMON", "1")
    with pytest.raises(SimulationError) as info:
        engines.docker_compose_argv()
    text = str(info.value)
    assert "no Docker engine answers (docker info: Cannot connect to the Docker daemon" in text
    assert "set DOCKER_HOST" in text and "\n" not in text


def test_no_compose(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    with pytest.raises(SimulationError, match=r"neither 'docker compose' \(v2\) nor "
                                              r"'docker-compose' \(v1\) runs"):
        engines.docker_compose_argv()


def test_compose_v2_preferred_then_v1(fake_bin, monkeypatch):
    fake_bin("docker", FAKE_DOCKER)
    fake_bin("docker-compose", FAKE_COMPOSE_V1)
    assert engines.docker_compose_argv() == ["docker-compose"]
    (Path(os.environ["PATH"]) / "docker-compose").unlink()
    assert engines.docker_compose_argv() == ["docker-compose"]  # remembered for this PATH
    monkeypatch.setattr(engines, "_COMPOSE", {})
    monkeypatch.setenv("FAKE_COMPOSE_V2", "1")
    assert engines.docker_compose_argv() == ["docker", "compose"]


@pytest.mark.parametrize("missing, service, hint", [
    ("batsim", "batsim", f"(docker pull {engines.DEFAULT_BATSIM_IMAGE})"),
    ("scheduler", "scheduler", f"(docker-compose -f {engines.compose_file()} build)"),
])
def test_missing_image(fake_bin, monkeypatch, missing, service, hint):
    fake_bin("docker", FAKE_DOCKER)
    fake_bin("docker-compose", FAKE_COMPOSE_V1)
    present = engines.DEFAULT_BATSIM_IMAGE if missing == "scheduler" else "my/sched:1"
    monkeypatch.setenv("MRSCHED_IMAGE", "my/sched:1")
    monkeypatch.setenv("FAKE_IMAGES", present)
    image = "my/sched:1" if missing == "scheduler" else engines.DEFAULT_BATSIM_IMAGE
    with pytest.raises(SimulationError) as info:
        engines.docker_compose_argv()
    assert f"docker image '{image}' ({service} service) is not here" in str(info.value)
    assert hint in str(info.value)


def test_images_follow_the_environment(monkeypatch):
    monkeypatch.setenv("BATSIM_IMAGE", "oarteam/batsim:4.2.0")
    monkeypatch.delenv("MRSCHED_IMAGE", raising=False)
    assert engines.docker_images() == {"scheduler": engines.DEFAULT_MRSCHED_IMAGE,
                                       "batsim": "oarteam/batsim:4.2.0"}


def test_cli_run_refuses_docker_without_daemon_in_one_line(fake_bin, monkeypatch, tmp_path, capsys, repo_dir):
    from mrsched.cli import main

    fake_bin("docker", FAKE_DOCKER)
    monkeypatch.setenv("FAKE_NO_DAEMON", "1")
    # Valid inputs: `mrsched run` checks its inputs before it asks for the engine.
    (tmp_path / "w.json").write_text(json.dumps({
        "nb_res": 16, "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "p"}],
        "profiles": {"p": {"type": "delay", "delay": 10}}}))
    code = main(["run", "--platform", str(repo_dir / "platforms" / "cluster16.xml"), "--workload", str(tmp_path / "w.json"),
                 "--policy", "fcfs", "--out", str(tmp_path / "r"), "--engine", "docker"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("mrsched run: error: field 'engine': no Docker engine answers (docker info:")


# ---- the Batsim stand-in's relay ---------------------------------------------------------


@pytest.fixture(scope="module")
def standin(repo_dir):
    spec = importlib.util.spec_from_file_location(
        "batsim_standin", repo_dir / "docker" / "standin" / "batsim_standin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_standin_localizes_only_remote_endpoints(standin):
    argv = ["-p", "/data/p.xml", "-s", "tcp://scheduler:28000", "-e", "/data/out"]
    out = standin.localize(argv)
    assert out[:3] == argv[:3] and out[4:] == argv[4:]
    assert re.fullmatch(r"tcp://127\.0\.0\.1:\d+", out[3])
    assert standin.localize(["--socket-endpoint=tcp://scheduler:1"])[0].startswith(
        "--socket-endpoint=tcp://127.0.0.1:")
    for local in (["-s", "tcp://localhost:28000"], ["-s", "tcp://127.0.0.1:5"], ["-p", "x"]):
        assert standin.localize(local) == local


def test_standin_relay_carries_zeromq(standin):
    """A REQ through the relay reaches a REP on the far side and gets its answer back."""
    import zmq

    ctx = zmq.Context()
    rep = ctx.socket(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")
    req = ctx.socket(zmq.REQ)
    try:
        req.connect(standin.relay("127.0.0.1", port))
        for i in range(3):
            req.send(b"x" * 100_000 + bytes([i]))
            assert rep.poll(5000) and rep.recv()[-1] == i
            rep.send(b"ok%d" % i)
            assert req.poll(5000) and req.recv() == b"ok%d" % i
    finally:
        req.close(0)
        rep.close(0)
        ctx.term()


def test_standin_relay_refuses_nothing_until_the_far_side_listens(standin):
    """Before the scheduler listens, the relay drops the connection (ZeroMQ reconnects)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there
    endpoint = standin.relay("127.0.0.1", port)
    host, local_port = endpoint.removeprefix("tcp://").split(":")
    with socket.create_connection((host, int(local_port)), timeout=5) as conn:
        conn.settimeout(5)
        assert conn.recv(10) == b""  # closed, not hung
