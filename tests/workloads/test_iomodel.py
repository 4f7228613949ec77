"""Seed 004's workload model (Sect. 3.3.2): user arrivals, periods, size bins, joint limits."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from mrsched.workloads.iomodel import PERIODS, fit_model, period_of, sample_workload
from mrsched.workloads.swf import read_swf

KTH_NAME = "KTH-SP2-1996-2.1-cln.swf"   # in ../shared/data


def swf(tmp_path, rows):
    """rows: (submit, procs, limit, run, user); UnixStartTime 0 = Thursday 1970-01-01 00:00 UTC."""
    lines = ["; UnixStartTime: 0", "; MaxNodes: 8"]
    for k, (sub, procs, limit, run, user) in enumerate(rows, 1):
        lines.append(f"{k} {sub} 0 {run} {procs} -1 -1 {procs} {limit} -1 1 {user} 1 -1 -1 -1 -1 -1")
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    return read_swf(path)


def test_periods():
    assert PERIODS[period_of(dt.datetime(2024, 1, 3, 10))] == "weekday_day"       # Wednesday 10:00
    assert PERIODS[period_of(dt.datetime(2024, 1, 3, 19))] == "weekday_night"
    assert PERIODS[period_of(dt.datetime(2024, 1, 6, 6))] == "weekend_day"        # Saturday 06:00
    assert PERIODS[period_of(dt.datetime(2024, 1, 7, 5, 59))] == "weekend_night"


def test_user_arrivals_bundle_quick_submissions(tmp_path):
    """User 1 submits at 0, 5 and 12 s (each < 10 s after the previous): one arrival of 3 jobs;
    user 2 at 3 s and 3600 s: two arrivals of 1; so 3 arrivals in one hour of weekday night."""
    trace = swf(tmp_path, [(0, 1, 100, 50, 1), (3, 2, 100, 100, 2), (5, 4, 200, 300, 1), (12, 3, 60, 10, 1),
                           (3600, 8, 100, 20, 2)])
    m = fit_model(trace)
    vals, probs = m.jobs_per_arrival
    assert dict(zip(vals.tolist(), probs.tolist())) == pytest.approx({1: 2 / 3, 3: 1 / 3})
    assert m.rates[PERIODS.index("weekday_night")] == pytest.approx(3 / 3600)
    assert sorted(m.sizes.tolist()) == [1, 2, 3, 4, 8]
    assert m.limits.tolist()[2] == [200, 200]        # elapsed clipped to the limit


def test_sample_is_seeded_and_shaped(tmp_path):
    trace = swf(tmp_path, [(t * 60, p, 600, 100 + t, t % 3) for t, p in enumerate([1, 2, 3, 4, 8, 1, 2, 6] * 5)])
    m = fit_model(trace)
    a = sample_workload(m, jobs=50, nodes=16, io_rate=18e6, seed=3)
    b = sample_workload(m, jobs=50, nodes=16, io_rate=18e6, seed=3)
    assert json.dumps(a) == json.dumps(b)
    assert json.dumps(a) != json.dumps(sample_workload(m, jobs=50, nodes=16, io_rate=18e6, seed=4))
    jobs = a["jobs"]
    assert len(jobs) == 50 and all(j["io_bandwidth_per_node"] == 18e6 for j in jobs)
    assert all(1 <= j["res"] <= 16 for j in jobs)
    assert {j["res"] for j in jobs} <= {2, 4, 6, 8, 12, 16}          # trace sizes x 16/8
    capped = sample_workload(m, jobs=50, nodes=16, io_rate=18e6, seed=3, max_nodes=5)["jobs"]
    assert max(j["res"] for j in capped) <= 5 and [j["subtime"] for j in capped] == [j["subtime"] for j in jobs]
    subs = [j["subtime"] for j in jobs]
    assert subs == sorted(subs)
    for j in jobs:
        prof = a["profiles"][j["profile"]]
        assert prof["type"] == "parallel_homogeneous" and 1e9 * 100 <= prof["cpu"] <= j["walltime"] * 1e9


def test_cli_on_kth(tmp_path, capsys, shared_file):
    from mrsched.cli import main

    out = tmp_path / "w.json"
    kth = str(shared_file("data", KTH_NAME))
    assert main(["workload", "model", "--from", kth, "--nodes", "3888", "--jobs", "300", "--io-rate", "18MB/s",
                 "--seed", "1", "-o", str(out)]) == 0
    w = json.loads(out.read_text())
    assert len(w["jobs"]) == 300 and w["nb_res"] == 3888
    assert np.mean([j["res"] for j in w["jobs"]]) > 39        # scaled up from KTH's 100 nodes
    assert "weekday_day" in capsys.readouterr().out


def test_true_rates_per_user_and_job(tmp_path):
    """--io-spread: jobs resampled whole from the trace (user, size, limit, elapsed), stating
    io_rate and really draining io_rate x user factor x job factor (mean ~1), seeded."""
    rows = [(t * 60, p, 600, 100 + 10 * (t % 3), t % 3) for t, p in enumerate([1, 2, 3, 4, 8, 1, 2, 6] * 5)]
    m = fit_model(swf(tmp_path, rows))
    plain = sample_workload(m, jobs=400, nodes=16, io_rate=18e6, seed=3)
    assert not any("true_io_bandwidth_per_node" in j or "user" in j for j in plain["jobs"])
    a = sample_workload(m, jobs=400, nodes=16, io_rate=18e6, seed=3, io_spread=0.5, io_jitter=0.0)
    assert json.dumps(a) == json.dumps(sample_workload(m, jobs=400, nodes=16, io_rate=18e6, seed=3,
                                                       io_spread=0.5, io_jitter=0.0))
    assert [j["subtime"] for j in a["jobs"]] == [j["subtime"] for j in plain["jobs"]]   # same arrivals
    by_user = {}
    for j in a["jobs"]:
        assert j["io_bandwidth_per_node"] == 18e6
        u = int(j["user"])
        assert j["true_runtime"] == 100 + 10 * u                  # the user's own trace jobs
        assert a["profiles"][j["profile"]]["cpu"] == j["true_runtime"] * 1e9
        by_user.setdefault(u, set()).add(j["true_io_bandwidth_per_node"])
    assert all(len(rates) == 1 for rates in by_user.values())     # no jitter: one rate per user
    assert len({r for rates in by_user.values() for r in rates}) == 3
    jit = sample_workload(m, jobs=400, nodes=16, io_rate=18e6, seed=3, io_spread=0.5, io_jitter=0.2)
    assert len({j["true_io_bandwidth_per_node"] for j in jit["jobs"]}) > 300
    mean = np.mean([j["true_io_bandwidth_per_node"] for j in jit["jobs"]]) / 18e6
    assert 0.5 < mean < 1.5
    capped = sample_workload(m, jobs=400, nodes=16, io_rate=18e6, seed=3, io_spread=2.0, max_nodes=4)
    assert all(j["true_io_bandwidth_per_node"] * j["res"] <= 18e6 * 4 + 1e-3 and j["res"] <= 4
               for j in capped["jobs"])
    with pytest.raises(Exception, match="io_spread"):
        sample_workload(m, jobs=4, nodes=16, io_rate=18e6, io_spread=-1.0)
