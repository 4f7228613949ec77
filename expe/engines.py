"""Engines that execute one run: embedded (child process), a Batsim binary, docker compose.

Each takes a ``RunSpec`` and returns an ``EngineResult``; each writes Batsim's three output
files to ``{out_dir}/out_*.csv`` and its processes' logs next to them. A timeout or any
failure kills every process group it started (``mrsched.expe.processes``): no orphans.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mrsched.errors import ConfigError, SimulationError
from mrsched.expe import processes
from mrsched.expe.spec import RunSpec
from mrsched.expe.worker import CPU_PREFIX, ERROR_PREFIX, PEAK_PREFIX

POLL = 0.05  # seconds between liveness checks of the engine's processes
SERVE_EXIT_GRACE = 10.0  # seconds the scheduler may take to exit after Batsim ended
COMPOSE_FILE_ENV = "MRSCHED_COMPOSE_FILE"
# The images docker/docker-compose.yml falls back to (MRSCHED_IMAGE, BATSIM_IMAGE override both).
DEFAULT_MRSCHED_IMAGE = "mrsched:latest"
DEFAULT_BATSIM_IMAGE = "oarteam/batsim:4.0.0"
DOCKER_PROBE_TIMEOUT = 30.0  # seconds for `docker info`, `docker image inspect`, `compose version`
DOCKER_POLL = 0.25  # seconds between two looks at a run's containers
DOCKER_LOG_GRACE = 5.0  # seconds compose may take to print the last logs of a finished run


@dataclass
class EngineResult:
    status: str  # ok | failed | timeout
    error: str | None = None
    commands: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    cpu_time: float | None = None  # CPU seconds of the simulation process (embedded engine)
    peak_memory_mb: float | None = None  # its peak resident memory


def _reason(log: Path, code: int | None) -> str:
    """The line that explains a failure: the child's own error line, else the last line."""
    lines = processes.tail(log, 40)
    mine = [ln[len(ERROR_PREFIX):] for ln in lines if ln.startswith(ERROR_PREFIX)]
    if mine:
        return mine[-1]
    exit_text = processes.describe_exit(code)
    return f"{exit_text}: {lines[-1].strip()}" if lines else exit_text


def _last_value(log: Path, prefix: str) -> float | None:
    """The number on the worker's last ``prefix`` line (``CPU_PREFIX``, ``PEAK_PREFIX``), if any."""
    for line in reversed(processes.tail(log, 5)):
        if line.startswith(prefix):
            try:
                return float(line[len(prefix):])
            except ValueError:
                return None
    return None


def _wait(procs: dict[str, subprocess.Popen], main: str, timeout: float | None):
    """Wait until ``main`` exits or another process fails; None on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if procs[main].poll() is not None:
            return main
        for name, proc in procs.items():
            if name != main and proc.poll() not in (None, 0):
                return name
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(POLL)


def _wait_one(proc, name: str, timeout: float | None):
    """``_wait`` of one process: ``name`` when it exited, None on timeout (no polling delay
    where the process can be waited for with a timeout)."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return name


def run_embedded(spec: RunSpec) -> EngineResult:
    """The embedded simulator with the policy in-process, inside one child process: forked
    from this one where it can be (``processes.can_fork``: what this process imported is
    not imported again), else a fresh ``python -m mrsched.expe.worker`` under the guard.
    Either way ``argv`` is the command that redoes the run, as recorded."""
    out = Path(spec.out_dir)
    spec_file = out / "run_spec.json"
    spec_file.write_text(json.dumps(spec.to_dict(), indent=2, sort_keys=True))
    argv = processes.python_argv("mrsched.expe.worker", str(spec_file))
    log = out / "engine.log"
    if processes.can_fork():
        from mrsched.expe.worker import run_main

        proc = processes.fork_call(run_main, spec.to_dict(), log=log, timeout=spec.timeout)
    else:
        proc = processes.start(argv, log=log, timeout=spec.timeout)
    result = EngineResult("ok", commands=[shlex.join(argv)])
    try:
        done = _wait_one(proc, "engine", spec.timeout)
        if done is None:
            processes.kill_group(proc)
            result.status = "timeout"
            result.error = f"no result within the {spec.timeout:g} s timeout: engine killed"
        elif proc.returncode != 0:
            result.status, result.error = "failed", _reason(log, proc.returncode)
        else:
            result.cpu_time = _last_value(log, CPU_PREFIX)
            result.peak_memory_mb = _last_value(log, PEAK_PREFIX)
    finally:
        if proc.poll() is None:
            processes.kill_group(proc, grace=0.5)
        else:
            processes.finish(proc)
    return result


