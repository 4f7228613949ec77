"""Issue 13 item 9: the dispatcher suggests the right word for a mistyped command or option,
and `mrsched policies NAME` shows an importable class path."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from mrsched.cli import main


def test_mistyped_command_suggests_the_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["campagin", "run", "x.yaml"])
    assert exit_.value.code == 2
    assert "invalid choice: 'campagin'" in capsys.readouterr().err.splitlines()[-1]
    with pytest.raises(SystemExit):
        main(["campagin"])
    assert capsys.readouterr().err.strip().endswith("(did you mean 'campaign'?)")


def test_mistyped_option_suggests_the_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-p", "p.xml", "-w", "w.json", "--polcy", "fcfs", "--out", "r"])
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("mrsched run: error: ")
    assert "'--polcy' is not an option; did you mean '--policy'?" in line


def test_mistyped_optional_flag_of_a_subcommand_suggests_it(capsys):
    """The required options are all there: argparse's top parser reports the typo as
    unrecognized, and the suggestion must come from the sub-command's own options."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-p", "p.xml", "-w", "w.json", "--policy", "fcfs", "--out", "r",
              "--enable-compute-shring"])
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.endswith("unrecognized arguments: --enable-compute-shring ('--enable-compute-shring' "
                         "is not an option; did you mean '--enable-compute-sharing'?)")


def test_policies_name_shows_an_importable_class(capsys):
    assert main(["policies", "fcfs-bb"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    path = first.split("(", 1)[1].rstrip(")")
    assert path.startswith("mrsched.schedulers.")
    module, _, name = path.rpartition(".")
    assert getattr(importlib.import_module(module), name).__name__ == name


def test_report_baseline_lists_each_name_once():
    """`report --baseline` gathers variant and policy names (a policy with one variant is
    both): the hint lists each once, closest first."""
    import pandas as pd

    from mrsched.analysis.campaign import baseline_variant
    from mrsched.errors import ConfigError

    metrics = pd.DataFrame({"variant": ["fcfs", "sjf-bb", "fcfs-easy"],
                            "policy": ["fcfs", "sjf-bb", "fcfs-easy"]})
    with pytest.raises(ConfigError) as err:
        baseline_variant(metrics, "sjf-b")
    text = str(err.value)
    assert "did you mean 'sjf-bb'? valid: fcfs, fcfs-easy, sjf-bb" in text
    assert text.count("sjf-bb") == 2  # the suggestion and the list, once each


def test_version_names_the_compiled_parts_in_use(capsys, monkeypatch, require):
    """``mrsched --version`` says which compiled parts run, so that a slow install (no C
    compiler: the pure-Python twins) can be told from a slow machine."""
    from mrsched import cli

    require(all(importlib.util.find_spec(m) for m in cli.COMPILED_PARTS),
            "the compiled parts were not built: no C compiler at install")
    monkeypatch.delenv("MRSCHED_PURE_PYTHON", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("mrsched ")
    assert out[1] == "compiled parts: _mintree, _shares, _profile, _steps"

    real = importlib.import_module

    def without(suffix):
        def load(name, *a):
            if name.endswith(suffix):
                raise ImportError(f"No module named {name!r}")
            return real(name, *a)
        return load

    monkeypatch.setattr(importlib, "import_module", without("_steps"))
    assert cli.version_text().splitlines()[1] == (
        "compiled parts: _mintree, _shares, _profile; not built: _steps (their pure-Python "
        "twins, slower)")
    monkeypatch.setattr(importlib, "import_module", without(""))
    assert "none built (no C compiler at install" in cli.version_text()
    monkeypatch.setenv("MRSCHED_PURE_PYTHON", "1")
    assert "none in use (MRSCHED_PURE_PYTHON is set" in cli.version_text()


def test_python_dash_m_runs_the_command():
    """``python -m mrsched`` is the ``mrsched`` command (where no script is installed)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-P", "-m", "mrsched", "--version"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"mrsched {__import__('mrsched').__version__}")
