"""Issue 13 item 2: one writer per campaign directory (the second `campaign run` says who
holds it and exits 2), temporary names unique per process; item 5: an output directory that
cannot be created is one line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from mrsched.cli import main
from mrsched.expe.campaign import generate_input, load_campaign, plan_runs
from mrsched.expe.lock import CampaignLock


def campaign(tmp_path, inputs, extra: str = "") -> object:
    path = tmp_path / "c.yaml"
    path.write_text(f"name: locked\nplatforms: [{inputs['platform']}]\n"
                    f"workloads: [{inputs['workload']}]\npolicies: [fcfs]\ntimeout: 60\n{extra}")
    return path


def test_second_campaign_run_is_refused_naming_the_holder(tmp_path, inputs, capsys):
    path = campaign(tmp_path, inputs)
    out = tmp_path / "results" / "locked"
    with CampaignLock(out):
        code = main(["campaign", "run", str(path), "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"is in use by pid {os.getpid()}" in err and err.count("\n") == 1
    assert not (out / "runs").exists()  # nothing ran


def test_lock_is_released_when_its_holder_dies(tmp_path, inputs, engine_env, capsys):
    out = tmp_path / "results" / "locked"
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; from mrsched.expe.lock import CampaignLock;"
                               f"l = CampaignLock({str(out)!r}); l.acquire(); print('held', flush=True);"
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    path = campaign(tmp_path, inputs)
    assert main(["campaign", "run", str(path), "--no-progress", "--no-report"]) == 2
    assert f"pid {holder.pid}" in capsys.readouterr().err
    holder.kill()
    holder.wait()
    assert main(["campaign", "run", str(path), "--no-progress", "--no-report"]) == 0


def test_generator_temporary_name_is_per_process(tmp_path, monkeypatch):
    """A second process's leftover temporary file is neither reused nor deleted."""
    path = tmp_path / "c.yaml"
    path.write_text("name: gen\nplatforms: [{generate: cluster, nodes: 4}]\n"
                    "workloads: [{generate: synthetic, jobs: 5}]\npolicies: [fcfs]\n")
    camp = load_campaign(path)
    [run] = plan_runs(camp)
    target = tmp_path / "inputs" / "p.xml"
    target.parent.mkdir()
    other = target.with_name(f".{target.name}.{os.getpid() + 1}.x.tmp")
    other.write_text("another process is writing this")
    made = []
    import mrsched.expe.campaign as c

    real = c._run_generator

    def spy(argv):
        made.append(argv[-1])
        return real(argv)

    monkeypatch.setattr(c, "_run_generator", spy)
    generate_input(camp, run.platform, target, seed=None, platform_path=None)
    assert target.read_text().startswith("<?xml")
    assert str(os.getpid()) in made[0].rsplit("/", 1)[1]
    assert other.read_text() == "another process is writing this"


def test_output_that_cannot_be_created_is_one_line(tmp_path, inputs, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    path = campaign(tmp_path, inputs, f"output: {blocker}/sub\n")
    code = main(["campaign", "run", str(path), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot create the campaign directory" in err
    assert "field 'output'" in err and "Traceback" not in err
