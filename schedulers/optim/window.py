"""The window of a MILP policy that must answer within its scheduling interval (seed 002
Sect. 3.1): a solve that hits the time limit halves the window for the next intervals.

It never grows back, as in the paper, which only ever halves it. (An earlier Decision doubled
it back after ten rounds solved in under half the limit: on AUCSCHED mix V runs the doubled
window hit the limit again, 9 halvings a run instead of 3, each a whole interval of CPU.)
"""

from __future__ import annotations


class AdaptiveWindow:
    """How many queued jobs the next MILP may take (``current``), between 1 and ``size``."""

    def __init__(self, size: int):
        self.size = size
        self.current = size

    def timed_out(self) -> None:
        self.current = max(1, self.current // 2)
