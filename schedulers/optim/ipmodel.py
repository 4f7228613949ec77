"""IPSCHED's window MILP, seed 002 Eqs. (1)-(7), solved by HiGHS.

Decision (ALGORITHMS.md 002): nodes in the same free state (free cores, free GPUs) are
interchangeable, so the model is written over those *classes* instead of single nodes: per
job and class, ``y`` nodes used (Eq. 7's t_nj summed over the class) and ``z`` cores (x_nj
summed). Eq. (2) and (4) become class capacities, Eq. (5)-(6) count ``y``; a node-level
exclusivity row keeps two jobs that each need more than half a node's GPUs (or cores per
node) off the same node. On Machine-L this is at most 27 classes instead of 1,024 nodes. The
class answer is then laid out on concrete
nodes (GPU jobs first, emptiest nodes first); a job the layout cannot place exactly
(the class relaxation is not exact per node) gets SLURM's best fit within its node range on
what is left, or waits for the next round.

Solver use (speed without changing what is optimal):
- MIP start: SLURM's best fit of the window in priority order (:func:`greedy_start`), laid
  into the class variables, so HiGHS has an incumbent from its first node and a solve stopped
  by its budget still has an answer at least as good as SLURM's.
- Symmetry: jobs with identical requests differ only by weight, so an optimum exists that
  selects the heavier one first (exchange argument on Eq. 1: swapping them changes the
  objective by (P_h - P_l)(1 - c) >= 0); rows s_h >= s_l remove the mirrored solutions.
  Among equal weights this is a tie-break (the earlier submission), never a change of which
  objective values are optimal.
- Cardinality cuts: no more jobs can be selected than the smallest ones fit in the free cores
  (and, of the GPU jobs, in the free GPUs): valid inequalities that close most of the LP gap
  of near-equal priorities (a cardinality knapsack).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mrsched.schedulers.optim.bestfit import best_fit_counts, spread
from mrsched.schedulers.model.nodes import Layout
from mrsched.schedulers.optim.milp import Milp, MilpResult
from mrsched.schedulers.model.cores import CoreRequest


@dataclass
class IpOutcome:
    """Selected window positions with their layouts, and the solver's statistics."""

    status: str
    layouts: dict[int, Layout] = field(default_factory=dict)
    result: MilpResult | None = None
    relaid: int = 0          # selected jobs placed by the best-fit fallback
    dropped: int = 0         # selected jobs not placed this round


def node_classes(free: list[int], free_gpus: list[int]) -> dict[tuple[int, int], list[int]]:
    """Nodes with free cores grouped by (free cores, free GPUs), ascending node order."""
    classes: dict[tuple[int, int], list[int]] = {}
    for n, (c, g) in enumerate(zip(free, free_gpus)):
        if c > 0:
            classes.setdefault((c, g), []).append(n)
    return classes


def cardinality(sizes: list[int], capacity: int) -> int:
    """How many of ``sizes`` at most fit in ``capacity`` together (the smallest first)."""
    total, k = 0, 0
    for size in sorted(sizes):
        total += size
        if total > capacity:
            break
        k += 1
    return k


def _cuts(m: Milp, s: list[int], weights: list[float], reqs: list[CoreRequest],
          classes: dict[tuple[int, int], list[int]]) -> None:
    """Symmetry rows between identical requests and the cardinality cuts (module docstring)."""
    last: dict[CoreRequest, int] = {}
    for j in sorted(range(len(reqs)), key=lambda j: (-weights[j], j)):   # symmetry: heavier twin first
        if reqs[j] in last:
            m.row([(s[last[reqs[j]]], 1.0), (s[j], -1.0)], lo=0.0)
        last[reqs[j]] = j
    free_cores = sum(a * len(v) for (a, _), v in classes.items())
    free_gpus = sum(b * len(v) for (_, b), v in classes.items())
    k_cores = cardinality([r.cores for r in reqs], free_cores)
    if k_cores < len(reqs):
        m.row([(v, 1.0) for v in s], hi=float(k_cores))                   # cut: cores
    gpu_jobs = [j for j, r in enumerate(reqs) if r.gpus_per_node]
    k_gpus = cardinality([reqs[j].gpus_per_node * reqs[j].nodes_min for j in gpu_jobs], free_gpus)
    if k_gpus < len(gpu_jobs):
        m.row([(s[j], 1.0) for j in gpu_jobs], hi=float(k_gpus))         # cut: GPUs


