"""Checks made before anything runs: policy names, their options, input files.

Errors name the file and key they come from and suggest the closest valid name, so that a
typo in a campaign file costs one line of output, not a failed campaign.
"""

from __future__ import annotations

import functools
from pathlib import Path

from mrsched.errors import ConfigError, cut_list, suggest


def _registry():
    try:
        from mrsched.schedulers import registry
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("mrsched"):
            raise ConfigError("the policy registry (mrsched.schedulers.registry) is not installed",
                              hint="give a scheduler class as module.path:ClassName") from exc
        raise
    return registry


def policy_names() -> list[str]:
    return sorted(_registry().POLICIES)


def check_policy(policy: str, options: dict, *, file: str | None = None,
                 key: str = "policy") -> dict:
    """Validate ``policy`` and its option names; returns the policy's parameters (defaults).

    ``module.path:ClassName`` policies are the user's own classes: only importability is
    checked here (their options are their constructor's business).
    """
    if not isinstance(policy, str) or not policy:
        raise ConfigError("a policy name is required", file=file, field=key)
    if ":" in policy:
        from mrsched.schedulers.cli import load_scheduler_class

        try:
            cls = load_scheduler_class(policy)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=file, field=key, hint=exc.hint) from exc
        from mrsched.schedulers.model.contract import Policy
        if not issubclass(cls, Policy):
            return {}
        params = _registry().class_parameters(cls)
        _check_names(policy, options, params, file, key)
        return params
    registry = _registry()
    if policy not in registry.POLICIES:
        raise ConfigError(f"unknown policy '{policy}'", file=file, field=key,
                          hint=suggest(policy, registry.POLICIES))
    params = dict(registry.scheduler_parameters(policy))   # + decision_cost, decision_scale
    _check_names(policy, options, params, file, key)
    return params


def _check_names(policy: str, options: dict, params: dict, file: str | None, key: str) -> None:
    for name in options:
        if name not in params:
            raise ConfigError(f"unknown option '{name}' of policy '{policy}'", file=file,
                              field=f"{key}.options.{name}" if key else name,
                              hint=suggest(name, params))


def check_values(policy: str, options: dict, *, file: str | None = None,
                 key: str = "policy") -> None:
    """Build the scheduler once (cheap: run-time state starts with the simulation) so that a
    bad option value is refused now rather than in every run."""
    try:
        if ":" in policy:
            from mrsched.schedulers.cli import load_scheduler_class
            from mrsched.schedulers.model.contract import Policy
            cls = load_scheduler_class(policy)
            if issubclass(cls, Policy):
                _registry().make_scheduler_of_class(cls, dict(options))
            return
        _registry().make_scheduler(policy, dict(options))
    except ConfigError as exc:
        field = f"{key}.options.{exc.field}" if exc.field else key
        raise ConfigError(exc.message, file=file, field=field, hint=exc.hint) from exc


def with_seed(policy: str, options: dict, seed: int | None, params: dict) -> dict:
    """The options, plus ``seed`` when the policy takes one and none was given."""
    options = dict(options)
    if seed is not None and "seed" in params and "seed" not in options:
        options["seed"] = seed
    return options


def check_file(path: str | Path, *, what: str, file: str | None = None,
               key: str | None = None) -> Path:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} file not found: {path}", file=file, field=key or what)
    return path


# ---------------------------------------------------------------- workloads, read up front

def read_workload(path: str | Path, *, file: str | None = None, key: str | None = None,
                  engine: str = "embedded") -> dict:
    """A Batsim workload read and checked now (not first by its run) by the one workload
    validator ``workload check``, ``run``, ``simulate`` and campaigns share
    (``simulator/workload.py`` ``validate_workload``); an SWF trace is pointed to ``mrsched
    workload swf``. ``file``/``key``: the campaign file and key that name the workload."""
    from mrsched.errors import WorkloadError

    path = Path(path)
    where = {"file": file, "field": key} if file else {"file": str(path), "field": key}
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
    except OSError as exc:
        raise ConfigError(f"cannot read workload {path}: {exc.strerror or exc}", **where) from None
    swf_hint = f"it looks like an SWF trace: convert it first with `mrsched workload swf {path} -o W.json`"
    if path.name.endswith((".swf", ".swf.gz")) or head == b"\x1f\x8b" or head[:1] == b";":
        raise ConfigError(f"workload {path} is not a Batsim JSON workload", hint=swf_hint, **where)
    try:
        from mrsched.simulator.workload import validate_workload
    except ModuleNotFoundError:   # no embedded engine installed: parse only, the engine checks
        import json

        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"workload {path} is not valid JSON: {exc}", **where) from None
    try:
        return validate_workload(path, engine=engine)
    except WorkloadError as exc:
        if not file:
            raise
        raise ConfigError(str(exc), **where) from None


