"""HiGHS run on a model given as plain arrays, in this process or in a worker child process.

In this process when the solve is bounded by work alone (``mip_max_nodes``, or nothing): HiGHS
on one thread without a time limit is deterministic, its clock feeding only its log
(HiGHS 1.15 ``HighsMipSolverData::checkLimits``, ``HPresolve::runProbing``).
In a child process when a wall-clock ``time_limit`` is given: HiGHS checks it between phases,
not inside them (the interrupt callback is called once in all of presolve), so presolve or root
separation can overrun a limit by far. A child can be killed at the deadline; the policy then
keeps the MIP start (SLURM's answer) as incumbent.

Protocol (the child runs this file as a script, with no ``mrsched`` import, so that it starts
quickly): length-prefixed pickles on stdin/stdout; a request is the dict
:func:`run_highs` takes, the answer the dict it returns. The child dies with its parent
(``PR_SET_PDEATHSIG``, and end of file on stdin).
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import time

import numpy as np

_HEADER = struct.Struct("<Q")


def build_highs(p: dict):
    """A ``highspy`` solver holding ``p`` (cost, lb, ub, integer, CSC matrix, row bounds,
    options, start), ready to run: :func:`run_highs` runs it; a benchmark may first attach a
    callback (``bench/bench_ipsched.py --calibrate`` traces the nodes against CPU time)."""
    from highspy import _core as hs

    h = hs._Highs()
    h.setOptionValue("output_flag", False)
    for key, value in p["options"].items():
        h.setOptionValue(key, value)
    lp = hs.HighsLp()
    lp.num_col_, lp.num_row_ = len(p["cost"]), len(p["lo"])
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = p["cost"], p["lb"], p["ub"]
    lp.row_lower_, lp.row_upper_ = p["lo"], p["hi"]
    lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = p["start_"], p["index"], p["value"]
    lp.sense_ = hs.ObjSense.kMaximize
    lp.integrality_ = [hs.HighsVarType.kInteger if i else hs.HighsVarType.kContinuous for i in p["integer"]]
    h.passModel(lp)
    if p["x0"] is not None:
        sol = hs.HighsSolution()
        sol.col_value = list(p["x0"])
        sol.value_valid = True
        h.setSolution(sol)
    return h


def answer(h, cpu: float) -> dict:
    """What :func:`run_highs` returns once ``h`` has run (``cpu``: the process time it began).

    ``status`` is ``limit`` when a limit stopped HiGHS before it proved the optimum, and
    ``stopped_by`` says which: ``nodes`` (``mip_max_nodes`` reached: HiGHS's status
    kSolutionLimit, ``HighsMipSolverData::checkLimits``) or ``time``."""
    from highspy import _core as hs

    status = h.getModelStatus()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2          # kSolutionStatusFeasible
    ms = hs.HighsModelStatus
    stopped_by = {ms.kSolutionLimit: "nodes", ms.kTimeLimit: "time", ms.kInterrupt: "time"}.get(status)
    kind = "limit" if stopped_by else {ms.kOptimal: "optimal", ms.kInfeasible: "infeasible"}.get(status, "error")
    return {"status": kind, "stopped_by": stopped_by,
            "x": np.round(np.asarray(h.getSolution().col_value)) if has_x else None,
            "objective": info.objective_function_value if has_x else 0.0,
            "gap": info.mip_gap if has_x else None,
            "nodes": int(info.mip_node_count),
            "cpu": time.process_time() - cpu}


def run_highs(p: dict) -> dict:
    """Solve ``p`` with HiGHS (see :func:`build_highs` and :func:`answer`)."""
    cpu = time.process_time()
    h = build_highs(p)
    h.run()
    return answer(h, cpu)


def send(fh, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_HEADER.pack(len(data)) + data)
    fh.flush()


def receive(fh):
    """One message from ``fh``; None at end of file."""
    head = fh.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    return pickle.loads(fh.read(_HEADER.unpack(head)[0]))


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, 9)   # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):                   # not Linux: end of file on stdin still ends us
        pass
    if os.getppid() != parent:                          # the parent died before prctl
        os._exit(0)


def serve(parent: int) -> None:
    _die_with_parent(parent)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)           # whatever HiGHS itself prints goes to stderr, not into the answers
    stdin = sys.stdin.buffer
    while (request := receive(stdin)) is not None:
        send(answers, run_highs(request))


if __name__ == "__main__":
    serve(int(sys.argv[1]))
