"""Issue 13 items 6 (run side), 9, 10, 11: `mrsched run` refuses inputs that would give a
silently wrong result, records why jobs were rejected, and says so in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mrsched.cli import main
from mrsched.expe.manifest import read_manifest

ARTIFACT_WL = "KTH-SP2-1996-2.1-cln-io-aware-1000.json"
#: the last node of each of the 12 chassis: the artifact's burst-buffer storage nodes
ARTIFACT_ROLES = ",".join(f"node_{9 * k + 8}" for k in range(12)) + ":storage"


def run_cli(inputs, out, *extra, workload=None, policy="fcfs"):
    return main(["run", "-p", str(inputs["platform"]), "-w", str(workload or inputs["workload"]),
                 "--policy", policy, "--out", str(out), "--timeout", "60", *extra])


def with_jobs(path: Path, base: Path, **changes) -> Path:
    data = json.loads(base.read_text())
    for job_id, fields in changes.items():
        next(j for j in data["jobs"] if j["id"] == job_id).update(fields)
    path.write_text(json.dumps(data))
    return path


def rows(run_dir: Path) -> dict[str, dict]:
    with open(run_dir / "out_jobs.csv") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


@pytest.mark.parametrize("engine", ["embedded", "batsim"])
def test_rejection_reason_is_recorded_in_the_run_directory(tmp_path, inputs, engine_env, capsys, engine):
    wl = with_jobs(tmp_path / "wl.json", inputs["workload"], **{"3": {"res": 1, "burst_buffer": 10**15}})
    out = tmp_path / "r"
    assert run_cli(inputs, out, "--engine", engine, "--batsim", engine_env["batsim"], workload=wl) == 0
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and line.startswith("run ok in ")
    assert (f"{out}; 1 job(s) rejected: asks N bytes of burst buffer per node, the largest storage "
            "node holds M (1 job, e.g. job 3: N = 1000000000000000, M = 10000000000)") in line
    row = rows(out)["3"]
    assert row["final_state"] == "REJECTED"
    reason = ("asks 1000000000000000 bytes of burst buffer per node, the largest storage node "
              "holds 10000000000")
    assert row["metadata"] == f"rejected: {reason}"
    assert read_manifest(out)["rejected"] == {"count": 1, "jobs": 12, "kinds": [{
        "kind": "asks N bytes of burst buffer per node, the largest storage node holds M",
        "count": 1, "example": reason, "job": "3"}]}


def test_every_job_rejected_is_not_a_quiet_ok(tmp_path, inputs, engine_env, capsys):
    wl = with_jobs(tmp_path / "wl.json", inputs["workload"],
                   **{str(i): {"res": 1, "burst_buffer": 10**15} for i in range(12)})
    out = tmp_path / "r"
    assert run_cli(inputs, out, workload=wl) == 2
    err = capsys.readouterr().err
    assert err.startswith("mrsched run: error: ") and err.count("\n") == 1
    assert ("every job (12) was rejected; 12 because: asks N bytes of burst buffer per node, "
            "the largest storage node holds M (e.g. job 0: N = 1000000000000000, "
            "M = 10000000000)") in err
    assert read_manifest(out)["status"] == "failed"


def test_swf_and_invalid_json_workloads_are_one_line(tmp_path, inputs, capsys):
    swf = tmp_path / "trace.swf"
    swf.write_text("; Version: 2.2\n1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert run_cli(inputs, tmp_path / "r", workload=swf) == 2
    err = capsys.readouterr().err
    assert "not a Batsim JSON workload" in err and "mrsched workload swf" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": [}')
    assert run_cli(inputs, tmp_path / "r", workload=bad) == 2
    err = capsys.readouterr().err
    assert "bad.json:1: malformed JSON" in err and err.count("\n") == 1


def test_out_holding_a_finished_run_needs_force(tmp_path, inputs, engine_env, capsys):
    out = tmp_path / "r"
    assert run_cli(inputs, out) == 0
    first = read_manifest(out)["started"]
    assert run_cli(inputs, out, policy="filler") == 2
    err = capsys.readouterr().err
    assert "already holds a finished run (fcfs" in err and "--force" in err
    assert read_manifest(out)["started"] == first
    assert run_cli(inputs, out, "--force", policy="filler") == 0
    assert read_manifest(out)["policy"] == "filler"
    other = tmp_path / "notes"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    assert run_cli(inputs, other) == 2 and "other files (thesis.tex)" in capsys.readouterr().err


def test_failed_run_goes_to_stderr_with_exit_2(tmp_path, inputs, engine_env, helper_path, capsys):
    code = run_cli(inputs, tmp_path / "r", policy="misbehaving:CrashingScheduler")
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("mrsched run: error: run failed: ") and "exploded on purpose" in err


@pytest.mark.parametrize("change, where, message", [
    ({"profile": "nope"}, "job 3, field 'profile'", "unknown profile 'nope'"),
    ({"subtime": None}, "job 3, field 'subtime'", "expected a number, got None"),
    ({"res": 0}, "job 3, field 'res'", "'res' must be at least 1"),
])
def test_a_bad_workload_is_refused_before_the_run_directory_exists(tmp_path, inputs, capsys, change,
                                                                    where, message):
    """The engine's own checks of every job run before anything is written: one line naming the
    file, the job (its id in the file, not the engine's w0!3) and the field; no class name."""
    wl = with_jobs(tmp_path / "bad.json", inputs["workload"], **{"3": change})
    out = tmp_path / "r"
    assert run_cli(inputs, out, workload=wl) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mrsched run: error: {wl}, {where}: {message}") and len(err.splitlines()) == 1
    assert "Error" not in err and "w0!" not in err
    assert not out.exists()


def test_a_long_list_in_an_error_is_cut(tmp_path, inputs, capsys):
    data = json.loads(inputs["workload"].read_text())
    data["profiles"].update({f"p{k}": {"type": "delay", "delay": 1} for k in range(1500)})
    data["jobs"][0]["profile"] = "p20000"
    wl = tmp_path / "many.json"
    wl.write_text(json.dumps(data))
    assert run_cli(inputs, tmp_path / "r", workload=wl) == 2
    err = capsys.readouterr().err
    total = len(data["profiles"])
    assert "did you mean 'p" in err and f" ... and {total - 30:,} more)" in err
    assert len(err) < 600 and not (tmp_path / "r").exists()


def test_a_policy_refusing_the_platform_is_refused_before_the_run_directory_exists(tmp_path, inputs,
                                                                                   capsys):
    """io_aware needs a bandwidth tree: the policy's own check at SIMULATION_BEGINS, met by
    starting it on the platform before the run, not after its directory was made."""
    out = tmp_path / "r"
    assert run_cli(inputs, out, "-O", "io_aware=true") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mrsched run: error: {inputs['platform']}, field 'io_aware': io_aware needs "
                          "a bandwidth tree") and "mrsched platform iotree" in err
    assert "Error" not in err and not out.exists()


