"""A small MILP builder solved by HiGHS (through ``scipy.optimize.milp``): variables with
bounds and integrality, sparse rows, a time limit, and the solver's own statistics."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

INF = float("inf")


@dataclass
class MilpResult:
    status: str             # optimal | timeout | infeasible | error
    x: np.ndarray | None
    objective: float
    variables: int
    constraints: int
    seconds: float
    gap: float | None = None


class Milp:
    """Maximise ``c @ x`` subject to ``lo <= A x <= hi`` and variable bounds."""

    def __init__(self):
        self.cost: list[float] = []
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def var(self, cost: float = 0.0, lb: float = 0.0, ub: float = 1.0, integer: bool = True) -> int:
        self.cost.append(cost)
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(1 if integer else 0)
        return len(self.cost) - 1

    def row(self, terms: list[tuple[int, float]], lo: float = -INF, hi: float = INF) -> int:
        r = len(self.lo)
        for col, val in terms:
            self.rows.append(r)
            self.cols.append(col)
            self.vals.append(val)
        self.lo.append(lo)
        self.hi.append(hi)
        return r

    @property
    def nb_vars(self) -> int:
        return len(self.cost)

    @property
    def nb_rows(self) -> int:
        return len(self.lo)

    def solve(self, time_limit: float | None = None, mip_gap: float = 1e-6) -> MilpResult:
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import csr_array

        n, m = self.nb_vars, self.nb_rows
        if n == 0:
            return MilpResult("optimal", np.zeros(0), 0.0, 0, m, 0.0)
        options = {"mip_rel_gap": mip_gap, "disp": False}
        if time_limit is not None and time_limit > 0:
            options["time_limit"] = float(time_limit)
        cons = []
        if m:
            a = csr_array((self.vals, (self.rows, self.cols)), shape=(m, n))
            cons = [LinearConstraint(a, np.array(self.lo), np.array(self.hi))]
        t0 = time.perf_counter()
        res = milp(-np.array(self.cost), constraints=cons, integrality=np.array(self.integer),
                   bounds=Bounds(np.array(self.lb), np.array(self.ub)), options=options)
        seconds = time.perf_counter() - t0
        gap = getattr(res, "mip_gap", None)
        if res.status == 0:
            return MilpResult("optimal", np.round(res.x), -res.fun, n, m, seconds, gap)
        if res.status == 1:
            return MilpResult("timeout", None if res.x is None else np.round(res.x), 0.0, n, m, seconds, gap)
        if res.status == 2:
            return MilpResult("infeasible", None, 0.0, n, m, seconds)
        return MilpResult("error", None, 0.0, n, m, seconds)
