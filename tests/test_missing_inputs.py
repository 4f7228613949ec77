"""The suite's rule for inputs a machine may lack (tests/conftest.py): a skip with the reason on a
user's machine, the same line as a failure under CI=true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

SHARED_PROBE = '''
def test_reads_the_reference(shared_dir):
    assert shared_dir.is_dir()

def test_reads_a_trace(shared_file):
    shared_file("data", "trace.swf")
'''

PYBATSIM_PROBE = '''
def test_talks_to_pybatsim(pybatsim):
    pass
'''


def run_probe(tmp_path: Path, probe: str, ci: str | None, *, with_shared: bool = False
              ) -> subprocess.CompletedProcess:
    """pytest on a checkout holding only the suite's conftest, its rule and ``probe``, ../shared beside it
    or not; pybatsim is looked for under a module name that no module has."""
    checkout = tmp_path / "checkout"
    (checkout / "tests").mkdir(parents=True)
    conftest = (HERE / "conftest.py").read_text()
    # only a module that no machine has: what else is installed here (docopt comes with
    # .ci/run, not with the README's set-up) must not change the line the test reads
    conftest, n = re.subn(r"^PYBATSIM_MODULES = \(.*?\)$", 'PYBATSIM_MODULES = ("batsim_absent_here",)',
                          conftest, flags=re.M)
    assert n == 1
    (checkout / "tests" / "conftest.py").write_text(conftest)
    (checkout / "tests" / "inputs_rule.py").write_text((HERE / "inputs_rule.py").read_text())
    (checkout / "tests" / "test_probe.py").write_text(probe)
    if with_shared:
        (tmp_path / "shared" / "data").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"   # core pytest only: a faster start
    if ci is not None:
        env["CI"] = ci
    # Its own --basetemp: a nested session must not clean up (and so renumber) the temporary
    # folders of the session running it, whose cached runs live there.
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider",
                           "--basetemp", str(tmp_path / "basetemp"), "tests"], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=120)


def test_without_shared_a_user_sees_skips_with_the_reason(tmp_path):
    proc = run_probe(tmp_path, SHARED_PROBE, None)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("2 skipped")
    assert f"../shared (reference runs and traces) is not present at {tmp_path / 'shared'}" \
        in proc.stdout


def test_under_ci_a_missing_shared_fails_naming_it(tmp_path):
    proc = run_probe(tmp_path, SHARED_PROBE, "true")
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("2 errors")
    assert f"ERROR tests/test_probe.py::test_reads_the_reference - Failed: CI=true and ../shared " \
        f"(reference runs and traces) is not present at {tmp_path / 'shared'}" in proc.stdout
    assert "Traceback" not in proc.stdout


def test_under_ci_a_missing_file_of_shared_fails_naming_it(tmp_path):
    proc = run_probe(tmp_path, SHARED_PROBE, "true", with_shared=True)
    assert proc.returncode == 1, proc.stdout
    assert "FAILED tests/test_probe.py::test_reads_a_trace - Failed: CI=true and data/trace.swf is " \
        "not in ../shared" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("1 failed, 1 passed")


@pytest.mark.parametrize("ci, outcome", [(None, "SKIPPED"), ("true", "ERROR")])
def test_a_missing_pybatsim_names_the_module_and_the_install(tmp_path, ci, outcome):
    proc = run_probe(tmp_path, PYBATSIM_PROBE, ci, with_shared=True)
    assert proc.returncode == (0 if ci is None else 1), proc.stdout
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith(outcome)]
    assert "pybatsim 3.2.1 is not installed (no module batsim_absent_here; pip install --no-deps " \
        "pybatsim==3.2.1 docopt sortedcontainers)" in line
