"""The cyclic garbage collector held off while large inputs are read.

Reading a platform or a workload builds trees of containers without cycles: the collector,
at its default threshold, would scan them again and again as they grow and free nothing
(``bench/bench_load.py`` measures it; figures in docs/PERFORMANCE.md).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector is enabled again after it only
    if it was enabled before (blocks nest)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