def build_model(weights: list[float], reqs: list[CoreRequest], classes: dict[tuple[int, int], list[int]],
                nb_nodes: int, cuts: bool = True):
    """The MILP and its variable indices: s[j], y[(k, j)], z[(k, j)] (z is an int or (cpn, y));
    ``cuts``: the symmetry rows and cardinality cuts (same optimal value, faster)."""
    m = Milp()
    keys = list(classes)
    s = [m.var(cost=w) for w in weights]                                  # Eq. (1): P_j s_j
    if cuts:
        _cuts(m, s, weights, reqs, classes)
    y, z = {}, {}
    for j, (w, r) in enumerate(zip(weights, reqs)):
        zs, ys = [], []
        for k, (a, b) in enumerate(keys):
            if b < r.gpus_per_node or a < r.min_per_node:
                continue
            count = len(classes[(a, b)])
            yv = m.var(cost=-w / (2 * nb_nodes), ub=min(count, r.nodes_max))   # Eq. (5): - P_j c_j
            y[(k, j)] = yv
            ys.append(yv)
            if r.cores_per_node:
                z[(k, j)] = (r.cores_per_node, yv)
                zs.append((yv, float(r.cores_per_node)))
            else:
                zv = m.var(ub=min(a * count, r.cores))
                z[(k, j)] = zv
                zs.append((zv, 1.0))
                m.row([(zv, 1.0), (yv, -1.0)], lo=0.0)                     # Eq. (7): t_nj <= x_nj
                m.row([(zv, 1.0), (yv, -float(min(a, r.cores)))], hi=0.0)  # x_nj <= A_n t_nj
        m.row(zs + [(s[j], -float(r.cores))], lo=0.0, hi=0.0)              # Eq. (3)
        m.row([(v, 1.0) for v in ys] + [(s[j], -float(r.nodes_min))], lo=0.0)   # Eq. (6)
        m.row([(v, 1.0) for v in ys] + [(s[j], -float(r.nodes_max))], hi=0.0)
    for k, (a, b) in enumerate(keys):
        count = len(classes[(a, b)])
        cores_row, gpu_row, wide_gpu, wide_cpu = [], [], [], []
        for j, r in enumerate(reqs):
            if (k, j) not in y:
                continue
            zk = z[(k, j)]
            cores_row.append((zk[1], float(zk[0])) if isinstance(zk, tuple) else (zk, 1.0))
            if r.gpus_per_node:
                gpu_row.append((y[(k, j)], float(r.gpus_per_node)))
            if 2 * r.gpus_per_node > b:
                wide_gpu.append((y[(k, j)], 1.0))
            if 2 * r.cores_per_node > a:
                wide_cpu.append((y[(k, j)], 1.0))
        if cores_row:
            m.row(cores_row, hi=float(a * count))                           # Eq. (2)
        if gpu_row:
            m.row(gpu_row, hi=float(b * count))                             # Eq. (4)
        for wide in (wide_gpu, wide_cpu):
            if len(wide) > 1:
                m.row(wide, hi=float(count))                                # exclusivity on a node
    return m, s, y, z, keys


def greedy_start(m: Milp, s, y, z, keys, reqs: list[CoreRequest], free: list[int], free_gpus: list[int]):
    """SLURM's answer in the model's variables: best fit of each job in window order on what
    the earlier ones left (a feasible point of the class model: it is one node by node)."""
    x = np.zeros(m.nb_vars)
    index = {key: k for k, key in enumerate(keys)}
    cores_left, gpus_left = list(free), list(free_gpus)
    for j, r in enumerate(reqs):
        layout = best_fit_counts(cores_left, gpus_left, r)
        if layout is None:
            continue
        x[s[j]] = 1.0
        for n, c in layout.per_node:
            k = index[(free[n], free_gpus[n])]
            x[y[(k, j)]] += 1.0
            if not isinstance(z[(k, j)], tuple):
                x[z[(k, j)]] += c
            cores_left[n] -= c
            gpus_left[n] -= r.gpus_per_node
    return x


