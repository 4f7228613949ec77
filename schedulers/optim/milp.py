"""A small MILP builder solved by HiGHS (``highspy``, called directly): variables with bounds
and integrality, sparse rows, a time limit, a MIP start, and the solver's own statistics.

Why not ``scipy.optimize.milp``: it cannot take a starting solution, and seed 002's policies
always have one (SLURM's best fit of the window), which gives HiGHS an incumbent from the first
node. ``highspy._core._Highs`` is used rather than ``highspy.Highs``: the wrapper installs a
logging callback that prints HiGHS's banner on stdout, which a scheduler must not do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

INF = float("inf")


@dataclass
class MilpResult:
    status: str             # optimal | timeout | infeasible | error
    x: np.ndarray | None    # on a timeout: the incumbent, if HiGHS had one
    objective: float
    variables: int
    constraints: int
    seconds: float
    gap: float | None = None
    started: bool = False   # a MIP start was given and accepted as feasible


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

    def feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether ``x`` meets every bound, row and integrality (a MIP start is checked first)."""
        if len(x) != self.nb_vars:
            return False
        if np.any(x < np.array(self.lb) - tol) or np.any(x > np.array(self.ub) + tol):
            return False
        if np.any(np.abs(x - np.round(x))[np.array(self.integer, dtype=bool)] > tol):
            return False
        act = np.zeros(self.nb_rows)
        np.add.at(act, np.array(self.rows, dtype=np.int64), np.array(self.vals) * x[np.array(self.cols, dtype=np.int64)])
        return bool(np.all(act >= np.array(self.lo) - tol) and np.all(act <= np.array(self.hi) + tol))

    def solve(self, time_limit: float | None = None, mip_gap: float = 1e-6,
              start: np.ndarray | None = None) -> MilpResult:
        """Solve with HiGHS; ``start``: a feasible point handed to HiGHS as its first incumbent
        (ignored when infeasible). Status ``timeout`` keeps HiGHS's incumbent in ``x``."""
        from highspy import _core as hs
        from scipy.sparse import csc_array

        n, m = self.nb_vars, self.nb_rows
        if n == 0:
            return MilpResult("optimal", np.zeros(0), 0.0, 0, m, 0.0)
        t0 = time.perf_counter()
        h = hs._Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("mip_rel_gap", float(mip_gap))
        if time_limit is not None and time_limit > 0:
            h.setOptionValue("time_limit", float(time_limit))
        lp = hs.HighsLp()
        lp.num_col_, lp.num_row_ = n, m
        lp.col_cost_ = np.asarray(self.cost, dtype=float)
        lp.col_lower_ = np.asarray(self.lb, dtype=float)
        lp.col_upper_ = np.asarray(self.ub, dtype=float)
        lp.row_lower_ = np.asarray(self.lo, dtype=float)
        lp.row_upper_ = np.asarray(self.hi, dtype=float)
        a = csc_array((self.vals, (self.rows, self.cols)), shape=(m, n))
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.start_ = a.indptr
        lp.a_matrix_.index_ = a.indices
        lp.a_matrix_.value_ = a.data
        lp.sense_ = hs.ObjSense.kMaximize
        lp.integrality_ = [hs.HighsVarType.kInteger if i else hs.HighsVarType.kContinuous for i in self.integer]
        h.passModel(lp)
        started = start is not None and self.feasible(np.asarray(start, dtype=float))
        if started:
            sol = hs.HighsSolution()
            sol.col_value = list(np.asarray(start, dtype=float))
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        seconds = time.perf_counter() - t0
        status = h.getModelStatus()
        info = h.getInfo()
        has_x = info.primal_solution_status == 2          # kSolutionStatusFeasible
        x = np.round(np.asarray(h.getSolution().col_value)) if has_x else None
        gap = info.mip_gap if has_x else None
        ms = hs.HighsModelStatus
        if status == ms.kOptimal:
            return MilpResult("optimal", x, info.objective_function_value, n, m, seconds, gap, started)
        if status in (ms.kTimeLimit, ms.kInterrupt, ms.kSolutionLimit, ms.kIterationLimit):
            return MilpResult("timeout", x, info.objective_function_value if has_x else 0.0, n, m, seconds,
                              gap, started)
        if status == ms.kInfeasible:
            return MilpResult("infeasible", None, 0.0, n, m, seconds, None, started)
        return MilpResult("error", None, 0.0, n, m, seconds, None, started)
