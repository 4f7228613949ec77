"""The run manifest (DESIGN.md "Runs and campaigns"): what ran, on what, how it ended.

The manifest is written once, atomically, when a run ends; a run directory without one (or
with a status other than ``ok``, or with an output missing) is unfinished and is redone.
"""

from __future__ import annotations

import json
import platform as _platform
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from mrsched.errors import ConfigError
from mrsched.expe.atomic import write_json_atomic

MANIFEST = "manifest.json"
OUTPUT_SUFFIXES = ("jobs", "schedule", "machine_states")
OUTPUT_FILES = tuple(f"out_{s}.csv" for s in OUTPUT_SUFFIXES)
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


def is_complete(run_dir: str | Path) -> bool:
    """True when the run ended ``ok`` and every Batsim output file is there."""
    manifest = read_manifest(run_dir)
    if not manifest or manifest.get("status") != "ok":
        return False
    return all((Path(run_dir) / name).is_file() for name in OUTPUT_FILES)
