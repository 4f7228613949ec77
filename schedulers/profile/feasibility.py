"""Whether a request can ever run: on the empty machine, with the profile's own burst-buffer
placement (ALGORITHMS.md: a job that can never run is rejected with the reason)."""

from __future__ import annotations

from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Request
from mrsched.schedulers.profile.placement import BurstBufferPlacer, split_shares


def infeasible_reason(cluster: Cluster, request: Request, placer: BurstBufferPlacer | None = None) -> str | None:
    """Why ``request`` can never run even on the empty machine, or None (ALGORITHMS.md)."""
    n = request.nodes
    if n > cluster.nb_nodes:
        return f"asks {n} nodes, the machine has {cluster.nb_nodes} compute nodes"
    if request.gpus_per_node:
        eligible = cluster.gpu_mask(request.gpus_per_node).bit_count()
        if eligible < n:
            best = max(cluster.gpus) if cluster.gpus else 0
            return (f"asks {n} nodes with {request.gpus_per_node} GPUs each, only {eligible} nodes have that "
                    f"many (most GPUs on a node: {best})")
    if request.bb_total:
        caps = [s.capacity for s in cluster.storage]
        if not caps:
            return f"asks {request.bb_total} bytes of burst buffer, the machine has no burst-buffer storage"
        share = request.bb_per_node
        amounts = split_shares(request.bb_total, n)
        if amounts[-1] > max(caps):
            return f"asks {share} bytes of burst buffer per node, the largest storage node holds {max(caps)}"
        # the same greedy placement the profile uses, on the empty machine's first eligible nodes
        nodes = (list(range(n)) if request.gpus_per_node <= 0 else
                 [k for k in range(cluster.nb_nodes) if cluster.gpus[k] >= request.gpus_per_node][:n])
        if (placer or BurstBufferPlacer(cluster)).place(nodes, amounts, caps) is None:
            return (f"asks {share} bytes of burst buffer on each of {n} nodes, the storage nodes can hold only "
                    f"{sum(c // share for c in caps)} such shares")
    for name, amount in request.counters:
        if name in cluster.counters and amount > cluster.counters[name]:
            return f"asks {amount} of '{name}', the machine has {cluster.counters[name]}"
    return None
