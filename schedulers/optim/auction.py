"""AUCSCHED (seed 002 Sect. 4): nodesets, bid classes A/B/C plus SLURM's bid, preference
values F_jc (Eq. 19, Table 9) and winner determination (Eqs. 8-15) solved by HiGHS.

Nodes are the 1-D array in node order; indices here are 0-based (the paper's figures count
from 1). Decisions where the paper is terse:
- A job's *runs* are the maximal blocks of consecutive nodes with its cores per node (at least
  one) and its GPUs per node free: for cores-only jobs these are exactly the nodesets of
  level g (Fig. 2); ``|S|`` in Eq. 19 is their number.
- A: the fewest nodes aligned on a run's start, and on its end. B: the window of the same
  shape with the fewest free cores (best fit) strictly inside the run. C (non-contiguous jobs
  only): each run joined with the following runs until the union can hold the job (at least
  two runs). Kind 1 bids ask every node of the bid (Eq. 10's R_jc^node = |N_c|, as Fig. 4's
  J1 uses all 128 nodes); kinds 2 and 3 ask their node count out of the bid's nodes.
- The SLURM bid is SLURM's best fit on the machine as if the higher-priority jobs of the
  window had got their SLURM bids (Sect. 4.2), with k1 = k2 = k3 = 0 (F = 1).
- Eq. (10) as written forces u = 0 on the nodes of a job's unselected bids, which contradicts
  the selected bid when two bids of a job share nodes (Fig. 4's J1 bids do). We write it as:
  a node may be used only if a selected bid contains it, and the number of used nodes equals
  the selected bid's R_jc^node. Eq. (15) (cores per node) is r_jn = (cpn - 1) u_jn.
- Bids beyond ``max_bids`` per job are dropped lowest F first (the SLURM bid is kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mrsched.schedulers.optim.bestfit import best_fit_counts, eligible_blocks, spread
from mrsched.schedulers.model.nodes import Layout
from mrsched.schedulers.optim.milp import Milp, MilpResult
from mrsched.schedulers.model.cores import CoreRequest

# Table 9: (k1, k2, k3) by job type (1, or 2 and 3) and bid class
K_TABLE = {
    1: {"A": (0.0, 0.25, 0.0), "B": (0.25, 0.25, 0.0), "C": (0.5, 0.25, 0.25)},
    2: {"A": (0.0, 0.0, 0.0), "B": (0.5, 0.0, 0.0), "C": (0.5, 0.0, 0.5)},
    "slurm": (0.0, 0.0, 0.0),
}


@dataclass(frozen=True)
class Nodeset:
    """Seed 002 Sect. 4.1: nodes first..last (0-based) with free cores and >= g free GPUs."""

    first: int
    last: int
    cores: int
    g: int


def nodesets(free: list[int], free_gpus: list[int], max_gpus: int | None = None) -> list[Nodeset]:
    """Every nodeset of every GPU level 0..max_gpus (Fig. 2), by level then position."""
    top = max(free_gpus, default=0) if max_gpus is None else max_gpus
    out = []
    for g in range(top + 1):
        for run in eligible_blocks(free, free_gpus, 1, g):
            out.append(Nodeset(run[0], run[-1], sum(free[n] for n in run), g))
    return out


@dataclass(frozen=True)
class Bid:
    """One bid of a job: its class, the nodes it may use, nodes and cores it asks, F_jc."""

    cls: str                    # "A", "B", "C" or "S" (SLURM)
    nodes: tuple[int, ...]
    r_node: int
    r_cpu: int
    preference: float
    runs: int = 1               # |S_c|
    cores: tuple[int, ...] = ()  # SLURM bid: its cores on each node (the MIP start)


def preference(req: CoreRequest, cls: str, n_nodes: int, runs: int, total_nodes: int, total_runs: int) -> float:
    """F_jc, Eq. (19) with Table 9's constants (the SLURM bid: all zero, F = 1)."""
    k1, k2, k3 = K_TABLE["slurm"] if cls == "S" else K_TABLE[1 if req.kind == 1 else 2][cls]
    return 1.0 - k1 - k2 * n_nodes / (total_nodes + 1) - k3 * runs / (total_runs + 1)


