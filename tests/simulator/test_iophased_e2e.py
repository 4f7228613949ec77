"""The I/O-phased job model on the embedded simulator (seed 001 Fig. 4): phase order, I/O
contention on a burst-buffer node and on the PFS link, walltime ending every phase, folding.

Platform: a one-switch cluster (1250 MB/s node and storage links, 50 us) with a PFS link of
2 GB/s, so one transfer alone is limited by a 1250 MB/s link and two transfers through the
PFS share its 2 GB/s.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mrsched.analysis.jobs import fold_subjobs, read_jobs_csv
from mrsched.platforms.cluster import generate_cluster
from mrsched.schedulers.execution.iophased import number_of_phases, phase_chain
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.engine import simulate

GB = 10**9
LINK = 1.25e9
HOUR = 3600e9   # flops of one compute phase at 1 Gflop/s


@pytest.fixture(scope="module")
def platform(tmp_path_factory) -> str:
    # 8 compute nodes, 2 burst-buffer nodes of 6 GB (a 5 GB job fills one), PFS at 2 GB/s
    path = tmp_path_factory.mktemp("plat") / "io.xml"
    path.write_text(generate_cluster(nodes=8, storage=2, bb_capacity="6GB", pfs_bandwidth="2GBps").xml)
    return str(path)


def run(platform: str, tmp_path, jobs: list[dict], policy: str = "fcfs-bb", cpu: float = 2 * HOUR) -> pd.DataFrame:
    wl = {"nb_res": 8, "jobs": jobs,
          "profiles": {"p": {"type": "parallel_homogeneous", "cpu": cpu, "com": 0}}}
    (tmp_path / "w.json").write_text(json.dumps(wl))
    sched = make_scheduler(policy, {"job_model": "io-phased"})
    simulate(platform, [str(tmp_path / "w.json")], sched, export_prefix=str(tmp_path / "out"), dynamic_jobs=True)
    return read_jobs_csv(tmp_path / "out_jobs.csv")


def job(jid: int, *, subtime: float = 0, res: int = 2, bb: int = 5 * GB, walltime: float = 1e6) -> dict:
    return {"id": jid, "subtime": subtime, "walltime": walltime, "res": res, "profile": "p", "burst_buffer": bb}


def phases(df: pd.DataFrame, parent: str) -> pd.DataFrame:
    ph = df[df.workload_name == "w0-io"].copy()
    ph["parent"] = ph.job_id.str.split(".").str[0]
    ph["k"] = ph.job_id.str.split(".").str[1].astype(int)
    ph["kind"] = ph.job_id.str.split(".").str[2]
    ph = ph[ph.parent == parent].sort_values("k").set_index("kind", append=False)
    ph["duration"] = ph.finish_time - ph.starting_time
    return ph


def test_phase_count_and_chain_follow_the_artifact():
    assert number_of_phases({"type": "parallel_homogeneous", "cpu": 0.2 * HOUR}) == 1
    assert number_of_phases({"type": "parallel_homogeneous", "cpu": 2.4 * HOUR}) == 2
    assert number_of_phases({"type": "parallel_homogeneous", "cpu": 50 * HOUR}) == 10
    assert number_of_phases({"type": "delay", "delay": 3 * 3600}) == 3
    chain = phase_chain((0, 1), {0: {9: 2 * GB}, 1: {10: 3 * GB}}, 11,
                        {"type": "parallel_homogeneous", "cpu": 2 * HOUR, "com": 0})
    # one Batsim job per storage node for transfers; k numbers the jobs in chain order
    assert [[(p.k, p.kind) for p in step] for step in chain] == [
        [(0, "stage_in"), (1, "stage_in")], [(2, "compute")], [(3, "checkpoint"), (4, "checkpoint")],
        [(5, "drain"), (6, "drain")], [(7, "compute")], [(8, "checkpoint"), (9, "checkpoint")],
        [(10, "drain"), (11, "drain")], [(12, "stage_out"), (13, "stage_out")]]
    stage_in, compute, ckpt, drain = chain[:4]
    assert [p.hosts for p in stage_in] == [(9, 11), (10, 11)]
    assert [p.profile["nb_bytes"] for p in stage_in] == [2 * GB, 3 * GB]
    assert stage_in[0].profile["from"] == "pfs" and stage_in[0].storage_mapping == {"pfs": 11, "bb": 9}
    assert compute[0].hosts == (0, 1) and compute[0].profile["cpu"] == HOUR
    # checkpoint: each node writes half its share to its own storage node
    assert [(p.hosts, p.profile["bytes_to_write"], p.storage_mapping) for p in ckpt] == [
        ((0,), 1 * GB, {"bb": 9}), ((1,), 1.5 * GB, {"bb": 10})]
    assert [p.profile["nb_bytes"] for p in drain] == [1 * GB, 1.5 * GB] and drain[0].profile["to"] == "pfs"
    assert sum(p.profile["nb_bytes"] for p in chain[-1]) == 5 * GB


def test_lone_job_runs_its_phases_in_order_with_drains_beside_compute(platform, tmp_path):
    df = run(platform, tmp_path, [job(1)])
    parent = df[df.workload_name == "w0"].iloc[0]
    assert parent.final_state == "REJECTED" and parent.metadata == "io-phased"
    ph = phases(df, "1")
    assert list(ph.index) == ["stage_in", "compute", "checkpoint", "drain", "compute", "checkpoint", "drain",
                              "stage_out"]
    assert (ph.final_state == "COMPLETED_SUCCESSFULLY").all()
    rows = ph.reset_index()
    for a, b in [(0, 1), (1, 2), (2, 4), (4, 5), (5, 7)]:      # sequential chain
        assert rows.starting_time[b] == pytest.approx(rows.finish_time[a], abs=1e-3)
    # a drain starts with the next phase, not after it
    assert rows.starting_time[3] == pytest.approx(rows.starting_time[4], abs=1e-6)
    assert rows.starting_time[6] == pytest.approx(rows.starting_time[7], abs=1e-6)
    # times: 5 GB through one 1250 MB/s storage link, half of it for a checkpoint, 1 h per phase
    assert ph.duration["stage_in"] == pytest.approx(5 * GB / LINK, rel=1e-3)
    assert ph.duration["checkpoint"].tolist() == pytest.approx([2.5 * GB / LINK] * 2, rel=1e-3)
    assert ph.duration["compute"].tolist() == pytest.approx([3600.0] * 2, rel=1e-6)
    # the phases use the job's 2 nodes and the storage node holding its burst buffer
    assert set(ph.allocated_resources["compute"]) == {"0-1"}
    folded = fold_subjobs(df)
    assert len(folded) == 1 and folded.iloc[0].final_state == "COMPLETED_SUCCESSFULLY"
    assert folded.iloc[0].finish_time == pytest.approx(rows.finish_time.max())


def test_checkpoints_slow_down_when_two_jobs_share_a_burst_buffer_node(platform, tmp_path):
    lone = phases(run(platform, tmp_path, [job(1, bb=2 * GB)]), "1")
    both = run(platform, tmp_path, [job(1, bb=2 * GB), job(2, bb=2 * GB)])
    a, b = phases(both, "1"), phases(both, "2")
    # 2 GB + 2 GB fit on the first 6 GB storage node: both jobs checkpoint through its one link
    assert a.allocated_resources["stage_in"] == b.allocated_resources["stage_in"]    # same storage node
    assert a.duration["checkpoint"].iloc[0] == pytest.approx(2 * lone.duration["checkpoint"].iloc[0], rel=1e-3)
    assert a.duration["stage_in"] == pytest.approx(2 * lone.duration["stage_in"], rel=1e-3)
    assert a.finish_time.max() > lone.finish_time.max()


def test_stage_in_slows_down_when_two_jobs_share_the_pfs_link(platform, tmp_path):
    lone = phases(run(platform, tmp_path, [job(1)]), "1")
    both = run(platform, tmp_path, [job(1), job(2)])
    a, b = phases(both, "1"), phases(both, "2")
    # 5 GB each: the jobs land on different storage nodes (6 GB each), so only the PFS is shared
    assert a.allocated_resources["stage_in"] != b.allocated_resources["stage_in"]
    assert lone.duration["stage_in"] == pytest.approx(5 * GB / LINK, rel=1e-3)          # 4 s
    assert a.duration["stage_in"] == pytest.approx(5 * GB / 1e9, rel=1e-3)               # 2 GB/s / 2: 5 s
    assert b.duration["stage_in"] == pytest.approx(a.duration["stage_in"], rel=1e-6)
    # checkpoints go to distinct storage nodes and never touch the PFS: no slowdown
    assert a.duration["checkpoint"].iloc[0] == pytest.approx(lone.duration["checkpoint"].iloc[0], rel=1e-3)


def test_walltime_ends_every_phase_at_once_and_frees_the_job_resources(platform, tmp_path):
    # the checkpoint ends at ~3609 s, then drain and second compute run together; the deadline
    # at 3700 s stops both; job 2 (all 8 nodes) waits for job 1's resources until then
    df = run(platform, tmp_path, [job(1, walltime=3700), job(2, res=8, bb=1 * GB, subtime=10)])
    ph = phases(df, "1")
    assert "stage_out" not in ph.index
    last = ph[ph.finish_time == ph.finish_time.max()]
    assert ph.finish_time.max() == pytest.approx(3700.0, abs=1e-3)
    assert list(last.index) == ["compute"]
    assert ph.loc[["compute"]].final_state.tolist() == ["COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"]
    assert ph.loc[["drain"]].final_state.tolist() == ["COMPLETED_SUCCESSFULLY"]    # 2.5 GB drained in ~2 s
    folded = fold_subjobs(df).set_index("job_id")
    assert folded.final_state["1"] == "COMPLETED_WALLTIME_REACHED"
    assert folded.finish_time["1"] == pytest.approx(3700.0, abs=1e-3)
    assert folded.starting_time["2"] == pytest.approx(3700.0, abs=1e-2)


def test_drain_running_at_the_deadline_ends_with_the_phase(platform, tmp_path):
    # 1 compute phase (cpu 0.3 h -> 1080 s); deadline right after the checkpoint: the drain
    # (2.5 GB, ~2 s) and the stage-out run when the walltime hits
    df = run(platform, tmp_path, [job(1, walltime=4 + 1080 + 2 + 0.5)], cpu=0.3 * HOUR)
    ph = phases(df, "1")
    assert list(ph.index) == ["stage_in", "compute", "checkpoint", "drain", "stage_out"]
    ends = ph.loc[["drain", "stage_out"]]
    assert (ends.final_state == "COMPLETED_WALLTIME_REACHED").all()
    assert ends.finish_time.tolist() == pytest.approx([1086.5, 1086.5], abs=1e-3)


def test_jobs_without_burst_buffer_run_as_one_job(platform, tmp_path):
    df = run(platform, tmp_path, [job(1, bb=0)], cpu=0.5 * HOUR)
    assert list(df.job_id) == ["1"] and df.final_state.iloc[0] == "COMPLETED_SUCCESSFULLY"


def test_io_phased_needs_dynamic_jobs(platform, tmp_path):
    from mrsched.errors import MrschedError

    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 8, "jobs": [job(1)], "profiles": {
        "p": {"type": "parallel_homogeneous", "cpu": HOUR, "com": 0}}}))
    with pytest.raises(MrschedError, match="enable-dynamic-jobs"):
        simulate(platform, [str(tmp_path / "w.json")], make_scheduler("fcfs-bb", {"job_model": "io-phased"}),
                 export_prefix=str(tmp_path / "out"), dynamic_jobs=False)


@pytest.mark.parametrize("policy", ["sjf-bb", "plan-2", "filler", "fcfs-easy"])
def test_every_policy_accepts_the_io_phased_model(platform, tmp_path, policy):
    jobs = [job(k, subtime=10 * k, res=1 + k % 4, bb=(1 + k % 3) * GB) for k in range(1, 9)]
    df = run(platform, tmp_path, jobs, policy=policy, cpu=0.5 * HOUR)
    folded = fold_subjobs(df)
    assert len(folded) == 8 and (folded.final_state == "COMPLETED_SUCCESSFULLY").all()
