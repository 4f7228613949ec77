"""Issue 41 item 6: every command and sub-command says what it does, every flag says what it
is and shows its default, and the texts name what exists (every platform kind, every
workload action), as a new user reads them with ``--help``."""

from __future__ import annotations

import argparse

import pytest

from mrsched.cli import build_parser, main


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser, one-line help in its parent's list) of every (sub-)command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name)
                yield from commands(sub, (*path, name))


ALL = list(commands(build_parser()))
IDS = [" ".join(path) for path, _, _ in ALL]


def test_every_command_of_the_brief_is_there():
    names = set(IDS)
    for expected in ("platform", "platform dragonfly", "platform cluster", "platform iotree",
                     "platform bundled", "workload swf", "workload synthetic", "workload model",
                     "workload requests", "run", "campaign run", "campaign status", "report",
                     "serve", "simulate", "policies"):
        assert expected in names


@pytest.mark.parametrize("path, parser, summary", ALL, ids=IDS)
def test_each_command_says_what_it_does(path, parser, summary):
    assert summary, f"`mrsched {' '.join(path)}` has no line in its parent's --help"
    assert parser.description, f"`mrsched {' '.join(path)} --help` has no description"


def flags(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        yield action


def shows_a_default(action: argparse.Action) -> bool:
    """Whether the flag has a default worth saying: not absent, not an off switch."""
    default = action.default
    return bool(action.option_strings) and default is not None and default is not False \
        and default not in ([], "", argparse.SUPPRESS) \
        and not isinstance(action, (argparse._StoreTrueAction, argparse._CountAction))


@pytest.mark.parametrize("path, parser, summary", ALL, ids=IDS)
def test_each_flag_has_help_and_its_default(path, parser, summary):
    text = parser.format_help()
    for action in flags(parser):
        name = "/".join(action.option_strings) or action.dest
        assert action.help, f"`mrsched {' '.join(path)}`: {name} has no help"
        if shows_a_default(action):
            entry = parser.formatter_class(parser.prog)._get_help_string(action)
            assert "default" in entry.lower(), f"`mrsched {' '.join(path)}`: {name} hides its default"
    assert "==SUPPRESS==" not in text


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_top_help_names_every_platform_kind(capsys):
    """'(dragonfly, cluster)' was stale once iotree and bundled existed: the one-line help of
    `platform` in `mrsched --help` names every kind its sub-commands make."""
    summary = next(text for path, _, text in ALL if path == ("platform",))
    kinds = [path[1] for path, _, _ in ALL if len(path) == 2 and path[0] == "platform"]
    assert set(kinds) >= {"dragonfly", "cluster", "iotree", "bundled"}
    for kind in kinds:
        assert kind in summary.replace("the bundled ones", "bundled"), (kind, summary)
    assert " ".join(summary.split()) in help_text(capsys)


def test_defaults_read_in_the_help(capsys):
    """A few defaults a user needs, as `--help` prints them."""
    assert "(default: alloc-only)" in help_text(capsys, "workload", "swf")
    synthetic = help_text(capsys, "workload", "synthetic")
    assert "(default: 50)" in synthetic and "(default: 120.0)" in synthetic
    run = help_text(capsys, "run")
    assert "-o DIR, --output DIR, --out DIR" in run and "-O KEY=VALUE, --option KEY=VALUE" in run
    assert "(default: embedded)" in run
