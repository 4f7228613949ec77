"""SWF -> Batsim workload: mapping, profile models, splitting, determinism, seed 001's trace."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from mrsched.errors import WorkloadError
from mrsched.workloads.batsim_json import dumps_workload
from mrsched.workloads.burst_buffer import LogNormalBurstBuffer
from mrsched.workloads.check import check_workload
from mrsched.workloads.convert import convert_swf, parse_part, part_mask
from mrsched.workloads.swf import read_swf
from workload_fixtures import small_swf, kth_swf, df96_info, cluster16_info  # noqa: F401 (fixtures)


def test_delay_model_mapping(small_swf):
    conv = convert_swf(small_swf)  # machine size from the MaxNodes header
    wl = conv.workload
    assert wl["nb_res"] == 8
    assert [j["id"] for j in wl["jobs"]] == [1, 2, 7, 8]
    assert [j["subtime"] for j in wl["jobs"]] == [0, 60, 900, 1900]  # shifted to start at 0
    assert [j["walltime"] for j in wl["jobs"]] == [60, 900, 300, 7200]  # requested time
    assert [j["res"] for j in wl["jobs"]] == [2, 4, 1, 3]  # requested processors
    assert [j["run_time"] for j in wl["jobs"]] == [50, 600, 200, 7200]
    assert wl["profiles"]["2"] == {"type": "delay", "delay": 600}
    assert check_workload(wl) == []


def test_compute_model_uses_host_speed(small_swf, cluster16_info):
    wl = convert_swf(small_swf, platform=cluster16_info, model="compute").workload
    assert wl["nb_res"] == 16
    assert [j["id"] for j in wl["jobs"]] == [1, 2, 5, 7, 8]  # 16 procs fit 16 nodes now
    assert wl["profiles"]["5"] == {"type": "parallel_homogeneous", "cpu": 4000 * 10**9, "com": 0}


def test_oversize_cap_keeps_wide_jobs_at_machine_size(small_swf):
    conv = convert_swf(small_swf, nodes=8, oversize="cap")
    job5 = next(j for j in conv.workload["jobs"] if j["id"] == 5)
    assert job5["res"] == 8 and conv.report.capped == 1


def test_burst_buffer_model_fields_and_compute_shrink(small_swf, cluster16_info):
    wl = convert_swf(small_swf, platform=cluster16_info, model="burst-buffer", variant="io-phased",
                     seed=3).workload
    jobs = {j["id"]: j for j in wl["jobs"]}
    assert jobs[1]["bb_per_node"] == 10 * 10**6  # walltime 60 <= 120 s: 10 MB
    assert wl["profiles"]["1"]["cpu"] == 50 * 10**9  # short jobs keep their compute
    for jid in (2, 5, 7, 8):
        j = jobs[jid]
        assert 100 * 10**6 <= j["bb_per_node"] <= 40 * 10**9
        assert j["burst_buffer"] == j["bb_per_node"] * j["res"]
        expected = round(1e9 * max(j["run_time"] - 40 * j["bb_per_node"] / 1.25e9, 0.05 * j["run_time"]))
        assert wl["profiles"][str(jid)]["cpu"] == expected
    assert wl["profiles"]["8"]["cpu"] < 7200 * 10**9
    alloc = convert_swf(small_swf, platform=cluster16_info, model="burst-buffer", seed=3).workload
    assert alloc["profiles"]["8"]["cpu"] == 7200 * 10**9  # alloc-only (the default): full run time
    assert alloc["generator"]["variant"] == "alloc-only"
    assert [j["bb_per_node"] for j in alloc["jobs"]] == [j["bb_per_node"] for j in wl["jobs"]]


def test_burst_buffer_model_needs_storage(small_swf):
    with pytest.raises(WorkloadError, match="storage"):
        convert_swf(small_swf, model="burst-buffer")
    with pytest.raises(WorkloadError, match="unknown profile model 'bb'"):
        convert_swf(small_swf, model="bb")


def test_jobs_and_parts(small_swf):
    assert [j["id"] for j in convert_swf(small_swf, jobs=2).workload["jobs"]] == [1, 2]
    # kept submits 100, 160, 1000, 2000: two equal windows split at 1050
    first = convert_swf(small_swf, part="1/2").workload["jobs"]
    second = convert_swf(small_swf, part=(2, 2)).workload["jobs"]
    assert [j["id"] for j in first] == [1, 2, 7] and [j["id"] for j in second] == [8]
    assert second[0]["subtime"] == 0
    with pytest.raises(WorkloadError, match="part 3/2 does not exist"):
        parse_part("3/2")
    with pytest.raises(WorkloadError, match="cannot read part"):
        parse_part("first")
    with pytest.raises(WorkloadError, match="no job left"):
        convert_swf(small_swf, part="2/2", part_length=100)


def test_part_mask_partitions_every_job():
    submit = np.array([0, 5, 10, 10, 30, 99, 100], dtype=float)
    masks = [part_mask(submit, (i, 4)) for i in range(1, 5)]
    assert np.array_equal(np.sum(masks, axis=0), np.ones(len(submit)))
    fixed = [part_mask(submit, (i, 2), part_length=50) for i in (1, 2)]
    assert fixed[0].tolist() == [True, True, True, True, True, False, False]
    assert fixed[1].tolist() == [False] * 5 + [True, False]  # 100 is past the last window


def test_lognormal_sampler_matches_scipy_distribution():
    model = LogNormalBurstBuffer()
    draws = np.sort(model.draw_kib(200_000, np.random.default_rng(7)))
    dist = stats.lognorm(s=model.s, loc=model.loc, scale=model.scale)
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert np.quantile(draws, q) == pytest.approx(dist.ppf(q), rel=0.02)
    assert model.mean_bytes() * 96 == pytest.approx(480e9, rel=0.02)  # seed 001 sizing: 12 x 40 GB


# --- seed 001's workload from the real trace --------------------------------------------

@pytest.fixture(scope="module")
def kth(kth_swf, df96_info):
    trace = read_swf(kth_swf)
    return trace, convert_swf(trace, platform=df96_info, model="burst-buffer", seed=2021)


def test_kth_job_count_and_preserved_fields(kth):
    trace, conv = kth
    jobs = conv.workload["jobs"]
    assert len(jobs) == 28453  # the paper's count (see test_swf for the reasons)
    assert conv.workload["nb_res"] == 96
    by_id = {int(r[0]): r for r in trace.data}
    t0 = by_id[jobs[0]["id"]][1]
    for j in jobs[::97]:
        rec = by_id[j["id"]]
        assert j["subtime"] == rec[1] - t0
        assert j["walltime"] == rec[8] and j["res"] == rec[7] and j["run_time"] == rec[3]
    assert jobs[0]["subtime"] == 0
    assert all(a["subtime"] <= b["subtime"] for a, b in zip(jobs, jobs[1:]))


def test_kth_burst_buffer_shape(kth):
    _, conv = kth
    jobs = conv.workload["jobs"]
    long_small = np.array([j["bb_per_node"] for j in jobs if j["walltime"] > 120 and j["res"] <= 12])
    dist = stats.lognorm(s=1.0972516604048774, loc=-150361.59523836235, scale=2714115.5724594607)
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):  # clipping at 100 MB / 40 GB is outside these quantiles
        assert np.quantile(long_small, q) == pytest.approx(dist.ppf(q) * 1024, rel=0.05)
    short = [j["bb_per_node"] for j in jobs if j["walltime"] <= 120]
    assert short and set(short) == {10 * 10**6}
    per_node = np.array([j["bb_per_node"] for j in jobs])
    assert per_node.min() >= 10 * 10**6 and per_node.max() <= 40 * 10**9
    # every job fits the empty machine: per node on one storage node, whole job on all twelve
    assert all(j["burst_buffer"] <= 12 * 40 * 10**9 for j in jobs)
    assert all(j["res"] <= (40 * 10**9 // j["bb_per_node"]) * 12 for j in jobs)


def test_kth_conversion_is_deterministic(kth, kth_swf, df96_info):
    trace, conv = kth
    again = convert_swf(trace, platform=df96_info, model="burst-buffer", seed=2021)
    assert dumps_workload(again.workload) == dumps_workload(conv.workload)
    other = convert_swf(trace, platform=df96_info, model="burst-buffer", seed=2022)
    assert [j["bb_per_node"] for j in other.workload["jobs"][:50]] != \
           [j["bb_per_node"] for j in conv.workload["jobs"][:50]]


def test_kth_sixteen_parts_partition_the_trace_with_the_same_sizes(kth, df96_info):
    trace, conv = kth
    whole = {j["id"]: j for j in conv.workload["jobs"]}
    seen = []
    for i in range(1, 17):
        part = convert_swf(trace, platform=df96_info, model="burst-buffer", seed=2021, part=(i, 16)).workload
        ids = [j["id"] for j in part["jobs"]]
        seen += ids
        assert part["jobs"][0]["subtime"] == 0
        span = part["jobs"][-1]["subtime"]
        assert span < 21 * 86400  # about three weeks each (333 days / 16)
        assert all(j["bb_per_node"] == whole[j["id"]]["bb_per_node"] for j in part["jobs"][::50])
    assert sorted(seen) == sorted(whole)  # non-overlapping and complete


def test_kth_matches_the_artifacts_compute_rule(shared_dir):
    """The artifact's cpu values follow our documented rule, given its own burst-buffer sizes."""
    art = json.loads((shared_dir / "data" / "europar2021" / "KTH-SP2-1996-2.1-cln-io-aware-1000.json").read_text())
    trace = read_swf(shared_dir / "data" / "KTH-SP2-1996-2.1-cln.swf")
    run = {int(r[0]): r[3] for r in trace.data}
    checked = 0
    for job in art["jobs"]:
        prof = art["profiles"][job["profile"]]
        r = run[job["id"]]
        if job["walltime"] <= 120:
            assert prof["cpu"] == r * 1e9 and abs(prof["bb"] - 10**7) < 1000
        else:
            assert prof["cpu"] == pytest.approx(1e9 * max(r - 40 * prof["bb"] / 1.25e9, 0.05 * r), abs=2e3)
            assert 10**8 - 1000 <= prof["bb"] <= 40 * 10**9
            checked += 1
    assert checked > 500


