"""The report on a small fake campaign built from reference runs, and ``mrsched report``."""

from __future__ import annotations

import base64
import json
import re
import shutil

import pandas as pd
import pytest
from analysis_csv import row, write_jobs

from mrsched.analysis import campaign_metrics, load_run, write_report
from mrsched.cli import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _make_run(runs_dir, run_id, policy, source, *, workload, platform, seed, status="ok",
              error="", options=None):
    d = runs_dir / run_id
    d.mkdir(parents=True)
    if source is not None:
        shutil.copy(source / "out_jobs.csv", d / "out_jobs.csv")
    manifest = {"run_id": run_id, "policy": policy, "options": options or {},
                "platform": str(platform), "workload": str(workload), "seed": seed,
                "engine": "batsim", "status": status, "error": error, "mmax": 128}
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d


@pytest.fixture(scope="module")
def campaign(shared_dir, tmp_path_factory):
    """fcfs and easy_bf on seeds 1 and 2 of batsched's reference runs, plus a failed run."""
    root = tmp_path_factory.mktemp("campaign")
    ref = shared_dir / "batsched-reference"
    for policy in ("fcfs", "easy_bf"):
        for seed in (1, 2):
            src = ref / f"{policy}-seed{seed}"
            _make_run(root / "runs", f"{policy}-s{seed}", policy, src, seed=seed,
                      workload=ref / f"fcfs-seed{seed}" / "workload.json",
                      platform=src / "platform.xml")
    _make_run(root / "runs", "zz-fail", "easy_bf", None, seed=3, status="timeout",
              error="scheduler did not answer within 60 s",
              workload=ref / "fcfs-seed3" / "workload.json", platform=ref / "fcfs-seed3" / "platform.xml")
    return root


@pytest.fixture(scope="module")
def report(campaign):
    return write_report(campaign, baseline="fcfs", max_gantt=2)


def _images(html: str) -> dict[str, bytes]:
    return {alt: base64.b64decode(data) for alt, data in
            re.findall(r'<img alt="([^"]+)" style="width:\d+px" src="data:image/png;base64,([^"]+)"', html)}


def test_report_embeds_valid_pngs_with_gantt_and_tables(report):
    assert report.name == "index.html" and report.parent.name == "report"
    html = report.read_text()
    images = _images(html)
    assert {"schedule_000", "schedule_001", "boxen_waiting_time", "boxen_bounded_slowdown",
            "tail_waiting_time", "ci_mean_waiting_time", "normalised_mean_waiting_time",
            "kiviat"} <= set(images)
    for name, data in images.items():
        assert data.startswith(PNG_SIGNATURE), name
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width >= 300 and height >= 200, name
        assert (report.parent / "figures" / f"{name}.png").read_bytes() == data
        # every figure also as SVG and PDF, for papers, linked under it
        assert (report.parent / "figures" / f"{name}.pdf").read_bytes().startswith(b"%PDF-")
        assert b"<svg" in (report.parent / "figures" / f"{name}.svg").read_bytes()[:2000]
        assert f'href="figures/{name}.svg"' in html and f'href="figures/{name}.pdf"' in html
    assert "http://" not in html and "https://" not in html  # opens offline
    assert "Metrics per run" in html and "<table" in html
    assert "<code>runs/RUN_ID/</code>, e.g. <code>easy_bf-s1</code> for policy easy_bf, seed 1" in html


def test_failed_run_is_listed_with_its_error(report):
    html = report.read_text()
    assert "Failed runs" in html and "scheduler did not answer within 60 s" in html
    metrics = pd.read_csv(report.parent / "metrics.csv", keep_default_na=False)
    failed = metrics.set_index("run_id").loc["zz-fail"]
    assert failed["status"] == "timeout" and "60 s" in failed["error"]


def test_metrics_csv_one_row_per_run_in_order(report, shared_dir):
    metrics = pd.read_csv(report.parent / "metrics.csv")
    assert list(metrics["run_id"]) == ["easy_bf-s1", "easy_bf-s2", "fcfs-s1", "fcfs-s2", "zz-fail"]
    fcfs1 = metrics.set_index("run_id").loc["fcfs-s1"]
    jobs = pd.read_csv(shared_dir / "batsched-reference" / "fcfs-seed1" / "out_jobs.csv")
    assert fcfs1["n_jobs"] == len(jobs)
    assert fcfs1["mean_waiting_time"] == pytest.approx(jobs["waiting_time"].mean(), rel=1e-6)
    node_seconds = (jobs["requested_number_of_resources"] * jobs["execution_time"]).sum()
    window = jobs["finish_time"].max() - jobs["submission_time"].min()
    assert fcfs1["utilisation_nodes"] == pytest.approx(node_seconds / (128 * window), rel=1e-4)


def test_campaign_metrics_matches_csv(campaign, report):
    df = campaign_metrics(campaign)
    csv = pd.read_csv(report.parent / "metrics.csv")
    assert list(df["run_id"]) == list(csv["run_id"])
    assert df["mean_bounded_slowdown"].to_numpy() == pytest.approx(
        csv["mean_bounded_slowdown"].to_numpy(), nan_ok=True)


