"""The permutation problem of seed 001's plan-based scheduling (Sect. 3.3, Algorithm 2) and
its search: a job order yields a plan (each job at its earliest start after the running jobs
and the jobs before it), scored ``sum_i wait_i ** alpha`` (Eq. 1); 9 initial orders, every
permutation when the queue is short, else simulated annealing from the best initial one
(``optim/annealing.py``).

Speed lives here, not in the policy. A plan is evaluated incrementally: the accepted plan
keeps profile snapshots every ``stride`` positions and a move replays only from the last
snapshot before it; when the positions a swap touches reserve the same windows and resources
as in the accepted plan, the rest of the plan is taken from it (node masks and burst-buffer
bytes are integers: the profile does not depend on the order of reservations). The search
works on plain slice lists (``_evaluate_lists``) with the profile's memoised fits
(``earliest_fit``, ``fit_bound``), reuses a job's answer when its scan met only slices a move
left unchanged, and stops evaluating a move as soon as its score can no longer be accepted
(the acceptance draw is made first): the decisions are those of a full evaluation.
``tests/schedulers/test_plan.py`` and ``test_plan_lists.py`` hold the plain evaluation each
fast path is compared with.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from mrsched.errors import SimulationError
from mrsched.schedulers.optim.annealing import CoolingSchedule, anneal
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import AvailabilityProfile, Fit, fit_in_slices, take_bytes
from mrsched.schedulers.model.job import Job

INF = math.inf


@dataclass
class Plan:
    """One evaluated permutation: planned start and allocation per position, and its score."""

    order: list[int]
    score: float
    starts: list[float]
    allocs: list[Allocation | Fit | None]     # AvailabilityProfile.allocation(fit): the full one
    prefix: list[float]                       # prefix[p] = score of positions < p
    snapshots: dict[int, AvailabilityProfile] = field(default_factory=dict, repr=False)
    pos_of: list[int] | None = field(default=None, repr=False)   # job index -> its position
    # per position, the first candidate start where the burst-buffer shares did not pack in
    # its scan (INF: none); PlanProblem._evaluate_lists only
    packfail: list[float] | None = field(default=None, repr=False)


class PlanProblem:
    """The permutation problem of one round: score of the plan a job order yields (Eq. 1).

    ``commit`` keeps a plan's snapshots so that evaluating an order that agrees with it up to
    ``first_changed`` replays only the suffix (see ``evaluate``).
    """

    def __init__(self, profile: AvailabilityProfile, jobs: list[Job], now: float, alpha: float,
                 stride: int | None = None):
        self.jobs = list(jobs)
        self.now = now
        self.alpha = alpha
        n = len(jobs)
        self.stride = stride or max(1, int(math.sqrt(n)))
        self.base = profile.copy()            # never mutated: snapshot 0 of every plan
        # earliest_fit's precomputed arguments per job (None: earliest_start serves that job)
        self.specs = [self.base.fit_spec(j.request, j.request.walltime) for j in self.jobs]
        # per job, where its scan may start in every plan of this round (fit_bound)
        self.not_before = _fit_bounds(self.base, self.specs, now)
        # node masks and burst-buffer bytes are integers: the profile after a set of
        # reservations does not depend on their order (float counters might, by an ulp)
        self.order_free = not (profile.counter_names and any(any(profile.counter_vector(j.request))
                                                             for j in self.jobs))
        # plain slice lists (times, nodes, bb, bbsum) stand for the profile when every job is
        # served by earliest_fit (see _evaluate_lists): no counters to carry
        self.lists = all(spec is not None for spec in self.specs)
        if self.lists:
            base = self.base
            if base._alloc_memo is None:
                base._alloc_memo = {}
            self._fit_args = (base._alloc_memo, base.placer.capacity_fits, base._fit)
            self.base_slices = (base.times, base.nodes, base.bb, base.bbsum)
        self.accepted: Plan | None = None
        # order -> the partial score that stopped it, or its full score (see evaluate)
        self.seen: dict[tuple[int, ...], float] = {}
        self._stopped_at = 0.0
        self.evaluations = 0
        self.placements = 0

    def _cost(self, wait: float) -> float:
        return wait ** self.alpha if wait > 0 else 0.0

    def evaluate(self, order: list[int], first_changed: int = 0, bound: float = INF) -> Plan | None:
        """The plan of ``order``; None as soon as its score cannot be below ``bound`` (the
        partial score only grows, so a rejected annealing move stops early).

        With an accepted plan and ``first_changed`` (the first position where ``order``
        differs from it), positions before ``first_changed`` reuse its placements; if the
        positions up to the last differing one ``j`` got the same placements as in the accepted
        plan (as a set), the profile after ``j`` is the accepted one, and so are the placements
        after ``j``: they are reused too. Decisions are those of a full replay."""
        self.evaluations += 1
        # an order met before in this round: a lower bound of its score is known (the partial
        # score that stopped it, or its full score); a bound at or below it rejects it at once
        key = tuple(order)
        if self.seen.get(key, -INF) >= bound:
            return None
        if self.lists:
            plan = self._evaluate_lists(order, first_changed, bound)
        else:
            plan = self._evaluate(order, first_changed, bound)
        if plan is None:
            self.seen[key] = self._stopped_at
        elif any(a is not None for a in plan.allocs):
            self.seen[key] = plan.score       # else no partial score is ever checked: keep none
        return plan

    def _resume(self, order: list[int], first_changed: int, base_snapshot):
        """Where an evaluation of ``order`` starts: position ``b`` (the last snapshot of the
        accepted plan at or before ``first_changed``), the snapshots up to it, the accepted
        plan's starts, allocations, prefix scores and packing failures before it, and ``keep``:
        ``first_changed`` when positions before it are the accepted plan's, else 0."""
        acc = self.accepted
        n = len(order)
        if acc is None or first_changed <= 0:
            return 0, {0: base_snapshot}, [], [], [0.0], [], 0
        b = (min(first_changed, n - 1) // self.stride) * self.stride
        while b not in acc.snapshots:     # every stride multiple is kept; guard anyway
            b -= self.stride
        snaps = {p: s for p, s in acc.snapshots.items() if p <= b}
        keep = 0
        if first_changed < n and len(acc.order) == n and order[b:first_changed] == acc.order[b:first_changed]:
            keep = first_changed
        packfail = acc.packfail[:b] if acc.packfail is not None else []
        return b, snaps, acc.starts[:b], acc.allocs[:b], acc.prefix[:b + 1], packfail, keep

    def _converge(self, order: list[int], keep: int) -> int:
        """The last position where ``order`` differs from the accepted plan's, when it lies
        after ``keep`` and before the end (the tail after it may be the accepted one), else -1."""
        if not keep or not self.order_free:
            return -1
        ao = self.accepted.order
        last = len(order) - 1
        converge = last
        while converge >= keep and order[converge] == ao[converge]:
            converge -= 1
        return -1 if converge < keep or converge == last else converge

    def _evaluate(self, order: list[int], first_changed: int, bound: float) -> Plan | None:
        acc = self.accepted
        n = len(order)
        b, snaps, starts, allocs, prefix, _, keep = self._resume(order, first_changed, self.base)
        profile = snaps[b].copy()
        now, jobs, stride, alpha, specs = self.now, self.jobs, self.stride, self.alpha, self.specs
        not_before = self.not_before
        total = prefix[-1]
        last = n - 1
        placed = 0
        converge = self._converge(order, keep)
        for pos in range(b, n):
            if pos != b and pos % stride == 0:
                snaps[pos] = profile.copy()
            oi = order[pos]
            job = jobs[oi]
            req = job.request
            if pos < keep:
                # the accepted plan's job on the same profile: its placement is reused
                t = acc.starts[pos]
                found = None if t == INF else (t, acc.allocs[pos])
            else:
                spec = specs[oi]
                found = profile.earliest_fit(spec, not_before[oi]) if spec is not None else \
                    profile.earliest_start(req, req.walltime, now)
                placed += 1
            if found is None:
                starts.append(INF)
                allocs.append(None)
            else:
                t, alloc = found
                starts.append(t)
                allocs.append(alloc)
                wait = t - job.subtime
                if wait > 0:
                    total += wait ** alpha        # _cost, inline (hot loop)
                else:
                    total += 0.0
                if total >= bound:
                    self.placements += placed
                    self._stopped_at = total
                    return None
            prefix.append(total)
            if pos == converge and _same_placements(order, starts, allocs, acc, keep, pos):
                self.placements += placed
                return self._reuse_tail(order, pos + 1, acc, total, bound, starts, allocs, prefix, snaps)
            if found is not None and pos != last:  # the last job's reservation is never read
                profile.reserve_fitted(t, t + req.walltime, alloc)
        self.placements += placed
        return Plan(list(order), total, starts, allocs, prefix, snaps)

    def _evaluate_lists(self, order: list[int], first_changed: int, bound: float) -> Plan | None:
        """``_evaluate`` with the profile as four plain lists (times, free nodes, free bytes per
        storage, their sum) updated in place: the same scan (``fit_in_slices``, the body of
        ``AvailabilityProfile.earliest_fit``) and the same slice updates as ``reserve_fitted``
        (``_reserve_in_slices``), without profile objects; snapshots are tuples of the four
        lists.

        From ``first_changed`` on, each job's answer in the accepted plan (at its position
        there) is used, exactly:

        * the two profiles differ only from ``u``, the earliest start of a reservation one plan
          holds and the other does not (among those still running at the scan's first
          candidate ``t0``; positions placed alike in both cancel out). A scan that ended by
          ``u`` (its answer's window too) met the same slices and breakpoints: its answer is
          reused. Otherwise the candidates whose window ends by ``u`` failed there and fail
          here: the scan starts after them.
        * the candidates before the accepted answer failed there, on nodes or burst buffer
          (free nodes, bytes per slice, room for the shares in the window's minimum), unless
          their shares did not pack (``Plan.packfail``: the first such candidate). Those before
          that one whose window ends by ``f``, the earliest start of a reservation the accepted
          plan holds and this one does not, fail here too: here the window holds no more (the
          other differences only take resources away, and a breakpoint only here lies in a
          slice of a failed candidate whose window it extends). The scan starts after them.

        The scans' answers do not depend on where they start among failing candidates, so the
        placements, scores and decisions are those of ``_evaluate``
        (tests/schedulers/test_plan_lists.py)."""
        acc = self.accepted
        n = len(order)
        b, snaps, starts, allocs, prefix, pfs, keep = self._resume(order, first_changed, self.base_slices)
        T, N, B, S = snaps[b]
        T, N, B, S = T[:], N[:], B[:], S[:]
        now = T[0]                             # the scans' earliest start (never split before)
        memo, cap, fit = self._fit_args
        jobs, stride, alpha, specs = self.jobs, self.stride, self.alpha, self.specs
        not_before = self.not_before
        total = prefix[-1]
        last = n - 1
        placed = 0
        converge = self._converge(order, keep)
        if keep:
            ao, a_starts, a_allocs, a_pf = acc.order, acc.starts, acc.allocs, acc.packfail
            apos = acc.pos_of
            if apos is None:
                apos = acc.pos_of = [0] * n
                for p, q in enumerate(ao):
                    apos[q] = p
            # windows [start, end) of the positions in [keep, pos) placed differently from acc
            dwin: list[tuple[float, float]] = []
            dcount = [0]                       # dcount[r - keep]: len(dwin) at position r
        for pos in range(b, n):
            if pos != b and pos % stride == 0:
                snaps[pos] = (T[:], N[:], B[:], S[:])
            oi = order[pos]
            if pos < keep:
                # the accepted plan's job on the same profile: its placement is reused
                t = acc.starts[pos]
                alloc = acc.allocs[pos]
                pf = a_pf[pos]
            elif keep:
                # the job's answer in the accepted plan (position ap there) holds here up to the
                # earliest start u of a reservation one plan has and the other has not, among
                # those still running at the scan's start t0 (see _evaluate_lists' docstring):
                # reused if its scan ended before u, else the scan starts at the first
                # breakpoint whose window reaches u
                spec = specs[oi]
                d = spec[4]
                ap = apos[oi]
                nb = not_before[oi]
                t0 = nb if nb > now else now
                u = INF
                if ap == pos:
                    for s, e, _ in dwin:
                        if e > t0 and s < u:
                            u = s
                else:
                    m = pos if pos < ap else ap
                    for w in range(dcount[m - keep]):
                        s, e, _ = dwin[w]
                        if e > t0 and s < u:
                            u = s
                    for r in range(m, pos):
                        s = starts[r]
                        if s < u and s + specs[order[r]][4] > t0:
                            u = s
                    for r in range(m, ap):
                        s = a_starts[r]
                        if s < u and s + specs[ao[r]][4] > t0:
                            u = s
                ta = a_starts[ap]
                if ta + d <= u if ta != INF else u == INF:
                    t, alloc = ta, a_allocs[ap]
                    pf = a_pf[ap]
                else:
                    # candidates whose window ends by u: same answer as in acc, where they
                    # failed (they are before ta)
                    k = 0
                    if t0 + d <= u:
                        k = _first_reaching(T, d, u)
                    # candidates before acc's first packing failure and before ta whose window
                    # ends by f, the earliest start of a reservation acc holds and this plan
                    # does not: they failed in acc on nodes or space, so they fail here, where
                    # the other differences only take resources away
                    lim = a_pf[ap]
                    if ta < lim:
                        lim = ta
                    if t0 < lim:
                        f = INF
                        if ap == pos:
                            for s, e, freed in dwin:
                                if freed and e > t0 and s < f:
                                    f = s
                        else:
                            for w in range(dcount[m - keep]):
                                s, e, freed = dwin[w]
                                if freed and e > t0 and s < f:
                                    f = s
                            for r in range(m, ap):
                                s = a_starts[r]
                                if s < f and s + specs[ao[r]][4] > t0:
                                    f = s
                        if t0 + d <= f:
                            k2 = _first_reaching(T, d, f)
                            k3 = bisect_left(T, lim)
                            if k3 < k2:
                                k2 = k3
                            if k2 > k:
                                k = k2
                    # the first packing failure among the skipped candidates: acc's, if it is
                    # one of those whose window ends by u (the others failed on nodes or space)
                    pfl = [INF]
                    if k:
                        nb = T[k] if k < len(T) else INF
                        c = a_pf[ap]
                        if c < nb and c + d <= u:
                            pfl[0] = c
                    found = fit_in_slices(T, N, B, S, spec, nb, memo, cap, fit, pfl) if nb != INF else None
                    pf = pfl[0]
                    placed += 1
                    if found is None:
                        t, alloc = INF, None
                    else:
                        t, alloc = found
                a = a_allocs[pos]
                ta = a_starts[pos]
                if not (oi == ao[pos] and t == ta and
                        (alloc is a or (alloc is not None and a is not None and alloc.nodes == a.nodes
                                        and alloc.bb == a.bb))):
                    if t != INF:
                        dwin.append((t, t + d, False))
                    if ta != INF:
                        dwin.append((ta, ta + specs[ao[pos]][4], True))
                dcount.append(len(dwin))
            else:
                spec = specs[oi]
                pfl = [INF]
                found = fit_in_slices(T, N, B, S, spec, not_before[oi], memo, cap, fit, pfl)
                pf = pfl[0]
                placed += 1
                if found is None:
                    t, alloc = INF, None
                else:
                    t, alloc = found
            starts.append(t)
            allocs.append(alloc)
            pfs.append(pf)
            if alloc is not None:
                wait = t - jobs[oi].subtime
                if wait > 0:
                    total += wait ** alpha        # _cost, inline (hot loop)
                else:
                    total += 0.0
                if total >= bound:
                    self.placements += placed
                    self._stopped_at = total
                    return None
            prefix.append(total)
            if pos == converge and _same_placements(order, starts, allocs, acc, keep, pos):
                self.placements += placed
                pfs.extend(acc.packfail[pos + 1:])
                return self._reuse_tail(order, pos + 1, acc, total, bound, starts, allocs, prefix, snaps, pfs)
            if alloc is not None and pos != last:  # the last job's reservation is never read
                _reserve_in_slices(T, N, B, S, t, t + specs[oi][4], alloc)
        self.placements += placed
        return Plan(list(order), total, starts, allocs, prefix, snaps, packfail=pfs)

    def _reuse_tail(self, order, start, acc, total, bound, starts, allocs, prefix, snaps,
                    packfail=None) -> Plan | None:
        """Positions ``start..`` placed as in ``acc`` (same jobs on the same profiles)."""
        jobs, cost = self.jobs, self._cost
        a_starts, a_allocs, a_snaps = acc.starts, acc.allocs, acc.snapshots
        for pos in range(start, len(order)):
            snap = a_snaps.get(pos)
            if snap is not None:
                snaps[pos] = snap             # same content; snapshots are never mutated
            t = a_starts[pos]
            starts.append(t)
            allocs.append(a_allocs[pos])
            if t != INF:
                total += cost(t - jobs[order[pos]].subtime)
                if total >= bound:
                    self._stopped_at = total
                    return None
            prefix.append(total)
        return Plan(list(order), total, starts, allocs, prefix, snaps, packfail=packfail)

    def commit(self, plan: Plan) -> None:
        self.accepted = plan


def _first_reaching(T: list[float], d: float, u: float) -> int:
    """The first index ``k`` with ``T[k] + d > u`` (``len(T)`` if none): the windows of the
    candidates before it end by ``u``, with ``end = start + d`` computed as the scan does."""
    k = bisect_right(T, u - d)
    while k and T[k - 1] + d > u:
        k -= 1
    while k < len(T) and T[k] + d <= u:
        k += 1
    return k


def _reserve_in_slices(T: list[float], N: list[int], B: list, S: list[int], start: float, end: float,
                       alloc: Allocation | Fit) -> None:
    """``AvailabilityProfile.reserve_fitted`` on slice lists (no counters: every job of a round
    planned on lists asks none): the same splits (``AvailabilityProfile._split``) and updates."""
    if start < T[0]:
        start = T[0]
    if end <= start:
        return
    i = bisect_right(T, start) - 1
    if T[i] != start:
        T.insert(i + 1, start)
        N.insert(i + 1, N[i])
        B.insert(i + 1, B[i])
        S.insert(i + 1, S[i])
        i += 1
    if end == INF:
        j = len(T)
    else:
        j = bisect_right(T, end, i) - 1
        if T[j] != end:
            T.insert(j + 1, end)
            N.insert(j + 1, N[j])
            B.insert(j + 1, B[j])
            S.insert(j + 1, S[j])
            j += 1      # the slice starting at end: slices i..j-1 make the window
    keep = ~alloc.nodes
    for k in range(i, j):
        N[k] &= keep
    take_bytes(B, S, i, j, alloc)


def _fit_bounds(base: AvailabilityProfile, specs: list, now: float) -> list[float]:
    """``base.fit_bound`` per job (``now`` for jobs that ``earliest_start`` serves): their
    ``earliest_fit`` on any profile of the round's plans finds the same start from there."""
    return [now if spec is None else base.fit_bound(spec, now) for spec in specs]


def _same_placements(order: list[int], starts: list[float], allocs: list, acc: Plan, lo: int, hi: int) -> bool:
    """Whether positions ``lo..hi`` reserve the same windows and resources as in ``acc``."""
    def key(o, st, al, p):
        a = al[p]
        return o[p], st[p], (a.nodes, a.bb) if a is not None else None

    mine = {key(order, starts, allocs, p) for p in range(lo, hi + 1)}
    return mine == {key(acc.order, acc.starts, acc.allocs, p) for p in range(lo, hi + 1)}


def _bb_per_proc(job: Job) -> float:
    return float(job.request.bb_per_node)


# Seed 001 Sect. 3.3: the 9 initial candidates (criterion, then ascending / descending).
CRITERIA: tuple[tuple[str, Callable[[Job], float]], ...] = (
    ("nodes", lambda j: float(j.request.nodes)),
    ("bb_per_processor", _bb_per_proc),
    ("bb_per_processor_per_processor", lambda j: _bb_per_proc(j) / j.request.nodes),
    ("walltime", lambda j: float(j.request.walltime)),
)


def initial_orders(jobs: list[Job]) -> list[list[int]]:
    """FCFS plus ascending and descending sorts on the 4 criteria (stable: ties keep FCFS)."""
    idx = list(range(len(jobs)))
    orders = [idx]
    for _, key in CRITERIA:
        values = [key(j) for j in jobs]
        orders.append(sorted(idx, key=lambda i: values[i]))
        orders.append(sorted(idx, key=lambda i: -values[i]))
    return orders


def exhaustive_plan(profile: AvailabilityProfile, jobs: list[Job], now: float,
                    alpha: float) -> tuple[Plan, int, int]:
    """Best of all permutations by depth-first branch and bound (partial scores only grow, so a
    prefix already at the best score is cut); ties keep the lexicographically first order.
    Returns (plan, complete plans scored, placements)."""
    n = len(jobs)
    best: list = [INF, None]                  # score, (order, starts, allocs)
    counts = [0, 0]
    order: list[int] = []
    starts: list[float] = []
    allocs: list[Allocation | None] = []
    used = [False] * n

    def cost(wait: float) -> float:
        return wait ** alpha if wait > 0 else 0.0

    specs = [profile.fit_spec(j.request, j.request.walltime) for j in jobs]
    not_before = _fit_bounds(profile, specs, now)

    def dfs(prof: AvailabilityProfile, total: float) -> None:
        depth = len(order)
        if depth == n:
            counts[0] += 1
            if total < best[0]:
                best[0], best[1] = total, (list(order), list(starts), list(allocs))
            return
        for i in range(n):
            if used[i]:
                continue
            job = jobs[i]
            req = job.request
            spec = specs[i]
            found = prof.earliest_fit(spec, not_before[i]) if spec is not None else \
                prof.earliest_start(req, req.walltime, now)
            counts[1] += 1
            if found is None:
                t, alloc, sub = INF, None, total
            else:
                t, alloc = found
                sub = total + cost(t - job.subtime)
            if sub >= best[0]:
                continue
            child = prof
            if alloc is not None and depth < n - 1:
                child = prof.copy()
                child.reserve_fitted(t, t + req.walltime, alloc)
            used[i] = True
            order.append(i)
            starts.append(t)
            allocs.append(alloc)
            dfs(child, sub)
            used[i] = False
            order.pop()
            starts.pop()
            allocs.pop()

    dfs(profile.copy(), 0.0)
    if best[1] is None:   # unreachable: a complete plan always scores below INF
        raise SimulationError("exhaustive plan search found no plan")
    o, st, al = best[1]
    return Plan(o, best[0], st, al, []), counts[0], counts[1]


@dataclass
class SearchStats:
    """What one round's search did (for benchmarks and tests)."""

    jobs: int = 0
    method: str = ""
    evaluations: int = 0
    placements: int = 0
    best_score: float = 0.0
    initial_best: float = 0.0
    initial_worst: float = 0.0


def best_plan(profile: AvailabilityProfile, jobs: list[Job], now: float, *, alpha: float,
              rng: np.random.Generator, schedule: CoolingSchedule = CoolingSchedule(),
              exhaustive_limit: int = 5, stats: SearchStats | None = None) -> Plan:
    """The best plan found by Algorithm 2 of seed 001 (see the module docstring)."""
    n = len(jobs)
    stats = stats if stats is not None else SearchStats()
    stats.jobs = n
    if n <= exhaustive_limit:
        best, evaluations, placements = exhaustive_plan(profile, jobs, now, alpha)
        stats.method = "exhaustive"
        stats.evaluations, stats.placements = evaluations, placements
        stats.best_score = best.score
        return best
    problem = PlanProblem(profile, jobs, now, alpha)
    plans = [problem.evaluate(order, 0) for order in initial_orders(jobs)]
    best = min(plans, key=lambda p: p.score)          # min() keeps the first of equal scores
    worst = max(p.score for p in plans)
    stats.initial_best, stats.initial_worst = best.score, worst
    if worst == best.score:
        stats.method = "initial"
    else:
        problem.commit(best)
        result = anneal(problem, best, worst - best.score, rng, schedule)
        best = result.best
        stats.method = "annealing"
    stats.evaluations, stats.placements = problem.evaluations, problem.placements
    stats.best_score = best.score
    return best