def test_a_seed_002_policy_refuses_a_platform_of_whole_nodes_before_running(tmp_path, inputs, capsys):
    out = tmp_path / "r"
    assert run_cli(inputs, out, policy="ipsched") == 2
    err = capsys.readouterr().err
    assert "policy 'ipsched' needs a per-core CPU+GPU platform" in err
    assert "`mrsched platform cluster --nodes N --cores C --gpus G`" in err and not out.exists()


def test_the_start_check_leaves_no_process_behind(tmp_path):
    """A seed 002 policy starts its solver worker in setup: the check before the run ends it,
    so that `mrsched run` does not carry an idle worker through the whole run."""
    import psutil

    from mrsched.expe.spec import RunSpec
    from mrsched.expe.validation import check_start
    from mrsched.platforms.cluster import generate_cluster

    plat = tmp_path / "cg.xml"
    plat.write_text(generate_cluster(nodes=2, cores=4, gpus=1, pfs=False).xml)
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 8, "profiles": {"d": {"type": "delay", "delay": 5}},
                              "jobs": [{"id": 1, "subtime": 0, "res": 4, "walltime": 10, "profile": "d"}]}))
    for policy in ("ipsched", "aucsched", "slurm-bf"):
        check_start(RunSpec(run_id="r", out_dir=str(tmp_path / "r"), platform=str(plat), workload=str(wl),
                            policy=policy))
        assert psutil.Process().children(recursive=True) == [], policy
    assert not (tmp_path / "r").exists()


