"""One run directory (``manifest.json`` + Batsim outputs) loaded for analysis, and discovery
of the runs of a campaign directory (docs/DESIGN.md "Runs and campaigns")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mrsched.analysis.capacities import describe_platform, platform_capacities
from mrsched.analysis.jobs import attach_requests, fold_subjobs, phase_table, read_jobs_csv
from mrsched.errors import ConfigError, MrschedError
from mrsched.outputs import outputs_problem
from mrsched.analysis.rejections import rejection_kinds


#: the status of a run whose manifest is unreadable or whose outputs are not the ones its
#: manifest records: listed with the reason, its metrics never used
BROKEN = "broken"


@dataclass
class Run:
    """A loaded run. ``jobs`` (one row per user job) and ``phases`` (executed Batsim rows)
    are None when the run failed before writing its outputs; ``warnings`` says what could
    not be read (shown in the report instead of being dropped)."""

    run_id: str
    path: Path
    manifest: dict
    status: str
    error: str
    jobs: pd.DataFrame | None
    phases: pd.DataFrame | None
    capacities: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    #: the manifest's rejected jobs by kind: ``{"kind", "count", "example", "job"}`` entries
    rejected: list[dict] = field(default_factory=list)

    @property
    def policy(self) -> str:
        return str(self.manifest.get("policy", ""))

    @property
    def options(self) -> dict:
        opts = self.manifest.get("options") or {}
        return opts if isinstance(opts, dict) else {"options": str(opts)}

    @property
    def variant(self) -> str:
        """The unit compared across a campaign: the manifest's ``label`` / ``policy_label``, else the
        policy name plus its options except ``seed`` (a run axis, not a policy setting)."""
        for key in ("label", "policy_label"):  # expe records the campaign's policy label
            if self.manifest.get(key):
                return str(self.manifest[key])
        opts = {k: v for k, v in self.options.items() if k != "seed"}
        if not opts:
            return self.policy or self.run_id
        inner = ",".join(f"{k}={opts[k]}" for k in sorted(opts))
        return f"{self.policy}({inner})"


def _paths(value) -> list[str]:
    """Manifest ``platform`` / ``workload``: a path, ``{"path": ...}`` or a list of those."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _paths(v)]
    if isinstance(value, dict):
        return _paths(value.get("path"))
    return [str(value)]


def _resolve(path: str, run_dir: Path) -> Path | None:
    """A manifest path: absolute, or relative to the run, its campaign, or the working dir."""
    p = Path(path)
    candidates = [p] if p.is_absolute() else [run_dir / p, run_dir.parent.parent / p, Path.cwd() / p]
    for c in candidates:
        if c.is_file():
            return c
    return None


def _roles(manifest: dict) -> list[str]:
    """Batsim ``-r hosts:role`` specs: the manifest's ``roles``, else those in its ``command``."""
    roles = manifest.get("roles")
    if roles:
        return [roles] if isinstance(roles, str) else [str(r) for r in roles]
    command = manifest.get("command") or []
    words = command.split() if isinstance(command, str) else [str(w) for w in command]
    out = []
    for i, word in enumerate(words):
        if word in ("-r", "--add-role-to-hosts") and i + 1 < len(words):
            out.append(words[i + 1])
        elif word.startswith("--add-role-to-hosts="):
            out.append(word.split("=", 1)[1])
    return out


def _jobs_csv(run_dir: Path) -> Path | None:
    direct = run_dir / "out_jobs.csv"
    if direct.is_file():
        return direct
    found = sorted(run_dir.glob("*_jobs.csv"))
    return found[0] if found else None


