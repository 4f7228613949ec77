"""``mrsched serve``: serve a scheduling policy to a real Batsim (or ``mrsched simulate``) over
ZeroMQ.

``POLICY`` is either a registered policy name (``mrsched policies`` lists them; options are
coerced by the registry) or ``package.module:ClassName``, a user's own ``BatsimScheduler``
subclass, built as ``ClassName(options=dict)`` with the ``--option`` values as strings (or
``ClassName()`` when no option is given and it takes no ``options``).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import os
import sys
from typing import Any

from mrsched.errors import ConfigError

DEFAULT_SOCKET = "tcp://127.0.0.1:28000"  # same as endpoint.DEFAULT_SOCKET (no zmq import here)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", metavar="POLICY",
                        help="registered policy name, or module.path:ClassName of a "
                             "BatsimScheduler subclass")
    parser.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="policy option (repeatable); values are strings, coerced by "
                             "the policy registry")
    # -o is the output in every command; here it was --option: a one-line hint, not a guess
    parser.add_argument("-o", dest="old_option", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("-s", "--socket", default=DEFAULT_SOCKET,
                        help=f"ZeroMQ endpoint to bind (default {DEFAULT_SOCKET}); loopback "
                             "only unless --allow-remote")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="give up when no message arrives within S seconds "
                             "(default: wait forever, as Batsim does)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow binding a non-loopback address (e.g. tcp://0.0.0.0:28000)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log the scheduler's decisions (-v info, -vv debug)")


def parse_options(items: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; values stay strings, a repeated key is refused."""
    options: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"bad --option {item!r}", field="option",
                              hint="expected KEY=VALUE, e.g. --option depth=2")
        if key in options:
            raise ConfigError(f"--option {key} given twice", field=key)
        options[key] = value
    return options


def _import_here_too(module_name: str):
    """``importlib.import_module``, looking in the current directory too when the module is not
    found elsewhere (a researcher's ``mypolicy.py`` beside the campaign file; mrsched's own
    processes run Python with ``-P``, which leaves the current directory out)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.split(".")[0] or here in sys.path:
            raise
        sys.path.append(here)
        return importlib.import_module(module_name)


def load_scheduler_class(spec: str) -> type:
    """``"package.module:ClassName"`` -> the class, with clear errors."""
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise ConfigError(f"bad scheduler {spec!r}", hint="expected module.path:ClassName")
    try:
        module = _import_here_too(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"cannot import module '{module_name}': {exc}",
                          hint="is it installed, on PYTHONPATH or in the current directory?") from None
    try:
        cls = getattr(module, class_name)
    except AttributeError:
        from mrsched.errors import suggest

        names = [n for n, v in vars(module).items() if inspect.isclass(v)
                 and hasattr(v, "handle_message")]
        raise ConfigError(f"module '{module_name}' has no class '{class_name}'",
                          hint=suggest(class_name, names) if names else None) from None
    from mrsched.schedulers.model.contract import Policy
    if inspect.isclass(cls) and issubclass(cls, Policy):
        return cls
    if not (inspect.isclass(cls) and callable(getattr(cls, "handle_message", None))):
        raise ConfigError(f"'{spec}' is not a scheduler class",
                          hint="subclass mrsched.schedulers.model.contract.Policy (docs/WRITING_A_POLICY.md) "
                               "or mrsched.schedulers.batsim.BatsimScheduler")
    return cls


def make_scheduler_of(cls: type, options: dict[str, Any], spec: str | None = None):
    """A scheduler instance of a class: a :class:`Policy` run by the registry's runtime, or a
    ``BatsimScheduler`` subclass built as ``cls(options=...)`` (``cls()`` without options)."""
    from mrsched.schedulers.model.contract import Policy
    if issubclass(cls, Policy):      # a policy of the contract: the registry's runtime runs it
        from mrsched.schedulers.registry import make_scheduler_of_class
        return make_scheduler_of_class(cls, options)
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    if "options" in params:
        return cls(options=options)
    if options:
        raise ConfigError(f"{spec or cls.__name__} takes no 'options' argument; cannot pass "
                          f"{', '.join(options)}", field=next(iter(options)))
    return cls()


def make_scheduler_from_spec(spec: str, options: dict[str, Any]):
    """A scheduler instance from a policy name or ``module:Class`` spec."""
    if ":" in spec:
        return make_scheduler_of(load_scheduler_class(spec), options, spec)
    try:
        registry = importlib.import_module("mrsched.schedulers.registry")
    except ModuleNotFoundError as exc:
        if exc.name != "mrsched.schedulers.registry":
            raise
        raise ConfigError(f"no policy registry in this installation; cannot serve {spec!r}",
                          hint="give module.path:ClassName of a BatsimScheduler subclass, "
                               "e.g. mrsched.schedulers.example_scheduler:FirstFitScheduler"
                          ) from None
    return registry.make_scheduler(spec, options)


def run(args: argparse.Namespace) -> int:
    from mrsched.schedulers.batsim.endpoint import serve

    level = logging.WARNING if not args.verbose else (
        logging.INFO if args.verbose == 1 else logging.DEBUG)
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    if args.old_option:
        raise ConfigError(f"-o {args.old_option[0]}: serve writes no output",
                          hint="policy options are -O/--option KEY=VALUE")
    options = parse_options(args.option)
    scheduler = make_scheduler_from_spec(args.policy, options)
    return serve(scheduler, args.socket, args.timeout, allow_remote=args.allow_remote,
                 ready=sys.stdout)