def test_an_error_inside_the_run_is_recorded_without_a_class_name(tmp_path, inputs, engine_env, capsys):
    """A user's scheduler is not started before its run: its refusal ends the run failed,
    in the manifest and on stderr as the one line it raised."""
    out = tmp_path / "r"
    assert run_cli(inputs, out, policy="misbehaving:RefusingScheduler") == 2
    err = capsys.readouterr().err
    assert "run failed: field 'platform': this machine will not do" in err and "ConfigError" not in err
    assert read_manifest(out)["error"] == "field 'platform': this machine will not do"


def test_io_phased_workload_run_alloc_only_warns(tmp_path, inputs, engine_env, capsys):
    data = json.loads(inputs["workload"].read_text())
    data["generator"] = {"command": "swf", "model": "burst-buffer", "variant": "io-phased"}
    wl = tmp_path / "wl.json"
    wl.write_text(json.dumps(data))
    out = tmp_path / "r"
    assert run_cli(inputs, out, workload=wl) == 0
    err = capsys.readouterr().err
    assert "warning: the workload was converted with the io-phased variant" in err
    assert "job_model=alloc-only" in read_manifest(out)["warnings"][0]


SWF = """; MaxNodes: 16
; MaxProcs: 16
 1   0  0   50   2 -1 -1   2   60  -1 1 1 1 -1 -1 -1 -1 -1
 2  60  0  600   4 -1 -1   4  900  -1 1 2 1 -1 -1 -1 -1 -1
 3  90  0 3000   3 -1 -1   3 3600  -1 1 4 1 -1 -1 -1 -1 -1
"""


