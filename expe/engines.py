"""Engines that execute one run: embedded (child process), a Batsim binary, docker compose.

Each takes a ``RunSpec`` and returns an ``EngineResult``; each writes Batsim's three output
files to ``{out_dir}/out_*.csv`` and its processes' logs next to them. A timeout or any
failure kills every process group it started (``mrsched.expe.processes``): no orphans.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mrsched.errors import ConfigError, SimulationError
from mrsched.expe import processes
from mrsched.expe.spec import RunSpec
from mrsched.expe.worker import ERROR_PREFIX

POLL = 0.05  # seconds between liveness checks of the engine's processes
SERVE_EXIT_GRACE = 10.0  # seconds the scheduler may take to exit after Batsim ended
COMPOSE_FILE_ENV = "MRSCHED_COMPOSE_FILE"


@dataclass
class EngineResult:
    status: str  # ok | failed | timeout
    error: str | None = None
    commands: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


def _reason(log: Path, code: int | None) -> str:
    """The line that explains a failure: the child's own error line, else the last line."""
    lines = processes.tail(log, 40)
    mine = [ln[len(ERROR_PREFIX):] for ln in lines if ln.startswith(ERROR_PREFIX)]
    if mine:
        return mine[-1]
    exit_text = processes.describe_exit(code)
    return f"{exit_text}: {lines[-1].strip()}" if lines else exit_text


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


def run_embedded(spec: RunSpec) -> EngineResult:
    """The embedded simulator with the policy in-process, inside one child process."""
    out = Path(spec.out_dir)
    spec_file = out / "run_spec.json"
    spec_file.write_text(json.dumps(spec.to_dict(), indent=2, sort_keys=True))
    argv = processes.python_argv("mrsched.expe.worker", str(spec_file))
    log = out / "engine.log"
    proc = processes.start(argv, log=log, timeout=spec.timeout)
    result = EngineResult("ok", commands=[shlex.join(argv)])
    try:
        done = _wait({"engine": proc}, "engine", spec.timeout)
        if done is None:
            processes.kill_group(proc)
            result.status = "timeout"
            result.error = f"no result within the {spec.timeout:g} s timeout: engine killed"
        elif proc.returncode != 0:
            result.status, result.error = "failed", _reason(log, proc.returncode)
    finally:
        if proc.poll() is None:
            processes.kill_group(proc, grace=0.5)
        else:
            processes.finish(proc)
    return result


def free_port() -> int:
    """A free loopback TCP port (asked to the kernel, never a fixed one)."""
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


def docker_compose_argv() -> list[str]:
    """``docker compose`` (plugin) or ``docker-compose``, if a Docker engine answers."""
    candidates = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    if shutil.which("docker-compose"):
        candidates.append(["docker-compose"])
    problems = []
    for argv in candidates:
        try:
            probe = subprocess.run(argv + ["version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{' '.join(argv)}: {exc}")
            continue
        if probe.returncode != 0:
            first = ((probe.stderr or probe.stdout).strip().splitlines() or ["failed"])[0]
            problems.append(f"{' '.join(argv)}: {first}")
            continue
        try:
            info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"docker info: {exc}")
            continue
        if info.returncode == 0:
            return argv
        problems.append("docker info: " + " ".join((info.stderr or info.stdout).split())[:200])
    detail = "; ".join(problems) if problems else "neither 'docker' nor 'docker-compose' is on PATH"
    raise SimulationError(f"no Docker engine answers ({detail})", field="engine",
                          hint="start Docker, or use --engine embedded / --engine batsim")


def run_docker(spec: RunSpec) -> EngineResult:
    """``docker compose`` with docker/docker-compose.yml: official Batsim image + our scheduler.

    The inputs are copied into the run directory, which is mounted as ``/data`` in both
    containers; Batsim connects to ``tcp://scheduler:28000`` on the compose network.
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
    options = " ".join(shlex.quote(f"--option={k}={v}") for k, v in spec.options.items())
    env = dict(os.environ, MRSCHED_DATA=str(out), MRSCHED_POLICY=spec.policy,
               MRSCHED_OPTIONS=options, MRSCHED_PLATFORM="inputs/platform.xml",
               MRSCHED_WORKLOAD="inputs/workload.json", MRSCHED_EXPORT="out",
               MRSCHED_UID=f"{os.getuid()}:{os.getgid()}",
               MRSCHED_BATSIM_FLAGS=" ".join(spec.batsim_flags()))
    project = "mrsched-" + "".join(c if c.isalnum() else "-" for c in spec.run_id.lower())[:40]
    base = compose + ["-f", str(cfile), "-p", project]
    up = base + ["up", "--abort-on-container-exit", "--exit-code-from", "batsim"]
    result = EngineResult("ok", commands=[shlex.join(up)])
    log = out / "docker.log"
    proc = processes.start(up, log=log, env=env)
    try:
        done = _wait({"compose": proc}, "compose", spec.timeout)
        if done is None:
            result.status, result.error = "timeout", f"no result within the {spec.timeout:g} s timeout"
        elif proc.returncode != 0:
            result.status, result.error = "failed", "docker compose: " + _reason(log, proc.returncode)
    finally:
        if proc.poll() is None:
            processes.kill_group(proc)
        else:
            processes.finish(proc)
        try:
            subprocess.run(base + ["down", "--remove-orphans", "--timeout", "5"], env=env,
                           capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            pass  # best effort: the run's status already says what happened
    return result


ENGINE_FUNCTIONS = {"embedded": run_embedded, "batsim": run_batsim, "docker": run_docker}
