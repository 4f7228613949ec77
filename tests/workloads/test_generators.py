"""Synthetic, BBSched S1-S4 and ESP-2 generators: shapes, scaling, determinism, validity."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.errors import WorkloadError
from mrsched.workloads.batsim_json import dumps_workload
from mrsched.workloads.bbsched import REFERENCES, inject_burst_buffer
from mrsched.workloads.check import check_workload
from mrsched.workloads.esp2 import ESP2_TABLE, generate_esp2
from mrsched.workloads.synthetic import generate_synthetic
from workload_fixtures import df96_info, cluster16_info  # noqa: F401 (fixtures)


def test_synthetic_shape_and_validity(cluster16_info):
    wl = generate_synthetic(jobs=300, platform=cluster16_info, seed=1)
    jobs = wl["jobs"]
    assert len(jobs) == 300 and wl["nb_res"] == 16
    assert jobs[0]["subtime"] == 0
    sub = np.array([j["subtime"] for j in jobs])
    assert np.all(np.diff(sub) >= 0)
    assert np.mean(np.diff(sub)) == pytest.approx(120, rel=0.15)  # Poisson arrivals, mean 120 s
    res = np.array([j["res"] for j in jobs])
    assert res.min() >= 1 and res.max() <= 16 and np.sum(res == 1) > np.sum(res == 16)
    assert all(j["walltime"] >= j["run_time"] and j["walltime"] % 60 == 0 for j in jobs)
    assert all(60 <= j["run_time"] <= 3600 for j in jobs)
    assert all(j["burst_buffer"] == j["bb_per_node"] * j["res"] for j in jobs)
    assert check_workload(wl, platform=cluster16_info) == []


def test_synthetic_is_deterministic():
    a = dumps_workload(generate_synthetic(jobs=40, nodes=8, seed=5, model="compute"))
    assert a == dumps_workload(generate_synthetic(jobs=40, nodes=8, seed=5, model="compute"))
    assert a != dumps_workload(generate_synthetic(jobs=40, nodes=8, seed=6, model="compute"))


def test_synthetic_errors():
    with pytest.raises(WorkloadError, match="machine size"):
        generate_synthetic(jobs=5)
    with pytest.raises(WorkloadError, match="storage"):
        generate_synthetic(jobs=5, nodes=4, model="burst-buffer")
    with pytest.raises(WorkloadError, match="min_nodes"):
        generate_synthetic(jobs=5, nodes=4, min_nodes=9, model="delay")


@pytest.mark.parametrize("knob,value,says", [
    ("jobs", 0, "'jobs' must be at least 1, got 0"),
    ("mean_interarrival", float("nan"), "'mean_interarrival' must be a positive number, got nan"),
    ("mean_interarrival", float("inf"), "'mean_interarrival' must be a positive number, got inf"),
    ("max_runtime", float("inf"), "'max_runtime' must be finite, got inf"),
    ("min_runtime", float("nan"), "'min_runtime' must be in (0, max_runtime=3600.0], got nan"),
    ("walltime_factor", 0.5, "'walltime_factor' must be a number >= 1, got 0.5"),
])
def test_synthetic_refuses_out_of_range_knobs_by_name(knob, value, says):
    """A knob out of range (NaN and infinity included) is named with its rule and value."""
    kwargs = {"jobs": 5, "nodes": 4, "model": "delay", knob: value}
    with pytest.raises(WorkloadError) as err:
        generate_synthetic(**kwargs)
    assert says in str(err.value) and err.value.field == knob


@pytest.mark.parametrize("scenario,fraction,threshold", [("S1", 0.5, 5e12), ("S2", 0.75, 5e12),
                                                          ("S3", 0.5, 20e12), ("S4", 0.75, 20e12)])
def test_bbsched_scenarios(df96_info, scenario, fraction, threshold):
    base = generate_synthetic(jobs=400, platform=df96_info, seed=0, model="compute")
    wl = inject_burst_buffer(base, platform=df96_info, scenario=scenario, seed=4)
    requested = [j for j in wl["jobs"] if j["burst_buffer"] > 0]
    assert len(requested) == round(fraction * 400)
    scale = 480e9 / REFERENCES["theta"].capacity
    low, high = threshold * scale, REFERENCES["theta"].largest_request * scale
    for j in requested:
        assert j["burst_buffer"] == j["bb_per_node"] * j["res"]
        assert j["bb_per_node"] <= 40e9
        # placement caps may only lower a size; uncapped ones lie in the scaled range
        assert j["burst_buffer"] <= high + j["res"]
        if j["res"] * 40e9 >= high:
            assert j["burst_buffer"] >= low
    assert check_workload(wl, platform=df96_info) == []
    assert "bb_per_node" not in base["jobs"][0]  # the input is not modified
    again = inject_burst_buffer(base, platform=df96_info, scenario=scenario, seed=4)
    assert dumps_workload(again) == dumps_workload(wl)


def test_bbsched_s3_requests_more_than_s1(df96_info):
    base = generate_synthetic(jobs=400, platform=df96_info, seed=0, model="compute")
    s1 = inject_burst_buffer(base, platform=df96_info, scenario="S1", seed=1)
    s3 = inject_burst_buffer(base, platform=df96_info, scenario="S3", seed=1)
    total = lambda wl: sum(j["burst_buffer"] for j in wl["jobs"])  # noqa: E731
    assert total(s3) > total(s1)


def test_bbsched_errors(df96_info, cluster16_info):
    base = generate_synthetic(jobs=10, nodes=16, seed=0, model="compute")
    with pytest.raises(WorkloadError, match="unknown scenario 's1'.*valid: S1, S2, S3, S4"):
        inject_burst_buffer(base, platform=df96_info, scenario="s1")
    with pytest.raises(WorkloadError, match="reference"):
        inject_burst_buffer(base, platform=df96_info, reference="summit")
    with pytest.raises(WorkloadError, match="fraction"):
        inject_burst_buffer(base, platform=df96_info, fraction=1.5)


def test_esp2_table_11():
    wl = generate_esp2(seed=0)
    jobs = wl["jobs"]
    assert len(jobs) == 230 == sum(c for _, c, _ in ESP2_TABLE.values())
    assert wl["nb_res"] == 1024
    counts = {t: sum(j["esp_type"] == t for j in jobs) for t in ESP2_TABLE}
    assert counts == {t: c for t, (_, c, _) in ESP2_TABLE.items()}
    a = next(j for j in jobs if j["esp_type"] == "A")
    assert a["cores"] == 256 and a["res"] == 32 and a["run_time"] == 257  # 0.03125 x 8192 cores
    z = [j for j in jobs if j["esp_type"] == "Z"]
    assert all(j["res"] == 1024 for j in z)
    assert sum(j["subtime"] == 0 for j in jobs) == 50
    others = max(j["subtime"] for j in jobs if j["esp_type"] != "Z")
    assert z[0]["subtime"] >= max(80 * 60, others) and z[1]["subtime"] == 240 * 60
    gaps = np.diff(sorted(j["subtime"] for j in jobs if j["esp_type"] != "Z" and j["subtime"] > 0))
    assert np.mean(gaps) == pytest.approx(30, rel=0.15)
    # seed 002: "the sum of the completion times" = 10984 s, the machine-fraction-weighted sum
    assert sum(j["cores"] / 8192 * j["run_time"] for j in jobs) == pytest.approx(10984, rel=0.005)
    assert check_workload(wl) == []


def test_esp2_gpu_copies():
    wl = generate_esp2(seed=0, gpu_copies=True, nodes=64, cores_per_node=8)
    jobs = wl["jobs"]
    assert len(jobs) == 458
    assert sum(j["gpus_per_node"] == 2 for j in jobs) == 228
    assert sum(j["cores"] / 512 * j["run_time"] for j in jobs) == pytest.approx(21822, rel=0.01)  # seed 002
    z = [j for j in jobs if j["esp_type"] == "Z"]
    assert z[1]["subtime"] == 480 * 60  # Z times doubled
    assert dumps_workload(wl) == dumps_workload(generate_esp2(seed=0, gpu_copies=True, nodes=64, cores_per_node=8))


def test_workload_text_is_the_same_streamed_or_whole(tmp_path):
    from mrsched.workloads.batsim_json import dumps_workload, iter_workload_text, write_workload

    assert dumps_workload({"nb_res": 1, "jobs": [], "profiles": {}}) == \
        '{\n "nb_res": 1,\n "jobs": [],\n "profiles": {}\n}\n'
    wl = {"name": "x", "nb_res": 2.0, "jobs": [{"id": 1, "res": np.int64(2), "subtime": 1.5, "profile": "p"}],
          "profiles": {"p": {"type": "delay", "delay": 3.0}}}
    text = ('{\n "name": "x",\n "nb_res": 2,\n "jobs": [\n  {"id": 1, "res": 2, "subtime": 1.5, "profile": "p"}\n ],\n'
            ' "profiles": {\n  "p": {"type": "delay", "delay": 3}\n }\n}\n')
    assert dumps_workload(wl) == text
    assert "".join(iter_workload_text([("name", "x"), ("nb_res", 2), ("jobs", iter(wl["jobs"])),
                                       ("profiles", iter(wl["profiles"].items()))])) == text
    assert write_workload(tmp_path / "w.json", wl).read_text() == text
    wl["profiles"]["p"]["delay"] = float("nan")
    with pytest.raises(Exception, match="non-finite"):
        write_workload(tmp_path / "bad.json", wl)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.json"]
