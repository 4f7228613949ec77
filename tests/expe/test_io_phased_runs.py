"""`job_model=io-phased` runs end to end through `mrsched run`: the engines are started with
dynamic jobs (the phases are Batsim dynamic jobs), on the embedded engine and on a Batsim
command over ZeroMQ alike, with the same schedule."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mrsched.expe.runner import execute_run
from mrsched.expe.spec import RunSpec
from mrsched.platforms.cluster import generate_cluster
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.platform_info import read_platform_info
from mrsched.workloads.synthetic import generate_synthetic


def write_bb_inputs(tmp_path: Path, *, jobs: int, seed: int, mean_interarrival: float,
                    max_runtime: float) -> dict[str, Path]:
    """An 8-node cluster with two burst-buffer storage nodes and an I/O-phased synthetic workload."""
    platform = tmp_path / "platform.xml"
    platform.write_text(generate_cluster(nodes=8, storage=2, bb_capacity="20GB").xml)
    wl = generate_synthetic(jobs=jobs, platform=read_platform_info(platform), seed=seed,
                            mean_interarrival=mean_interarrival, max_runtime=max_runtime,
                            model="burst-buffer", variant="io-phased")
    workload = tmp_path / "workload.json"
    write_workload(workload, wl)
    return {"platform": platform, "workload": workload}


@pytest.fixture()
def bb_inputs(tmp_path: Path) -> dict[str, Path]:
    return write_bb_inputs(tmp_path, jobs=8, seed=2, mean_interarrival=30.0, max_runtime=600.0)


def rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "out_jobs.csv") as fh:
        return list(csv.DictReader(fh))


def spec(inputs, out: Path, **kw) -> RunSpec:
    return RunSpec(run_id=out.name, out_dir=str(out), platform=str(inputs["platform"]),
                   workload=str(inputs["workload"]), policy="sjf-bb",
                   options={"job_model": "io-phased"}, timeout=120, **kw)


def test_spec_asks_for_dynamic_jobs_only_for_the_phased_model(tmp_path):
    phased = RunSpec(run_id="a", out_dir=str(tmp_path), platform="p", workload="w",
                     policy="fcfs", options={"job_model": "io-phased"})
    plain = RunSpec(run_id="b", out_dir=str(tmp_path), platform="p", workload="w", policy="fcfs")
    assert phased.batsim_flags() == ["--enable-dynamic-jobs"]
    assert plain.batsim_flags() == [] and not plain.dynamic_jobs


def test_io_phased_run_on_both_engines(tmp_path, bb_inputs, engine_env):
    embedded = tmp_path / "emb"
    manifest = execute_run(spec(bb_inputs, embedded))
    assert manifest["status"] == "ok", manifest["error"]
    jobs = rows(embedded)
    phases = [r for r in jobs if r["workload_name"].endswith("-io")]
    parents = [r for r in jobs if not r["workload_name"].endswith("-io")]
    assert len(parents) == 8 and phases, "the phases run as dynamic jobs"
    assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in phases)

    over_zmq = tmp_path / "bat"
    manifest = execute_run(spec(bb_inputs, over_zmq, engine="batsim", batsim=engine_env["batsim"]))
    assert manifest["status"] == "ok", manifest["error"]
    assert "--enable-dynamic-jobs" in manifest["engine_commands"][1]
    key = lambda r: (r["job_id"], r["starting_time"], r["finish_time"], r["allocated_resources"])
    assert sorted(map(key, rows(over_zmq))) == sorted(map(key, jobs))


def test_the_same_io_phased_campaign_twice_gives_identical_jobs_csv(tmp_path, engine_env):
    """Determinism (seed 001 reproduction): every run in its own process (its own string-hash
    seed), plan search included, writes the same bytes twice."""
    from mrsched.expe.launch import run_campaign

    inputs = write_bb_inputs(tmp_path, jobs=30, seed=5, mean_interarrival=20.0, max_runtime=900.0)
    platform, workload = inputs["platform"], inputs["workload"]
    outputs = []
    for name in ("first", "second"):
        camp = tmp_path / f"{name}.yaml"
        camp.write_text(f"""
name: {name}
timeout: 120
parallelism: 2
platforms: [{platform}]
workloads: [{workload}]
policies:
  - {{policy: sjf-bb, options: {{job_model: io-phased}}}}
  - {{policy: plan-2, options: {{job_model: io-phased}}}}
""")
        summary = run_campaign(camp, progress=False, report=False)
        assert summary.ok == 2, summary.failed
        runs = sorted((summary.campaign_dir / "runs").iterdir())
        outputs.append({d.name: (d / "out_jobs.csv").read_bytes() for d in runs})
    assert outputs[0].keys() == outputs[1].keys() and len(outputs[0]) == 2
    for run, data in outputs[0].items():
        assert data == outputs[1][run], f"{run}: _jobs.csv differs between two identical campaigns"
        assert data.count(b"\n") > 30   # the phases are rows too
