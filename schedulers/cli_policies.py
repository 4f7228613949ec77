"""``mrsched policies [NAME]``: list the registered policies, or one policy's options and defaults."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="a policy name: show its options, types and defaults")


def _plain(text: str) -> str:
    """Docstring markup (``name``) read as plain terminal text."""
    return text.replace("``", "")


def describe(name: str) -> str:
    """The option table of one policy as text (name, type, default, allowed values, help): the
    policy's own knobs first, then the runtime's that it takes."""
    from mrsched.schedulers.registry import entry, parameter_table, policy_parameters, scheduler_parameters

    e = entry(name)
    cls = e.cls
    own = policy_parameters(name)
    defaults = {**own, **scheduler_parameters(name)}
    table = parameter_table(name)
    doc = (cls.__doc__ or "").strip().splitlines()
    # an importable path: `from mrsched.schedulers.policies.fcfs import FCFS`
    lines = [f"{name} ({cls.__module__}.{cls.__name__})"]
    if e.summary or doc:
        lines.append(f"  {_plain(e.summary or doc[0])}")
    if e.defaults:
        lines.append(f"  variant: {cls.__name__} with " + ", ".join(f"{k}={v!r}" for k, v in e.defaults.items()))
    for title, names in (("options:", list(own)), ("runtime options:", [k for k in defaults if k not in own])):
        if not names:
            continue
        lines.append(title)
        for opt in names:
            default = defaults[opt]
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
    for name, e in POLICIES.items():
        print(f"{name:18s} {_plain(e.summary)}")
    return 0
