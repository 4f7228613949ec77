"""Checks made before anything runs: policy names, their options, input files.

Errors name the file and key they come from and suggest the closest valid name, so that a
typo in a campaign file costs one line of output, not a failed campaign.
"""

from __future__ import annotations

from pathlib import Path

from mrsched.errors import ConfigError, suggest


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
            load_scheduler_class(policy)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=file, field=key, hint=exc.hint) from exc
        return {}
    registry = _registry()
    if policy not in registry.POLICIES:
        raise ConfigError(f"unknown policy '{policy}'", file=file, field=key,
                          hint=suggest(policy, registry.POLICIES))
    params = dict(registry.scheduler_parameters(policy))   # + decision_cost, decision_scale
    for name in options:
        if name not in params:
            raise ConfigError(f"unknown option '{name}' of policy '{policy}'", file=file,
                              field=f"{key}.options.{name}" if key else name,
                              hint=suggest(name, params))
    return params


def check_values(policy: str, options: dict, *, file: str | None = None,
                 key: str = "policy") -> None:
    """Build the scheduler once (cheap: run-time state starts with the simulation) so that a
    bad option value is refused now rather than in every run."""
    if ":" in policy:
        return
    try:
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
