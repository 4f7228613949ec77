"""A scheduler that shares hosts on purpose, served as ``sharing_scheduler:RoundRobinOnTwo``
(tests put this folder on PYTHONPATH): the k-th job goes to compute host ``k mod 2``, as
``../shared/batsim-reference/sharing`` was recorded (``scripted_sched.py`` with SHARE=2)."""

from __future__ import annotations

from procset import ProcSet

from mrsched.schedulers.batsim.scheduler import BatsimScheduler


class RoundRobinOnTwo(BatsimScheduler):
    def on_simulation_begins(self, event):
        self.hosts = sorted(r.id for r in self.compute_resources)[:2]
        self.started = 0

    def on_job_submission(self, event):
        self.execute_job(event.job_id, ProcSet(self.hosts[self.started % 2]))
        self.started += 1
