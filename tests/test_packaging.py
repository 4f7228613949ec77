"""The install maps top-level folders to `mrsched.*`: every sub-package must be declared."""

from __future__ import annotations

import tomllib

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MAPPING_ROOTS = ("mrsched", "schedulers", "simulator", "platforms", "workloads", "expe", "analysis",
                 "studies")


def test_every_subpackage_is_declared_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    dirs = {v: k for k, v in config["package-dir"].items()}
    found = set()
    for root in MAPPING_ROOTS:
        for init in (REPO / root).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / root)
            parts = [dirs[root]] + [p for p in rel.parts]
            found.add(".".join(parts))
    assert found - declared == set(), "sub-packages missing from pyproject.toml packages"


def test_cli_help_lists_commands(capsys):
    import pytest

    from mrsched.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: mrsched" in out


def test_units_parse_simgrid_and_cli_forms():
    import pytest

    from mrsched.errors import ConfigError
    from mrsched.units import parse_bandwidth, parse_size, parse_speed, parse_time

    assert parse_speed("1Gf") == 1e9
    assert parse_bandwidth("1250MBps") == 1.25e9
    assert parse_bandwidth("10Gbps") == 1.25e9
    assert parse_size("40GB") == 4e10
    assert parse_size("1KiB") == 1024
    assert parse_time("50us") == pytest.approx(5e-5)
    assert parse_time("2min") == 120
    with pytest.raises(ConfigError, match="unknown unit"):
        parse_size("3 parsecs")
