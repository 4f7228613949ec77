"""Schedulers that misbehave on purpose, served as ``misbehaving:Class`` (tests put this
folder on PYTHONPATH): a run with them must end failed/timeout, leaving no process."""

from __future__ import annotations

import os
import subprocess
import time

from mrsched.schedulers.batsim.scheduler import BatsimScheduler


class CrashingScheduler(BatsimScheduler):
    """Raises on the first job submission."""

    def on_job_submission(self, event):
        raise RuntimeError("policy exploded on purpose")


class HangingScheduler(BatsimScheduler):
    """Starts a helper process (its pid in $MRSCHED_TEST_PIDFILE), then never answers."""

    def on_job_submission(self, event):
        helper = subprocess.Popen(["sleep", "600"])
        pidfile = os.environ.get("MRSCHED_TEST_PIDFILE")
        if pidfile:
            with open(pidfile, "a") as fh:
                fh.write(f"{os.getpid()} {helper.pid}\n")
        while True:
            time.sleep(1)
