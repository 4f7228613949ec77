"""SLURM best fit and backfilling of ``slurm-bf`` (seed 002's baseline)."""

from __future__ import annotations

from cpugpu_runs import run_policy, write_platform, write_workload

from mrsched.schedulers.optim.bestfit import best_fit_counts, never_fits
from mrsched.schedulers.model.cores import core_request


def test_best_fit_picks_the_smallest_block_that_holds_the_job():
    free = [8, 8, 0, 8, 8, 8, 8, 0, 2]
    gpus = [0] * 9
    lay = best_fit_counts(free, gpus, core_request("j", {"res": 16}))
    assert lay.per_node == ((0, 8), (1, 8))          # block 0-1 (16 cores) beats 3-6 (32)
    lay = best_fit_counts(free, gpus, core_request("j", {"res": 2}))
    assert lay.per_node == ((8, 2),)                  # the 2-core block
    lay = best_fit_counts(free, gpus, core_request("j", {"res": 12, "nodes": 3}))
    assert lay.per_node == ((3, 4), (4, 4), (5, 4))   # 3 consecutive nodes, cores spread evenly
    lay = best_fit_counts(free, gpus, core_request("j", {"res": 40}))
    assert sum(c for _, c in lay.per_node) == 40      # no block suffices: largest blocks first
    assert best_fit_counts(free, gpus, core_request("j", {"res": 40, "contiguous": True})) is None


def test_never_fits_reasons():
    cores, gpus = [8, 8], [2, 1]
    assert never_fits(core_request("j", {"res": 17}), cores, gpus) == "asks 17 cores, the machine has 16"
    assert "only 1 nodes" in never_fits(core_request("j", {"res": 4, "nodes": 2, "gpus_per_node": 2}), cores, gpus)
    assert "most GPUs on a node is 2" in never_fits(core_request("j", {"res": 1, "gpus_per_node": 3}), cores, gpus)
    assert never_fits(core_request("j", {"res": 16}), cores, gpus) is None


def test_backfilling_respects_the_reservation(tmp_path):
    # 4 nodes x 4 cores. J1 takes 12 cores for 100 s; J2 wants 16 (reserved at 100);
    # J3 (4 cores, 50 s) fits before the reservation; J4 (4 cores, 500 s) would delay J2.
    jobs = [{"id": "1", "subtime": 0, "runtime": 100, "walltime": 100, "res": 12},
            {"id": "2", "subtime": 1, "runtime": 10, "walltime": 10, "res": 16},
            {"id": "3", "subtime": 2, "runtime": 50, "walltime": 50, "res": 4},
            {"id": "4", "subtime": 3, "runtime": 500, "walltime": 500, "res": 4}]
    plat = write_platform(tmp_path / "p.xml", 4, 4, 0)
    rows = run_policy(tmp_path, plat, write_workload(tmp_path / "w.json", jobs, 16), "slurm-bf")
    start = {j: round(float(r["starting_time"])) for j, r in rows.items()}
    assert start == {"1": 0, "2": 100, "3": 2, "4": 110}
    rows = run_policy(tmp_path / "r0", plat, write_workload(tmp_path / "w.json", jobs, 16), "slurm-bf",
                      reservations=0)
    assert round(float(rows["3"]["starting_time"])) == 110   # no backfilling: strict priority order
