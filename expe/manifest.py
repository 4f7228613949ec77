"""The run manifest (DESIGN.md "Runs and campaigns"): what ran, on what, how it ended.

The manifest is written once, atomically, when a run ends, and records each output file's
rows, size and sha256: a run is finished only when its manifest says ``ok`` and the outputs
it records are there unchanged (a CSV cut short by a crash or a full disk is not a result).
Anything else is unfinished and is redone.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from mrsched.errors import ConfigError
from mrsched.atomic import write_json_atomic
# what a run writes and how its manifest vouches for it: shared with the analysis, which
# verifies a run before using it (mrsched/outputs.py)
from mrsched.outputs import (ENERGY_FILES, ENERGY_SUFFIXES, OUTPUT_FILES, OUTPUT_SUFFIXES,  # noqa: F401
                             POLICY_FILES, POLICY_SUFFIXES, describe_outputs, outputs_problem)

MANIFEST = "manifest.json"
STATUSES = ("ok", "failed", "timeout")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def versions(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Versions that can change a result: mrsched, Python and the numeric stack."""
    return {**_versions(), **(extra or {})}


@functools.cache
def _versions() -> dict[str, str]:
    """Read once a process: looking installed distributions up costs milliseconds a run,
    and what a process imported cannot change under it."""
    out = {"python": sys.version.split()[0], "platform": sys.platform}   # platform.python_version()
    for dist in ("mrsched", "numpy", "pyzmq", "procset", "highspy"):
        version = dist_version(dist)
        if version is not None:
            out[dist] = version
    return out


def dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None: ``importlib.metadata.version``
    without importing ``importlib.metadata`` (and the email parser it loads: a good share
    of a small run's start, issue 45) in the common case, a ``NAME-VERSION.dist-info`` (or
    ``NAME.egg-info``) folder on ``sys.path`` whose ``METADATA`` (``PKG-INFO``) says
    ``Version:``; anything else (a zipped egg, an odd layout) is asked of
    ``importlib.metadata`` itself. The first match on ``sys.path`` wins,
    as there."""
    wanted = re.sub(r"[-_.]+", "_", name).lower()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            stem, dot, kind = folder.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            dist, _, _ = stem.partition("-")
            if re.sub(r"[-_.]+", "_", dist).lower() != wanted:
                continue
            meta = os.path.join(entry or ".", folder, "METADATA" if kind == "dist-info" else "PKG-INFO")
            try:
                with open(meta, encoding="utf-8") as fh:
                    for line in fh:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break
            except OSError:
                pass
            return _metadata_version(name)
    if any(os.path.isfile(entry) for entry in sys.path):   # a zipped egg or archive on the path
        return _metadata_version(name)
    return None


def _metadata_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


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
    version = dist_version("mrsched")
    if version is None:
        import mrsched

        return str(getattr(mrsched, "__version__", "unknown"))
    return version


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
    # only the checkout's top level holds .git (a folder, or a file in a worktree): an install
    # starts no git at all; a checkout one, whose status gives the commit too
    if not os.path.lexists(os.path.join(root, ".git")):
        return tuple(out.items())
    status = _git(Path(root), "status", "--porcelain=v2", "--branch")
    if status is None:
        return tuple(out.items())
    lines = status.splitlines()
    commit = next((line[len("# branch.oid "):] for line in lines if line.startswith("# branch.oid ")), "")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        return tuple(out.items())
    out.update(source="git", commit=commit, modified=any(not line.startswith("#") for line in lines))
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


def hierarchy_levels(run_dir: str | Path) -> list[dict]:
    """Per depth of a ``hierarchical`` run, from ``out_hierarchy.csv``: instances, jobs routed
    to them and rejected by them, node-seconds and burst-buffer byte-seconds their jobs used
    (empty when the run has no such table)."""
    path = Path(run_dir) / "out_hierarchy.csv"
    if not path.is_file():
        return []
    out: dict[int, dict] = {}
    try:
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                d = int(row["depth"])
                level = out.setdefault(d, {"depth": d, "instances": 0, "routed": 0, "rejected": 0,
                                           "node_seconds": 0.0, "bb_byte_seconds": 0.0})
                level["instances"] += 1
                for key in ("routed", "rejected"):
                    level[key] += int(row[key])
                for key in ("node_seconds", "bb_byte_seconds"):
                    level[key] += float(row[key])
    except (OSError, KeyError, ValueError, csv.Error):
        return []
    return [out[d] for d in sorted(out)]


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
