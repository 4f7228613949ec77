"""Running a campaign: plan, generate inputs, skip finished runs, execute the rest, report.

Re-running an interrupted campaign is the resume: a run whose manifest says ``ok`` and whose
outputs are all there is skipped; anything else is cleaned and redone.
"""

from __future__ import annotations

import functools
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from mrsched.errors import ConfigError, MrschedError
from mrsched.expe import processes
from mrsched.atomic import sha256_file
from mrsched.expe.campaign import Campaign, load_campaign, plan_runs, prepare_inputs, write_expanded
from mrsched.expe.lock import CampaignLock
from mrsched.expe.manifest import is_complete, outputs_problem, read_manifest, spec_problem
from mrsched.expe.runner import run_status


@dataclass
class CampaignSummary:
    campaign_dir: Path
    total: int
    skipped: int = 0
    ok: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # run_id -> "status: error"
    report: Path | None = None
    report_error: str | None = None
    interrupted: int = 0

    @property
    def all_ok(self) -> bool:
        return not self.failed and self.ok + self.skipped == self.total


class Progress:
    """done / running / failed / interrupted counts: a tqdm bar (ETA from tqdm) on a
    terminal; one plain line per finished run when stderr is redirected (a log file gets
    no ``\\r`` bar redraws)."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.lock = threading.Lock()
        self.running = self.ok = self.failed = self.interrupted = 0
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.bar = None
        self.lines = False
        if enabled and total:
            isatty = getattr(self.stream, "isatty", None)
            if isatty is not None and isatty():
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="run", desc="runs", file=self.stream,
                                dynamic_ncols=True)
            else:
                self.lines = True

    def _counts(self) -> str:
        text = f"done={self.ok} running={self.running} failed={self.failed}"
        return text + (f" interrupted={self.interrupted}" if self.interrupted else "")

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(self._counts())

    def start(self, spec) -> None:
        with self.lock:
            self.running += 1
            self._show()

    def done(self, spec, manifest: dict) -> None:
        with self.lock:
            self.running = max(0, self.running - 1)
            status = manifest.get("status")
            if status == "ok":
                self.ok += 1
            elif status == "interrupted":
                self.interrupted += 1
            else:
                self.failed += 1
            self._show()
            if self.bar is not None:
                self.bar.update(1)
            elif self.lines:
                n = self.ok + self.failed + self.interrupted
                wall = manifest.get("wall_time")
                took = f" in {wall:.1f} s" if isinstance(wall, (int, float)) else ""
                print(f"[{n}/{self.total}] {status} {spec.run_id}{took} ({self._counts()})",
                      file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def output_outside(campaign: Campaign) -> str | None:
    """A warning when the campaign file's ``output:`` writes outside the file's folder (an
    absolute path or ``..``): a campaign file from elsewhere could write anywhere you can."""
    raw = campaign.raw.get("output")
    if not raw:
        return None
    home = Path(campaign.file).resolve().parent
    if campaign.output != (home / str(raw)).resolve():
        return None          # --output given on the command line: the user's own choice
    if campaign.output == home or home in campaign.output.parents:
        return None
    return f"{campaign.file}: output {raw!r} writes outside the campaign file's folder ({campaign.output})"


def _with_warnings(specs: list, log, *, campaign_file: str | None = None) -> list:
    """Runs whose workload and options mismatch (``validation.workload_warnings``) carry the
    warning into their manifest; it is said once per workload and message. A platform whose
    storage hosts would make every burst-buffer job rejected is refused here, before any
    run (``validation.check_storage``, as ``mrsched run`` does)."""
    from dataclasses import replace

    from mrsched.expe.validation import check_storage, read_workload, workload_warnings

    checked: set[tuple] = set()

    cache: dict[str, dict | None] = {}
    said: set[tuple[str, str]] = set()
    out = []
    for spec in specs:
        if (spec.workload, spec.engine) not in cache:
            # the one workload validator, as `mrsched run` calls it: a workload that run
            # refuses (given or generated) stops the campaign before any run, by name
            name = spec.labels.get("workload_name", spec.workload)
            cache[spec.workload, spec.engine] = read_workload(
                spec.workload, file=campaign_file, key=f"workload {name}", engine=spec.engine)
        data = cache[spec.workload, spec.engine]
        key = (spec.platform, tuple(spec.roles), spec.bb_capacity, spec.workload)
        if data is not None and key not in checked:
            checked.add(key)
            check_storage(spec.platform, spec.roles, spec.bb_capacity, data, file=campaign_file,
                          key=f"platform {spec.labels.get('platform_name', spec.platform)}")
        warnings = workload_warnings(data, spec.options) if data is not None else []
        for text in warnings:
            name = spec.labels.get("workload_name", spec.workload)
            if (name, text) not in said:
                said.add((name, text))
                log(f"warning: workload {name}: {text}")
        out.append(replace(spec, labels={**spec.labels, "warnings": warnings}) if warnings else spec)
    return out


def _load_platforms(specs: list, *, campaign_file: str | None = None) -> None:
    """Each platform of the embedded runs to do, loaded once here as the engine loads it: a
    file the engine would refuse stops the campaign before any run, naming it, and a large
    one is parsed once for all the runs, which read the parse back
    (``simulator.platform_cache``) instead of each parsing it again. The loader is the
    checks' own (``validation._loaded_platform``: nothing without the engine installed)."""
    from mrsched.expe.validation import _loaded_platform

    seen: set[tuple] = set()
    for spec in specs:
        key = (str(spec.platform), tuple(spec.roles))
        if spec.engine != "embedded" or key in seen:
            continue
        seen.add(key)
        try:
            _loaded_platform(*key)
        except MrschedError as exc:
            name = spec.labels.get("platform_name", spec.platform)
            raise ConfigError(str(exc), file=campaign_file, field=f"platform {name}") from None


