"""Generated platform + generated workload through the embedded engine."""

from __future__ import annotations

import pytest

from mrsched.platforms.bundled import bundled_path
from mrsched.schedulers import registry
from mrsched.simulator import engine
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.synthetic import generate_synthetic
from workload_fixtures import df96_info, cluster16_info  # noqa: F401 (fixtures)


@pytest.mark.parametrize("platform", ["dragonfly96", "cluster16"])
def test_synthetic_workload_runs_on_generated_platform(tmp_path, platform, df96_info, cluster16_info):
    info = df96_info if platform == "dragonfly96" else cluster16_info
    wl = generate_synthetic(jobs=25, platform=info, seed=3, model="burst-buffer", variant="alloc-only")
    path = write_workload(tmp_path / "w.json", wl)
    result = engine.simulate(str(bundled_path(platform)), [str(path)], registry.make_scheduler("fcfs-bb", {}),
                             export_prefix=str(tmp_path / "out"))
    runs = {str(j["id"]): j["run_time"] for j in wl["jobs"]}
    assert len(result.jobs) == 25
    for rec in result.jobs:
        assert rec.final_state == "COMPLETED_SUCCESSFULLY"
        # compute profile at the host speed, no communication: execution time = the run time
        assert rec.finish_time - rec.starting_time == pytest.approx(runs[rec.local_id], abs=1e-6)
