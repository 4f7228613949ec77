"""Start-up: a command imports what it uses (docs/API.md "Speed", issue 45). Each check runs a
fresh interpreter and counts the modules it ended with: ``import mrsched`` and the registry
stay free of numpy and pandas, and the registry imports a policy's module only when that
policy is asked for."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "matplotlib", "zmq", "highspy", "scipy", "yaml")


def modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_mrsched_is_light():
    loaded = modules_after("import mrsched")
    assert not loaded & set(HEAVY)
    assert sorted(m for m in loaded if m.startswith("mrsched")) == ["mrsched"]


def test_the_registry_imports_no_policy_until_asked():
    loaded = modules_after("import mrsched.schedulers.registry as r\nr.policy_names()\n"
                           "r.POLICIES['fcfs'].summary")
    assert not loaded & set(HEAVY)
    assert not [m for m in loaded if m.startswith("mrsched.schedulers.policies.")]
    asked = modules_after("import mrsched.schedulers.registry as r\nr.policy_class('fcfs')")
    policies = {m for m in asked if m.startswith("mrsched.schedulers.policies.")}
    assert "mrsched.schedulers.policies.fcfs" in policies
    assert "mrsched.schedulers.policies.bbsched" not in policies   # nor the others' solvers
    assert "highspy" not in asked


def test_every_registered_target_resolves():
    from mrsched.schedulers.model.contract import Policy
    from mrsched.schedulers.registry import POLICIES

    for name, entry in POLICIES.items():
        assert issubclass(entry.cls, Policy), name


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["policies"]])
def test_commands_that_run_nothing_import_neither_numpy_nor_pandas(argv):
    loaded = modules_after(f"import sys\nfrom mrsched.cli import main\nsys.argv = ['mrsched', *{argv!r}]\n"
                           "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                           "    try:\n        main()\n    except SystemExit:\n        pass")
    assert not loaded & {"numpy", "pandas", "matplotlib", "zmq", "highspy"}, argv


def _imported(text: str) -> list[str]:
    """The modules ``-X importtime`` lines name."""
    return [line.rsplit("|", 1)[1].strip() for line in text.splitlines()
            if line.startswith("import time:") and "|" in line and "imported package" not in line]


def test_run_imports_each_module_once_and_nothing_heavy_it_does_not_use(tmp_path, shared_dir):
    """``mrsched run``: the runner's process imports neither numpy nor pandas nor the
    campaign's or the report's libraries (a small run needs none of them), and the engine's
    child imports nothing the runner had (it is forked from it, not a second interpreter
    importing the world again), nor numpy."""
    import os
    from pathlib import Path

    ref = shared_dir / "batsim-reference" / "delays"
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    env.pop("MRSCHED_FORK_ENGINE", None)  # (set to 0, this test fails: the child imports again)
    done = subprocess.run([sys.executable, "-P", "-m", "mrsched.cli", "run", "-p",
                           str(ref / "platform.xml"), "-w", str(ref / "workload.json"),
                           "--policy", "fcfs-easy", "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    runner = _imported(done.stderr)
    assert not set(runner) & {"numpy", "pandas", "matplotlib", "zmq", "yaml", "highspy", "scipy"}
    child = _imported((out / "engine.log").read_text())
    assert "numpy" not in child
    assert "mrsched.simulator.engine" in runner + child
    assert not set(runner) & set(child), sorted(set(runner) & set(child))[:10]
    assert json.loads((out / "manifest.json").read_text())["status"] == "ok"
