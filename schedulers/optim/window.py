"""The window of a MILP policy that must answer within its scheduling interval (seed 002
Sect. 5): a solve that hits the time limit starts nothing and halves the window; ten rounds
in a row solved in under half the limit double it back, up to its configured size (our
decision: the paper only says the window shrinks)."""

from __future__ import annotations

CALM_ROUNDS = 10


class AdaptiveWindow:
    """How many queued jobs the next MILP may take (``current``), between 1 and ``size``."""

    def __init__(self, size: int):
        self.size = size
        self.current = size
        self.calm = 0  # rounds solved in under half the limit since the last timeout

    def timed_out(self) -> None:
        self.current = max(1, self.current // 2)
        self.calm = 0

    def solved(self, seconds: float, limit: float) -> None:
        if seconds < limit / 2 and self.current < self.size:
            self.calm += 1
            if self.calm >= CALM_ROUNDS:
                self.current = min(self.size, self.current * 2)
                self.calm = 0