def _windows(run: list[int], free: list[int], req: CoreRequest) -> list[tuple[int, int]]:
    """(start, length) of the job's smallest windows in ``run`` for every start position."""
    out = []
    if req.kind == 1:
        j, cap = 0, 0
        for i in range(len(run)):   # two pointers: shortest window from i holding the cores
            while j < len(run) and (cap < req.cores or j - i < req.nodes_min):
                cap += free[run[j]]
                j += 1
            if cap >= req.cores and j - i >= req.nodes_min and j - i <= min(req.nodes_max, req.cores):
                out.append((i, j - i))
            cap -= free[run[i]]
        return out
    k = req.nodes_min
    if len(run) < k:
        return []
    for i in range(len(run) - k + 1):
        if req.kind == 3 or sum(free[n] for n in run[i:i + k]) >= req.cores:
            out.append((i, k))
    return out


def job_bids(req: CoreRequest, free: list[int], free_gpus: list[int], *, max_bids: int,
             slurm: Layout | None = None, arrays: tuple | None = None) -> list[Bid]:
    """Bids of one job on the current free cores and GPUs (Sect. 4.1-4.3); ``arrays``: the
    same two lists as numpy arrays, when the caller has them (a round asks for every job)."""
    total = len(free)
    fa, ga = arrays if arrays is not None else (free, free_gpus)
    runs = eligible_blocks(fa, ga, req.min_per_node, req.gpus_per_node)
    nruns = len(runs)
    bids: list[Bid] = []
    seen = set()

    def add(cls: str, nodes: list[int], r_node: int, n_runs: int, cores: tuple[int, ...] = ()) -> None:
        key = (tuple(nodes), r_node)
        if key in seen or r_node > len(nodes):
            return
        seen.add(key)
        bids.append(Bid(cls, tuple(nodes), r_node, req.cores,
                        preference(req, cls, len(nodes), n_runs, total, nruns), n_runs, cores))

    if slurm is not None:
        add("S", slurm.nodes, len(slurm.nodes), len({_run_of(runs, n) for n in slurm.nodes}),
            tuple(c for _, c in slurm.per_node))
    for run in runs:
        wins = _windows(run, free, req)
        if not wins:
            continue
        shortest = min(length for _, length in wins)
        starts = [w for w in wins if w[1] == shortest]
        first, last = starts[0], starts[-1]
        for i, length in (first, last):
            if i == 0 or i + length == len(run):
                nodes = run[i:i + length]
                add("A", nodes, len(nodes), 1)
        if req.kind == 1 and len(run) > shortest and req.nodes_min <= len(run) <= min(req.nodes_max, req.cores):
            add("A", run, len(run), 1)     # the whole nodeset, aligned on both ends (Table 1's J1)
        inner = [w for w in starts if w[0] > 0 and w[0] + w[1] < len(run)]
        if inner:
            i, length = min(inner, key=lambda w: (sum(free[n] for n in run[w[0]:w[0] + w[1]]), w[0]))
            nodes = run[i:i + length]
            add("B", nodes, len(nodes), 1)
    if not req.contiguous:
        for a in range(nruns):
            union: list[int] = []
            for b in range(a, nruns):
                union = union + runs[b]
                if b == a:
                    continue
                if req.kind == 1:
                    if sum(free[n] for n in union) >= req.cores and req.nodes_min <= len(union) <= min(req.nodes_max, req.cores):
                        add("C", union, len(union), b - a + 1)
                        break
                    if len(union) > min(req.nodes_max, req.cores):
                        break
                elif len(union) >= req.nodes_min and (req.kind == 3 or _best_k(union, free, req.nodes_min) >= req.cores):
                    add("C", union, req.nodes_min, b - a + 1)
                    break
    bids.sort(key=lambda b: (-b.preference, b.nodes))
    return bids[:max(max_bids, 1)]


def _best_k(nodes: list[int], free: list[int], k: int) -> int:
    return sum(sorted((free[n] for n in nodes), reverse=True)[:k])


def _run_of(runs: list[list[int]], node: int) -> int:
    for i, run in enumerate(runs):
        if run[0] <= node <= run[-1]:
            return i
    return -1


@dataclass
class AuctionOutcome:
    status: str
    winners: dict[int, tuple[Bid, Layout]] = field(default_factory=dict)
    result: MilpResult | None = None
    bids: int = 0


def atoms(bids: list[list[Bid]], free: list[int], free_gpus: list[int]) -> list[list[int]]:
    """Nodes grouped by (free cores, free GPUs, the bids containing them): interchangeable in
    the winner determination, so the MILP counts nodes per atom instead of naming each one."""
    member: dict[int, list[int]] = {}
    k = 0
    for jb in bids:
        for b in jb:
            for n in b.nodes:
                member.setdefault(n, []).append(k)
            k += 1
    groups: dict[tuple, list[int]] = {}
    for n in sorted(member):
        groups.setdefault((free[n], free_gpus[n], tuple(member[n])), []).append(n)
    return list(groups.values())


