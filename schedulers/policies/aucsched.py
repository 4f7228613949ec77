"""``aucsched``: seed 002's AUCSCHED, an auction of contiguity-aware bids solved by one MILP.

Every ``period`` seconds the ``window`` highest-priority jobs bid for blocks of nodes (classes
A, B, C and SLURM's own best fit, at most ``max_bids_per_job`` each, preference F_jc of
Eq. 19) and HiGHS picks the winners (Eqs. 8-15, alpha = P_min / (|B| + 1)); see
:mod:`mrsched.schedulers.optim.auction` for the decisions. Budget and window halving as
``ipsched`` (:class:`~mrsched.schedulers.policies.cpugpu.MilpWindowPolicy`; a stopped MILP's
incumbent, at least SLURM's bids, still starts; MIP gap 0 for the same reason, and because
alpha F_jc, worth less than one job in total, must still decide between a job's bids); the
window never grows back (:mod:`mrsched.schedulers.optim.window`). With the paper's wall-clock
``time_limit`` the interval covers the whole decision (bid generation eats into it) and is
honoured to within 0.3 s (:mod:`mrsched.schedulers.optim.milp`); the MIP start answers a solve
that HiGHS did not end in time.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from mrsched.schedulers.optim.auction import job_bids, winner_determination
from mrsched.schedulers.optim.bestfit import best_fit_counts
from mrsched.schedulers.policies.cpugpu import MilpWindowPolicy
from mrsched.schedulers.model.params import Param
from mrsched.schedulers.model.contract import SchedulingContext

logger = logging.getLogger(__name__)
#: branch-and-bound nodes of a round's MILPs by default: AUCSCHED's MILPs calibrated to the paper's
#: 5 s interval on this project's machine (docs/PERFORMANCE.md, "Solver budgets")
NODE_LIMIT = 500


class AucSched(MilpWindowPolicy):
    """AUCSCHED (seed 002): an auction of contiguity-aware bids, Eqs. (8)-(19), every period."""

    name = "aucsched"
    _parameter_constraints = {
        "window": Param(int, min=1, max=10000, help="jobs in the auction (seed 002: 200)"),
        "max_bids_per_job": Param(int, min=1, max=1000, help="MAXBIDSPERJOB: bids generated per job"),
        "slurm_bids": Param(bool, help="add SLURM's best-fit allocation as a bid of every job (Sect. 4.2)"),
    }

    def __init__(self, *, window: int = 200, max_bids_per_job: int = 4, slurm_bids: bool = True,
                 priority: str = "basic", priority_max_age: float = 7 * 86400.0, period: float = 5.0,
                 time_limit: float = 0.0, node_limit: int = NODE_LIMIT, on_timeout: str = "incumbent",
                 mip_gap: float = 0.0):
        self.window = window
        self.max_bids_per_job = max_bids_per_job
        self.slurm_bids = slurm_bids
        self.priority = priority
        self.priority_max_age = priority_max_age
        self.period = period
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.on_timeout = on_timeout
        self.mip_gap = mip_gap

    def decide(self, ctx: SchedulingContext, jobs: list) -> None:
        if self.idle_ and not ctx.submitted and not ctx.ended:
            return
        budget = self.budget()
        t0 = time.perf_counter() if budget.seconds is not None else 0.0
        window = jobs[:self.window_.current]
        reqs = [self.requests_[j.id] for j in window]
        prios = [self.priority_of(j, ctx.now) for j in window]
        free, gpus = ctx.machine.counts()
        arrays = (np.array(free), np.array(gpus))
        sf, sg = list(free), list(gpus)      # SLURM bids: as if the earlier jobs had got theirs
        bids = []
        for req in reqs:
            slurm = best_fit_counts(sf, sg, req) if self.slurm_bids else None
            if slurm is not None:
                for n, c in slurm.per_node:
                    sf[n] -= c
                    sg[n] -= req.gpus_per_node
            bids.append(job_bids(req, free, gpus, max_bids=self.max_bids_per_job, slurm=slurm, arrays=arrays))
        if budget.seconds is not None:   # the paper's interval covers the whole decision
            budget.seconds -= time.perf_counter() - t0
        out = winner_determination(prios, reqs, bids, free, gpus, mip_gap=self.mip_gap, **budget.limits())
        res = out.result
        if res is not None:
            self.record_solve(ctx, window, res, bids=out.bids)
        if out.status == "limit" and not self.limit_hit(ctx, window, res, len(out.winners)):
            self.idle_ = False
            return
        if out.status not in ("optimal", "limit"):
            logger.warning("aucsched: MILP %s at t=%.3f; nothing started", out.status, ctx.now)
            self.idle_ = False
            return
        placed = sum(self.start(ctx, window[j], out.winners[j][1]) for j in sorted(out.winners))
        self.idle_ = not placed
