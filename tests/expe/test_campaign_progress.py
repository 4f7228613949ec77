"""Issue 13 item 15: progress says what happens (the report too), counts interrupted runs as
interrupted, and writes no ``\\r`` bar redraws into a redirected stderr."""

from __future__ import annotations

import io

from mrsched.expe.launch import Progress, run_campaign
from mrsched.expe.spec import RunSpec


def test_redirected_progress_is_one_plain_line_per_run(tmp_path, inputs, engine_env, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: prog\nplatforms: [{inputs['platform']}]\n"
                    f"workloads: [{inputs['workload']}]\npolicies: [fcfs, filler]\nparallelism: 1\n")
    said: list[str] = []
    summary = run_campaign(path, progress=True, report=True, log=said.append)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("[1/2] ok ") and lines[1].startswith("[2/2] ok ")
    assert "done=2 running=0 failed=0" in lines[1]
    assert said[-1].startswith("writing the report of 2 runs into ")
    assert summary.report is not None and summary.report.is_file()


def test_interrupted_runs_are_counted_as_interrupted():
    out = io.StringIO()
    bar = Progress(3, True, stream=out)
    spec = RunSpec(run_id="r", out_dir="/x", platform="p", workload="w", policy="fcfs")
    for status in ("ok", "failed", "interrupted"):
        bar.start(spec)
        bar.done(spec, {"status": status})
    last = out.getvalue().strip().splitlines()[-1]
    assert last == "[3/3] interrupted r (done=1 running=0 failed=1 interrupted=1)"


def test_report_is_swapped_in_whole(tmp_path):
    """Issue 13 item 3: the campaign's report folder is built aside and renamed into place;
    a failing report leaves the previous one untouched."""
    import pytest

    from mrsched.expe.launch import _swap_in

    target = tmp_path / "report"
    target.mkdir()
    (target / "index.html").write_text("previous")

    def fails(tmp):
        tmp.mkdir()
        (tmp / "index.html").write_text("half")
        raise RuntimeError("plot failed")

    with pytest.raises(RuntimeError):
        _swap_in(target, fails)
    assert (target / "index.html").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]

    def works(tmp):
        tmp.mkdir()
        (tmp / "index.html").write_text("new")
        (tmp / "metrics.csv").write_text("a\n")
        return tmp / "index.html"

    assert _swap_in(target, works) == target / "index.html"
    assert (target / "index.html").read_text() == "new" and (target / "metrics.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_campaign_warns_about_an_io_phased_workload_run_alloc_only(tmp_path, inputs, engine_env):
    """Issue 13 item 11, through a campaign: said once, recorded in each run's manifest."""
    import json

    from mrsched.expe.manifest import read_manifest

    data = json.loads(inputs["workload"].read_text())
    data["generator"] = {"command": "swf", "model": "burst-buffer", "variant": "io-phased"}
    wl = tmp_path / "wl.json"
    wl.write_text(json.dumps(data))
    path = tmp_path / "c.yaml"
    path.write_text(f"name: warn\nplatforms: [{inputs['platform']}]\nworkloads: [{wl}]\n"
                    "policies: [fcfs, filler]\n")
    said: list[str] = []
    summary = run_campaign(path, progress=False, report=False, log=said.append)
    assert summary.ok == 2
    warned = [s for s in said if s.startswith("warning: workload wl: ")]
    assert len(warned) == 1 and "job_model=alloc-only" in warned[0]
    for run_dir in (summary.campaign_dir / "runs").iterdir():
        assert "io-phased variant" in read_manifest(run_dir)["warnings"][0]
