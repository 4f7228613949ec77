"""``ipsched``: seed 002's IPSCHED, a window of jobs placed collectively by one MILP.

Every ``period`` seconds the ``window`` highest-priority jobs and the free cores and GPUs of
every node form the MILP of Eqs. (1)-(7) (:mod:`mrsched.schedulers.optim.ipmodel`), solved by
HiGHS within the round's budget (:class:`~mrsched.schedulers.policies.cpugpu.MilpWindowPolicy`:
``node_limit`` branch-and-bound nodes by default, the paper's wall-clock ``time_limit`` on
request). A MILP its budget stops halves the window for the next rounds (logged and written in
the metadata of the window's first job, ``_jobs.csv``), as Sect. 3.1 says; without an
incumbent nothing starts (the paper's behaviour); Decision: with one (HiGHS always has SLURM's
best fit as its MIP start) the incumbent starts, being at least as good as SLURM's answer; the
window never grows back, as in the paper (:mod:`mrsched.schedulers.optim.window`). Objectives
of Table 10: ``priority`` (exps. 3-4) and ``priority-cores`` (exps. 5-6, P_j R_j^cpu).
Decision: the class model (see ipmodel) may select jobs that no per-node layout fits; those
stay in the window and up to ``resolves`` more MILPs in the same round (within what is left of
the round's budget) place what fits on what is left. Decision: a round with no submission, no
ending job and nothing started the round before is not solved again (the same problem has the
same answer).
Decision (``mip_gap`` 0, HiGHS proves the optimum): with basic priorities two jobs' weights
differ by 1 while the objective is up to 200 x 100,000, so any relative gap above ~5e-8 may
hand a slot to a later job; only 0 never changes what Eq. (1) ranks first.
"""

from __future__ import annotations

import logging

from mrsched.schedulers.optim.ipmodel import solve_window
from mrsched.schedulers.policies.cpugpu import MilpWindowPolicy
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import SchedulingContext

logger = logging.getLogger(__name__)
#: branch-and-bound nodes of a round's MILPs by default: IPSCHED's MILPs calibrated to the paper's
#: 5 s interval on this project's machine (docs/PERFORMANCE.md, "Solver budgets")
NODE_LIMIT = 1000
OBJECTIVES = ("priority", "priority-cores")


class IpSched(MilpWindowPolicy):
    """IPSCHED (seed 002): a window of jobs placed by one MILP, Eqs. (1)-(7), every period."""

    name = "ipsched"
    _parameter_constraints = {
        "window": Param(int, min=1, max=10000, help="jobs in the MILP window (MAX_JOB_COUNT, seed 002: 200)"),
        "objective": Param(str, OBJECTIVES, help="priority: max sum P_j (s_j - c_j); priority-cores: "
                                                 "max sum P_j R_j (s_j - c_j) (Table 10)"),
        "resolves": Param(int, min=0, max=100, help="extra MILPs in a round for the window jobs the first "
                                                    "answer could not lay out on nodes (0 = the paper's one)"),
    }

    def __init__(self, *, window: int = 200, objective: str = "priority", priority: str = "basic",
                 priority_max_age: float = 7 * 86400.0, period: float = 5.0, time_limit: float = 0.0,
                 node_limit: int = NODE_LIMIT, on_timeout: str = "incumbent",
                 mip_gap: float = 0.0, resolves: int = 3):
        self.window = window
        self.objective = objective
        self.priority = priority
        self.priority_max_age = priority_max_age
        self.period = period
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.on_timeout = on_timeout
        self.mip_gap = mip_gap
        self.resolves = resolves

    def decide(self, ctx: SchedulingContext, jobs: list) -> None:
        if self.idle_ and not ctx.submitted and not ctx.ended:
            return
        window = jobs[:self.window_.current]
        started = 0
        budget = self.budget()
        for _ in range(self.resolves + 1):
            left = [j for j in window if j.id not in ctx.machine.holdings]   # not started this round
            if not left:
                break
            status, placed = self._solve(ctx, left, budget)
            started += placed
            if status != "optimal":
                if not started:
                    self.idle_ = False
                    return
                break
            if not placed or budget.spent:
                break
        self.idle_ = not started

    def _solve(self, ctx: SchedulingContext, window: list, budget) -> tuple[str, int]:
        """One MILP over ``window`` on the free cores and GPUs within what is left of the
        round's ``budget`` (spent here); starts what it places."""
        reqs = [self.requests_[j.id] for j in window]
        weights = [self.priority_of(j, ctx.now) * (r.cores if self.objective == "priority-cores" else 1)
                   for j, r in zip(window, reqs)]
        free, gpus = ctx.machine.counts()
        out = solve_window(weights, reqs, free, gpus, mip_gap=self.mip_gap, **budget.limits())
        res = out.result
        budget.spend(res)
        self.record_solve(ctx, window, res, relaid=out.relaid, dropped=out.dropped)
        if out.status == "limit" and not self.limit_hit(ctx, window, res, len(out.layouts)):
            return out.status, 0
        if out.status not in ("optimal", "limit"):
            logger.warning("ipsched: MILP %s at t=%.3f; nothing started", out.status, ctx.now)
            return out.status, 0
        placed = sum(self.start(ctx, window[j], out.layouts[j]) for j in sorted(out.layouts))
        return out.status, placed
