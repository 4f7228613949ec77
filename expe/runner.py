"""One run in one directory: clean it, run the engine, write the manifest last.

``execute_run`` never raises for a failing simulation: the failure (crash, timeout, bad
input) is recorded in the manifest with its reason, so that one broken run never stops a
campaign. A run directory is finished when ``manifest.is_complete`` says so.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from mrsched.errors import MrschedError
from mrsched.expe import engines, processes
from mrsched.atomic import sha256_file
from mrsched.analysis.rejections import group_rejections, kind_example
from mrsched.expe.manifest import (MANIFEST, OUTPUT_FILES, POLICY_FILES, hierarchy_levels, describe_outputs, outputs_problem,
                                   provenance, read_manifest, utc_now, versions, write_manifest)
from mrsched.expe.spec import RunSpec

#: metadata the runtime gives a rejected job in out_jobs.csv, before the policy's reason
REJECT_PREFIX = "rejected: "
LOG_FILES = ("engine.log", "scheduler.log", "batsim.log", "docker.log", "run_spec.json")
#: a run directory's copy of its inputs (the docker engine's, ``mrsched.simulate``'s generated ones)
INPUTS_DIR = "inputs"


def clean_run_dir(run_dir: Path) -> None:
    """Remove what a previous, unfinished attempt left (outputs, logs, manifest)."""
    for name in (MANIFEST, *OUTPUT_FILES, *POLICY_FILES, *LOG_FILES):
        (run_dir / name).unlink(missing_ok=True)
    for pattern in (".partial-*", ".*.tmp"):  # a killed engine's or writer's leftovers
        for leftover in run_dir.glob(pattern):
            leftover.unlink(missing_ok=True)


def _input_hashes(spec: RunSpec) -> dict:
    hashes = {}
    for key in ("platform", "workload"):
        path = Path(getattr(spec, key))
        hashes[f"{key}_sha256"] = sha256_file(path) if path.is_file() else None
    return hashes


def rejections(run_dir: Path) -> dict:
    """``{"count", "jobs", "kinds": [{"kind", "count", "example", "job"}]}`` of the user jobs
    the scheduler rejected, read from ``out_jobs.csv`` (the reason travels as the job's
    metadata), grouped by kind (``analysis.rejections.group_rejections``: the reason with its numbers
    named N, M...); an I/O-phased parent (metadata ``io-phased``, its phases ran) is not a
    rejection."""
    try:
        with open(run_dir / "out_jobs.csv", newline="") as fh:
            return rejection_counts(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError):
        return {}


def rejection_counts(rows) -> dict:
    """``rejections`` of ``out_jobs.csv`` rows given as dicts (``csv.DictReader``'s, or a
    run's records kept in memory by ``mrsched.simulate``)."""
    count, jobs, reasons = 0, 0, []
    for row in rows:
        meta = (row.get("metadata") or "").strip()
        if meta == "io-phased" or str(row.get("workload_name", "")).endswith("-io"):
            continue
        jobs += 1
        if row.get("final_state") == "REJECTED":
            count += 1
            reason = meta[len(REJECT_PREFIX):] if meta.startswith(REJECT_PREFIX) else (
                meta or "no reason given")
            reasons.append((row.get("job_id", ""), reason))
    return {"count": count, "jobs": jobs, "kinds": group_rejections(reasons)}


def all_rejected(rejected: dict) -> str | None:
    """Why a run whose every job was rejected failed (a result with no executed job is a
    wrong input, not a schedule), or None."""
    if rejected and rejected["jobs"] and rejected["count"] == rejected["jobs"]:
        kind = rejected["kinds"][0]
        more = len(rejected["kinds"]) - 1
        example = kind_example(kind)
        return (f"every job ({rejected['jobs']}) was rejected; {kind['count']} because: "
                f"{kind['kind']}" + (f" (e.g. {example})" if example else "")
                + (f"; and {more} other kind(s) of reason, see manifest.json" if more else ""))
    return None


def start_manifest(spec: RunSpec, *, warnings: list[str] | tuple = ()) -> dict:
    """The manifest of ``spec`` as a run starts: what runs, on which inputs (with their
    checksums), with which code; ``execute_run`` and ``mrsched.simulate`` add how it ended."""
    manifest = {
        "run_id": spec.run_id, "policy": spec.policy, "options": dict(spec.options),
        "platform": str(spec.platform), "workload": str(spec.workload),
        **_input_hashes(spec), "seed": spec.seed, "engine": spec.engine,
        "timeout": spec.timeout, "command": spec.command_line(),
        "versions": versions(), "provenance": provenance(), "started": utc_now(),
    }
    for key, value in spec.labels.items():
        manifest.setdefault(key, value)
    if spec.roles:
        manifest["roles"] = list(spec.roles)
    if spec.bb_capacity is not None:
        manifest["bb_capacity"] = spec.bb_capacity
    if spec.compute_sharing:
        manifest["compute_sharing"] = True
    if spec.energy:
        manifest["energy"] = True
    if warnings:
        manifest["warnings"] = list(warnings)
    return manifest


def execute_run(spec: RunSpec | dict, *, warnings: list[str] | tuple = ()) -> dict:
    """Run ``spec`` into ``spec.out_dir``; returns the manifest written there."""
    if isinstance(spec, dict):
        spec = RunSpec.from_dict(spec)
    run_dir = Path(spec.out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    clean_run_dir(run_dir)
    manifest = start_manifest(spec, warnings=warnings)
    t0 = time.perf_counter()
    try:
        missing = [k for k in ("platform", "workload") if manifest[f"{k}_sha256"] is None]
        if missing:
            raise MrschedError(f"input file not found: {getattr(spec, missing[0])}",
                               field=missing[0])
        if spec.engine not in engines.ENGINE_FUNCTIONS:
            raise MrschedError(f"unknown engine '{spec.engine}'", field="engine")
        result = engines.ENGINE_FUNCTIONS[spec.engine](spec)
        status, error = result.status, result.error
        manifest["engine_commands"] = result.commands
        manifest["versions"].update(result.versions)
        if result.cpu_time is not None:
            manifest["cpu_time"] = result.cpu_time
        if result.peak_memory_mb is not None:
            manifest["peak_memory_mb"] = result.peak_memory_mb
        if status == "ok":
            absent = [n for n in OUTPUT_FILES if not (run_dir / n).is_file()]
            if absent:
                status, error = "failed", f"the engine ended without writing {', '.join(absent)}"
            else:
                manifest["rejected"] = rejected = rejections(run_dir)
                levels = hierarchy_levels(run_dir)
                if levels:
                    manifest["levels"] = levels
                error = all_rejected(rejected)
                if error is not None:
                    status = "failed"
    except MrschedError as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # e.g. an engine binary that cannot be executed: this run only
        status, error = "failed", f"cannot run the engine: {type(exc).__name__}: {exc}"
    if processes.INTERRUPTED.is_set():
        # killed by an interrupted campaign: leave no manifest, a re-run redoes it
        return {**manifest, "status": "interrupted", "error": "campaign interrupted"}
    manifest.update(status=status, error=error, wall_time=round(time.perf_counter() - t0, 3),
                    finished=utc_now(), outputs=describe_outputs(run_dir))
    write_manifest(run_dir, manifest)
    return manifest


def run_status(run_dir: str | Path) -> str:
    """``ok`` / ``failed`` / ``timeout`` from the manifest, ``pending`` when there is none,
    ``incomplete`` when it says ok but an output it records is missing, cut or changed."""
    manifest = read_manifest(run_dir)
    if manifest is None:
        return "pending"
    status = manifest.get("status", "pending")
    if status == "ok" and outputs_problem(run_dir, manifest) is not None:
        return "incomplete"
    return status