def load_run(run_dir: str | Path) -> Run:
    """Load a run directory: manifest (optional), folded job table with requests attached,
    executed phases, and capacities from the platform (``mmax`` in the manifest caps nodes)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError("run directory not found", file=str(run_dir))
    manifest: dict = {}
    mpath = run_dir / "manifest.json"
    if mpath.is_file():
        problem = None
        try:
            manifest = json.loads(mpath.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:   # UnicodeDecodeError is a ValueError
            problem = f"manifest.json is not readable JSON ({type(exc).__name__}: {exc})"
        if problem is None and not isinstance(manifest, dict):
            problem = "manifest.json is not a JSON object"
        if problem is not None:   # listed as broken; the report goes on with the other runs
            return Run(run_dir.name, run_dir, {}, BROKEN, problem, None, None, {})
    run_id = str(manifest.get("run_id") or run_dir.name)
    status = str(manifest.get("status") or "ok")
    error = str(manifest.get("error") or "")
    # what the run itself recorded: mismatches, and why jobs were rejected, by kind
    warnings: list[str] = [str(w) for w in manifest.get("warnings") or []]
    rejected = rejection_kinds(manifest.get("rejected"))
    jobs = phases = None
    capacities: dict[str, float] = {}
    if status == "ok" and "outputs" in manifest:
        # the outputs are the ones the run wrote (rows, bytes, sha256), as `campaign status`
        # checks them: a cut or edited out_jobs.csv is not a result. (A manifest that records
        # no outputs was not written by `mrsched run`: a Batsim run described by hand.)
        problem = outputs_problem(run_dir, manifest)
        if problem is not None:
            return Run(run_id, run_dir, manifest, BROKEN, problem, None, None, {}, warnings, rejected)

    csv = _jobs_csv(run_dir)
    if csv is None:
        if status == "ok":
            status, error = "failed", error or f"no *_jobs.csv in {run_dir}"
        return Run(run_id, run_dir, manifest, status, error, None, None, {}, warnings, rejected)
    try:
        raw = read_jobs_csv(csv)
    except MrschedError as exc:
        return Run(run_id, run_dir, manifest, "failed", error or str(exc), None, None, {}, warnings,
                   rejected)
    jobs = fold_subjobs(raw)
    phases = phase_table(raw)

    workloads = {}
    for i, wpath in enumerate(_paths(manifest.get("workload") or manifest.get("workloads"))):
        resolved = _resolve(wpath, run_dir)
        if resolved is None:
            warnings.append(f"workload {wpath} not found: requests (burst buffer, GPUs) unknown")
        else:
            workloads[f"w{i}"] = resolved
    if workloads:
        try:
            jobs = attach_requests(jobs, workloads)
        except MrschedError as exc:
            warnings.append(f"requests not attached: {exc}")
    platforms = _paths(manifest.get("platform"))
    if platforms:
        resolved = _resolve(platforms[0], run_dir)
        if resolved is None:
            warnings.append(f"platform {platforms[0]} not found: utilisation unknown")
        else:
            try:
                capacities = platform_capacities(resolved, _roles(manifest),
                                                 bb_capacity=manifest.get("bb_capacity"))
                _add_pfs_bandwidth(jobs, capacities, resolved, _roles(manifest))
            except MrschedError as exc:
                warnings.append(f"platform not read: {exc}")
    mmax = manifest.get("mmax")
    if mmax is None and isinstance(manifest.get("engine"), dict):
        mmax = manifest["engine"].get("mmax")
    if isinstance(mmax, (int, float)) and mmax > 0 and "nodes" in capacities:
        capacities["nodes"] = float(min(capacities["nodes"], mmax))
    return Run(run_id, run_dir, manifest, status, error, jobs, phases, capacities, warnings, rejected)


def _add_pfs_bandwidth(jobs: pd.DataFrame, capacities: dict, platform: Path, roles) -> None:
    """Jobs that state an I/O rate (``io_bandwidth_per_node``, seed 004) on a platform with a
    PFS bandwidth: ``io_bandwidth`` = rate x nodes per job and the PFS's bandwidth as capacity,
    so that ``run_metrics`` gives ``utilisation_io_bandwidth`` (the stated rates' share of it)."""
    if "io_bandwidth_per_node" not in jobs.columns:
        return
    rate = jobs["io_bandwidth_per_node"].fillna(0.0).astype(float)
    if not (rate > 0).any():
        return
    pfs = describe_platform(platform, roles).get("pfs_bw")
    if pfs:
        jobs["io_bandwidth"] = rate * jobs["requested_number_of_resources"].fillna(0.0).astype(float)
        capacities["io_bandwidth"] = float(pfs)


def find_runs(directory: str | Path) -> list[Path]:
    """Run directories under ``directory``: itself if it is a run (manifest or a jobs CSV),
    else ``runs/*/`` (or ``*/``) holding a manifest, sorted by name for a stable order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfigError("directory not found", file=str(directory))
    if (directory / "manifest.json").is_file() or _jobs_csv(directory) is not None:
        return [directory]
    base = directory / "runs" if (directory / "runs").is_dir() else directory
    runs = sorted(p for p in base.iterdir() if p.is_dir() and (p / "manifest.json").is_file())
    if not runs:
        raise ConfigError("no runs found", file=str(directory),
                          hint="expected a run directory (manifest.json, out_jobs.csv) or a "
                               "campaign directory with runs/<run_id>/manifest.json")
    return runs