def test_kth_sizes_follow_the_artifacts_distribution(kth, shared_dir):
    """Our per-node sizes and the artifact's (1000 jobs, other RNG) come from one distribution."""
    art = json.loads((shared_dir / "data" / "europar2021" / "KTH-SP2-1996-2.1-cln-io-aware-1000.json").read_text())
    theirs = [art["profiles"][j["profile"]]["bb"] for j in art["jobs"] if j["walltime"] > 120 and j["res"] <= 12]
    ours = [j["bb_per_node"] for j in kth[1].workload["jobs"] if j["walltime"] > 120 and j["res"] <= 12]
    assert len(theirs) > 400
    assert stats.ks_2samp(theirs, ours).pvalue > 0.01
    assert np.median(theirs) == pytest.approx(np.median(ours), rel=0.15)


def test_first_1000_jobs_match_the_artifacts_jobs(kth, shared_dir):
    """Same jobs, walltimes and sizes as the artifact's 1000-job file; its subtimes start at 1."""
    art = json.loads((shared_dir / "data" / "europar2021" / "KTH-SP2-1996-2.1-cln-io-aware-1000.json").read_text())
    ours = kth[1].workload["jobs"][:1000]
    assert [j["id"] for j in ours] == [j["id"] for j in art["jobs"]]
    assert [(j["subtime"] + 1, j["walltime"], j["res"]) for j in ours] == \
           [(j["subtime"], j["walltime"], j["res"]) for j in art["jobs"]]


