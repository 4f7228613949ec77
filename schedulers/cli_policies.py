"""``mrsched policies [NAME]``: list the registered policies, or one policy's options and defaults."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="a policy name: show its options, types and defaults")


def _plain(text: str) -> str:
    """Docstring markup (``name``) read as plain terminal text."""
    return text.replace("``", "")


def describe(name: str) -> str:
    """The option table of one policy as text (name, type, default, allowed values, help)."""
    from mrsched.schedulers.registry import parameter_table, policy_class, policy_parameters

    cls = policy_class(name)
    defaults = policy_parameters(name)
    table = parameter_table(name)
    doc = (cls.__doc__ or (__import__(cls.__module__).__doc__ or "")).strip().splitlines()
    # an importable path: `from mrsched.schedulers.policies.fcfs import FCFS`
    lines = [f"{name} ({cls.__module__}.{cls.__name__})"]
    if doc:
        lines.append(f"  {_plain(doc[0])}")
    lines.append("options:")
    from mrsched.schedulers.model.params import RUNTIME_DEFAULTS, RUNTIME_PARAMS

    # the scheduler's own options (decision cost), taken by every policy
    extra = {k: v for k, v in RUNTIME_DEFAULTS.items() if k not in defaults}
    table = {**RUNTIME_PARAMS, **table}
    for opt, default in {**defaults, **extra}.items():
        p = table.get(opt)
        kind = p.type.__name__ if p else type(default).__name__
        allowed = ""
        if p is not None and p.choices:
            allowed = " {" + ", ".join(map(str, p.choices)) + "}"
        elif p is not None and (p.min is not None or p.max is not None):
            allowed = f" [{'' if p.min is None else p.min}..{'' if p.max is None else p.max}]"
        help_text = f"  {p.help}" if p is not None and p.help else ""
        lines.append(f"  {opt}={default!r} ({kind}{allowed}){help_text}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mrsched.schedulers.registry import POLICIES

    if args.name:
        print(describe(args.name))
        return 0
    for name, cls in POLICIES.items():
        doc = (cls.__doc__ or "").strip().splitlines()
        summary = doc[0] if doc else ""
        print(f"{name:18s} {_plain(summary)}")
    return 0
