"""The embedded engine's child process: one in-process simulation, isolated from the runner.

``python -m mrsched.expe.worker SPEC.json`` builds the scheduler and calls the embedded
simulator with it (no sockets). Running it in a child lets the runner kill a hanging policy
and survive a crashing one. The last stderr line is the reason the runner records.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import resource
import sys
import threading
import traceback
from pathlib import Path

from mrsched.errors import ConfigError, MrschedError
from mrsched.expe.manifest import ENERGY_SUFFIXES, OUTPUT_SUFFIXES, POLICY_SUFFIXES
from mrsched.expe.spec import RunSpec

ERROR_PREFIX = "mrsched-run-error: "
# Last line of a finished simulation: the process's CPU seconds (engine and in-process policy,
# solver threads and helper processes included), recorded as the run's ``cpu_time``: wall
# time alone says little on a shared machine.
CPU_PREFIX = "mrsched-run-cpu: "
# Its peak resident memory in MB (the simulation process; a helper process's is not added):
# recorded as the run's ``peak_memory_mb``, what a million-job run needs of the machine.
PEAK_PREFIX = "mrsched-run-peak-mb: "
# "module:function" replacing the embedded engine (another in-process simulator, or a test
# double while the engine is being developed); unset: mrsched.simulator.engine.simulate.
ENGINE_ENV = "MRSCHED_EMBEDDED_ENGINE"


def load_simulate():
    """The embedded engine's entry point, ``mrsched.simulator.engine.simulate``."""
    override = os.environ.get(ENGINE_ENV)
    if override:
        module_name, _, func = override.partition(":")
        try:
            return getattr(importlib.import_module(module_name), func or "simulate")
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"cannot load the engine '{override}': {exc}",
                              field=ENGINE_ENV) from exc
    try:
        module = importlib.import_module("mrsched.simulator.engine")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("mrsched"):
            raise ConfigError("the embedded engine (mrsched.simulator.engine) is not installed",
                              hint="use --engine batsim") from exc
        raise
    return module.simulate


def make_scheduler(policy: str, options: dict):
    """A registered policy by name, or ``module.path:ClassName``: as ``mrsched serve`` builds
    it, so that the embedded and the Batsim engines run the very same scheduler."""
    from mrsched.schedulers.cli import make_scheduler_from_spec

    return make_scheduler_from_spec(policy, dict(options))


def run_spec(spec: dict) -> None:
    """Simulate into a temporary prefix, then rename each output into place: an output file
    of the run is complete or absent, never cut short by a kill."""
    simulate = load_simulate()
    scheduler = make_scheduler(spec["policy"], spec.get("options") or {})
    out_dir = Path(spec["out_dir"])
    tmp_prefix = out_dir / f".partial-{os.getpid()}"
    run = RunSpec.from_dict(spec)
    try:
        simulate(spec["platform"], [spec["workload"]], scheduler, export_prefix=str(tmp_prefix),
                 keep_records=False, **run.engine_options())
        for suffix in OUTPUT_SUFFIXES + (ENERGY_SUFFIXES if run.energy else ()):
            os.replace(f"{tmp_prefix}_{suffix}.csv", out_dir / f"out_{suffix}.csv")
        write_policy_table(scheduler, out_dir, tmp_prefix)
    finally:
        for leftover in out_dir.glob(f"{tmp_prefix.name}_*"):
            leftover.unlink(missing_ok=True)


def write_policy_table(scheduler, out_dir: Path, tmp_prefix: Path) -> Path | None:
    """The policy's own table of the run (``Policy.run_table``, e.g. ``hierarchical``'s metrics
    per instance) as ``out_<name>.csv``; nothing for a policy without one."""
    import csv

    table = getattr(getattr(scheduler, "policy", None), "run_table", None)
    got = table() if callable(table) else None
    if not got:
        return None
    name, rows = got
    if name not in POLICY_SUFFIXES or not rows:
        return None
    tmp = Path(f"{tmp_prefix}_{name}.csv")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    path = out_dir / f"out_{name}.csv"
    os.replace(tmp, path)
    return path


_finished = threading.Event()


def _print_cpu() -> None:
    """The ``PEAK_PREFIX`` and ``CPU_PREFIX`` lines of a finished simulation (the CPU of this
    process and its reaped children; Linux counts ``ru_maxrss`` in KB)."""
    if _finished.is_set():
        own = resource.getrusage(resource.RUSAGE_SELF)
        cpu = sum(u.ru_utime + u.ru_stime for u in (own, resource.getrusage(resource.RUSAGE_CHILDREN)))
        print(f"{PEAK_PREFIX}{own.ru_maxrss / 1024:.1f}", file=sys.stderr, flush=True)
        print(f"{CPU_PREFIX}{cpu:.3f}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        with open(argv[0]) as fh:
            spec = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"{ERROR_PREFIX}cannot read the run spec: {exc}", file=sys.stderr, flush=True)
        return 2
    return run_main(spec)


def run_main(spec: dict) -> int:
    """The run of ``spec`` as this process's work: its exit code, its last stderr line the
    reason of a failure. ``main`` once the spec file is read; ``processes.fork_call`` calls it
    in a child forked from the runner (which has imported the policy already: nothing is
    imported twice)."""
    try:
        # registered before the policy exists, so it runs after the policy's own exit handlers
        # have ended and reaped its helper processes (a solver worker): their CPU counts too
        atexit.register(_print_cpu)
        run_spec(spec)
        _finished.set()
    except MrschedError as exc:   # the user's input: its line names file, job or field
        print(f"{ERROR_PREFIX}{exc}", file=sys.stderr, flush=True)
        return 2
    except Exception as exc:  # a crashing policy: keep the traceback in the log, one line last
        traceback.print_exc()
        print(f"{ERROR_PREFIX}scheduler or engine crashed: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
