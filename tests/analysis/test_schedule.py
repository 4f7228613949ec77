"""A run's schedule figure: the Gantt chart over the whole machine with neighbours in
different colours and job ids when few, the burst buffer held per job, the queue length and
the utilisation of every managed resource, on one time axis (issue 41 item 7)."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from analysis_csv import row, write_jobs  # noqa: E402

from mrsched.analysis.gantt import job_colours, plot_gantt  # noqa: E402
from mrsched.analysis.schedule import bb_layout, queue_steps, schedule_figure  # noqa: E402
from mrsched.analysis.timeaxis import time_axis  # noqa: E402


def _phases(rows):
    return pd.DataFrame([{"job_id": j, "starting_time": s, "finish_time": f, "allocated_resources": a}
                         for j, s, f, a in rows])


def test_the_gantt_y_range_is_the_machine_not_the_data():
    fig = plot_gantt(_phases([("1", 0, 10, "0-3"), ("2", 10, 20, "8")]), n_resources=64)
    assert fig.axes[0].get_ylim() == (0, 64)
    # ids past the machine (storage hosts of I/O phases) are left out, not drawn above it
    fig = plot_gantt(_phases([("1", 0, 10, "0-3 70-71")]), n_resources=64)
    tops = [p.vertices[:, 1].max() for c in fig.axes[0].collections for p in c.get_paths()]
    assert max(tops) == 4


def test_touching_jobs_get_different_colours():
    """Twenty jobs back to back on the same nodes and twenty side by side: with a repeating
    palette some neighbours matched (issue 41: 20 repeating colours)."""
    chain = [(str(i), 10.0 * i, 10.0 * (i + 1), "0-3") for i in range(20)]
    side = [(f"s{i}", 500.0, 600.0, f"{4 + 2 * i}-{5 + 2 * i}") for i in range(20)]
    rows = chain + side
    colours = job_colours(_phases(rows))
    for a, b in zip(rows, rows[1:]):
        if a[0].startswith("s") == b[0].startswith("s"):
            assert colours[a[0]] != colours[b[0]], (a, b)


def test_job_ids_are_written_when_few_jobs_and_where_they_fit():
    few = _phases([("7", 0, 1000, "0-31"), ("8", 1000, 1001, "0-31")])   # 8: a sliver
    texts = [t.get_text() for t in plot_gantt(few, n_resources=32).axes[0].texts]
    assert texts == ["7"]
    many = _phases([(str(i), 100.0 * i, 100.0 * (i + 1), "0-31") for i in range(100)])
    assert len(plot_gantt(many, n_resources=32).axes[0].texts) == 0


def test_bb_layout_keeps_each_job_in_the_capacity_and_apart():
    rng = np.random.default_rng(3)
    n = 200
    starts = np.sort(rng.uniform(0, 1000, n))
    finishes = starts + rng.uniform(10, 200, n)
    amounts = rng.uniform(1, 30, n)
    capacity = 100.0
    # a schedule the capacity holds: keep jobs only while the running total fits
    keep, running = [], []
    for i in range(n):
        running = [j for j in running if finishes[j] > starts[i]]
        if sum(amounts[j] for j in running) + amounts[i] <= capacity:
            keep.append(i)
            running.append(i)
    s, f, a = starts[keep], finishes[keep], amounts[keep]
    pieces = bb_layout(s, f, a, capacity)
    got = {}
    for i, *_, size in pieces:
        got[i] = got.get(i, 0.0) + size
    assert got == pytest.approx(dict(enumerate(a)))
    assert all(0 <= off and off + size <= capacity + 1e-6 for *_, off, size in pieces)
    for x in pieces:       # no two pieces overlap in time and bytes
        for y in pieces:
            if x is y:
                continue
            if x[1] < y[2] and y[1] < x[2]:
                assert x[3] + x[4] <= y[3] + 1e-6 or y[3] + y[4] <= x[3] + 1e-6


def test_bb_layout_shows_bytes_beyond_the_capacity_above_it():
    pieces = bb_layout([0, 0], [10, 10], [60, 60], 100)
    assert sorted((off, size) for *_, off, size in pieces) == [(0, 60), (60, 40), (100, 20)]


def test_queue_length_counts_submitted_jobs_not_started():
    jobs = pd.DataFrame({"submission_time": [0.0, 0.0, 5.0, 6.0],
                         "starting_time": [0.0, 10.0, 12.0, np.nan]})   # the last: rejected
    times, counts = queue_steps(jobs)
    assert list(zip(times, counts)) == [(0.0, 1.0), (5.0, 2.0), (10.0, 1.0), (12.0, 0.0)]


@pytest.fixture()
def bb_run(tmp_path):
    (tmp_path / "p.xml").write_text(
        "<platform version='4.1'><zone id='r' routing='Full'>"
        "<cluster id='c' prefix='n' radical='0-7' suffix='' speed='1Gf' bw='1GBps' lat='0'/>"
        "<host id='bb' speed='1Gf'><prop id='role' value='storage'/>"
        "<prop id='bb_capacity' value='100000000000'/></host>"
        "<host id='master_host' speed='1Gf'/></zone></platform>")
    jobs = [{"id": str(i), "subtime": 100 * i, "res": 2, "profile": "p",
             "burst_buffer": 10**10 * (1 + i % 3)} for i in range(6)]
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 8, "jobs": jobs,
                                                 "profiles": {"p": {"type": "delay", "delay": 1}}}))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_jobs(run_dir / "out_jobs.csv", [row(str(i), 100 * i, 2, 100 * i + 50, 100 * i + 400,
                                              f"{2 * (i % 4)}-{2 * (i % 4) + 1}") for i in range(6)])
    (run_dir / "manifest.json").write_text(json.dumps({
        "run_id": "run", "policy": "fcfs-bb", "status": "ok", "platform": str(tmp_path / "p.xml"),
        "workload": str(tmp_path / "w.json")}))
    return run_dir


def test_the_panels_share_one_time_axis(bb_run):
    from mrsched.analysis.runs import load_run

    run = load_run(bb_run)
    axis = time_axis(0.0, 900.0)
    fig, notes = schedule_figure(run, axis)
    assert notes["panels"] == ["gantt", "bb", "queue", "util"]
    assert notes["resources"] == "nodes, burst buffer"
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["(a) Gantt chart", "(b) burst buffer held per job", "(c) queue length",
                      "(d) utilisation"]
    for ax in fig.axes:
        assert ax.get_xlim() == (0.0, pytest.approx(900.0))
    assert fig.axes[0].get_ylim() == (0, 8)                     # the machine's 8 nodes
    assert fig.axes[1].get_ylim()[1] == pytest.approx(100)      # 100 GB of burst buffer
    assert fig.axes[-1].get_xlabel() == "time (s)" and fig.axes[0].get_xlabel() == ""
    colours = {line.get_label(): line.get_color() for line in fig.axes[-1].get_lines()}
    assert set(colours) == {"nodes", "burst buffer"} and len(set(colours.values())) == 2
