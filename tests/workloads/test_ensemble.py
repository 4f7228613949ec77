"""Ensemble workloads (seed 004 Ch. 5): ``generate_ensemble`` and ``mrsched workload ensemble``."""

from __future__ import annotations

import json

import pytest

from mrsched.cli import main as cli_main
from mrsched.errors import ConfigError
from mrsched.workloads.check import check_workload
from mrsched.workloads.ensemble import UQ_BOUNDS, generate_ensemble


def test_zero_length_jobs_are_written_as_batsim_accepts_them():
    wl = generate_ensemble(jobs=131072, cores=1, runtime=0)
    assert len(wl["jobs"]) == 131072 and wl["nb_res"] == 1
    # Batsim 4.2.1 refuses delay 0; a parallel_homogeneous profile of no work is accepted
    assert wl["profiles"] == {"zero": {"type": "parallel_homogeneous", "cpu": 0, "com": 0}}
    assert {j["subtime"] for j in wl["jobs"]} == {0.0} and {j["res"] for j in wl["jobs"]} == {1}
    assert check_workload(generate_ensemble(jobs=10, nb_res=4)) == []


def test_variable_sizes_and_durations_are_drawn_in_their_ranges():
    wl = generate_ensemble(jobs=500, cores="1-8", runtime="10-100", nb_res=36, seed=5)
    sizes = [j["res"] for j in wl["jobs"]]
    runs = [j["run_time"] for j in wl["jobs"]]
    assert min(sizes) == 1 and max(sizes) == 8
    assert 10 <= min(runs) and max(runs) <= 100 and all(r == int(r) for r in runs)   # 1 s resolution
    for j in wl["jobs"]:
        assert wl["profiles"][j["profile"]] == {"type": "delay", "delay": j["run_time"]}
        assert j["walltime"] == max(60.0, 2 * j["run_time"])
    assert generate_ensemble(jobs=500, cores="1-8", runtime="10-100", nb_res=36, seed=5) == wl
    assert check_workload(wl) == []


def test_uq_ensemble_is_single_core_with_bounded_durations():
    wl = generate_ensemble(jobs=2000, kind="uq", seed=1)
    runs = [j["run_time"] for j in wl["jobs"]]
    assert {j["res"] for j in wl["jobs"]} == {1}
    assert UQ_BOUNDS[0] <= min(runs) and max(runs) <= UQ_BOUNDS[1]
    assert 4.0 <= sorted(runs)[1000] <= 6.0   # median 5 s


@pytest.mark.parametrize("kwargs,message", [
    ({"jobs": 0}, "--jobs must be a whole number >= 1, got 0"),
    ({"jobs": 2, "cores": "0-2"}, "--cores: '0-2' must be whole numbers >= 1"),
    ({"jobs": 2, "cores": "1.5"}, "--cores: '1.5' must be whole numbers >= 1"),
    ({"jobs": 2, "runtime": "9-3"}, "--runtime: '9-3' must be finite, >= 0, LOW <= HIGH"),
    ({"jobs": 2, "runtime": "soon"}, "--runtime: 'soon' is not a number or a range LOW-HIGH"),
    ({"jobs": 2, "cores": 4, "nb_res": 2}, "nb_res 2 (machine resources) is smaller than the widest job (4 cores)"),
])
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ConfigError) as exc:
        generate_ensemble(**kwargs)
    assert exc.value.message == message


def test_cli_writes_a_checked_ensemble(tmp_path, capsys):
    out = tmp_path / "e.json"
    assert cli_main(["workload", "ensemble", "--jobs", "64", "--cores", "1", "--runtime", "0",
                     "--nb-res", "36", "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    wl = json.loads(out.read_text())
    assert wl["nb_res"] == 36 and len(wl["jobs"]) == 64
    assert cli_main(["workload", "ensemble", "--jobs", "4", "--cores", "40", "--nb-res", "36",
                     "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith("nb_res 36 (machine resources) is smaller than the widest job (40 cores)")
