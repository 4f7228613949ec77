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


class RefusingScheduler(BatsimScheduler):
    """Refuses the machine at SIMULATION_BEGINS, as a policy refuses a platform it cannot use:
    a user's class is not started before its run, so the run records the refusal."""

    def on_simulation_begins(self, event):
        from mrsched.errors import ConfigError

        raise ConfigError("this machine will not do", field="platform")


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


def crash_midway(platform, workloads, scheduler, *, export_prefix, **_ignored):
    """An engine (``MRSCHED_EMBEDDED_ENGINE=misbehaving:crash_midway``) that dies after
    writing part of its outputs, as a killed or crashing simulator would."""
    with open(f"{export_prefix}_jobs.csv", "w") as fh:
        fh.write("job_id,workload_name\n1,w0\n")
    with open(f"{export_prefix}_schedule.csv", "w") as fh:
        fh.write("makespan\n")
    raise RuntimeError("engine died while writing its outputs")
