"""Ensemble workloads: many small jobs submitted at once (seed 004 Ch. 5).

Why: Fig. 5.2 and Sect. 5.4 stress the scheduler itself with ensembles of single-core
``sleep 0`` jobs (up to 131,072 and beyond) and a UQ ensemble; Ch. 6 asks what heterogeneous
ensembles (variable sizes and durations) lose to static partitions. One job = one resource
per core (``mrsched platform cluster --cores`` machines, or any platform whose resources
are cores).

A job that takes no time is written as Batsim accepts it: a ``parallel_homogeneous``
profile with ``cpu`` 0 and ``com`` 0 (Batsim 4.2.1 refuses a ``delay`` of 0). Other jobs
use ``delay`` profiles, one per distinct duration (durations are rounded to ``resolution``).

Example
-------
>>> wl = generate_ensemble(jobs=3, cores=1, runtime=0)
>>> [j["res"] for j in wl["jobs"]], wl["profiles"]["zero"]["type"]
([1, 1, 1], 'parallel_homogeneous')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mrsched.errors import ConfigError

__all__ = ["generate_ensemble", "parse_range", "KINDS"]

KINDS = ("synthetic", "uq")
ZERO_PROFILE = {"type": "parallel_homogeneous", "cpu": 0, "com": 0}
#: UQ ensemble (Sect. 5.4.1: single-core runs of a semi-analytical ICF model). The thesis
#: gives no durations; assumption: lognormal, median 5 s, sigma 0.5, within 1-60 s.
UQ_MEDIAN, UQ_SIGMA, UQ_BOUNDS = 5.0, 0.5, (1.0, 60.0)


def parse_range(value: Any, name: str, *, integer: bool) -> tuple[float, float]:
    """``4``, ``"4"`` or ``"1-8"`` (inclusive, drawn uniformly) -> (low, high); ConfigError otherwise."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        lo = hi = value
    elif isinstance(value, str):
        text = value.strip()
        head, sep, tail = text.partition("-") if not text.startswith("-") else (text, "", "")
        try:
            lo = float(head)
            hi = float(tail) if sep else lo
        except ValueError:
            raise ConfigError(f"--{name}: '{value}' is not a number or a range LOW-HIGH", field=name) from None
    else:
        raise ConfigError(f"--{name}: '{value}' is not a number or a range LOW-HIGH", field=name)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0 or hi < lo:
        raise ConfigError(f"--{name}: '{value}' must be finite, >= 0, LOW <= HIGH", field=name)
    if integer and (lo != int(lo) or hi != int(hi) or lo < 1):
        raise ConfigError(f"--{name}: '{value}' must be whole numbers >= 1", field=name)
    return lo, hi


def generate_ensemble(*, jobs: int, cores: Any = 1, runtime: Any = 0.0, kind: str = "synthetic",
                      walltime: float | None = None, nb_res: int | None = None, resolution: float = 1.0,
                      seed: int = 0) -> dict[str, Any]:
    """An ensemble of ``jobs`` jobs all submitted at time 0.

    ``cores`` and ``runtime`` are a value or a range ``"LOW-HIGH"`` drawn uniformly (cores as
    integers); ``kind="uq"`` draws durations as :data:`UQ_MEDIAN` says instead of ``runtime``.
    ``walltime`` defaults to twice the duration, at least 60 s. ``nb_res`` defaults to the
    widest job.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"--jobs must be a whole number >= 1, got {jobs!r}", field="jobs")
    if kind not in KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}", field="kind")
    if not resolution > 0:
        raise ConfigError(f"--resolution must be > 0, got {resolution!r}", field="resolution")
    clo, chi = parse_range(cores, "cores", integer=True)
    rng = np.random.default_rng(seed)
    sizes = (np.full(jobs, int(clo)) if clo == chi else rng.integers(int(clo), int(chi) + 1, size=jobs))
    if kind == "uq":
        raw = np.clip(rng.lognormal(math.log(UQ_MEDIAN), UQ_SIGMA, size=jobs), *UQ_BOUNDS)
    else:
        rlo, rhi = parse_range(runtime, "runtime", integer=False)
        raw = np.full(jobs, rlo) if rlo == rhi else rng.uniform(rlo, rhi, size=jobs)
    durations = np.round(raw / resolution) * resolution
    if walltime is not None and not walltime > 0:
        raise ConfigError(f"--walltime must be > 0, got {walltime!r}", field="walltime")
    widest = int(sizes.max())
    if nb_res is not None and nb_res < widest:
        raise ConfigError(f"nb_res {nb_res} (machine resources) is smaller than the widest job ({widest} cores)",
                          field="nb_res")
    profiles: dict[str, dict] = {}
    out_jobs = []
    for k in range(jobs):
        d = float(durations[k])
        if d <= 0:
            name = "zero"
            profiles.setdefault(name, dict(ZERO_PROFILE))
        else:
            name = f"delay_{d:g}"
            profiles.setdefault(name, {"type": "delay", "delay": d})
        wt = float(walltime) if walltime is not None else max(60.0, 2.0 * d)
        out_jobs.append({"id": str(k + 1), "subtime": 0.0, "walltime": wt, "res": int(sizes[k]),
                         "profile": name, "run_time": d})
    return {"description": f"{kind} ensemble: {jobs} jobs, cores {cores}, "
                           f"{'UQ durations' if kind == 'uq' else f'runtime {runtime}'}, seed {seed}",
            "nb_res": int(nb_res if nb_res is not None else widest), "jobs": out_jobs, "profiles": profiles}