Term = list[tuple[int, float]]   # a linear expression: (variable, coefficient) pairs


def _value(expr: Term, x: np.ndarray) -> int:
    """A count of the answer ``x`` given as a linear expression (nodes of a job in an atom)."""
    return int(round(sum(c * x[v] for v, c in expr)))


def winner_determination(priorities: list[float], reqs: list[CoreRequest], bids: list[list[Bid]],
                         free: list[int], free_gpus: list[int], *, time_limit: float | None = None,
                         node_limit: int | None = None, mip_gap: float = 1e-6,
                         start: bool = True) -> AuctionOutcome:
    """Eqs. (8)-(15): at most one bid per job, cores and GPUs per node, chosen by HiGHS.

    Decision (speed, as IPSCHED's classes): u_jn and r_jn are summed over *atoms* of
    interchangeable nodes (:func:`atoms`): U_ja nodes used and R_ja extra cores, with Eq. (12)-
    (14) per atom and an exclusivity row for jobs needing more than half a node's GPUs or
    cores. Where every bid of j holding atom a asks all its nodes (R_jc^node = |N_c|: all
    but class C bids of node-count jobs), U_ja is not a variable but |a| times the sum of those
    bids' b_jc (Eq. 10 leaves no other value): the same model, with far fewer variables. The
    winners are then laid out
    node by node (emptiest nodes first); a winner the layout cannot place exactly gets SLURM's
    best fit inside its bid's nodes, or waits.
    MIP start (``start``): every job's SLURM bid wins, which is feasible because those bids
    were laid out one after the other on what the earlier ones left. When a budget
    (``node_limit`` / ``time_limit``, :meth:`Milp.solve`) stops HiGHS the outcome carries the
    incumbent's winners (status ``limit``).
    """
    nb_bids = sum(len(b) for b in bids)
    out = AuctionOutcome("optimal", bids=nb_bids)
    if not nb_bids:
        return out
    p_min = min(p for p, b in zip(priorities, bids) if b)
    alpha = p_min / (nb_bids + 1)                                          # Eq. (17)
    groups = atoms(bids, free, free_gpus)
    atom_of = {n: a for a, g in enumerate(groups) for n in g}
    m = Milp()
    bvars: list[list[int]] = []
    U: dict[tuple[int, int], Term] = {}              # nodes of job j in atom a
    node_vars: dict[tuple[int, int], int] = {}       # where that is a variable of its own
    R: dict[tuple[int, int], int | None] = {}
    per_atom: dict[int, list[tuple[Term, int | None, CoreRequest]]] = {}
    for j, (p, req, jb) in enumerate(zip(priorities, reqs, bids)):
        bv = [m.var(cost=p + alpha * b.preference) for b in jb]            # Eq. (8)
        bvars.append(bv)
        if not jb:
            continue
        m.row([(v, 1.0) for v in bv], hi=1.0)                             # Eq. (9)
        cover: dict[int, list[tuple[int, Bid]]] = {}
        for v, b in zip(bv, jb):
            for a in sorted({atom_of[n] for n in b.nodes}):
                cover.setdefault(a, []).append((v, b))
        for a in sorted(cover):
            size, fa, ga = len(groups[a]), free[groups[a][0]], free_gpus[groups[a][0]]
            ok = fa >= req.min_per_node and ga >= req.gpus_per_node
            if ok and all(b.r_node == len(b.nodes) for _, b in cover[a]):
                u = [(v, float(size)) for v, _ in cover[a]]                 # every node of the bid
            else:
                uv = node_vars[(j, a)] = m.var(ub=min(size, req.nodes_max) if ok else 0)
                u = [(uv, 1.0)]
                m.row(u + [(v, -float(size)) for v, _ in cover[a]], hi=0.0)   # only a selected bid's nodes
            cap = max(min(fa - 1, req.cores - 1), 0)
            rv = None
            if not req.cores_per_node:
                rv = m.var(ub=cap * size)
                m.row([(rv, 1.0)] + [(v, -cap * c) for v, c in u], hi=0.0)  # Eq. (14)
            U[(j, a)], R[(j, a)] = u, rv
            per_atom.setdefault(a, []).append((u, rv, req))
        nodes_row = _merged([t for a in cover for t in U[(j, a)]] + [(v, -float(b.r_node)) for v, b in zip(bv, jb)])
        if nodes_row:
            m.row(nodes_row, lo=0.0, hi=0.0)                                # Eq. (10)
        terms = []
        for a in cover:
            terms += [(v, c * (req.cores_per_node or 1)) for v, c in U[(j, a)]]   # Eq. (15)
            if R[(j, a)] is not None:
                terms.append((R[(j, a)], 1.0))
        m.row(terms + [(v, -float(b.r_cpu)) for v, b in zip(bv, jb)], lo=0.0, hi=0.0)   # Eq. (11)
    for a, items in per_atom.items():
        size, fa, ga = len(groups[a]), free[groups[a][0]], free_gpus[groups[a][0]]
        cores, gpu, wide_g, wide_c = [], [], [], []
        for u, rv, req in items:
            cores += [(v, c * (req.cores_per_node or 1)) for v, c in u]
            if rv is not None:
                cores.append((rv, 1.0))
            if req.gpus_per_node:
                gpu += [(v, c * req.gpus_per_node) for v, c in u]
            if 2 * req.gpus_per_node > ga:
                wide_g += u
            if 2 * req.cores_per_node > fa:
                wide_c += u
        m.row(cores, hi=float(fa * size))                                  # Eq. (12)
        if gpu:
            m.row(gpu, hi=float(ga * size))                                # Eq. (13)
        for wide in (wide_g, wide_c):
            if len(wide) > 1:
                m.row(wide, hi=float(size))
    x0 = np.zeros(m.nb_vars)     # MIP start: every SLURM bid wins (they were laid out in turn)
    for j, jb in enumerate(bids):
        for v, b in zip(bvars[j], jb):
            if b.cls == "S" and b.cores:
                x0[v] = 1.0
                for n, c in zip(b.nodes, b.cores):
                    a = atom_of[n]
                    if (j, a) in node_vars:
                        x0[node_vars[(j, a)]] += 1.0
                    if R[(j, a)] is not None:
                        x0[R[(j, a)]] += c - 1
                break
    result = m.solve(time_limit=time_limit, node_limit=node_limit, mip_gap=mip_gap,
                     start=x0 if start else None)
    out.status, out.result = result.status, result
    if result.status not in ("optimal", "limit") or result.x is None:
        return out
    x = result.x
    won = {}
    for j, jb in enumerate(bids):
        for v, b in zip(bvars[j], jb):
            if x[v] > 0.5:
                won[j] = b
    cores_left, gpus_left = list(free), list(free_gpus)
    order = sorted(won, key=lambda j: (-reqs[j].gpus_per_node, -reqs[j].cores_per_node, j))
    for j in order:
        req, b = reqs[j], won[j]
        layout = _lay_out(j, req, [a for a in range(len(groups)) if (j, a) in U], groups, U, R, x,
                          cores_left, gpus_left)
        if layout is None:   # the atom answer does not fit node by node: best fit inside the bid
            inside = set(b.nodes)
            layout = best_fit_counts([c if n in inside else 0 for n, c in enumerate(cores_left)],
                                     gpus_left, req)
            if layout is None:
                continue
        for n, c in layout.per_node:
            cores_left[n] -= c
            gpus_left[n] -= req.gpus_per_node
        out.winners[j] = (b, layout)
    return out


