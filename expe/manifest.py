"""The run manifest (DESIGN.md "Runs and campaigns"): what ran, on what, how it ended.

The manifest is written once, atomically, when a run ends, and records each output file's
rows, size and sha256: a run is finished only when its manifest says ``ok`` and the outputs
it records are there unchanged (a CSV cut short by a crash or a full disk is not a result).
Anything else is unfinished and is redone.
"""

from __future__ import annotations

import functools
import json
import os
import platform as _platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from mrsched.errors import ConfigError
from mrsched.atomic import write_json_atomic
# what a run writes and how its manifest vouches for it: shared with the analysis, which
# verifies a run before using it (mrsched/outputs.py)
from mrsched.outputs import (ENERGY_FILES, ENERGY_SUFFIXES, OUTPUT_FILES, OUTPUT_SUFFIXES,  # noqa: F401
                             describe_outputs, outputs_problem)

MANIFEST = "manifest.json"
STATUSES = ("ok", "failed", "timeout")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def versions(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Versions that can change a result: mrsched, Python and the numeric stack."""
    out = {"python": _platform.python_version(), "platform": sys.platform}
    for dist in ("mrsched", "numpy", "pyzmq", "procset", "highspy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    out.update(extra or {})
    return out


def source_root() -> Path:
    """The folder holding the ``mrsched`` package folder: the repository for an editable
    install (``pip install -e .``), ``site-packages`` for a regular one."""
    import mrsched

    return Path(mrsched.__file__).resolve().parent.parent


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS`` stdout, or None when git is absent or refuses (not a checkout, a
    repository git does not trust...). The caller's GIT_DIR / GIT_WORK_TREE are dropped: a
    run started from a git hook must describe mrsched's checkout, not the hook's."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=20, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _version() -> str:
    try:
        return metadata.version("mrsched")
    except metadata.PackageNotFoundError:
        import mrsched

        return str(getattr(mrsched, "__version__", "unknown"))


def provenance(root: str | Path | None = None) -> dict:
    """What code made a run (issue 41 item 8): ``{"mrsched": version, "source": "git",
    "commit": sha, "modified": bool}`` when mrsched is imported from a git checkout (modified:
    tracked changes or untracked files not ignored, since a new module in
    ``schedulers/policies/`` is a new policy), else ``{"mrsched": version, "source":
    "installed"}``. ``root``: the source folder (default ``source_root()``); it must be the
    checkout's top level, so an install into a virtualenv kept inside some repository is
    still "installed". Cached per process: a campaign asks once per run."""
    return dict(_provenance(str(Path(root) if root is not None else source_root())))


@functools.lru_cache(maxsize=8)
def _provenance(root: str) -> tuple:
    out = {"mrsched": _version(), "source": "installed"}
    top = _git(Path(root), "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != Path(root).resolve():
        return tuple(out.items())
    commit = (_git(Path(root), "rev-parse", "HEAD") or "").strip()
    status = _git(Path(root), "status", "--porcelain")
    if not re.fullmatch(r"[0-9a-f]{40}", commit) or status is None:
        return tuple(out.items())
    out.update(source="git", commit=commit, modified=bool(status.strip()))
    return tuple(out.items())


def write_manifest(run_dir: str | Path, manifest: dict) -> Path:
    if manifest.get("status") not in STATUSES:
        raise ConfigError(f"manifest status must be one of {', '.join(STATUSES)}",
                          field="status", file=str(Path(run_dir) / MANIFEST))
    return write_json_atomic(Path(run_dir) / MANIFEST, manifest)


def read_manifest(run_dir: str | Path) -> dict | None:
    """The manifest of ``run_dir``, or None when absent or unreadable (an unfinished run)."""
    path = Path(run_dir) / MANIFEST
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def spec_problem(manifest: dict, spec, sha256=None) -> str | None:
    """Why a run's manifest describes another run than ``spec`` (a ``RunSpec``), or None: a
    campaign whose inputs, policy or options changed since a run finished redoes that run
    instead of mixing in results of the old inputs. The engine and timeout may change freely.
    ``sha256(path)`` hashes an input (a campaign passes a memoised one: runs share inputs)."""
    from mrsched.atomic import sha256_file

    sha256 = sha256 or sha256_file

    want = {"platform": str(spec.platform), "workload": str(spec.workload), "policy": spec.policy,
            "options": json.loads(json.dumps(dict(spec.options))), "seed": spec.seed,
            "roles": list(spec.roles) or None, "bb_capacity": spec.bb_capacity,
            "compute_sharing": spec.compute_sharing or None,
            "energy": getattr(spec, "energy", False) or None}
    for key, value in want.items():
        if key in ("platform", "workload"):
            continue
        if manifest.get(key) != value:
            return f"its {key} changed ({manifest.get(key)!r} then, {value!r} now)"
    # inputs are recognised by content wherever they live (a campaign folder copied or moved
    # elsewhere keeps its finished runs); by path only where no checksum was recorded
    for key in ("platform", "workload"):
        path = Path(want[key])
        recorded = manifest.get(f"{key}_sha256")
        if recorded is None or not path.is_file():
            if manifest.get(key) != want[key]:
                return f"its {key} changed ({manifest.get(key)!r} then, {want[key]!r} now)"
        elif sha256(path) != recorded:
            return f"its {key} file {path} changed since the run (sha256)"
    return None


def is_complete(run_dir: str | Path) -> bool:
    """True when the run ended ``ok`` and every output it records is there, unchanged."""
    manifest = read_manifest(run_dir)
    if not manifest or manifest.get("status") != "ok":
        return False
    return outputs_problem(run_dir, manifest) is None