def free_port() -> int:
    """A free loopback TCP port (asked to the kernel, never a fixed one)."""
    import socket   # only the served engines need it

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def batsim_argv(batsim: str) -> list[str]:
    """``--batsim`` as argv: a path, a command string, or ``mrsched simulate`` (the stand-in)."""
    argv = shlex.split(batsim)
    if not argv:
        raise ConfigError("empty Batsim command", field="batsim")
    if argv[0] == "mrsched":  # this installation's mrsched, whatever the PATH says
        argv = processes.python_argv("mrsched.cli", *argv[1:])
    elif shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        raise ConfigError(f"Batsim command not found: '{argv[0]}'", field="batsim",
                          hint="give --batsim PATH to a batsim binary or a command string")
    return argv


def batsim_version(argv: list[str]) -> str | None:
    """``batsim --version`` (first line), or None for the stand-in or on any failure."""
    if argv[0] == sys.executable:
        return None  # `mrsched simulate`: the mrsched version is recorded already
    try:
        probe = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (probe.stdout or probe.stderr).strip().splitlines()
    return lines[0].strip() if probe.returncode == 0 and lines else None


def serve_argv(spec: RunSpec, url: str) -> list[str]:
    argv = processes.python_argv("mrsched.cli", "serve", spec.policy)
    for key, value in spec.options.items():
        argv += ["--option", f"{key}={value}"]
    return argv + ["--socket", url]


def run_batsim(spec: RunSpec) -> EngineResult:
    """A real Batsim process (REQ) against ``mrsched serve`` (REP) on a free loopback port."""
    if not spec.batsim:
        raise ConfigError("engine 'batsim' needs the Batsim command", field="batsim",
                          hint="--batsim /path/to/batsim, or --batsim 'mrsched simulate'")
    out = Path(spec.out_dir)
    url = f"tcp://127.0.0.1:{free_port()}"
    sched_cmd = serve_argv(spec, url)
    batsim = batsim_argv(spec.batsim)
    sim_cmd = batsim + ["-p", spec.platform, "-w", spec.workload, "-e", str(out / "out"), "-s", url,
                        *spec.batsim_flags()]
    result = EngineResult("ok", commands=[shlex.join(sched_cmd), shlex.join(sim_cmd)])
    version = batsim_version(batsim)
    if version:
        result.versions["batsim"] = version
    procs: dict[str, subprocess.Popen] = {}
    logs = {"scheduler": out / "scheduler.log", "batsim": out / "batsim.log"}
    try:
        procs["scheduler"] = processes.start(sched_cmd, log=logs["scheduler"], timeout=spec.timeout)
        procs["batsim"] = processes.start(sim_cmd, log=logs["batsim"], timeout=spec.timeout)
        started = time.monotonic()
        done = _wait(procs, "batsim", spec.timeout)
        if done is None:
            result.status = "timeout"
            result.error = f"no result within the {spec.timeout:g} s timeout: batsim and scheduler killed"
        elif done == "scheduler":
            result.status = "failed"
            result.error = "scheduler: " + _reason(logs["scheduler"], procs["scheduler"].returncode)
        elif procs["batsim"].returncode != 0:
            result.status = "failed"
            result.error = "batsim: " + _reason(logs["batsim"], procs["batsim"].returncode)
        else:  # Batsim ended well: the scheduler exits after SIMULATION_ENDS
            left = SERVE_EXIT_GRACE if spec.timeout is None else max(
                0.5, min(SERVE_EXIT_GRACE, spec.timeout - (time.monotonic() - started)))
            try:
                code = procs["scheduler"].wait(left)
            except subprocess.TimeoutExpired:
                code = None
            if code not in (0, None):
                result.status = "failed"
                result.error = "scheduler: " + _reason(logs["scheduler"], code)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                processes.kill_group(proc)
            else:
                processes.finish(proc)
    return result


