"""The window and the budget of a MILP policy that must answer within its scheduling interval
(seed 002 Sect. 3.1): a solve stopped by its budget halves the window for the next intervals.

It never grows back, as in the paper, which only ever halves it: a window doubled back after
quick rounds hit the limit again on AUCSCHED's mix V runs, a whole interval of CPU each time.
"""

from __future__ import annotations

from dataclasses import dataclass

from mrsched.schedulers.optim.milp import MilpResult


class AdaptiveWindow:
    """How many queued jobs the next MILP may take (``current``), between 1 and ``size``."""

    def __init__(self, size: int):
        self.size = size
        self.current = size

    def timed_out(self) -> int:
        """Halve the window after a solve its budget stopped; returns the size it had."""
        old = self.current
        self.current = max(1, old // 2)
        return old


@dataclass
class RoundBudget:
    """What the MILPs of one scheduling round may still spend: branch-and-bound ``nodes`` and,
    only when the paper's wall-clock limit is asked for, ``seconds`` (None: no bound).

    Nodes are work: the same model stops at the same node on any machine and under any load,
    so a round's decisions depend on its inputs alone. Seconds are the paper's interval: they
    make a run depend on the machine's speed and load."""

    nodes: int | None = None
    seconds: float | None = None

    def limits(self) -> dict:
        """:meth:`Milp.solve`'s keywords for the next solve (a timed solve gets at least 1 ms)."""
        return {"node_limit": self.nodes,
                "time_limit": None if self.seconds is None else max(self.seconds, 1e-3)}

    def spend(self, result: MilpResult | None) -> None:
        """Take a solve's nodes and seconds off what is left."""
        if result is None:
            return
        if self.nodes is not None:
            self.nodes -= max(result.nodes, 0)
        if self.seconds is not None:
            self.seconds -= result.seconds

    @property
    def spent(self) -> bool:
        return (self.nodes is not None and self.nodes <= 0) or (self.seconds is not None and self.seconds <= 0)
