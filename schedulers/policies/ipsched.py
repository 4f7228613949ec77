"""``ipsched``: seed 002's IPSCHED, a window of jobs placed collectively by one MILP.

Every ``period`` seconds the ``window`` highest-priority jobs and the free cores and GPUs of
every node form the MILP of Eqs. (1)-(7) (:mod:`mrsched.schedulers.optim.ipmodel`), solved by
HiGHS with a time limit of one scheduling interval (``time_limit``, 0 = ``period``). On a
timeout the window is halved for the next round (logged and written in the metadata of the
window's first job, ``_jobs.csv``), as Sect. 3.1 says; without an incumbent nothing starts (the paper's
behaviour); Decision: with one (HiGHS always has SLURM's best fit as its MIP start) the
incumbent starts, being at least as good as SLURM's answer; the window never grows back, as in
the paper (:mod:`mrsched.schedulers.optim.window`). Objectives of Table 10: ``priority`` (exps. 3-4) and ``priority-cores`` (exps. 5-6,
P_j R_j^cpu). Decision: the class model (see ipmodel) may select jobs that no per-node
layout fits; those stay in the window and up to ``resolves`` more MILPs in the same round
(within the same time limit) place what fits on what is left. Decision: a round with no submission, no ending job and nothing started the
round before is not solved again (the same problem has the same answer).
Decision (``mip_gap`` 0, HiGHS proves the optimum): with basic priorities two jobs' weights
differ by 1 while the objective is up to 200 x 100,000, so any relative gap above ~5e-8 may
hand a slot to a later job; only 0 never changes what Eq. (1) ranks first.
"""

from __future__ import annotations

import logging

from mrsched.schedulers.optim.ipmodel import solve_window
from mrsched.schedulers.optim.milp import start_worker
from mrsched.schedulers.policies.cpugpu import ON_TIMEOUT, CpuGpuPolicy
from mrsched.schedulers.optim.window import AdaptiveWindow
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import SchedulingContext

logger = logging.getLogger(__name__)
OBJECTIVES = ("priority", "priority-cores")


class IpSched(CpuGpuPolicy):
    """IPSCHED (seed 002): a window of jobs placed by one MILP, Eqs. (1)-(7), every period."""

    name = "ipsched"
    _parameter_constraints = {
        "window": Param(int, min=1, max=10000, help="jobs in the MILP window (MAX_JOB_COUNT, seed 002: 200)"),
        "objective": Param(str, OBJECTIVES, help="priority: max sum P_j (s_j - c_j); priority-cores: "
                                                 "max sum P_j R_j (s_j - c_j) (Table 10)"),
        "time_limit": Param(float, min=0.0, help="MILP time limit in seconds; 0 = the scheduling period"),
        "on_timeout": Param(str, ON_TIMEOUT, help="what a MILP that hits its limit starts: incumbent (HiGHS's "
                                                  "best answer, at least SLURM's) or nothing (seed 002 Sect. 3.1)"),
        "mip_gap": Param(float, min=0.0, max=1.0, help="HiGHS relative MIP gap (0: proven optimum, the "
                                                      "only gap that never reorders priorities)"),
        "resolves": Param(int, min=0, max=100, help="extra MILPs in a round for the window jobs the first "
                                                    "answer could not lay out on nodes (0 = the paper's one)"),
    }

    def __init__(self, *, window: int = 200, objective: str = "priority", priority: str = "basic",
                 priority_max_age: float = 7 * 86400.0, period: float = 5.0, time_limit: float = 0.0,
                 on_timeout: str = "incumbent",
                 mip_gap: float = 0.0, resolves: int = 3):
        self.window = window
        self.objective = objective
        self.priority = priority
        self.priority_max_age = priority_max_age
        self.period = period
        self.time_limit = time_limit
        self.on_timeout = on_timeout
        self.mip_gap = mip_gap
        self.resolves = resolves

    def setup(self, cluster) -> None:
        super().setup(cluster)
        self.window_ = AdaptiveWindow(self.window)
        start_worker()
        self.idle_ = False
        self.solves_: list[dict] = []   # per MILP: variables, constraints, seconds, status, window

    def limit(self) -> float:
        return self.time_limit or self.period or 5.0

    def decide(self, ctx: SchedulingContext, jobs: list) -> None:
        if self.idle_ and not ctx.submitted and not ctx.ended:
            return
        window = jobs[:self.window_.current]
        started = 0
        budget = self.limit()
        for _ in range(self.resolves + 1):
            left = [j for j in window if j.id not in self.running_]
            if not left:
                break
            status, placed, seconds = self._solve(ctx, left, budget)
            budget -= seconds
            started += placed
            if status != "optimal":
                if not started:
                    self.idle_ = False
                    return
                break
            if not placed or budget <= 0:
                break
        self.idle_ = not started

    def _solve(self, ctx: SchedulingContext, window: list, budget: float) -> tuple[str, int, float]:
        """One MILP over ``window`` on the free cores and GPUs; starts what it places."""
        reqs = [self.requests_[j.id] for j in window]
        weights = [self.priority_of(j, ctx.now) * (r.cores if self.objective == "priority-cores" else 1)
                   for j, r in zip(window, reqs)]
        free, gpus = self.state_.counts()
        out = solve_window(weights, reqs, free, gpus, time_limit=max(budget, 1e-3), mip_gap=self.mip_gap)
        res = out.result
        self.solves_.append({"time": ctx.now, "window": len(window), "variables": res.variables,
                             "constraints": res.constraints, "seconds": res.seconds, "status": res.status,
                             "relaid": out.relaid, "dropped": out.dropped})
        self.stats_["solves"] += 1
        if out.status == "timeout":
            self.stats_["timeouts"] += 1
            self.window_.timed_out()
            self.record_halving(ctx, window, self.window_.current)
            logger.warning("ipsched: MILP hit its %.3g s limit at t=%.3f with %d jobs: %s, window halved to %d",
                           self.limit(), ctx.now, len(window),
                           f"its incumbent starts {len(out.layouts)} jobs" if out.layouts and self.on_timeout == "incumbent" else "nothing started",
                           self.window_.current)
            if not out.layouts or self.on_timeout == "nothing":
                return out.status, 0, res.seconds
        if out.status not in ("optimal", "timeout"):
            logger.warning("ipsched: MILP %s at t=%.3f; nothing started", out.status, ctx.now)
            return out.status, 0, res.seconds
        placed = sum(self.start(ctx, window[j], out.layouts[j]) for j in sorted(out.layouts))
        return out.status, placed, res.seconds
