"""``mrsched.simulate`` (mrsched/api.py) gives what ``mrsched run`` gives: the same
``out_*.csv`` rows, the same metrics as ``mrsched report``, the same manifest keys; its
inputs may be paths or the generators' objects, its policy a name, a class or an instance;
bad input raises the project's errors naming the file, job or field."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import mrsched
from mrsched.errors import ConfigError, MrschedError, WorkloadError
from inputs_rule import reference  # noqa: E402

#: schedule columns that time this machine, not the schedule
TIMED = {"scheduling_time", "simulation_time"}


def mrsched_run(platform, workload, policy, out: Path, *options: str, flags=()) -> Path:
    exe = Path(sys.executable).with_name("mrsched")
    argv = [str(exe), "run", "-p", str(platform), "-w", str(workload), "--policy", policy,
            "-o", str(out), *flags]
    for opt in options:
        argv += ["-O", opt]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def same_as_run(result, run_dir: Path) -> None:
    """Jobs and machine states byte for byte, the schedule row but its timings, the metrics."""
    from mrsched.analysis.campaign import metrics_table
    from mrsched.analysis.runs import load_run

    assert result.csv_text("jobs") == (run_dir / "out_jobs.csv").read_text()
    assert result.csv_text("machine_states") == (run_dir / "out_machine_states.csv").read_text()
    import csv

    with open(run_dir / "out_schedule.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    ours = {k: v for k, v in result.schedule.items() if k not in TIMED}
    theirs = {k: (v if k == "batsim_version" else float(v)) for k, v in row.items() if k not in TIMED}
    assert ours == theirs
    reported = metrics_table([load_run(run_dir)], tau=600.0).iloc[0].to_dict()
    for key, value in result.metrics.items():
        other = reported[key]
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(other), key
        else:
            assert value == other, key
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for name in ("out_jobs.csv", "out_machine_states.csv"):     # the schedule's timings differ
        assert manifest["outputs"][name] == result.manifest["outputs"][name]
    assert manifest["rejected"] == result.manifest["rejected"]
    assert set(manifest) - set(result.manifest) <= {"cpu_time", "peak_memory_mb"}
    assert result.manifest["status"] == "ok"


@pytest.mark.parametrize("case,policy", [("delays", "fcfs-easy"), ("walltime", "fcfs"),
                                         ("various", "fcfs-easy")])
def test_simulate_gives_what_run_gives_on_the_references(tmp_path, case, policy):
    ref = reference() / case
    result = mrsched.simulate(ref / "platform.xml", ref / "workload.json", policy)
    same_as_run(result, mrsched_run(ref / "platform.xml", ref / "workload.json", policy,
                                    tmp_path / "run"))
    assert list(result.jobs.columns[:5]) == ["job_id", "workload_name", "profile",
                                             "submission_time", "requested_number_of_resources"]
    assert len(result.jobs) == len(json.loads((ref / "workload.json").read_text())["jobs"])


@pytest.mark.parametrize("policy,options", [("fcfs-easy", ()), ("fcfs", ("idle_sleep=5",))])
def test_energy_kept_in_memory_gives_what_run_gives(tmp_path, policy, options):
    """With ``energy`` and no ``out``, the energy traces are the result's, as ``mrsched run -E``
    writes them: the metrics are the measured ones (not the wattage estimate the report falls
    back on without a trace)."""
    case = Path(__file__).parent / "simulator" / "cases" / "sleeper"
    result = mrsched.simulate(case / "platform.xml", case / "workload.json", policy,
                              dict(o.split("=") for o in options), energy=True)
    run_dir = mrsched_run(case / "platform.xml", case / "workload.json", policy, tmp_path / "run",
                          *options, flags=["--energy"])
    same_as_run(result, run_dir)
    assert result.metrics["energy_measured"] == 1.0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for name in ("out_consumed_energy.csv", "out_pstate_changes.csv"):
        text = (run_dir / name).read_text()
        assert result.csv_text(name[4:-4]) == text
        assert manifest["outputs"][name] == result.manifest["outputs"][name]
    assert result.consumed_energy["energy"].iloc[-1] > 0
    assert len(result.pstate_changes) == (run_dir / "out_pstate_changes.csv").read_text().count("\n") - 1
    if options:
        assert len(result.pstate_changes) > 0      # the idle nodes went to sleep
    # a run kept in a directory reads them back; a run without energy has none
    kept = mrsched.simulate(case / "platform.xml", case / "workload.json", policy,
                            dict(o.split("=") for o in options), energy=True, out=tmp_path / "kept")
    assert kept.csv_text("consumed_energy") == result.csv_text("consumed_energy")
    assert kept.metrics == result.metrics
    plain = mrsched.simulate(case / "platform.xml", case / "workload.json", policy)
    with pytest.raises(ConfigError, match="no output 'consumed_energy'"):
        plain.consumed_energy


def test_simulate_on_generated_inputs_gives_what_run_gives(tmp_path):
    from mrsched.platforms.cluster import generate_cluster
    from mrsched.workloads.batsim_json import write_workload
    from mrsched.workloads.platform_info import read_platform_info
    from mrsched.workloads.synthetic import generate_synthetic

    platform = generate_cluster(nodes=8, storage=1, bb_capacity="100GB")
    (tmp_path / "platform.xml").write_text(platform.xml)
    workload = generate_synthetic(jobs=40, platform=read_platform_info(tmp_path / "platform.xml"),
                                  seed=3)
    result = mrsched.simulate(platform, workload, "conservative-bb")
    write_workload(tmp_path / "workload.json", workload)
    same_as_run(result, mrsched_run(tmp_path / "platform.xml", tmp_path / "workload.json",
                                    "conservative-bb", tmp_path / "run"))
    # with out=, the run directory is the one mrsched run writes, the inputs kept beside it
    kept = mrsched.simulate(platform, workload, "conservative-bb", out=tmp_path / "kept")
    assert (tmp_path / "kept" / "inputs" / "workload.json").is_file()
    for name in ("out_jobs.csv", "out_machine_states.csv"):
        assert (tmp_path / "kept" / name).read_text() == (tmp_path / "run" / name).read_text()
    assert kept.metrics == result.metrics


def test_policies_by_name_class_and_instance_decide_alike():
    from mrsched.schedulers.policies.backfilling import EasyBackfilling

    ref = reference() / "delays"
    by_name = mrsched.simulate(ref / "platform.xml", ref / "workload.json", "fcfs-easy")
    made = mrsched.make_policy("fcfs-easy")
    by_instance = mrsched.simulate(ref / "platform.xml", ref / "workload.json", made)
    by_class = mrsched.simulate(ref / "platform.xml", ref / "workload.json", EasyBackfilling,
                                {"reserve": "nodes"})
    jobs = by_name.csv_text("jobs")
    assert by_instance.csv_text("jobs") == jobs and by_class.csv_text("jobs") == jobs
    assert by_instance.manifest["policy"] == "fcfs-easy"


def test_options_are_checked_and_recorded():
    ref = reference() / "delays"
    result = mrsched.simulate(ref / "platform.xml", ref / "workload.json", "fcfs-easy",
                              {"decision_cost": "per_job=0.5"})
    assert result.manifest["options"] == {"decision_cost": "per_job=0.5"}
    assert result.jobs["starting_time"].min() >= 0.5     # the decision took simulated time
    with pytest.raises(ConfigError) as info:
        mrsched.simulate(ref / "platform.xml", ref / "workload.json", "fcfs-easy", {"nope": 1})
    assert "nope" in str(info.value)
    with pytest.raises(ConfigError) as info:
        mrsched.simulate(ref / "platform.xml", ref / "workload.json", "no-such-policy")
    assert "no-such-policy" in str(info.value)


def test_bad_inputs_raise_errors_naming_file_job_or_field(tmp_path):
    ref = reference() / "delays"
    with pytest.raises(ConfigError) as info:
        mrsched.simulate(tmp_path / "absent.xml", ref / "workload.json")
    assert info.value.field == "platform" and "absent.xml" in str(info.value)
    workload = json.loads((ref / "workload.json").read_text())
    workload["jobs"][3]["profile"] = "missing"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(workload))
    with pytest.raises(WorkloadError) as info:
        mrsched.simulate(ref / "platform.xml", path)
    message = str(info.value)
    assert "bad.json" in message and "3" in message and "\n" not in message
    with pytest.raises(MrschedError):
        mrsched.simulate(ref / "platform.xml", {"jobs": "x"})
    with pytest.raises(ConfigError) as info:
        mrsched.simulate(ref / "platform.xml", ref / "workload.json", 42)
    assert info.value.field == "policy"
    # a NaN or an infinity in a workload dict: the job and field it is in, or the profile's
    nan = json.loads((ref / "workload.json").read_text())
    nan["jobs"][2]["subtime"] = float("nan")
    with pytest.raises(WorkloadError) as info:
        mrsched.simulate(ref / "platform.xml", nan)
    assert (info.value.job, info.value.field) == (str(nan["jobs"][2]["id"]), "subtime")
    name = next(iter(nan["profiles"]))
    nan["jobs"][2]["subtime"] = 0
    nan["profiles"][name]["delay"] = float("inf")
    with pytest.raises(WorkloadError) as info:
        mrsched.simulate(ref / "platform.xml", nan)
    assert info.value.field == f"profiles.{name}.delay" and "inf" in str(info.value)


def test_the_package_exports():
    assert {"simulate", "Result", "Stepper", "Policy", "Param", "make_policy", "policy_names",
            "MrschedError"} <= set(mrsched.__all__)
    assert "fcfs-easy" in mrsched.policy_names()
    with pytest.raises(AttributeError):
        mrsched.no_such_name