def test_a_burst_buffer_conversion_runs_with_the_default_job_model_without_warning(tmp_path, capsys):
    """The README's `workload swf --model burst-buffer` then `run`: the conversion's default
    variant (alloc-only) is what every policy's default job_model runs, so nothing is said;
    asking io-phased explicitly still warns when the run does not use that job model."""
    from mrsched.platforms.bundled import bundled_path

    trace, plat = tmp_path / "t.swf", str(bundled_path("cluster16"))
    trace.write_text(SWF)
    wl = tmp_path / "w.json"
    assert main(["workload", "swf", str(trace), "--platform", plat, "--model", "burst-buffer",
                 "-o", str(wl)]) == 0
    assert json.loads(wl.read_text())["generator"]["variant"] == "alloc-only"
    capsys.readouterr()
    assert main(["run", "-p", plat, "-w", str(wl), "--policy", "fcfs-bb", "--out", str(tmp_path / "r")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["workload", "swf", str(trace), "--platform", plat, "--model", "burst-buffer",
                 "--variant", "io-phased", "-o", str(wl)]) == 0
    assert main(["run", "-p", plat, "-w", str(wl), "--policy", "fcfs-bb", "--out", str(tmp_path / "r2")]) == 0
    assert "warning: the workload was converted with the io-phased variant" in capsys.readouterr().err


@pytest.fixture()
def artifact(shared_dir, tmp_path) -> dict[str, Path]:
    """The Euro-Par 2021 artifact's own platform and its first 150 jobs (same fields)."""
    src = shared_dir / "data" / "europar2021"
    data = json.loads((src / ARTIFACT_WL).read_text())
    data["jobs"] = data["jobs"][:150]
    data["profiles"] = {j["profile"]: data["profiles"][j["profile"]] for j in data["jobs"]}
    wl = tmp_path / "artifact-150.json"
    wl.write_text(json.dumps(data))
    return {"platform": src / "dragonfly96.xml", "workload": wl}


def test_artifact_inputs_are_refused_without_their_storage_roles(artifact, tmp_path, capsys):
    assert run_cli(artifact, tmp_path / "a", policy="fcfs-bb") == 2
    err = capsys.readouterr().err
    assert "has no burst-buffer storage host" in err and "-r HOST1,HOST2:storage" in err
    assert run_cli(artifact, tmp_path / "a", "-r", ARTIFACT_ROLES, policy="fcfs-bb") == 2
    err = capsys.readouterr().err
    assert "have no bb_capacity" in err and "--bb-capacity" in err
    assert not (tmp_path / "a").exists()


def test_artifact_inputs_run_as_they_are_with_roles_and_capacity(artifact, tmp_path, engine_env):
    out = tmp_path / "a"
    assert run_cli(artifact, out, "-r", ARTIFACT_ROLES, "--bb-capacity", "40GB",
                   policy="fcfs-bb") == 0
    manifest = read_manifest(out)
    assert manifest["rejected"]["count"] == 0 and manifest["rejected"]["jobs"] == 150
    assert manifest["roles"] == [ARTIFACT_ROLES] and manifest["bb_capacity"] == 40_000_000_000
    assert f"-r {ARTIFACT_ROLES} --bb-capacity 40000000000" in manifest["command"]
    states = {r["final_state"] for r in rows(out).values()}
    assert states <= {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}


def test_artifact_inputs_in_a_campaign(artifact, tmp_path, engine_env, capsys):
    """The same through a campaign file: refused before any run without the capacity, run
    with `roles` and `bb_capacity` on the platform entry."""
    from mrsched.expe.launch import run_campaign

    path = tmp_path / "ep.yaml"
    base = (f"name: ep\nworkloads: [{artifact['workload']}]\npolicies: [fcfs-bb]\n"
            f"platforms:\n  - {{path: {artifact['platform']}, roles: ['{ARTIFACT_ROLES}']")
    path.write_text(base + "}\n")
    assert main(["campaign", "run", str(path), "--no-progress", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "field 'platform dragonfly96'" in err and "have no bb_capacity" in err
    assert not (tmp_path / "results" / "ep" / "runs").exists()
    path.write_text(base + ", bb_capacity: 40GB}\n")
    summary = run_campaign(path, progress=False, report=False)
    assert summary.ok == 1
    [run_dir] = (summary.campaign_dir / "runs").iterdir()
    manifest = read_manifest(run_dir)
    assert manifest["rejected"]["count"] == 0 and manifest["bb_capacity"] == 40_000_000_000
    assert manifest["roles"] == [ARTIFACT_ROLES]


def test_rejection_reasons_reach_the_report(tmp_path, inputs, engine_env):
    """Counted in the report: each kind of reason, its count and an example is in the run's
    metrics row (and the report's "Rejected jobs" section)."""
    from mrsched.analysis import campaign_metrics

    wl = with_jobs(tmp_path / "wl.json", inputs["workload"],
                   **{"3": {"res": 1, "burst_buffer": 10**15}, "5": {"res": 1, "burst_buffer": 10**15}})
    path = tmp_path / "c.yaml"
    path.write_text(f"name: rej\nplatforms: [{inputs['platform']}]\nworkloads: [{wl}]\npolicies: [fcfs]\n")
    from mrsched.expe.launch import run_campaign

    summary = run_campaign(path, progress=False, report=False)
    [row] = campaign_metrics(summary.campaign_dir).to_dict("records")
    assert row["n_rejected"] == 2
    assert row["warnings"] == ""
    assert row["rejections"] == ("2: asks N bytes of burst buffer per node, the largest storage "
                                 "node holds M (e.g. job 3: N = 1000000000000000, M = 10000000000)")
