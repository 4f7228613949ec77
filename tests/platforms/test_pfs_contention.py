"""I/O to the PFS on the generated Dragonfly, through the embedded engine: the shared 5 GB/s
link is the bottleneck, not a compute node's link (the trap this platform avoids)."""

from __future__ import annotations

import json

import pytest

from mrsched.platforms.bundled import bundled_path
from mrsched.schedulers import batsim
from mrsched.simulator import engine


def _writer_scheduler(base):
    class PfsWriter(base):
        """Starts every job at once on the lowest compute ids, its label 'pfs' mapped to the PFS."""

        def on_simulation_begins(self, event):
            self.next_id = 0
            self.pfs = next(r.id for r in self.storage_resources if r.name == "pfs")
            self.compute = sorted(r.id for r in self.compute_resources)

        def on_job_submission(self, event):
            res = event.job["res"]
            alloc = self.compute[self.next_id:self.next_id + res]
            self.next_id += res
            self.execute_job(event.job_id, " ".join(map(str, alloc)), storage_mapping={"pfs": self.pfs})

    return PfsWriter


@pytest.mark.parametrize("nodes,per_node,expected", [
    (1, 1.25e9, 1.0),     # one node: its own 1250 MB/s link limits it
    (8, 1.25e9, 2.0),     # 8 x 1.25 GB through the 5 GB/s PFS link (a gateway node would take 8 s)
    (2, 1.25e9, 1.0),     # 2 nodes: 2.5 GB/s < 5 GB/s, each at its link's speed
])
def test_pfs_write_time(tmp_path, nodes, per_node, expected):
    wl = {"nb_res": 96,
          "jobs": [{"id": 1, "subtime": 0, "walltime": -1, "res": nodes, "profile": "w"}],
          "profiles": {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0,
                             "bytes_to_write": per_node, "storage": "pfs"}}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(wl))
    result = engine.simulate(str(bundled_path("dragonfly96")), [str(path)], _writer_scheduler(batsim.BatsimScheduler)(),
                             export_prefix=str(tmp_path / "out"))
    (job,) = result.jobs
    assert job.final_state == "COMPLETED_SUCCESSFULLY"
    latency = 50e-6 + 100e-6  # node link + PFS link
    assert job.finish_time - job.starting_time == pytest.approx(expected + latency, rel=1e-3)
