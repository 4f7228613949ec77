"""The window of a MILP policy that must answer within its scheduling interval (seed 002
Sect. 3.1): a solve that hits the time limit halves the window for the next intervals.

It never grows back, as in the paper, which only ever halves it: a window doubled back after
quick rounds hit the limit again on AUCSCHED's mix V runs, a whole interval of CPU each time.
"""

from __future__ import annotations


class AdaptiveWindow:
    """How many queued jobs the next MILP may take (``current``), between 1 and ``size``."""

    def __init__(self, size: int):
        self.size = size
        self.current = size

    def timed_out(self) -> None:
        self.current = max(1, self.current // 2)
