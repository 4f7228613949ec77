"""The ``mrsched`` command: a thin dispatcher over each area's own command module.

Each area owns its subcommands in ``<area>/cli.py`` exposing ``add_arguments(parser)`` and
``run(args) -> int``; heavy imports (pandas, matplotlib, zmq) happen inside ``run`` so that
``mrsched --help`` stays fast. Errors from mrsched print as one line (no traceback unless
``--debug``) and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

from mrsched import __version__
from mrsched.errors import MrschedError

# command -> (module, help); the module has add_arguments(parser) and run(args).
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("mrsched.schedulers.cli", "serve a scheduling policy to a real Batsim over ZeroMQ"),
    "policies": ("mrsched.schedulers.cli_policies", "list registered policies and their options"),
    "simulate": ("mrsched.simulator.cli", "run the embedded Batsim-compatible simulator (Batsim's flags)"),
    "platform": ("mrsched.platforms.cli", "generate SimGrid platforms (dragonfly, cluster, iotree) or list "
                                          "the bundled ones"),
    "workload": ("mrsched.workloads.cli", "convert, generate and check workloads"),
    "run": ("mrsched.expe.cli_run", "run one simulation: platform + workload + policy"),
    "campaign": ("mrsched.expe.cli_campaign", "run or inspect a campaign of simulations"),
    "report": ("mrsched.analysis.cli", "write an HTML report and metrics CSV for runs or a campaign"),
}


class HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends with its default, unless the help already says it or there is
    none to say (no value, an off switch): a new user reads in ``--help`` what a run without
    the flag does."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or self._says_default(text)
                or default is None or default is False or default in ([], "", argparse.SUPPRESS)
                or isinstance(action, (argparse._StoreTrueAction, argparse._CountAction))):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"

    @staticmethod
    def _says_default(text: str) -> bool:
        """``(default 0)``, ``default: none``, ``...; default 6``: the help names it already."""
        import re

        return "%(default)" in text or re.search(r"(\(|; |, |^)default\b|\bdefault:", text) is not None


class Parser(argparse.ArgumentParser):
    """argparse with a 'did you mean' on a mistyped command or option (``mrsched campagin``,
    ``--polcy``): the usual error line, plus the closest valid word. Sub-command parsers are
    of this class too (argparse builds them with the parent's class), so all share
    :class:`HelpFormatter`."""

    argv: list[str] = []  # the command line being parsed (set by main), to find the typo

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        hint = self._suggestion(message)
        super().error(message + (f" ({hint})" if hint else ""))

    def _suggestion(self, message: str) -> str | None:
        import difflib
        import re

        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            valid = re.findall(r"'([^']*)'", choice.group(2))
            close = difflib.get_close_matches(choice.group(1), valid, n=1)
            return f"did you mean '{close[0]}'?" if close else None
        if "unrecognized arguments" not in message and "are required" not in message:
            return None
        known = {opt for parser in self._chosen_parsers()
                 for action in parser._actions for opt in action.option_strings}
        longs = sorted(o for o in known if o.startswith("--"))
        for word in self.argv:
            flag = word.split("=", 1)[0]
            if flag.startswith("--") and flag not in known:
                close = difflib.get_close_matches(flag, longs, n=1)
                if close:
                    return f"'{flag}' is not an option; did you mean '{close[0]}'?"
        return None


    def _chosen_parsers(self) -> list[argparse.ArgumentParser]:
        """This parser and the sub-command parsers the command line names (``mrsched run``,
        ``mrsched workload swf``): argparse reports a mistyped sub-command option as
        unrecognized by the top parser, which alone does not know it."""
        parsers: list[argparse.ArgumentParser] = [self]
        for parser in parsers:
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    parsers.extend(action.choices[w] for w in self.argv if w in action.choices)
        return parsers


#: the optional compiled parts (setup.py), each with a pure-Python twin giving the same runs
COMPILED_PARTS = ("mrsched.schedulers.profile._mintree", "mrsched.schedulers.profile._shares",
                  "mrsched.schedulers.profile._profile", "mrsched.simulator._steps")


def version_text() -> str:
    """The version, and which compiled parts this install runs: a build without a C compiler
    gives the same results, only slower, so a slow run can be told from a slow machine. A part
    runs when it imports (its module falls back to the twin on the same ImportError)."""
    from mrsched import native

    built, missing = [], []
    for module in COMPILED_PARTS:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module.rsplit(".", 1)[1])
        else:
            built.append(module.rsplit(".", 1)[1])
    if not native.wanted():
        parts = "none in use (MRSCHED_PURE_PYTHON is set: the pure-Python twins)"
    elif not built:
        parts = "none built (no C compiler at install: the pure-Python twins, slower)"
    else:
        parts = ", ".join(built)
        if missing:
            parts += f"; not built: {', '.join(missing)} (their pure-Python twins, slower)"
    return f"mrsched {__version__}\ncompiled parts: {parts}"


class _Version(argparse.Action):
    """``--version``, computed only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the version and the compiled parts in use, and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def chosen_command(argv: list[str] | None) -> str | None:
    """The command ``argv`` names (its first word that is not a flag: the top parser's flags,
    ``--debug`` and ``--version``, take no value), or None."""
    for word in argv or ():
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None, *, every: bool = True) -> argparse.ArgumentParser:
    """The parser of every command; with ``every=False``, only the command ``argv`` names
    gets its arguments (its module imported): the others are listed, their modules left
    unimported, so that a command starts with what it uses (issue 45); they are not even
    listed when the command is named and no help is asked (nothing would show them)."""
    chosen = chosen_command(argv)
    listed = every or chosen is None or any(w in ("-h", "--help") for w in argv or ())
    parser = Parser(
        prog="mrsched",
        description="Multi-resource HPC job scheduling with Batsim: policies, an embedded "
                    "Batsim-compatible simulator, platforms, workloads, campaigns and reports.")
    parser.add_argument("--version", action=_Version)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if not every and name != chosen:
            if listed:
                sub.add_parser(name, help=help_text, description=help_text)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(module_name):
                continue  # area not built yet
            raise
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that cleanup (killing a run's processes) runs
    as for Ctrl-C; the exit code says which signal it was."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


def _on_sigterm(signum, _frame):
    raise Terminated(signum)


#: what an interrupted command leaves, said on its "interrupted" line
RESUME_HINTS = {
    "campaign": "finished runs are kept; run the same command again to resume",
    "run": "the run was stopped unfinished; run the same command again to redo it",
}


def _interrupted(args, exc: KeyboardInterrupt) -> int:
    signum = getattr(exc, "signum", signal.SIGINT)
    detail = getattr(exc, "mrsched_detail", None)
    hint = RESUME_HINTS.get(args.command)
    text = f"mrsched {args.command}: interrupted ({signal.Signals(signum).name})"
    text += "".join(f": {part}" if i == 0 else f"; {part}"
                    for i, part in enumerate(p for p in (detail, hint) if p))
    print(text, file=sys.stderr)
    return 128 + int(signum)  # as a shell reports a command killed by that signal


def main(argv: list[str] | None = None) -> int:
    Parser.argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(Parser.argv, every=False)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return int(args._run(args) or 0)
    except MrschedError as exc:
        if args.debug:
            raise
        print(f"mrsched {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _interrupted(args, exc)
    except BrokenPipeError:  # `mrsched policies | head`: the reader left, nothing to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def entry() -> None:
    """The ``mrsched`` command: ``main``, then leave without the interpreter's teardown, which
    frees every object of every module one by one: milliseconds a small run pays for nothing
    (issue 45). What teardown does that matters is done first: the exit handlers (logging's
    flush among them) and the standard streams flushed. With other threads alive, the usual
    exit, which waits for them; under a profiler or a tracer (``python -m cProfile``,
    coverage) too, so that it reports."""
    code = main()
    if threading.active_count() > 1 or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    import atexit
    import os

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):   # the reader left, or a stream was closed
        pass
    os._exit(code)


if __name__ == "__main__":
    entry()