def uses_burst_buffer(workload: dict) -> bool:
    """Whether a job asks burst buffer (``burst_buffer`` on the job or the artifact's ``bb``
    per node on its profile)."""
    profiles = workload.get("profiles") or {}
    for job in workload.get("jobs") or []:
        if not isinstance(job, dict):
            continue
        if _positive(job.get("burst_buffer")):
            return True
        prof = profiles.get(str(job.get("profile"))) if isinstance(profiles, dict) else None
        if isinstance(prof, dict) and _positive(prof.get("bb")):
            return True
    return False


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def check_storage(platform: str | Path, roles, bb_capacity: int | None, workload: dict, *,
                  file: str | None = None, key: str | None = None) -> None:
    """Refuse a run whose burst-buffer jobs would all be rejected because the platform's
    burst-buffer storage hosts declare no ``bb_capacity`` (and none is given)."""
    if bb_capacity is not None or not uses_burst_buffer(workload):
        return
    from mrsched.errors import PlatformError

    try:
        hosts = _storage_hosts(str(platform), tuple(roles))
    except PlatformError as exc:
        if file is None:   # `mrsched run`: the platform's own line names its file
            raise
        raise ConfigError(str(exc), file=file, field=key or "platform") from None
    if hosts is None:
        return  # no platform loader installed: the scheduler's own rejections will tell
    bb_hosts, without = hosts
    if without and not bb_hosts:
        names = cut_list(without, limit=4)
        raise ConfigError(f"platform {platform}: the storage hosts {names} have no bb_capacity, so "
                          "every burst-buffer job would be rejected", file=file,
                          field=key or "bb_capacity",
                          hint="give their capacity with --bb-capacity SIZE (e.g. 40GB), or "
                               "bb_capacity properties in the platform")
    if not without and not bb_hosts:
        hint = ("name the storage hosts with -r HOST1,HOST2:storage (Batsim's -r) and give "
                "--bb-capacity SIZE")
        raise ConfigError(f"platform {platform} has no burst-buffer storage host, but the "
                          "workload asks burst buffer: every such job would be rejected",
                          file=file, field=key or "platform", hint=hint)


@functools.lru_cache(maxsize=4)
def _loaded_platform(platform: str, roles: tuple[str, ...]):
    """The platform as Batsim loads it (``-r`` roles applied); None without the simulator."""
    try:
        from mrsched.simulator.platform import load_platform
    except ModuleNotFoundError:
        return None
    return load_platform(platform, roles=roles)


@functools.lru_cache(maxsize=32)
def _storage_hosts(platform: str, roles: tuple[str, ...]):
    """(burst-buffer storage hosts with bb_capacity, those without) of a platform loaded as
    Batsim loads it (``-r`` roles applied); None without the simulator's loader."""
    plat = _loaded_platform(platform, roles)
    if plat is None:
        return None
    bb_hosts, without = [], []
    for host in plat.storage_hosts():
        props = host.properties or {}
        if str(props.get("pfs", "")).lower() == "true" or host.name == "pfs":
            continue
        (bb_hosts if "bb_capacity" in props else without).append(host.name)
    return bb_hosts, without


def workload_warnings(workload: dict, options: dict) -> list[str]:
    """Mismatches that do not stop a run but change what it means."""
    out = []
    gen = workload.get("generator") if isinstance(workload.get("generator"), dict) else {}
    job_model = str(options.get("job_model", "alloc-only"))
    if gen.get("variant") == "io-phased" and job_model != "io-phased":
        out.append("the workload was converted with the io-phased variant (compute shortened "
                   "to leave room for I/O phases) but runs with job_model=alloc-only: its jobs "
                   "run shorter than in the trace; give the policy option job_model=io-phased "
                   "(-O job_model=io-phased), or convert with --variant alloc-only")
    return out


# ------------------------------------------------- a run checked whole before it writes

def _located(exc, **where):
    """``exc`` (a MrschedError) naming ``where`` (file, job) when it did not say already."""
    fields = {k: getattr(exc, k) for k in ("file", "line", "element", "job", "field", "event")}
    for key, value in where.items():
        if fields.get(key) is None:
            fields[key] = value
    return type(exc)(exc.message, hint=exc.hint, **fields)


def check_start(spec) -> None:
    """Start the run's policy on its platform with no job, in this process, writing nothing
    (the embedded engine up to SIMULATION_BEGINS and SIMULATION_ENDS): what a policy refuses
    when it sees the machine (``io_aware`` without a bandwidth tree, a seed 002 policy on a
    platform of whole nodes) is refused before the run directory exists, naming the platform.
    A ``module:Class`` scheduler of the user's is not started here (its start is its own
    business, side effects included); its platform is still loaded."""
    from mrsched.errors import MrschedError

    roles = tuple(spec.roles)
    try:
        platform = _loaded_platform(str(spec.platform), roles)
    except MrschedError as exc:
        raise _located(exc, file=str(spec.platform)) from None
    if platform is None or ":" in spec.policy:
        return
    from mrsched.expe.worker import make_scheduler
    from mrsched.simulator.engine import simulate
    from mrsched.simulator.workload import Workload

    extra = {}   # the loaded platform has its roles already
    if spec.sched_cfg:
        extra["sched_cfg"] = spec.sched_cfg
    if spec.compute_sharing:
        extra["compute_sharing"] = True
    if getattr(spec, "energy", False):
        extra["energy"] = True
    try:
        simulate(platform, [Workload(name="w0", path=str(spec.workload))],
                 make_scheduler(spec.policy, dict(spec.options)), export_prefix=None,
                 dynamic_jobs=spec.dynamic_jobs, keep_records=False, **extra)
    except MrschedError as exc:
        raise _located(exc, file=str(spec.platform)) from None
    except Exception as exc:   # a policy's own bug at start: the run would meet it too
        raise ConfigError(f"policy '{spec.policy}' fails to start on this platform: "
                          f"{type(exc).__name__}: {exc}", file=str(spec.platform)) from None
    finally:   # a seed 002 policy's setup starts a solver worker: not kept through the run
        import sys

        milp = sys.modules.get("mrsched.schedulers.optim.milp")
        if milp is not None:
            milp.stop_worker()
