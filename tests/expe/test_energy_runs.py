"""``--energy`` (Batsim's -E) reaches every engine from ``mrsched run`` and from campaigns (a
platform entry ``energy: true``): the run writes the energy files and records them; without it,
a platform's wattage changes nothing."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from mrsched.cli import main
from mrsched.expe.spec import RunSpec

CASE = Path(__file__).parents[1] / "simulator" / "cases" / "sleeper"   # 7 hosts with wattage


def _energies(path: Path) -> list[str]:
    with open(path) as fh:
        return [row["consumed_energy"] for row in csv.DictReader(fh)]


def test_run_spec_passes_energy_to_every_engine():
    spec = RunSpec(run_id="r", out_dir="/tmp/r", platform="p.xml", workload="w.json",
                   policy="fcfs", energy=True)
    assert "--energy" in spec.batsim_flags()          # batsim and docker engines
    assert "--energy" in spec.command_line()
    assert RunSpec.from_dict(spec.to_dict()).energy
    assert "--energy" not in RunSpec(run_id="r", out_dir="/tmp/r", platform="p.xml",
                                     workload="w.json", policy="fcfs").batsim_flags()


@pytest.mark.parametrize("engine", ["embedded", "batsim"])
def test_run_with_energy_writes_the_energy_files(engine, tmp_path, engine_env, capsys):
    out = tmp_path / "run"
    argv = ["run", "--platform", str(CASE / "platform.xml"), "--workload",
            str(CASE / "workload.json"), "--policy", "fcfs", "--energy", "--out", str(out),
            "--engine", engine]
    if engine == "batsim":
        argv += ["--batsim", engine_env["batsim"]]
    assert main(argv) == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["energy"] is True and "--energy" in manifest["command"]
    assert {"out_consumed_energy.csv", "out_pstate_changes.csv"} <= set(manifest["outputs"])
    energies = _energies(out / "out_jobs.csv")
    assert len(energies) == 30 and all(float(e) > 0 for e in energies)
    assert (out / "out_pstate_changes.csv").read_text() == "time,machine_id,new_pstate\n0,0-6,0\n"


def test_the_engines_agree_on_the_energy(tmp_path, engine_env, capsys):
    """The embedded engine and ``mrsched simulate`` behind the batsim engine: same files."""
    outs = []
    for engine in ("embedded", "batsim"):
        out = tmp_path / engine
        argv = ["run", "-p", str(CASE / "platform.xml"), "-w", str(CASE / "workload.json"),
                "--policy", "fcfs-easy", "-E", "-o", str(out), "--engine", engine]
        if engine == "batsim":
            argv += ["--batsim", engine_env["batsim"]]
        assert main(argv) == 0, capsys.readouterr().err
        outs.append(out)
    for name in ("out_jobs.csv", "out_consumed_energy.csv", "out_machine_states.csv"):
        assert (outs[0] / name).read_text() == (outs[1] / name).read_text(), name


def test_run_without_energy_writes_no_energy(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "-p", str(CASE / "platform.xml"), "-w", str(CASE / "workload.json"),
                 "--policy", "fcfs", "-o", str(out)]) == 0, capsys.readouterr().err
    assert set(_energies(out / "out_jobs.csv")) == {"-1.000000"}
    assert not (out / "out_consumed_energy.csv").exists()
    assert "energy" not in json.loads((out / "manifest.json").read_text())


def test_campaign_platform_entry_takes_energy(tmp_path, capsys):
    spec = {"name": "watts", "output": str(tmp_path / "out"), "report": False,
            "platforms": [{"path": str(CASE / "platform.xml"), "energy": True}],
            "workloads": [str(CASE / "workload.json")], "policies": ["fcfs"]}
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump(spec))
    assert main(["campaign", "run", str(file)]) == 0, capsys.readouterr().err
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    assert (run_dir / "out_consumed_energy.csv").is_file()
    assert json.loads((run_dir / "manifest.json").read_text())["energy"] is True


def test_campaign_energy_must_be_a_boolean(tmp_path, capsys):
    spec = {"name": "watts", "platforms": [{"path": str(CASE / "platform.xml"), "energy": "on"}],
            "workloads": [str(CASE / "workload.json")], "policies": ["fcfs"]}
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump(spec))
    assert main(["campaign", "run", str(file)]) == 2
    err = capsys.readouterr().err
    assert "energy must be true or false" in err and err.count("\n") == 1


def test_a_bad_wattage_is_refused_before_the_run(tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text((CASE / "platform.xml").read_text().replace(
        "30.0:100.0, 9.75:9.75", "30.0:100.0, 9.75", 1))
    code = main(["run", "-p", str(bad), "-w", str(CASE / "workload.json"), "--policy", "fcfs",
                 "--energy", "-o", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "wattage_per_state" in err and err.count("\n") == 1
