"""MultiSched's five-resource workload (seed 003) and the trace input of `workload bbsched`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from workload_fixtures import small_swf, kth_swf, df96_info, cluster16_info  # noqa: F401 (fixtures)

from mrsched.cli import main as cli_main
from mrsched.errors import ConfigError, WorkloadError
from mrsched.workloads.batsim_json import dumps_workload
from mrsched.workloads.check import check_workload
from mrsched.workloads.multires import RESOURCES, counters_option, generate_multires

NAMES = [r.name for r in RESOURCES]


def test_five_resources_with_capacities_scaled_to_the_machine(df96_info):
    wl = generate_multires(platform=df96_info, jobs=400, seed=3)
    assert check_workload(wl, platform=df96_info) == []
    assert list(wl["counters"]) == NAMES and len(NAMES) == 5
    assert wl["counters"] == {"memory": 96 * 256, "local_ssd": 96 * 1600, "io_bandwidth": 96 * 1000,
                              "licences": 48, "power": 96 * 400}
    demand = np.array([[job[n] for n in NAMES] for job in wl["jobs"]])
    caps = np.array([wl["counters"][n] for n in NAMES])
    assert (demand >= 0).all() and (demand <= caps).all()
    asked = demand > 0
    # each resource requested by about half the jobs (binomial, 400 draws)
    assert np.all(np.abs(asked.mean(axis=0) - 0.5) < 0.1)
    # a requesting job asks in proportion to its node count: wider jobs ask more on average
    res = np.array([job["res"] for job in wl["jobs"]])
    mem = demand[:, 0]
    wide, narrow = (res >= 8) & asked[:, 0], (res <= 2) & asked[:, 0]
    assert mem[wide].mean() > 3 * mem[narrow].mean()


def test_same_seed_same_bytes_other_seed_other_demands(cluster16_info):
    a = dumps_workload(generate_multires(platform=cluster16_info, jobs=50, seed=1))
    b = dumps_workload(generate_multires(platform=cluster16_info, jobs=50, seed=1))
    c = dumps_workload(generate_multires(platform=cluster16_info, jobs=50, seed=2))
    assert a == b and a != c


def test_transforms_a_given_workload_without_changing_its_jobs(cluster16_info):
    from mrsched.workloads.synthetic import generate_synthetic

    base = generate_synthetic(jobs=30, platform=cluster16_info, seed=5, model="delay")
    wl = generate_multires(base, platform=cluster16_info, seed=0, fraction=1.0)
    assert [j["subtime"] for j in wl["jobs"]] == [j["subtime"] for j in base["jobs"]]
    assert all(j[n] > 0 for j in wl["jobs"] for n in NAMES)      # fraction 1: every job asks
    assert "memory" not in base["jobs"][0]                       # the input is not modified
    with pytest.raises(WorkloadError) as exc:                    # applying twice is refused
        generate_multires(wl, platform=cluster16_info)
    assert exc.value.field == "memory"


@pytest.mark.parametrize("kwargs, field", [({"fraction": 1.5}, "fraction"), ({"intensity": 0.0}, "intensity"),
                                           ({"platform": None}, "nodes")])
def test_bad_parameters_name_the_field(cluster16_info, kwargs, field):
    args = {"platform": cluster16_info, "jobs": 5, **kwargs}
    with pytest.raises(WorkloadError) as exc:
        generate_multires(**args)
    assert exc.value.field == field


def test_counters_option_round_trips_through_the_policy_knob():
    from mrsched.schedulers.policies.window import parse_counters

    caps = {"memory": 24576, "licences": 48}
    assert counters_option(caps) == "memory=24576,licences=48"
    assert parse_counters(counters_option(caps)) == {"memory": 24576.0, "licences": 48.0}


def test_cli_multires_writes_a_checked_file_and_prints_the_option(tmp_path, capsys):
    from mrsched.platforms.bundled import bundled_path

    out = tmp_path / "mr.json"
    plat = str(bundled_path("cluster16.xml"))
    assert cli_main(["workload", "multires", "--platform", plat, "--jobs", "40", "--seed", "4",
                     "-o", str(out)]) == 0
    text = capsys.readouterr().out
    wl = json.loads(out.read_text())
    assert f"counters={counters_option(wl['counters'])}" in text
    assert len(wl["jobs"]) == 40
    assert cli_main(["workload", "check", str(out), "--platform", plat]) == 0


def test_cli_bbsched_and_multires_take_an_swf_trace(tmp_path, small_swf):
    from mrsched.platforms.bundled import bundled_path

    plat = str(bundled_path("cluster16.xml"))
    s2 = tmp_path / "s2.json"
    assert cli_main(["workload", "bbsched", "--trace", str(small_swf), "--platform", plat, "--scenario", "S2",
                     "--jobs", "4", "--seed", "1", "-o", str(s2)]) == 0
    jobs = json.loads(s2.read_text())["jobs"]
    assert len(jobs) == 4 and sum(1 for j in jobs if j["burst_buffer"] > 0) == 3   # 75 % of 4
    mr = tmp_path / "mr.json"
    assert cli_main(["workload", "multires", "--trace", str(small_swf), "--platform", plat, "-o", str(mr)]) == 0
    assert [j["subtime"] for j in json.loads(mr.read_text())["jobs"]][:2] == [0, 60]


def test_cli_refuses_ambiguous_or_missing_inputs(tmp_path, small_swf):
    from mrsched.cli import build_parser
    from mrsched.platforms.bundled import bundled_path

    plat = str(bundled_path("cluster16.xml"))
    parser = build_parser()
    args = parser.parse_args(["workload", "bbsched", "--platform", plat, "-o", str(tmp_path / "x.json")])
    with pytest.raises(ConfigError, match="missing input"):
        args._run(args)
    args = parser.parse_args(["workload", "bbsched", "w.json", "--trace", str(small_swf), "--platform", plat,
                              "-o", str(tmp_path / "x.json")])
    with pytest.raises(ConfigError, match="not both"):
        args._run(args)


def test_kth_slice_s1_to_s4_and_multires(kth_swf, df96_info, tmp_path):
    """The campaign's inputs: 2,000 KTH-SP2 jobs on the 96-node Dragonfly."""
    from mrsched.platforms.bundled import bundled_path

    plat = str(bundled_path("dragonfly96.xml"))
    for scenario, share in (("S1", 0.5), ("S4", 0.75)):
        out = tmp_path / f"{scenario}.json"
        assert cli_main(["workload", "bbsched", "--trace", str(kth_swf), "--jobs", "2000", "--platform", plat,
                         "--scenario", scenario, "-o", str(out)]) == 0
        jobs = json.loads(out.read_text())["jobs"]
        assert len(jobs) == 2000
        assert sum(j["burst_buffer"] > 0 for j in jobs) == round(share * 2000)
        assert max(j["res"] for j in jobs) <= 96
