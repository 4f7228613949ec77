"""The report's Setup section: campaign, platform (nodes, cores, GPUs, burst buffer, PFS and
tree bandwidths), workload generator and parameters, seeds, policies in the campaign's order,
engine, mrsched version and commit, dates (issue 41 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from analysis_csv import make_campaign
from html_tables import tables

from mrsched.analysis import write_report
from mrsched.analysis.capacities import describe_platform, platform_capacities
from mrsched.analysis.setup import platform_text, policy_order


def test_dragonfly_platform_is_described(tmp_path):
    from mrsched.platforms.dragonfly import generate_dragonfly

    path = tmp_path / "d.xml"
    path.write_text(generate_dragonfly().xml)
    info = describe_platform(path)
    assert (info["nodes"], info["cores"], info["gpus"], info["storage"]) == (96, 96, 0, 12)
    assert info["bb_total"] == 12 * 40e9 and info["pfs_bw"] == 5e9
    assert platform_text(info) == ("96 compute nodes (1 core each); no GPUs; burst buffer: 12 storage "
                                   "nodes x 40 GB = 480 GB; PFS 5 GB/s; node links 1.25 GB/s")


def test_bandwidth_tree_is_described_and_its_master_is_no_node(tmp_path):
    """``master_host`` (Batsim's default master) was counted as a compute node."""
    from mrsched.platforms.iotree import generate_iotree

    path = tmp_path / "t.xml"
    path.write_text(generate_iotree(units=2, nodes_per_unit=4).xml)
    info = describe_platform(path)
    assert info["nodes"] == 8 and platform_capacities(path) == {"nodes": 8.0}
    text = platform_text(info)
    assert "PFS 70 GB/s; 2 edge switches of 216 GB/s; core 432 GB/s; node links 12.5 GB/s" in text


def test_per_core_platform_counts_nodes_cores_and_gpus_once(tmp_path):
    from mrsched.platforms.cluster import generate_cluster

    path = tmp_path / "c.xml"
    path.write_text(generate_cluster(nodes=4, cores=8, gpus=2).xml)
    info = describe_platform(path)
    assert (info["nodes"], info["cores"], info["gpus"]) == (4, 32, 8)
    assert platform_text(info).startswith("4 nodes, 32 cores (one Batsim resource per core); 8 GPUs")


def test_policy_order_is_the_campaigns():
    campaign = {"runs": [{"labels": {"policy_label": p}} for p in ("zeta", "zeta", "alpha", "mid")]}
    assert policy_order(campaign, ["alpha", "mid", "zeta", "other"]) == ["zeta", "alpha", "mid", "other"]
    assert policy_order(None, ["b", "a"]) == ["a", "b"]


def _setup(html: str) -> dict[str, str]:
    return {row[0][1]: row[1][1] for row in tables(html)[0]}


@pytest.fixture()
def campaign_dir(tmp_path):
    root = make_campaign(tmp_path, ["sjf-bb", "fcfs"], seeds=(1, 2, 3))
    (root / "campaign.yaml").write_text(yaml.safe_dump({
        "name": "demo", "description": "two policies", "source": "expe/demo.yaml",
        "engine": "embedded", "seeds": "1-3",
        "platforms": [{"path": "p.xml", "name": "cluster8"}],
        "workloads": [{"generate": "synthetic", "name": "synth12", "jobs": 12}],
        "policies": ["sjf-bb", "fcfs"],
        "runs": [{"run_id": f"{p}-cluster8-synth12-s{s}", "labels": {"policy_label": p}}
                 for p in ("sjf-bb", "fcfs") for s in (1, 2, 3)]}))
    for k, d in enumerate(sorted((root / "runs").iterdir())):
        m = json.loads((d / "manifest.json").read_text())
        m.update(engine="embedded", timeout=300.0, versions={"mrsched": "0.1.0"},
                 started=f"2026-01-02T10:0{k}:00.000+00:00", finished=f"2026-01-02T10:0{k}:30.000+00:00",
                 provenance={"mrsched": "0.1.0", "source": "git", "commit": "ab" * 20,
                             "modified": k == 0})
        (d / "manifest.json").write_text(json.dumps(m))
    gen = {"command": "synthetic", "seed": 1, "jobs": 12, "mean_interarrival": 120, "model": "burst-buffer"}
    for w in (root / "inputs").iterdir():
        data = json.loads(w.read_text())
        data.update(description="12 synthetic jobs", generator=gen)
        w.write_text(json.dumps(data))
    return root


def test_setup_comes_first_and_says_what_ran(campaign_dir):
    html = write_report(campaign_dir, max_gantt=0).read_text()
    assert html.index('<h2 id="setup">') < html.index('<h2 id="summary">')
    assert "<h1>demo</h1>" in html and "<title>demo: mrsched report</title>" in html
    setup = _setup(html)
    assert list(setup) == ["Campaign", "Platform", "Workload", "Seeds", "Policies", "Engine",
                           "mrsched", "Date", "Metrics"]
    assert setup["Campaign"].startswith("demo: two policies") and "expe/demo.yaml" in setup["Campaign"]
    assert setup["Platform"].startswith("cluster8: 8 compute nodes (1 core each); no GPUs; no burst buffer")
    assert setup["Workload"].startswith("synth12: 12 synthetic jobs")
    assert "mrsched workload synthetic: jobs 12, mean interarrival 120 s, model burst-buffer" in setup["Workload"]
    assert setup["Seeds"] == "1-3 (3 seeds; each seed generates its own workload)"
    assert setup["Policies"].startswith("sjf-bb, fcfs")
    assert setup["Engine"].startswith("embedded Batsim-4.2.1-compatible simulator")
    assert "timeout 300 s per run" in setup["Engine"]
    commit = "ab" * 6
    assert setup["mrsched"] == (f"0.1.0, commit {commit} (5 runs); 0.1.0, commit {commit} (tree "
                                "modified) (1 run)")
    assert setup["Date"] == "runs made 2026-01-02 10:00 to 10:05 UTC"
    assert "τ = 600 s" in setup["Metrics"]


def test_policies_keep_the_campaigns_order_everywhere(campaign_dir):
    index = write_report(campaign_dir, max_gantt=2)
    html = index.read_text()
    summary = tables(html)[1]
    assert [r[0][1] for r in summary[1:]] == ["sjf-bb", "fcfs"]
    headings = [h.split(" — ")[1] for h in __import__("re").findall(r"<h3>([^<]+)</h3>", html) if " — " in h]
    assert headings == ["sjf-bb", "fcfs"]
    assert (index.parent / "summary.csv").read_text().splitlines()[1].startswith("sjf-bb,")


def test_a_single_run_directory_has_a_setup_too(tmp_path):
    root = make_campaign(tmp_path, ["fcfs"], seeds=(1,))
    run = root / "runs" / "fcfs-cluster8-synth12-s1"
    html = write_report(run, out=tmp_path / "rep", max_gantt=0).read_text()
    setup = _setup(html)
    assert setup["Run"].startswith("fcfs-cluster8-synth12-s1 (1 ok) in ")
    assert setup["mrsched"] == "not recorded in the run's manifest"
    assert setup["Date"] == "not recorded"
    assert "<h1>fcfs-cluster8-synth12-s1</h1>" in html
    assert str(Path(run).resolve()) not in html.split("<h2")[0]      # the title is not a path
