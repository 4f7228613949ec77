"""Job priorities of seed 002 Sect. 5 (SLURM's ``basic`` and ``multifactor`` plug-ins).

basic: the first submitted job gets a large value, each later one one less (FCFS).
multifactor: age and job size with equal weights, +1 per minute in the queue (Sect. 5).
Decision: SLURM's age factor saturates at ``PriorityMaxAge`` (default 7 days); equal weights
with +1 per minute make both weights ``max_age`` in minutes, and the size factor is the job's
share of the machine's cores (SLURM's default, favouring large jobs). Priorities are >= 1
(AUCSCHED's alpha divides the smallest one).
"""

from __future__ import annotations

PRIORITIES = ("basic", "multifactor")
BASIC_TOP = 100_000


def job_priority(kind: str, seq: int, subtime: float, cores: int, now: float, total_cores: int,
                 max_age: float = 7 * 86400.0) -> float:
    """Priority of the ``seq``-th submitted job (0-based) at ``now``."""
    if kind == "basic":
        return float(max(BASIC_TOP - seq, 1))
    weight = max_age / 60.0
    age = min(max(now - subtime, 0.0), max_age) / 60.0
    return 1.0 + age + weight * cores / max(total_cores, 1)
