"""Seed 001's burst-buffer request model: log-normal bytes per processor (Sect. 4.1).

The artifact fitted scipy's ``lognorm(s, loc, scale)`` on METACENTRUM-2013-3 memory requests
(KiB per processor). We sample it as ``loc + scale * exp(s * Z)`` with ``Z`` standard normal
from ``numpy.random.default_rng(seed)`` — the same distribution as scipy's ``rvs`` (a test
compares quantiles with ``scipy.stats.lognorm.ppf``), vectorised and reproducible.

Rules, as the artifact applies them (its ``generate_swf_workload.py`` / ``model.py``):
- per processor: draw x KiB, bytes = x * 1024, clipped to [100 MB, one storage node's
  capacity (40 GB)];
- a job whose processors could not all be served on the storage nodes at that size
  (``res > (capacity // size) * storage_nodes``) gets ``floor(capacity / ceil(res /
  storage_nodes))`` per processor, so every job fits the empty machine;
- jobs with walltime <= 120 s get 10 MB per processor (too short for real staging).
One draw is made for every job, short or not, so that a job's size does not depend on the
walltimes of the jobs before it (the artifact draws only for long jobs: same distribution,
different stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mrsched.errors import WorkloadError

KIB = 1024
MB = 10**6
GB = 10**9


@dataclass(frozen=True)
class LogNormalBurstBuffer:
    """Burst buffer bytes per processor ~ lognorm(s, loc, scale) KiB (seed 001, Sect. 4.1)."""

    s: float = 1.0972516604048774
    loc: float = -150361.59523836235
    scale: float = 2714115.5724594607
    minimum: int = 100 * MB
    maximum: int = 40 * GB
    short_walltime: float = 120.0
    short_size: int = 10 * MB

    def draw_kib(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Raw draws in KiB (unclipped, possibly negative through ``loc``)."""
        return self.loc + self.scale * np.exp(self.s * rng.standard_normal(n))

    def per_processor(self, res: np.ndarray, walltime: np.ndarray, rng: np.random.Generator, *,
                      capacity: int | None = None, storage_nodes: int | None = None) -> np.ndarray:
        """Bytes per processor for jobs of ``res`` processors and ``walltime`` seconds (int64)."""
        res = np.asarray(res, dtype=np.int64)
        cap = self.maximum if capacity is None else int(capacity)
        if cap <= 0:
            raise WorkloadError(f"storage capacity must be > 0 bytes, got {capacity}", field="bb_capacity")
        top = min(self.maximum, cap)
        size = np.clip(np.round(self.draw_kib(len(res), rng) * KIB), self.minimum, top).astype(np.int64)
        if storage_nodes:
            fits = res <= (cap // size) * storage_nodes
            for k in np.flatnonzero(~fits):
                size[k] = math.floor(cap / math.ceil(res[k] / storage_nodes))
        short = np.asarray(walltime, dtype=float) <= self.short_walltime
        size[short] = self.short_size
        return size

    def mean_bytes(self) -> float:
        """Mean of the unclipped distribution in bytes (seed 001 sizes the machine with it)."""
        return (self.loc + self.scale * math.exp(self.s ** 2 / 2)) * KIB
