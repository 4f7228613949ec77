"""An FCFS first-fit scheduler written with the pybatsim-style base class — a template.

Jobs start in submission order on the lowest free resource ids; the queue head blocks the
others (no backfilling), so start times match batsched's ``fcfs``. A job asking for more
nodes than the machine has could never start: it is rejected, and the reason is logged.

Serve it to Batsim with::

    mrsched serve mrsched.schedulers.example_scheduler:FirstFitScheduler -v
    batsim -p platform.xml -w workload.json -s tcp://127.0.0.1:28000
"""

from __future__ import annotations

import logging
from collections import deque

from procset import ProcSet

from mrsched.schedulers.batsim import BatsimScheduler

logger = logging.getLogger(__name__)


class FirstFitScheduler(BatsimScheduler):
    """First-come first-served, first-fit on compute resource ids."""

    def on_simulation_begins(self, event):
        # run-time state lives here, not in __init__: one object can serve several runs
        self.free = ProcSet(*(r.id for r in self.compute_resources))
        self.machine_size = len(self.compute_resources)
        self.queue = deque()          # job ids waiting, in submission order
        self.running = {}             # job id -> ProcSet we gave it

    def on_job_submission(self, event):
        res = event.job.get("res")
        if not isinstance(res, int) or res < 1 or res > self.machine_size:
            logger.info("reject %s: requests %r nodes, the machine has %d",
                        event.job_id, res, self.machine_size)
            self.reject_job(event.job_id)
        else:
            self.queue.append(event.job_id)

    def on_job_completion(self, event):
        # free what *we* allocated (event.alloc is the same set when Batsim runs the job)
        self.free |= self.running.pop(event.job_id)

    def on_no_more_events(self):
        # decisions are taken once per message, after every event was seen
        while self.queue:
            job_id = self.queue[0]
            res = self.jobs[job_id]["res"]
            if res > len(self.free):
                break                  # strict FCFS: the head waits, so does everyone
            alloc = self.lowest_free(res)
            self.free -= alloc
            self.running[job_id] = alloc
            self.queue.popleft()
            self.execute_job(job_id, alloc)

    def lowest_free(self, n):
        """The ``n`` lowest free ids, taken interval by interval (cheap with ProcSet)."""
        picked = []
        for lo, hi in self.free.intervals():
            take = min(n, hi - lo + 1)
            picked.append((lo, lo + take - 1))
            n -= take
            if n == 0:
                break
        return ProcSet(*picked)
