"""The platform files shipped with mrsched, and the generator call that made each one.

The XML files beside this module are package data; a test regenerates every one byte for
byte, so a generator change that alters them is seen (run ``mrsched platform bundled --write``
after an intended change).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from mrsched.errors import PlatformError, suggest
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.description import GeneratedPlatform
from mrsched.platforms.dragonfly import generate_dragonfly

HERE = Path(__file__).resolve().parent

BUNDLED: dict[str, Callable[[], GeneratedPlatform]] = {
    # seed 001's machine: 96 compute + 12 storage nodes (40 GB each), PFS at 5 GB/s (SHARED),
    # split-duplex node links and cables as SimGrid's DRAGONFLY cluster
    "dragonfly96.xml": lambda: generate_dragonfly(),
    # a small machine for tests and the quickstart: 16 compute, 2 x 40 GB burst buffer, PFS;
    # split-duplex host links as SimGrid's flat cluster
    "cluster16.xml": lambda: generate_cluster(nodes=16, storage=2, bb_capacity="40GB"),
}


def bundled_path(name: str) -> Path:
    """Path of a shipped platform (``dragonfly96.xml`` or ``dragonfly96``)."""
    key = name if name.endswith(".xml") else f"{name}.xml"
    if key not in BUNDLED:
        raise PlatformError(f"no bundled platform '{name}'", hint=suggest(key, BUNDLED))
    return HERE / key


def regenerate(directory: Path | str = HERE) -> list[Path]:
    """Write every bundled platform into ``directory``; returns the paths written."""
    out = []
    for name, make in BUNDLED.items():
        path = Path(directory) / name
        path.write_text(make().xml, encoding="utf-8")
        out.append(path)
    return out