def compose_file() -> Path:
    """``docker/docker-compose.yml`` of the checkout (or ``$MRSCHED_COMPOSE_FILE``)."""
    env = os.environ.get(COMPOSE_FILE_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "docker" / "docker-compose.yml"


def docker_images() -> dict[str, str]:
    """The image of each compose service, as the compose file resolves it from the environment."""
    return {"scheduler": os.environ.get("MRSCHED_IMAGE") or DEFAULT_MRSCHED_IMAGE,
            "batsim": os.environ.get("BATSIM_IMAGE") or DEFAULT_BATSIM_IMAGE}


def _one_line(proc: subprocess.CompletedProcess) -> str:
    """A command's error output on one line (at most 200 characters), else its exit."""
    text = " ".join((proc.stderr or proc.stdout or "").split())
    return text[:200] or processes.describe_exit(proc.returncode)


def _probe(argv: list[str]) -> subprocess.CompletedProcess | str:
    """Run a short docker command; its error text when it cannot even start."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=DOCKER_PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{shlex.join(argv)}: {exc}"


_COMPOSE: dict[str, list[str]] = {}  # PATH -> the compose command found there (v1 takes 2 s)


def _find_compose() -> list[str]:
    for argv in (["docker", "compose"], ["docker-compose"]):
        if argv[0] == "docker-compose" and shutil.which(argv[0]) is None:
            continue
        probe = _probe(argv + ["version"])
        if not isinstance(probe, str) and probe.returncode == 0:
            _COMPOSE[os.environ.get("PATH", "")] = argv
            return argv
    raise SimulationError("Docker Compose is not installed: neither 'docker compose' (v2) "
                          "nor 'docker-compose' (v1) runs", field="engine",
                          hint="install the compose plugin or docker-compose, or use "
                               "--engine embedded / --engine batsim")


def docker_compose_argv() -> list[str]:
    """The compose command (``docker compose`` v2, else ``docker-compose`` v1), once the Docker
    daemon answers and both images of the compose file are there.

    Each missing piece is one ``SimulationError`` line saying what to do: a run never pulls or
    builds an image by itself (``up --no-build``), which would hide minutes of downloads and
    fail anyway on a machine without a registry.
    """
    fallback = "use --engine embedded / --engine batsim"
    if shutil.which("docker") is None:
        raise SimulationError("no Docker engine answers ('docker' is not on PATH)", field="engine",
                              hint=f"install Docker, or {fallback}")
    info = _probe(["docker", "info", "--format", "{{.ServerVersion}}"])
    if isinstance(info, str) or info.returncode != 0:
        detail = info if isinstance(info, str) else "docker info: " + _one_line(info)
        raise SimulationError(f"no Docker engine answers ({detail})", field="engine",
                              hint=f"start the Docker daemon or set DOCKER_HOST, or {fallback}")
    compose = _COMPOSE.get(os.environ.get("PATH", ""))
    if compose is None:
        compose = _find_compose()
    for service, image in docker_images().items():
        probe = _probe(["docker", "image", "inspect", "--format", "{{.Id}}", image])
        if isinstance(probe, str) or probe.returncode != 0:
            how = (f"{' '.join(compose)} -f {compose_file()} build" if service == "scheduler"
                   else f"docker pull {image}")
            raise SimulationError(f"docker image '{image}' ({service} service) is not here",
                                  field="engine", hint=how)
    return compose


def compose_project(spec: RunSpec) -> str:
    """A compose project name per run directory, the same on every attempt: a rerun (a resumed
    campaign) first removes what a killed attempt may have left under that name."""
    out = str(Path(spec.out_dir).resolve())
    slug = "".join(c if c.isalnum() else "-" for c in spec.run_id.lower())[:30].strip("-")
    digest = hashlib.sha1(out.encode()).hexdigest()[:8]
    return f"mrsched-{slug}-{digest}" if slug else f"mrsched-{digest}"


def compose_environment(spec: RunSpec) -> dict[str, str]:
    """The variables docker/docker-compose.yml reads for this run (paths relative to /data)."""
    options = " ".join(shlex.quote(f"--option={k}={v}") for k, v in spec.options.items())
    return {"MRSCHED_DATA": str(Path(spec.out_dir).resolve()), "MRSCHED_POLICY": spec.policy,
            "MRSCHED_OPTIONS": options, "MRSCHED_PLATFORM": "inputs/platform.xml",
            "MRSCHED_WORKLOAD": "inputs/workload.json", "MRSCHED_EXPORT": "out",
            # both containers run as the caller: the run directory's files stay the user's
            "MRSCHED_UID": f"{os.getuid()}:{os.getgid()}",
            "MRSCHED_BATSIM_FLAGS": " ".join(spec.batsim_flags())}


@dataclass(frozen=True)
class ComposeCommands:
    """What ``run_docker`` runs for one spec: built without a daemon, so tests can check it."""

    env: dict[str, str]  # added to the caller's environment
    project: str
    up: list[str]


def compose_commands(spec: RunSpec, compose: list[str], cfile: Path) -> ComposeCommands:
    project = compose_project(spec)
    # --no-build: never build (nor, v1, pull) during a run. No --abort-on-container-exit:
    # it would also stop Batsim when the scheduler exits first after SIMULATION_ENDS, maybe
    # before Batsim has written its outputs; run_docker watches the containers instead.
    up = [*compose, "-f", str(cfile), "-p", project, "up", "--no-build", "--no-color"]
    return ComposeCommands(env=compose_environment(spec), project=project, up=up)


def container_states(project: str) -> dict[str, tuple[str, int, str]]:
    """``{service: (status, exit code, container id)}`` of a compose project's containers.

    Read from the labels compose v1 and v2 both set, so either version's naming works.
    """
    listed = _probe(["docker", "ps", "-a", "-q", "--no-trunc", "--filter",
                     f"label=com.docker.compose.project={project}"])
    if isinstance(listed, str) or listed.returncode != 0 or not listed.stdout.split():
        return {}
    fmt = ('{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} '
           '{{.State.ExitCode}} {{.Id}}')
    inspect = _probe(["docker", "inspect", "--format", fmt, *listed.stdout.split()])
    if isinstance(inspect, str):
        return {}
    states = {}
    for line in inspect.stdout.splitlines():  # a container removed meanwhile is just absent
        parts = line.split()
        if len(parts) == 4 and parts[2].lstrip("-").isdigit():
            states[parts[0]] = (parts[1], int(parts[2]), parts[3])
    return states


def _container_reason(service: str, state: tuple[str, int, str]) -> str:
    """``service: <its last error line>`` from the container's own log, else its exit."""
    _, code, cid = state
    logs = _probe(["docker", "logs", "--tail", "40", cid])
    lines = [] if isinstance(logs, str) else [
        ln.strip() for ln in (logs.stdout + "\n" + logs.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\berror\b", ln, re.IGNORECASE)]
    if errors:
        return f"{service}: {errors[-1]}"
    exit_text = processes.describe_exit(code)
    return f"{service}: {exit_text}: {lines[-1]}" if lines else f"{service}: {exit_text}"


def remove_project(project: str) -> list[str]:
    """Remove a compose project's containers (killed: the run is over or abandoned) and its
    networks; the ids removed. By the labels compose v1 and v2 both set, with the docker CLI
    rather than ``compose down`` (2 s of start-up for compose v1, and no stop grace needed)."""
    label = f"label=com.docker.compose.project={project}"
    removed = []
    for listing, removal in ((["ps", "-aq"], ["rm", "-f", "-v"]),
                             (["network", "ls", "-q"], ["network", "rm"])):
        found = _probe(["docker", *listing, "--filter", label])
        ids = [] if isinstance(found, str) or found.returncode != 0 else found.stdout.split()
        if ids:
            _probe(["docker", *removal, *ids])
            removed += ids
    return removed


_ENDED = ("exited", "dead")


def _watch(proc: subprocess.Popen, project: str, log: Path,
           timeout: float | None) -> tuple[str, str | None]:
    """Follow the two containers as ``run_batsim`` follows its two processes.

    (status, error): ok once Batsim exited 0 and the scheduler exited too; failed as soon as
    either container exits non-zero, or when the scheduler still runs ``SERVE_EXIT_GRACE``
    seconds after Batsim ended; timeout when ``timeout`` expires.
    """
    started = time.monotonic()
    batsim_ended = None
    while True:
        up_code = proc.poll()
        states = container_states(project)
        sched, batsim = states.get("scheduler"), states.get("batsim")
        if sched and sched[0] in _ENDED and sched[1] != 0:
            return "failed", _container_reason("scheduler", sched)
        if batsim and batsim[0] in _ENDED:
            if batsim[1] != 0:
                return "failed", _container_reason("batsim", batsim)
            if sched is None or sched[0] in _ENDED:
                return "ok", None
            batsim_ended = batsim_ended or time.monotonic()
            if time.monotonic() - batsim_ended > SERVE_EXIT_GRACE:
                return "failed", f"scheduler: still running {SERVE_EXIT_GRACE:g} s after Batsim ended"
        elif up_code is not None:  # compose ended and Batsim never finished
            return "failed", "docker compose: " + _reason(log, up_code)
        if timeout is not None and time.monotonic() - started >= timeout:
            return "timeout", f"no result within the {timeout:g} s timeout: containers stopped"
        time.sleep(DOCKER_POLL)


def run_docker(spec: RunSpec) -> EngineResult:
    """``docker compose`` with docker/docker-compose.yml: the Batsim image + our scheduler image.

    The inputs are copied into the run directory, which is mounted as ``/data`` in both
    containers; Batsim connects to ``tcp://scheduler:28000`` on the compose network. The
    timeout covers the containers: when it expires, or when the run fails or is killed,
    they are removed at once.
    """
    compose = docker_compose_argv()
    cfile = compose_file()
    if not cfile.is_file():
        raise ConfigError(f"compose file not found: {cfile}", field="engine",
                          hint=f"set ${COMPOSE_FILE_ENV}")
    out = Path(spec.out_dir).resolve()
    inputs = out / "inputs"
    inputs.mkdir(exist_ok=True)
    shutil.copyfile(spec.platform, inputs / "platform.xml")
    shutil.copyfile(spec.workload, inputs / "workload.json")
    commands = compose_commands(spec, compose, cfile)
    env = dict(os.environ, **commands.env)
    result = EngineResult("ok", commands=[shlex.join(commands.up)])
    log = out / "docker.log"
    remove_project(commands.project)  # what a killed earlier attempt at this run left
    proc = processes.start(commands.up, log=log, env=env)
    try:
        result.status, result.error = _watch(proc, commands.project, log, spec.timeout)
        if result.status == "ok":  # compose returns once it has printed the last logs
            try:
                proc.wait(DOCKER_LOG_GRACE)
            except subprocess.TimeoutExpired:
                pass
    finally:
        remove_project(commands.project)  # first: compose v1 would stop them gracefully
        if proc.poll() is None:
            processes.kill_group(proc)
        else:
            processes.finish(proc)
    return result


ENGINE_FUNCTIONS = {"embedded": run_embedded, "batsim": run_batsim, "docker": run_docker}
