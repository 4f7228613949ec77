"""Same inputs, same results, whatever the interpreter's string hashing: each run's outputs
are the same under two ``PYTHONHASHSEED`` values (a decision that walked a set of job ids or
names in hash order would differ)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import hashlib, sys, tempfile
from pathlib import Path
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate
here = Path(sys.argv[1])
runs = [("fcfs-bb", {}), ("conservative-bb", {"idle_sleep": 60}), ("filler", {"power_cap_share": 0.7}),
        ("bbsched", {}), ("multisched", {}), ("hierarchical", {}), ("plan-2", {"idle_sleep": 60})]
for name, opts in runs:
    out = Path(tempfile.mkdtemp(dir=here)) / "o"
    simulate(here / "p.xml", [here / "w.json"], make_scheduler(name, dict(opts)), export_prefix=out,
             energy=True)
    data = b"".join(Path(f"{out}_{k}").read_bytes() for k in ("jobs.csv", "consumed_energy.csv"))
    print(name, hashlib.sha1(data).hexdigest())
out = Path(tempfile.mkdtemp(dir=here)) / "o"
simulate(here / "c.xml", [here / "cw.json"], make_scheduler("slurm-bf", {}), export_prefix=out)
print("slurm-bf", hashlib.sha1(Path(f"{out}_jobs.csv").read_bytes()).hexdigest())
"""


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "mrsched.cli", *args], check=True, capture_output=True)


def test_outputs_do_not_depend_on_the_hash_seed(tmp_path):
    _cli("platform", "dragonfly", "--groups", "2", "--chassis", "2", "--routers", "2",
         "--nodes-per-router", "2", "--bb-capacity", "40GB", "--wattage", "95:190",
         "--sleep-wattage", "9.75", "-o", str(tmp_path / "p.xml"))
    _cli("workload", "synthetic", "--platform", str(tmp_path / "p.xml"), "--jobs", "60",
         "--mean-interarrival", "20", "--min-runtime", "5", "--max-runtime", "600", "--model",
         "burst-buffer", "--seed", "3", "-o", str(tmp_path / "w.json"))
    _cli("platform", "cluster", "--nodes", "3", "--cores", "4", "--gpus", "1", "-o",
         str(tmp_path / "c.xml"))
    _cli("workload", "cpugpu", "--platform", str(tmp_path / "c.xml"), "--mix", "III", "--jobs",
         "30", "--seed", "2", "-o", str(tmp_path / "cw.json"))
    seen = []
    for seed in ("0", "1"):
        done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed}, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        seen.append(done.stdout.splitlines())
    assert len(seen[0]) == 8
    assert seen[0] == seen[1]