def solve_window(weights: list[float], reqs: list[CoreRequest], free: list[int], free_gpus: list[int], *,
                 time_limit: float | None = None, node_limit: int | None = None, mip_gap: float = 1e-6,
                 start: bool = True, cuts: bool = True) -> IpOutcome:
    """Select and lay out jobs of the window on the free cores and GPUs (``reqs`` in priority
    order: the MIP start is SLURM's best fit in that order). ``node_limit`` / ``time_limit``:
    :meth:`Milp.solve`'s budgets. When one stops HiGHS the outcome carries its incumbent, if it
    has one (status ``limit``, layouts filled)."""
    nb_nodes = len(free)
    classes = node_classes(free, free_gpus)
    # a job that does not fit alone on the free nodes is in no selection: left out (exact)
    alone = [j for j, r in enumerate(reqs) if best_fit_counts(free, free_gpus, r) is not None]
    m, s, y, z, keys = build_model([weights[j] for j in alone], [reqs[j] for j in alone], classes, nb_nodes,
                                   cuts=cuts)
    x0 = greedy_start(m, s, y, z, keys, [reqs[j] for j in alone], free, free_gpus) if start else None
    result = m.solve(time_limit=time_limit, node_limit=node_limit, mip_gap=mip_gap, start=x0)
    out = IpOutcome(result.status, result=result)
    if result.status not in ("optimal", "limit") or result.x is None:
        return out
    x = result.x
    selected = [alone[j] for j in range(len(alone)) if x[s[j]] > 0.5]
    y = {(k, alone[j]): v for (k, j), v in y.items()}
    z = {(k, alone[j]): v for (k, j), v in z.items()}
    # lay out: GPU-heavy and per-node-heavy jobs first, they have the fewest choices
    def demand(j: int) -> tuple:
        r = reqs[j]
        return (-r.gpus_per_node, -r.cores_per_node, -r.cores, j)
    cores_left, gpus_left = list(free), list(free_gpus)
    failed = []
    for j in sorted(selected, key=demand):
        r = reqs[j]
        per_node: list[tuple[int, int]] = []
        ok = True
        taken: set[int] = set()
        for k, key in enumerate(keys):
            if (k, j) not in y:
                continue
            count = int(round(x[y[(k, j)]]))
            if not count:
                continue
            zk = z[(k, j)]
            cores = zk[0] * count if isinstance(zk, tuple) else int(round(x[zk]))
            cand = [n for n in classes[key] if n not in taken and cores_left[n] >= r.min_per_node
                    and gpus_left[n] >= r.gpus_per_node]
            cand.sort(key=lambda n: (-cores_left[n], n))
            chosen = sorted(cand[:count])
            split = ([r.cores_per_node] * count if r.cores_per_node else spread([cores_left[n] for n in chosen], cores)) \
                if len(chosen) == count else None
            if split is None:
                ok = False
                break
            per_node.extend(zip(chosen, split))
            taken.update(chosen)
        if not ok:
            failed.append(j)
            continue
        layout = Layout(tuple(sorted(per_node)), r.gpus_per_node)
        for n, c in layout.per_node:
            cores_left[n] -= c
            gpus_left[n] -= r.gpus_per_node
        out.layouts[j] = layout
    for j in failed:
        layout = best_fit_counts(cores_left, gpus_left, reqs[j])
        if layout is None:
            out.dropped += 1
            continue
        for n, c in layout.per_node:
            cores_left[n] -= c
            gpus_left[n] -= reqs[j].gpus_per_node
        out.layouts[j] = layout
        out.relaid += 1
    return out
