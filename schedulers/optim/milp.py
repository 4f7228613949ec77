"""A small MILP builder solved by HiGHS (``highspy``, called directly): variables with bounds
and integrality, sparse rows, a work budget or a time limit, a MIP start, and the solver's own
statistics.

Budgets. ``node_limit`` bounds the branch and bound by nodes (HiGHS ``mip_max_nodes``): the
answer is then a function of the model alone, whatever the machine's load, since HiGHS on one
thread without a time limit is deterministic. It bounds neither presolve nor the root node (LP,
cut rounds, root heuristics), whose work HiGHS limits by its own rules (docs/PERFORMANCE-repro.md
measures both). ``time_limit`` is wall time (the paper's interval): HiGHS checks it only between
phases, so a limited solve runs in a worker process (:mod:`.highs_worker`, one per scheduler
process, started by the policy or on first use) that is killed ``GRACE`` seconds past the
limit; the MIP start is then the answer. Decision: HiGHS runs on one thread: a campaign runs
one simulation per core, and seed 002's models solved no faster on two.

Why not ``scipy.optimize.milp``: it cannot take a starting solution, and seed 002's policies
always have one (SLURM's best fit of the window), which gives HiGHS an incumbent from the first
node. ``highspy._core._Highs`` is used rather than ``highspy.Highs``: the wrapper installs a
logging callback that prints HiGHS's banner on stdout, which a scheduler must not do.
"""

from __future__ import annotations

import atexit
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mrsched.schedulers.optim import highs_worker
from mrsched.schedulers.optim.highs_worker import run_highs

INF = float("inf")
#: seconds a limited solve may take beyond its limit before its worker is killed
GRACE = 0.3


@dataclass
class MilpResult:
    status: str             # optimal | limit | infeasible | error
    x: np.ndarray | None    # when a limit stopped HiGHS: the incumbent, if it had one
    objective: float
    variables: int
    constraints: int
    seconds: float
    gap: float | None = None
    started: bool = False   # a MIP start was given and accepted as feasible
    cpu: float = 0.0        # HiGHS's CPU seconds (in the worker process for a timed solve)
    nodes: int = 0          # branch-and-bound nodes HiGHS explored (-1: the worker was killed)
    stopped_by: str | None = None   # the limit that stopped it: nodes | time


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far; 0 where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Worker:
    """The HiGHS worker process of this scheduler process: started on first use, killed when a
    solve overruns its deadline and started again by the next solve, ended at exit."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.killed_cpu = 0.0   # CPU seconds of the solve that was killed last

    def _spawn(self) -> subprocess.Popen:
        argv = [sys.executable, "-s", "-E", highs_worker.__file__, str(os.getpid())]
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)

    def solve(self, problem: dict, deadline: float) -> dict | None:
        """HiGHS's answer, or None when it did not come by ``deadline`` (perf_counter seconds):
        then the worker is killed (and reaped)."""
        proc = self.ready()
        cpu0 = _cpu_of(proc.pid)
        try:
            highs_worker.send(proc.stdin, problem)
            ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.perf_counter(), 0.0))
            answer = highs_worker.receive(proc.stdout) if ready else None
        except (BrokenPipeError, OSError):
            answer = None
        if answer is None:
            self.killed_cpu = _cpu_of(proc.pid) - cpu0
            self.stop(kill=True)
            self.ready()            # the next worker starts up while the simulation goes on
        return answer

    def ready(self) -> subprocess.Popen:
        """The running worker, started now if there is none (it imports HiGHS in the background)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._spawn()
        return self.proc

    def stop(self, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        else:
            proc.stdin.close()      # end of file: the worker returns
        try:
            proc.wait(timeout=None if kill else 5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for fh in (proc.stdin, proc.stdout):
            fh.close()


_WORKER = _Worker()
_WORKER_PID = os.getpid()


@atexit.register
def _stop_worker() -> None:
    if _WORKER_PID == os.getpid():
        _WORKER.stop()


def start_worker() -> None:
    """Start this process's HiGHS worker ahead of its first solve (a policy's setup), so that
    its start-up is not taken from that solve's time limit."""
    _worker().ready()


def stop_worker() -> None:
    """End this process's HiGHS worker now, if one runs (a policy started only to check it can
    run, by ``mrsched run`` before the run itself)."""
    _worker().stop()


def _worker() -> _Worker:
    """This process's worker (a forked child starts its own: the parent's pipes are not its)."""
    global _WORKER, _WORKER_PID
    if _WORKER_PID != os.getpid():
        _WORKER, _WORKER_PID = _Worker(), os.getpid()
    return _WORKER


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
              start: np.ndarray | None = None, node_limit: int | None = None) -> MilpResult:
        """Solve with HiGHS; ``start``: a feasible point handed to HiGHS as its first incumbent
        (ignored when infeasible). ``node_limit``: at most that many branch-and-bound nodes
        (None: no bound). With a ``time_limit`` (wall seconds) HiGHS runs in the worker process
        and the call returns within the limit + ``GRACE`` s. Status ``limit``: a limit stopped
        HiGHS (``stopped_by``); ``x`` is its incumbent, or the start when the worker was killed."""
        from scipy.sparse import csc_array

        n, m = self.nb_vars, self.nb_rows
        if n == 0:
            return MilpResult("optimal", np.zeros(0), 0.0, 0, m, 0.0)
        t0 = time.perf_counter()
        x0 = None if start is None else np.asarray(start, dtype=float)
        started = x0 is not None and self.feasible(x0)
        a = csc_array((self.vals, (self.rows, self.cols)), shape=(m, n))
        options = {"mip_rel_gap": float(mip_gap), "threads": 1}
        if node_limit is not None:
            options["mip_max_nodes"] = int(node_limit)
        problem = {"cost": np.asarray(self.cost, dtype=float), "lb": np.asarray(self.lb, dtype=float),
                   "ub": np.asarray(self.ub, dtype=float), "integer": self.integer,
                   "lo": np.asarray(self.lo, dtype=float), "hi": np.asarray(self.hi, dtype=float),
                   "start_": a.indptr, "index": a.indices, "value": a.data,
                   "x0": x0 if started else None, "options": options}
        if time_limit is None or time_limit <= 0:
            answer = run_highs(problem)
        else:
            options["time_limit"] = max(time_limit - (time.perf_counter() - t0), 1e-3)
            worker = _worker()
            answer = worker.solve(problem, deadline=t0 + time_limit + GRACE)
            if answer is None:      # killed at the deadline: the MIP start is the incumbent
                answer = {"status": "limit", "stopped_by": "time", "x": x0 if started else None,
                          "objective": float(problem["cost"] @ x0) if started else 0.0, "gap": None,
                          "cpu": worker.killed_cpu, "nodes": -1}
        x = answer["x"] if answer["status"] in ("optimal", "limit") else None
        return MilpResult(answer["status"], x, answer["objective"], n, m, time.perf_counter() - t0,
                          answer["gap"], started, answer["cpu"], answer["nodes"], answer["stopped_by"])