def test_single_run_directory_report_is_deterministic(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_jobs(run_dir / "out_jobs.csv", [
        row("1", 0, 2, 0, 100, "0-1"),
        row("2", 0, 4, 100, 1300, "0-3"),
        row("3", 10, 8, state="REJECTED"),
        row("4.0.compute", 20, 1, 20, 50, "2", workload="w0-io"),
        row("4.1.stage_out", 50, 1, 60, 70, "3", workload="w0-io"),
    ])
    first = write_report(run_dir, out=tmp_path / "a").read_bytes()
    second = write_report(run_dir, out=tmp_path / "b").read_bytes()
    assert first == second
    html = first.decode()
    assert "schedule_000" in html
    assert "bootstrap" in html  # a single run's interval is over its jobs
    run = load_run(run_dir)
    assert run.status == "ok" and len(run.jobs) == 4 and run.capacities == {}


def test_cli_report_and_bad_baseline(campaign, tmp_path, capsys):
    run_dir = tmp_path / "one"
    run_dir.mkdir()
    write_jobs(run_dir / "out_jobs.csv", [row("1", 0, 1, 0, 10, "0")])
    out = tmp_path / "cli"
    assert main(["report", str(run_dir), "--tau", "60", "-o", str(out), "--max-gantt", "0"]) == 0
    assert (out / "index.html").is_file()
    assert pd.read_csv(out / "metrics.csv")["tau"].tolist() == [60]
    assert main(["report", str(run_dir), "--tau", "-1"]) == 2
    assert main(["report", str(run_dir), "--tail", "0"]) == 2
    assert main(["report", str(run_dir), "--tail", "3000", "-o", str(out), "--max-gantt", "0"]) == 0
    assert "3000 worst jobs" in (out / "index.html").read_text()
    assert main(["report", str(campaign), "--baseline", "easy", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown baseline 'easy'" in err and "easy_bf" in err
    assert main(["report", str(tmp_path / "nowhere")]) == 2


def test_load_run_attaches_requests_and_burst_buffer_capacity(tmp_path):
    """A run whose manifest names a burst-buffer platform (storage roles given with -r in the
    command) and a workload with Euro-Par ``bb`` per node gets BB utilisation."""
    (tmp_path / "p.xml").write_text(
        "<platform version='4.1'><zone id='r' routing='Full'>"
        "<cluster id='c' prefix='n' radical='0-3' suffix='' speed='1Gf' bw='1GBps' lat='0'/>"
        "<host id='bb'><prop id='bb_capacity' value='1000'/></host>"
        "<host id='m'><prop id='role' value='master'/></host></zone></platform>")
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 3, "jobs": [
        {"id": 1, "subtime": 0, "res": 2, "profile": "a"},
        {"id": 2, "subtime": 0, "res": 1, "profile": "b", "burst_buffer": 300}],
        "profiles": {"a": {"type": "delay", "delay": 10, "bb": 100},
                     "b": {"type": "delay", "delay": 10}}}))
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    write_jobs(run_dir / "out_jobs.csv", [row("1", 0, 2, 0, 10, "0-1"), row("2", 0, 1, 10, 20, "2")])
    (run_dir / "manifest.json").write_text(json.dumps({
        "run_id": "r1", "policy": "fcfs", "options": {"order": "fcfs"}, "status": "ok",
        "platform": "p.xml", "workload": "w.json",  # relative to the campaign directory
        "command": ["mrsched", "simulate", "-p", "p.xml", "-r", "n3,bb:storage"]}))
    run = load_run(run_dir)
    assert run.warnings == []
    assert run.capacities == {"nodes": 3.0, "burst_buffer": 1000.0}
    assert run.variant == "fcfs(order=fcfs)"
    m = campaign_metrics(tmp_path).iloc[0]
    assert m["utilisation_burst_buffer"] == pytest.approx((200 * 10 + 300 * 10) / (1000 * 20))
    assert m["utilisation_nodes"] == pytest.approx((2 * 10 + 1 * 10) / (3 * 20))


def test_missing_workload_is_a_visible_warning(tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    write_jobs(run_dir / "out_jobs.csv", [row("1", 0, 1, 0, 10, "0")])
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": "r", "policy": "fcfs",
                                                       "workload": "gone.json", "status": "ok"}))
    html = write_report(run_dir, max_gantt=0).read_text()
    assert "gone.json not found" in html


def test_variant_ignores_the_seed_option(tmp_path):
    """expe passes a policy's seed among its options: runs of one policy on several seeds
    are one variant, compared over seeds."""
    for seed in (1, 2):
        d = tmp_path / "runs" / f"plan-s{seed}"
        d.mkdir(parents=True)
        write_jobs(d / "out_jobs.csv", [row("1", 0, 1, seed, 10, "0")])
        (d / "manifest.json").write_text(json.dumps({
            "run_id": f"plan-s{seed}", "policy": "plan", "options": {"alpha": 2, "seed": seed},
            "seed": seed, "status": "ok"}))
    df = campaign_metrics(tmp_path)
    assert set(df["variant"]) == {"plan(alpha=2)"}
    assert list(df["mean_waiting_time"]) == [1, 2]