def _say(text: str) -> None:
    print(text, flush=True)  # seen at once, also in a redirected log


def write_campaign_report(campaign_dir: Path) -> Path | None:
    """``mrsched.analysis.write_report(campaign_dir)`` when the analysis area is installed."""
    import importlib

    write_report = None
    for module_name in ("mrsched.analysis", "mrsched.analysis.report"):
        try:
            write_report = getattr(importlib.import_module(module_name), "write_report", None)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("mrsched"):
                continue  # the analysis area is not installed
            raise
        if write_report is not None:
            break
    if write_report is None:
        return None
    return _swap_in(campaign_dir / "report", lambda tmp: write_report(campaign_dir, out=tmp))


def _swap_in(target: Path, write) -> Path:
    """Let ``write(tmp_dir)`` build a folder beside ``target``, then rename it into place: a
    reader (or a kill) never meets a half-written ``index.html`` or ``metrics.csv``."""
    import os
    import shutil

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    old = target.with_name(f".{target.name}.{os.getpid()}.old")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        written = Path(write(tmp))
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return target / written.relative_to(tmp)


def run_campaign(path: str | Path, *, executor=None, jobs: int | None = None,
                 output: str | Path | None = None, progress: bool = True,
                 report: bool | None = None, log=None) -> CampaignSummary:
    """Run every unfinished run of the campaign file ``path``; returns what happened."""
    log = log or _say
    campaign = load_campaign(path, output=output)  # all validation, before anything runs
    runs = plan_runs(campaign)
    try:
        campaign.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the campaign directory {campaign.output}: "
                          f"{exc.strerror or exc}", file=campaign.file,
                          field="output" if output is None else "--out") from None
    with CampaignLock(campaign.output):
        return _run_locked(campaign, runs, executor=executor, jobs=jobs, progress=progress,
                           report=report, log=log)


def _run_locked(campaign: Campaign, runs: list, *, executor, jobs, progress, report,
                log) -> CampaignSummary:
    from mrsched.expe.executors import make_executor

    prepare_inputs(campaign, runs)
    write_expanded(campaign, runs)
    summary = CampaignSummary(campaign.output, total=len(runs))
    todo = []
    sha256 = functools.lru_cache(maxsize=None)(sha256_file)   # many runs share an input
    for run in runs:
        if not is_complete(run.spec.out_dir):
            todo.append(run.spec)
            continue
        stale = spec_problem(read_manifest(run.spec.out_dir), run.spec, sha256)
        if stale is None:
            summary.skipped += 1
        else:
            log(f"run {run.spec.run_id} is redone: {stale}")
            todo.append(run.spec)
    todo = _with_warnings(todo, log, campaign_file=campaign.file)
    _load_platforms(todo, campaign_file=campaign.file)
    outside = output_outside(campaign)
    if outside:
        log(f"warning: {outside}")
    if executor is None or isinstance(executor, str):
        executor = make_executor(executor, jobs=jobs or campaign.parallelism)
    log(f"campaign {campaign.name}: {len(runs)} runs, {summary.skipped} already done, "
        f"{len(todo)} to run on {executor.describe()} -> {campaign.output}")
    processes.INTERRUPTED.clear()
    bar = Progress(len(todo), progress)

    lock = threading.Lock()

    def on_done(spec, manifest: dict) -> None:
        bar.done(spec, manifest)
        with lock:
            if manifest.get("status") == "ok":
                summary.ok += 1
            elif manifest.get("status") != "interrupted":
                summary.failed[spec.run_id] = f"{manifest.get('status')}: {manifest.get('error')}"

    try:
        executor.run(todo, bar.start, on_done)
    except KeyboardInterrupt as exc:
        summary.interrupted = len(todo) - summary.ok - len(summary.failed)
        done = summary.ok + len(summary.failed)
        exc.mrsched_detail = (f"{done} of {len(todo)} runs finished ({summary.ok} ok, "
                              f"{len(summary.failed)} failed), {len(todo) - done} interrupted "
                              "or not started")
        raise
    finally:
        bar.close()
    for run_id, reason in sorted(summary.failed.items()):
        log(f"  FAILED {run_id}: {reason}")
    if report if report is not None else campaign.report:
        log(f"writing the report of {len(runs)} runs into {campaign.output / 'report'} ...")
        try:
            summary.report = write_campaign_report(campaign.output)
        except Exception as exc:  # the runs are safe on disk; `mrsched report DIR` can retry
            summary.report_error = str(exc) if isinstance(exc, MrschedError) else f"{type(exc).__name__}: {exc}"
            log(f"report not written: {summary.report_error}")
    return summary


def campaign_status(path: str | Path, *, output: str | Path | None = None) -> dict:
    """Per-run status of a campaign (from the run manifests) without running anything."""
    campaign: Campaign = load_campaign(path, output=output)
    rows = []
    sha256 = functools.lru_cache(maxsize=None)(sha256_file)   # many runs share an input
    for run in plan_runs(campaign):
        status = run_status(run.spec.out_dir)
        manifest = read_manifest(run.spec.out_dir) or {}
        error = manifest.get("error")
        if status == "incomplete":
            error = outputs_problem(run.spec.out_dir, manifest)
        elif status == "ok" and (stale := spec_problem(manifest, run.spec, sha256)) is not None:
            status, error = "outdated", stale
        rows.append({"run_id": run.spec.run_id, "status": status,
                     "error": error, "wall_time": manifest.get("wall_time")})
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return {"campaign": campaign.name, "dir": str(campaign.output), "runs": rows,
            "counts": counts}