# --- streaming: a conversion is written job by job, same bytes as from the dict -----------------

def test_written_workload_streams_the_same_bytes(tmp_path, kth, df96_info):
    trace, _ = kth
    conv = convert_swf(trace, platform=df96_info, model="burst-buffer", seed=3, jobs=3000)
    path = conv.write(tmp_path / "w.json", platform=df96_info, check_every=700)
    assert conv._workload is None  # written without building the dict
    assert path.read_text() == dumps_workload(conv.workload)
    assert not list(tmp_path.glob("*.tmp"))


def test_a_generated_job_failing_its_check_is_never_written(tmp_path, small_swf):
    conv = convert_swf(small_swf)
    conv.columns.res[-1] = 9  # a converter bug: wider than the 8-node machine
    with pytest.raises(WorkloadError, match="generated workload fails its check: .*job 8, field 'res'"):
        conv.write(tmp_path / "w.json", check_every=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.swf"]  # neither the file nor its temporary


def test_writing_holds_one_chunk_of_jobs_not_the_workload(tmp_path):
    import tracemalloc

    rows = "\n".join(f"{k} {10 * k} 0 {100 + k % 50} 8 -1 -1 8 {200 + k % 50} -1 1 1 1 -1 -1 -1 -1 -1"
                     for k in range(1, 4001))
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 16\n; MaxProcs: 128\n" + rows + "\n")
    conv = convert_swf(path)
    import mrsched.workloads.check  # noqa: F401  (imported before tracing: count data, not code)
    tracemalloc.start()
    conv.write(tmp_path / "stream.json", check_every=200)
    streamed = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    from mrsched.workloads.batsim_json import write_workload
    write_workload(tmp_path / "dict.json", conv.workload)
    whole = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (tmp_path / "stream.json").read_bytes() == (tmp_path / "dict.json").read_bytes()
    assert streamed * 5 < whole  # measured: 0.18 MB against 2.7 MB for 4,000 jobs