def _merged(terms: Term) -> Term:
    """``terms`` with one entry per variable and no zero coefficient."""
    acc: dict[int, float] = {}
    for v, c in terms:
        acc[v] = acc.get(v, 0.0) + c
    return [(v, c) for v, c in acc.items() if c != 0.0]


def _lay_out(j: int, req: CoreRequest, cover: list[int], groups: list[list[int]], U, R, x,
             cores_left: list[int], gpus_left: list[int]) -> Layout | None:
    """Nodes and cores of a winner from its per-atom counts, emptiest nodes first."""
    per_node: list[tuple[int, int]] = []
    for a in cover:
        count = _value(U[(j, a)], x)
        if not count:
            continue
        extra = 0 if R[(j, a)] is None else int(round(x[R[(j, a)]]))
        cores = count * (req.cores_per_node or 1) + extra
        cand = [n for n in groups[a] if cores_left[n] >= req.min_per_node and gpus_left[n] >= req.gpus_per_node]
        cand.sort(key=lambda n: (-cores_left[n], n))
        chosen = sorted(cand[:count])
        if len(chosen) < count:
            return None
        if req.cores_per_node:
            split = [req.cores_per_node] * count
        else:
            split = spread([cores_left[n] for n in chosen], cores)
            if split is None:
                return None
        per_node.extend(zip(chosen, split))
    return Layout(tuple(sorted(per_node)), req.gpus_per_node) if per_node else None
