"""BBSched's burst-buffer-heavy workloads S1-S4 (seed 000 Sect. 4.1), scaled to our machine.

Seed 000 makes 50 % (S1, S3) or 75 % (S2, S4) of a trace's jobs request burst buffer, sizes
drawn from the original requests above 5 TB (S1, S2) or 20 TB (S3, S4). The original request
lists are not public, so (Decision) sizes are log-uniform between the threshold and the
largest request seen on the reference machine, and every size is scaled by the ratio of our
total burst-buffer capacity to the reference machine's:

- Theta (default): 2.16 PB assumed shared burst buffer, requests up to 285 TB;
- Cori: 1.8 PB of DataWarp, requests up to 65 TB (extremely large 165 TB ones excluded).

On seed 001's machine (480 GB) a Theta 5 TB request becomes 1.11 GB and 285 TB 63.3 GB, i.e.
the same share of the machine's burst buffer. Requests are then made placeable: per node at
most one storage node's capacity and per job at most the total (a 1-node job cannot hold
63 GB on 40 GB storage nodes). Jobs not chosen request nothing (``burst_buffer`` 0). The
chosen jobs are exactly ``round(fraction * n)``, picked uniformly with the seed.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from mrsched.errors import WorkloadError, suggest
from mrsched.workloads.platform_info import PlatformInfo

TB = 10**12


@dataclass(frozen=True)
class ReferenceMachine:
    """A machine of seed 000: total shared burst buffer and the largest request (bytes)."""

    capacity: float
    largest_request: float


REFERENCES = {"theta": ReferenceMachine(2.16e15, 285 * TB), "cori": ReferenceMachine(1.8e15, 65 * TB)}

# scenario -> (fraction of jobs, threshold on the reference machine)
SCENARIOS = {"S1": (0.50, 5 * TB), "S2": (0.75, 5 * TB), "S3": (0.50, 20 * TB), "S4": (0.75, 20 * TB)}


def inject_burst_buffer(workload: dict, *, platform: PlatformInfo, scenario: str | None = "S1",
                        fraction: float | None = None, threshold: float | None = None,
                        reference: str = "theta", seed: int = 0) -> dict:
    """A copy of ``workload`` where a fraction of jobs request scaled BBSched-style burst buffer."""
    if reference not in REFERENCES:
        raise WorkloadError(f"unknown reference machine '{reference}'", field="reference",
                            hint=suggest(reference, REFERENCES))
    if scenario is not None:
        if scenario not in SCENARIOS:
            raise WorkloadError(f"unknown scenario '{scenario}'", field="scenario", hint=suggest(scenario, SCENARIOS))
        fraction = SCENARIOS[scenario][0] if fraction is None else fraction
        threshold = SCENARIOS[scenario][1] if threshold is None else threshold
    if fraction is None or threshold is None:
        raise WorkloadError("give a scenario (S1-S4) or both a fraction and a threshold", field="scenario")
    if not 0 <= fraction <= 1:
        raise WorkloadError(f"fraction must be in [0, 1], got {fraction}", field="fraction")
    ref = REFERENCES[reference]
    if not 0 < threshold < ref.largest_request:
        raise WorkloadError(f"threshold must be in (0, {ref.largest_request:.3g}) bytes", field="threshold")
    if not platform.bb_capacities:
        raise WorkloadError("the platform has no burst-buffer storage node (bb_capacity)", file=platform.path)
    out = copy.deepcopy(workload)
    jobs = out.get("jobs") or []
    n = len(jobs)
    scale = platform.bb_total / ref.capacity
    rng = np.random.default_rng(seed)
    chosen = np.zeros(n, dtype=bool)
    chosen[rng.choice(n, size=int(round(fraction * n)), replace=False)] = True
    sizes = np.exp(rng.uniform(math.log(threshold), math.log(ref.largest_request), n)) * scale
    per_storage, storage_nodes = platform.bb_per_storage_node, len(platform.bb_capacities)
    for k, job in enumerate(jobs):
        res = int(job.get("res", 1))
        if not chosen[k]:
            job["burst_buffer"], job["bb_per_node"] = 0, 0
            continue
        per_node = min(math.ceil(sizes[k] / res), per_storage)
        if res > (per_storage // per_node) * storage_nodes:  # same fit rule as seed 001's model
            per_node = math.floor(per_storage / math.ceil(res / storage_nodes))
        job["bb_per_node"] = int(per_node)
        job["burst_buffer"] = int(per_node) * res
    label = scenario or f"f{fraction:g}-t{threshold:g}"
    out["name"] = f"{workload.get('name', 'workload')}-bbsched-{label}"
    out["description"] = (f"{workload.get('description', '')}; BBSched {label}: {int(chosen.sum())} of {n} jobs request "
                          f"burst buffer above {threshold / TB:g} TB on {reference}, scaled x{scale:.3g}")
    gen = dict(out.get("generator") or {})
    gen["bbsched"] = {"scenario": scenario, "fraction": fraction, "threshold": threshold, "reference": reference,
                      "scale": scale, "seed": seed}
    out["generator"] = gen
    return out
