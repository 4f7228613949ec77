"""A one-job per-core run for the analysis tests (not a test module of its own)."""

from __future__ import annotations

import json

from mrsched.analysis.campaign import campaign_metrics
from mrsched.cli import main
from mrsched.platforms.cluster import generate_cluster


def run_on_small_machine(tmp_path):
    plat = tmp_path / "p.xml"
    plat.write_text(generate_cluster(nodes=4, cores=4, gpus=1, pfs=False).xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 16, "profiles": {"s": {"type": "delay", "delay": 100}},
                              "jobs": [{"id": "1", "subtime": 0, "walltime": 200, "res": 8, "profile": "s"}]}))
    assert main(["run", "-p", str(plat), "-w", str(wl), "--policy", "slurm-bf", "--out", str(tmp_path / "run")]) == 0
    return campaign_metrics(tmp_path / "run")
