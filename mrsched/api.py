"""mrsched as a library: one simulation in this process, its result as Python objects.

``simulate(platform, workload, policy)`` is ``mrsched run`` without its child process: the same
scheduler (the registry's), the same embedded engine, the same manifest and, with ``out``, the
same run directory (docs/DESIGN.md "Runs and campaigns"); the jobs, the machine states and the
metrics of ``mrsched report`` come back as DataFrames and a dict, pandas being imported when
one is first read. docs/API.md shows it at work (its examples are run by the tests).
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

from mrsched.errors import ConfigError, MrschedError, SimulationError, WorkloadError

#: the run directory named in the manifest's ``command`` of a run kept in memory
NO_RUN_DIR = "RUN_DIR"
#: manifest keys of a ``metrics_table`` row that say which run it is, or what it cost: not metrics
_NOT_METRICS = ("wall_time", "cpu_time", "peak_memory_mb")


def simulate(platform: Any, workload: Any, policy: Any = "fcfs-easy", options: dict | None = None, *,
             out: str | os.PathLike | None = None, seed: int | None = None, roles=(),
             bb_capacity: int | str | None = None, compute_sharing: bool = False,
             energy: bool = False, force: bool = False) -> "Result":
    """Run one simulation in this process and return its :class:`Result`.

    ``platform``: a SimGrid XML path, a bundled platform's name (``"dragonfly96"``) or a
    generator's ``GeneratedPlatform``. ``workload``: a Batsim JSON path, a workload dict (the
    generators' result) or a ``Conversion`` (``convert_swf``). ``policy``: a registered name,
    ``"module:Class"``, a :class:`~mrsched.schedulers.model.contract.Policy` subclass or
    instance, or any scheduler object with ``handle_message(dict) -> dict``. ``options``: as
    ``mrsched run -O`` (the policy's knobs and the runtime's; strings are coerced); ``seed``
    goes to a policy that takes one, as ``--seed``. ``roles``, ``bb_capacity`` (bytes or
    ``"40GB"``) and ``compute_sharing`` are ``mrsched run``'s ``-r``, ``--bb-capacity`` and
    ``--enable-compute-sharing``; ``energy`` is ``-E`` (Batsim's energy model: the energy
    columns of the outputs, and ``out_consumed_energy.csv`` / ``out_pstate_changes.csv`` in
    the run directory when there is one). With ``out`` the run directory is written as ``mrsched
    run -o`` writes it (a finished run there is kept unless ``force``).

    Bad input raises the project's errors (``mrsched.errors``) naming the file, job or field.
    """
    from mrsched.expe.runner import INPUTS_DIR, clean_run_dir, start_manifest
    from mrsched.expe.spec import RunSpec

    t0 = time.perf_counter()
    out_dir = Path(out).resolve() if out is not None else None
    if out_dir is not None:
        from mrsched.expe.cli_run import check_out

        check_out(out_dir, force=force)
    inputs = _Inputs(out_dir / INPUTS_DIR if out_dir is not None else None)
    platform_path = inputs.platform(platform)
    workload_path = inputs.workload(workload)
    label, recorded, scheduler = _scheduler(policy, dict(options or {}), seed)
    spec = RunSpec(run_id=out_dir.name if out_dir is not None else "simulate",
                   out_dir=str(out_dir) if out_dir is not None else NO_RUN_DIR,
                   platform=str(platform_path), workload=str(workload_path), policy=label,
                   options=recorded, seed=seed, roles=_roles(roles),
                   bb_capacity=_bb_capacity(bb_capacity), compute_sharing=bool(compute_sharing),
                   energy=bool(energy))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        clean_run_dir(out_dir)
    manifest = start_manifest(spec)
    manifest["engine_commands"] = []
    try:
        sim = _run_engine(spec, scheduler, out_dir)
    except MrschedError as exc:
        exc = _named(exc, str(workload_path), inputs.names)
        _failed(manifest, out_dir, str(exc), t0)
        raise exc from None
    except Exception as exc:   # a policy's own bug: its traceback is the caller's to read
        _failed(manifest, out_dir, f"scheduler or engine crashed: {type(exc).__name__}: {exc}", t0)
        raise
    result = Result(manifest, sim, out_dir, inputs)
    from mrsched.expe.runner import all_rejected, rejection_counts

    manifest["rejected"] = rejected = rejection_counts(
        {"metadata": r.metadata, "workload_name": r.workload, "final_state": r.final_state}
        for r in sim.jobs)
    error = all_rejected(rejected)
    if error is not None:
        _failed(manifest, out_dir, error, t0)
        raise SimulationError(f"run failed: {error}", file=str(workload_path))
    manifest.update(status="ok", error=None, wall_time=round(time.perf_counter() - t0, 3))
    _finish(manifest, out_dir, result)
    return result


# ------------------------------------------------------------------------------ the run
def _run_engine(spec, scheduler, out_dir: Path | None):
    """The embedded engine on ``spec``, as ``mrsched run``'s worker runs it; with a run
    directory each output goes to a temporary and is renamed into place."""
    from mrsched.simulator.engine import simulate as engine_simulate

    prefix = None if out_dir is None else out_dir / f".partial-{os.getpid()}"
    try:
        sim = engine_simulate(spec.platform, [spec.workload], scheduler, export_prefix=prefix,
                              keep_records=True, **spec.engine_options())
        if prefix is not None:
            from mrsched.expe.manifest import ENERGY_SUFFIXES, OUTPUT_SUFFIXES

            from mrsched.expe.worker import write_policy_table

            for suffix in OUTPUT_SUFFIXES + (ENERGY_SUFFIXES if spec.energy else ()):
                os.replace(f"{prefix}_{suffix}.csv", out_dir / f"out_{suffix}.csv")
            write_policy_table(scheduler, out_dir, prefix)   # e.g. hierarchical's, as run writes it
    finally:
        if prefix is not None:
            for leftover in out_dir.glob(f"{prefix.name}_*"):
                leftover.unlink(missing_ok=True)
    return sim


def _named(exc: MrschedError, workload: str, names: dict[str, str]) -> MrschedError:
    """The error as the user wrote the input: the engine names the workload's job 3 ``w0!3``
    (the user wrote ``3``), and an input written to a temporary file is named as given
    (``the workload dict``)."""
    job = exc.job
    if isinstance(exc, WorkloadError) and job and job.startswith("w0!") and exc.file == workload:
        job = job[3:]
    file = names.get(exc.file, exc.file) if exc.file else exc.file
    if job == exc.job and file == exc.file:
        return exc
    return type(exc)(exc.message, file=file, line=exc.line, element=exc.element, job=job,
                     field=exc.field, event=exc.event, hint=exc.hint)


def _failed(manifest: dict, out_dir: Path | None, error: str, t0: float) -> None:
    from mrsched.expe.manifest import describe_outputs, utc_now, write_manifest

    manifest.update(status="failed", error=error, wall_time=round(time.perf_counter() - t0, 3),
                    finished=utc_now())
    if out_dir is not None:
        manifest["outputs"] = describe_outputs(out_dir)
        write_manifest(out_dir, manifest)


def _finish(manifest: dict, out_dir: Path | None, result: "Result") -> None:
    from mrsched.expe.manifest import describe_outputs, utc_now, write_manifest

    manifest["finished"] = utc_now()
    if out_dir is not None:
        manifest["outputs"] = describe_outputs(out_dir)
        write_manifest(out_dir, manifest)
    else:
        manifest["outputs"] = result._describe_texts()


# ------------------------------------------------------------------------------ inputs
class _Inputs:
    """Where the inputs are: paths as given, generated objects written as files (into the run
    directory's ``inputs/``, else a temporary directory that lives as long as the result:
    the engine and the metrics read files)."""

    def __init__(self, directory: Path | None):
        self.directory = directory
        self._tmp = None
        #: a temporary input's path -> how errors name it (the object it was written from)
        self.names: dict[str, str] = {}

    def _dir(self) -> Path:
        if self.directory is None:
            import tempfile

            import shutil
            import weakref

            # removed with this object (the result that holds it), without a warning
            self.directory = Path(tempfile.mkdtemp(prefix="mrsched-inputs-"))
            self._tmp = weakref.finalize(self, shutil.rmtree, str(self.directory), ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory

    def _name(self, path: Path, label: str) -> Path:
        if self._tmp is not None:     # a run directory's inputs/ copy stays: its path is named
            self.names[str(path)] = label
        return path

    def platform(self, platform: Any) -> Path:
        if isinstance(platform, (str, os.PathLike)):
            path = Path(platform)
            if path.is_file():
                return path.resolve()
            if isinstance(platform, str) and "/" not in platform and "." not in platform.removesuffix(".xml"):
                from mrsched.platforms.bundled import BUNDLED, bundled_path

                if f"{platform.removesuffix('.xml')}.xml" in BUNDLED:
                    return bundled_path(platform)
            raise ConfigError(f"platform file not found: {path}", field="platform",
                              hint="a SimGrid XML path, a bundled platform (dragonfly96, cluster16) "
                                   "or a generator's result")
        xml = getattr(platform, "xml", None)
        if isinstance(xml, str):
            path = self._dir() / "platform.xml"
            path.write_text(xml)
            self._name(path, "the generated platform")
            return path
        raise ConfigError(f"platform must be a path or a generated platform, got {type(platform).__name__}",
                          field="platform")

    def workload(self, workload: Any) -> Path:
        if isinstance(workload, (str, os.PathLike)):
            path = Path(workload)
            if not path.is_file():
                raise ConfigError(f"workload file not found: {path}", field="workload")
            return path.resolve()
        if isinstance(workload, dict):
            if not isinstance(workload.get("jobs"), list):
                raise WorkloadError("a Batsim workload needs a 'jobs' list", field="jobs")
            from mrsched.workloads.batsim_json import write_workload

            return self._name(write_workload(self._dir() / "workload.json", workload),
                              "the workload dict")
        if callable(getattr(workload, "write", None)) and hasattr(workload, "workload"):
            return self._name(Path(workload.write(self._dir() / "workload.json")),  # a Conversion
                              "the converted workload")
        raise ConfigError(f"workload must be a path, a workload dict or a conversion, got "
                          f"{type(workload).__name__}", field="workload")


def _roles(roles) -> tuple[str, ...]:
    roles = (roles,) if isinstance(roles, str) else tuple(roles or ())
    for role in roles:
        if not isinstance(role, str) or role.count(":") != 1 or not all(role.split(":")):
            raise ConfigError(f"roles expects HOSTS:ROLE, got {role!r}", field="roles",
                              hint="e.g. roles=['node_8,node_17:storage']")
    return roles


def _bb_capacity(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        from mrsched.units import parse_size

        try:
            value = parse_size(value)
        except MrschedError as exc:
            raise ConfigError(exc.message, field="bb_capacity", hint=exc.hint) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ConfigError(f"bb_capacity must be a positive size, got {value!r}", field="bb_capacity")
    return int(value)


# ------------------------------------------------------------------------------ the policy
def _scheduler(policy: Any, options: dict, seed: int | None) -> tuple[str, dict, Any]:
    """(the policy's name in the manifest, the options recorded, the scheduler to run)."""
    from mrsched.expe.validation import check_policy, with_seed
    from mrsched.schedulers.model.contract import Policy

    if isinstance(policy, str):
        params = check_policy(policy, options, key="policy")
        options = with_seed(policy, options, seed, params)
        from mrsched.schedulers.cli import make_scheduler_from_spec

        return policy, options, make_scheduler_from_spec(policy, options)
    if isinstance(policy, type):
        label = f"{policy.__module__}:{policy.__qualname__}"
        from mrsched.schedulers.cli import make_scheduler_of

        if issubclass(policy, Policy):
            from mrsched.schedulers.registry import class_parameters

            options = with_seed(label, options, seed, class_parameters(policy))
            return label, options, make_scheduler_of(policy, options, label)
        if callable(getattr(policy, "handle_message", None)):
            return label, options, make_scheduler_of(policy, options, label)
    elif isinstance(policy, Policy):
        from mrsched.schedulers import registry

        scheduler = registry.make_scheduler_of_instance(policy, options)
        name = policy.name
        entry = registry.POLICIES.get(name) if name else None
        label = name if entry is not None and entry.cls is type(policy) else \
            f"{type(policy).__module__}:{type(policy).__qualname__}"
        return label, {**policy.get_params(), **options}, scheduler
    elif callable(getattr(policy, "handle_message", None)):
        if options:
            raise ConfigError(f"a scheduler object takes no options (got {', '.join(options)})",
                              field=next(iter(options)))
        return f"{type(policy).__module__}:{type(policy).__qualname__}", {}, policy
    raise ConfigError(f"policy must be a registered name, 'module:Class', a Policy subclass or "
                      f"instance, or a scheduler object; got {policy!r}", field="policy")


# ------------------------------------------------------------------------------ the result
class Result:
    """One simulation's outcome.

    ``jobs``: Batsim's ``out_jobs.csv`` as a DataFrame (a row per Batsim job, its columns as
    ``mrsched.analysis.jobs.read_jobs_csv`` types them); ``machine_states``:
    ``out_machine_states.csv``; with ``energy``, ``consumed_energy`` and ``pstate_changes``:
    ``out_consumed_energy.csv`` and ``out_pstate_changes.csv``; ``schedule``:
    ``out_schedule.csv``'s row; ``metrics``: the run's
    row of ``mrsched report``'s ``metrics.csv`` (``metrics_at(tau)`` for another bounded
    slowdown threshold); ``job_table``: a row per user job with its requests, as the report
    reads it; ``manifest``: what ``mrsched run`` writes in ``manifest.json``; ``path``: the run
    directory (None: kept in memory); ``records``: the engine's job records.
    """

    def __init__(self, manifest: dict, sim, path: Path | None, inputs: _Inputs):
        self.manifest = manifest
        self.path = path
        self.records = sim.jobs
        self.makespan = sim.makespan
        self.nb_messages = sim.nb_messages
        self._sim = sim
        self._inputs = inputs           # generated inputs live as long as the result
        self._cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"Result(policy={self.manifest.get('policy')!r}, jobs={len(self.records)}, "
                f"makespan={self.makespan:.6f}, path={str(self.path) if self.path else None!r})")

    # -- Batsim's three files ------------------------------------------------------------
    def _texts(self) -> dict[str, str]:
        """The text of each output file, as ``StreamedOutputs`` writes it."""
        texts = self._cache.get("texts")
        if texts is None:
            if self.path is not None:
                from mrsched.expe.manifest import ENERGY_FILES, OUTPUT_FILES

                texts = {name: (self.path / name).read_text() for name in OUTPUT_FILES}
                if self.manifest.get("energy"):
                    texts.update({name: (self.path / name).read_text() for name in ENERGY_FILES})
            else:
                from mrsched.simulator.outputs import JOBS_COLUMNS, MachineStateTracker, job_row

                rows = [",".join(JOBS_COLUMNS)] + [job_row(r) for r in self.records]
                states = MachineStateTracker(0, rows=self._sim.machine_states or [])
                schedule = self._sim.schedule or {}
                keys = sorted(schedule)
                texts = {"out_jobs.csv": "\n".join(rows) + "\n",
                         "out_schedule.csv": ",".join(keys) + "\n" + ",".join(schedule[k] for k in keys) + "\n",
                         "out_machine_states.csv": states.text()}
                for suffix, text in (self._sim.energy_texts or {}).items():
                    texts[f"out_{suffix}.csv"] = text
            self._cache["texts"] = texts
        return texts

    def _describe_texts(self) -> dict[str, dict]:
        """The manifest's ``outputs`` of files that were not written: what they would hold."""
        import hashlib

        out = {}
        for name, text in self._texts().items():
            data = text.encode()
            out[name] = {"rows": max(0, data.count(b"\n") - 1), "bytes": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()}
        return out

    def csv_text(self, name: str) -> str:
        """An output file's text: ``jobs``, ``schedule``, ``machine_states``, and for a run
        with ``energy`` ``consumed_energy`` and ``pstate_changes``."""
        key = f"out_{name}.csv"
        texts = self._texts()
        if key not in texts:
            raise ConfigError(f"no output '{name}'", field="name",
                              hint=", ".join(k[4:-4] for k in texts))
        return texts[key]

    @property
    def jobs(self):
        if "jobs" not in self._cache:
            from mrsched.analysis.jobs import read_jobs_csv

            source = io.StringIO(self.csv_text("jobs"))
            source.name = str(self.path / "out_jobs.csv") if self.path else "out_jobs.csv"
            self._cache["jobs"] = read_jobs_csv(source)
        return self._cache["jobs"]

    def _frame(self, name: str, **read_csv):
        """An output file as a DataFrame, read once."""
        if name not in self._cache:
            import pandas as pd

            self._cache[name] = pd.read_csv(io.StringIO(self.csv_text(name)), **read_csv)
        return self._cache[name]

    @property
    def machine_states(self):
        return self._frame("machine_states")

    @property
    def consumed_energy(self):
        """``out_consumed_energy.csv`` of a run with ``energy``: the platform's energy (J) at
        every job start and end and every pstate change (Batsim's ``-E``)."""
        return self._frame("consumed_energy")

    @property
    def pstate_changes(self):
        """``out_pstate_changes.csv`` of a run with ``energy``: each pstate change's time,
        machines (an interval set) and new pstate."""
        return self._frame("pstate_changes", dtype={"machine_id": str})

    @property
    def schedule(self) -> dict[str, float | str]:
        """``out_schedule.csv``'s row: numbers as floats (``batsim_version`` stays text)."""
        row = dict(self._sim.schedule or {})
        return {k: (v if k == "batsim_version" else float(v)) for k, v in row.items()}

    # -- what mrsched report reads -------------------------------------------------------
    @property
    def metrics(self) -> dict:
        """The metrics ``mrsched report`` computes for this run (bounded slowdown tau = 600 s)."""
        if "metrics" not in self._cache:
            self._cache["metrics"] = self.metrics_at(600.0)
        return self._cache["metrics"]

    def metrics_at(self, tau: float) -> dict:
        """The run's row of ``mrsched report --tau TAU``'s ``metrics.csv``, without the columns
        naming the run or its cost: the run loaded as the report loads it
        (``mrsched.analysis.load_run``), from its directory or from a temporary one holding
        its jobs file and manifest."""
        from mrsched.analysis.campaign import ID_COLUMNS, metrics_table
        from mrsched.analysis.runs import load_run

        def row(run) -> dict:
            values = metrics_table([run], tau=tau).iloc[0].to_dict()
            return {k: v for k, v in values.items() if k not in ID_COLUMNS and k not in _NOT_METRICS}

        if self.path is not None:
            return row(load_run(self.path))
        import json
        import tempfile

        with tempfile.TemporaryDirectory(prefix="mrsched-run-") as tmp:
            texts = self._texts()
            for name, text in texts.items():   # the report verifies them against the manifest
                (Path(tmp) / name).write_text(text)
            manifest = dict(self.manifest)
            if isinstance(manifest.get("outputs"), dict):
                manifest["outputs"] = {k: v for k, v in manifest["outputs"].items() if k in texts}
            (Path(tmp) / "manifest.json").write_text(json.dumps(manifest))
            return row(load_run(tmp))

    @property
    def job_table(self):
        """A row per user job (I/O phases folded back), with its requests and the derived
        waiting time, slowdown and bounded slowdown, as the report reads it."""
        if "job_table" not in self._cache:
            from mrsched.analysis.jobs import attach_requests, fold_subjobs
            from mrsched.analysis.metrics import add_job_metrics

            table = attach_requests(fold_subjobs(self.jobs), {"w0": self.manifest["workload"]})
            self._cache["job_table"] = add_job_metrics(table)
        return self._cache["job_table"]

