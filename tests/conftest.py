"""Shared fixtures: paths to the repository and to ../shared (ground-truth runs and traces), and
the one rule for inputs a machine may lack.

The rule (``missing``): a test whose input is absent here (``../shared``, a trace in it,
pybatsim) skips with the reason on a user's machine, and fails with that same one line under
``CI=true``, where CI must not go green without its ground truth. Request the fixtures below
(``shared_dir``, ``shared_file``, ``pybatsim``, ``require``) and a new test inherits it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable

import pytest

from inputs_rule import ON_CI, REPO, SHARED, missing  # noqa: F401 (the rule, shared)

# pybatsim's own module (not just a ``batsim`` folder: pytest puts tests/schedulers on sys.path,
# where tests/schedulers/batsim/ would pass for a namespace package) and what it imports
PYBATSIM_MODULES = ("batsim.batsim", "docopt", "sortedcontainers")
PYBATSIM_INSTALL = "pip install --no-deps pybatsim==3.2.1 docopt sortedcontainers"


def pytest_report_header(config) -> str:
    if ON_CI:
        return "CI=true: a missing ../shared or pybatsim fails the tests that need it"
    return ("not CI: tests needing ../shared or pybatsim skip where they are absent "
            "(CI=true makes that a failure)")


@pytest.fixture(scope="session", autouse=True)
def _platform_cache(tmp_path_factory):
    """Parsed platforms kept in a folder of the test session, not in the user's ~/.cache
    (child processes inherit the variable)."""
    import os

    from mrsched.simulator.platform_cache import ENV

    before = os.environ.get(ENV)
    os.environ[ENV] = str(tmp_path_factory.mktemp("platform-cache"))
    yield
    if before is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = before


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def require() -> Callable[[bool, str], None]:
    """``require(condition, reason)``: :func:`missing` (skip here, fail under CI) unless true."""
    def check(condition: bool, reason: str) -> None:
        if not condition:
            missing(reason)
    return check


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the checkout (Batsim reference runs, traces)."""
    if not SHARED.is_dir():
        missing(f"../shared (reference runs and traces) is not present at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def shared_file(shared_dir) -> Callable[..., Path]:
    """``shared_file("data", "x.swf")``: that file of ../shared, or :func:`missing`."""
    def get(*parts: str) -> Path:
        path = shared_dir.joinpath(*parts)
        if not path.exists():
            missing(f"{'/'.join(parts)} is not in ../shared ({shared_dir})")
        return path
    return get


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@pytest.fixture(scope="session")
def pybatsim() -> None:
    """pybatsim 3.2.1 and what it imports (a real third-party Batsim client)."""
    absent = [m for m in PYBATSIM_MODULES if not _importable(m)]
    if absent:
        missing(f"pybatsim 3.2.1 is not installed (no module {', '.join(absent)}; "
                f"{PYBATSIM_INSTALL})")


def _compiled_then_python(request, built: bool, in_use: bool, use, what: str):
    """Set an optional C extension (``use(True)``) or its pure-Python twin (``use(False)``)
    for one parametrised run, and restore it after; a compiled run where ``what`` was not
    built (no C compiler at install) is :func:`missing`."""
    compiled = request.param == "compiled"
    if compiled and not built:
        missing(f"{what} was not built: no C compiler at install")
    use(compiled)
    yield request.param
    use(in_use)


@pytest.fixture(params=["compiled", "python"])
def share_count(request):
    """Run a test with placers counting burst-buffer shares in C, then in Python: both must
    give the same answers."""
    from mrsched.schedulers.profile import placement

    yield from _compiled_then_python(request, placement._shares is not None, placement._COMPILED,
                                     placement.use, "the compiled share count (schedulers/profile/_shares.c)")


@pytest.fixture(params=["compiled", "python"])
def profile_kernels(request):
    """Run a test with the profiles' row and mask operations in C, then in Python: both must
    leave the same profiles."""
    from mrsched.schedulers.profile import availability

    yield from _compiled_then_python(request, availability._profile is not None,
                                     availability._least is not availability._py_least,
                                     availability.use, "the compiled profile kernels (schedulers/profile/_profile.c)")


@pytest.fixture(params=["compiled", "python"])
def queue_tree(request):
    """Run a test with the ordered queue's compiled tree, then with its pure-Python twin: both
    must give the same answers."""
    from mrsched.schedulers.profile import ordered_queue as oq

    yield from _compiled_then_python(request, oq._mintree is not None, oq._MinTree is not oq._PyMinTree,
                                     oq.use, "the compiled queue tree (schedulers/profile/_mintree.c)")