def test_every_policy_gets_a_gantt_chart(tmp_path):
    """Only the first 6 runs had one: with 7 policies x 2 seeds the runs of the policies
    after the third in name order had none."""
    from analysis_csv import make_campaign

    from mrsched.analysis.campaign import load_campaign
    from mrsched.analysis.report import gantt_selection

    policies = ["a-fcfs", "b-easy", "c-bb", "d-sjf", "e-filler", "f-cons", "g-plan"]
    root = make_campaign(tmp_path, policies, n_jobs=4)
    runs = load_campaign(root)
    assert [r.variant for r in gantt_selection(runs, 6)] == policies
    assert [r.run_id for r in gantt_selection(runs, 8)][:3] == [
        "a-fcfs-cluster8-synth4-s1", "a-fcfs-cluster8-synth4-s2", "b-easy-cluster8-synth4-s1"]
    assert gantt_selection(runs, 0) == []
    html = write_report(root, max_gantt=6).read_text()
    headings = re.findall(r"<h3>([^<]+) — ([^<]+)</h3>", html)
    assert sorted({v for _, v in headings}) == policies
    assert len(re.findall(r'<img alt="schedule_\d+"', html)) == 7
    assert "7 runs shown" in html and "7 omitted" in html


def test_report_files_are_replaced_atomically(tmp_path, monkeypatch):
    """A report rewrite that fails before its rename leaves the previous index.html and
    metrics.csv whole (no half-written page, no temporary left behind)."""
    from analysis_csv import make_campaign
    import mrsched.atomic as atomic

    root = make_campaign(tmp_path, ["fcfs", "sjf-bb"], n_jobs=4)
    index = write_report(root, max_gantt=0)
    before = {p.name: p.read_bytes() for p in index.parent.iterdir() if p.is_file()}

    def refuse(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OSError, match="disk gone"):
        write_report(root, max_gantt=0, tail_n=5)
    after = {p.name: p.read_bytes() for p in index.parent.iterdir() if p.is_file()}
    assert after == before


def test_report_holds_one_runs_tables_at_a_time(tmp_path, monkeypatch):
    """A campaign of million-job runs must fit in memory: the report reads the runs one by
    one, keeping of each only its per-job metrics, and reads a Gantt run again to draw it.
    Checked by counting the job tables still alive whenever another run is loaded."""
    import gc
    import weakref

    from analysis_csv import make_campaign

    import mrsched.analysis.campaign as campaign_mod
    import mrsched.analysis.report as report_mod
    from mrsched.analysis.runs import load_run as real_load_run

    root = make_campaign(tmp_path, ["a-fcfs", "b-easy", "c-bb"], n_jobs=6)
    alive: list[weakref.ref] = []
    most = []

    def counting_load_run(path):
        gc.collect()
        most.append(sum(r() is not None for r in alive))
        run = real_load_run(path)
        alive.append(weakref.ref(run.jobs))
        return run

    monkeypatch.setattr(campaign_mod, "load_run", counting_load_run)
    monkeypatch.setattr(report_mod, "load_run", counting_load_run)
    html = write_report(root, max_gantt=2).read_text()
    assert len(most) == 6 + 3                  # every run once, and one drawn again a policy
    assert max(most) == 0                      # no earlier run's table alive at any load
    assert len(re.findall(r'<img alt="schedule_\d+"', html)) == 3


def test_hierarchy_levels_of_a_run_are_a_table(tmp_path):
    """A `hierarchical` run's manifest `levels` (issue 44: metrics per level) become a section."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_jobs(run_dir / "out_jobs.csv", [row("1", 0, 2, 0, 100, "0-1"), row("2", 0, 3, state="REJECTED")])
    levels = [{"depth": 1, "instances": 1, "routed": 2, "rejected": 1, "node_seconds": 200.0, "bb_byte_seconds": 0.0},
              {"depth": 2, "instances": 2, "routed": 1, "rejected": 0, "node_seconds": 200.0,
               "bb_byte_seconds": 0.0}]
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": "run", "policy": "hierarchical", "status": "ok",
                                                      "levels": levels}))
    html = write_report(run_dir, out=tmp_path / "r").read_text()
    assert '<a href="#levels">Hierarchy levels</a>' in html
    table = html.split('<h2 id="levels">', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table)
    assert cells[2:8] == ["1", "1", "2", "1", "200", "0"] and cells[10:16] == ["2", "2", "1", "0", "200", "0"]
    plain = tmp_path / "plain"
    plain.mkdir()
    write_jobs(plain / "out_jobs.csv", [row("1", 0, 2, 0, 100, "0-1")])
    assert "Hierarchy levels" not in write_report(plain, out=tmp_path / "p").read_text()
