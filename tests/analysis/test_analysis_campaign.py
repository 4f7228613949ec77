"""Confidence intervals, per-policy summaries and baseline normalisation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mrsched.analysis.campaign import (
    bootstrap_interval, clip_interval, match_columns, metric_domain, normalise, pair_labels,
    summarise, t_interval,
)
from mrsched.errors import ConfigError


def test_t_interval_on_known_sample():
    # mean 3, s = sqrt(2.5), t_{0.975, 4} = 2.7764451; half-width = 2.7764451 * 1.5811388 / sqrt(5)
    mean, low, high = t_interval([1, 2, 3, 4, 5])
    assert mean == 3
    assert low == pytest.approx(3 - 1.9632432, abs=1e-6)
    assert high == pytest.approx(3 + 1.9632432, abs=1e-6)
    m90, l90, h90 = t_interval([1, 2, 3, 4, 5], confidence=0.90)  # t_{0.95, 4} = 2.1318468
    assert h90 - m90 == pytest.approx(2.1318468 * np.sqrt(2.5) / np.sqrt(5), abs=1e-6)


def test_t_interval_degenerate_samples():
    mean, low, high = t_interval([7.0, np.nan])
    assert mean == 7 and np.isnan(low) and np.isnan(high)
    assert all(np.isnan(v) for v in t_interval([]))
    assert t_interval([2, 2, 2]) == (2, 2, 2)


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    sample = rng.exponential(100.0, size=400)
    a = bootstrap_interval(sample, seed=3)
    assert a == bootstrap_interval(sample, seed=3)
    mean, low, high = a
    assert low < mean < high
    # the bootstrap half-width approaches the normal one, 1.96 s / sqrt(n)
    normal = 1.96 * sample.std(ddof=1) / np.sqrt(sample.size)
    assert (high - low) / 2 == pytest.approx(normal, rel=0.15)


def _metrics():
    rows = []
    for policy, waits in [("fcfs", [100, 200, 300]), ("easy", [50, 60, 90])]:
        for part, w in enumerate(waits):
            rows.append({"run_id": f"{policy}-{part}", "policy": policy, "variant": policy,
                         "workload": f"part{part}.json", "part": part, "seed": 0,
                         "status": "ok", "mean_waiting_time": float(w)})
    rows.append({"run_id": "easy-x", "policy": "easy", "variant": "easy", "workload": "part9.json",
                 "part": 9, "seed": 0, "status": "failed", "mean_waiting_time": np.nan})
    return pd.DataFrame(rows)


def test_summarise_per_policy_over_successful_runs():
    s = summarise(_metrics(), "mean_waiting_time").set_index("variant")
    assert list(s.index) == ["easy", "fcfs"]
    assert s.loc["fcfs", "n"] == 3 and s.loc["fcfs", "mean"] == 200
    _, low, high = t_interval([100, 200, 300])
    assert low < 0     # the raw t-interval crosses 0 ...
    # ... the summary clips it to the domain of a waiting time, and says so
    assert (s.loc["fcfs", "ci_low"], s.loc["fcfs", "ci_high"]) == pytest.approx((0.0, high))
    assert s.loc["fcfs", "clipped"] and not s.loc["easy", "clipped"]
    raw = summarise(_metrics(), "mean_waiting_time", clip=False).set_index("variant")
    assert raw.loc["fcfs", "ci_low"] == pytest.approx(low)
    assert s.loc["easy", "n"] == 3  # the failed run is not a sample


def test_normalise_pairs_runs_by_part():
    norm = normalise(_metrics(), "mean_waiting_time", "fcfs").set_index("run_id")
    assert norm.loc["easy-0", "mean_waiting_time_norm"] == pytest.approx(0.5)
    assert norm.loc["easy-1", "mean_waiting_time_norm"] == pytest.approx(0.3)
    assert norm.loc["easy-2", "mean_waiting_time_norm"] == pytest.approx(0.3)
    assert norm.loc["fcfs-1", "mean_waiting_time_norm"] == 1


def test_unknown_baseline_and_metric_suggest_names():
    with pytest.raises(ConfigError, match="did you mean 'fcfs'"):
        normalise(_metrics(), "mean_waiting_time", "fcf")
    with pytest.raises(ConfigError, match="mean_waiting_time"):
        summarise(_metrics(), "mean_waitin_time")


@pytest.mark.parametrize("metric, domain", [
    ("mean_waiting_time", (0, np.inf)), ("p99_turnaround_time", (0, np.inf)),
    ("mean_slowdown", (1, np.inf)), ("max_bounded_slowdown", (1, np.inf)),
    ("utilisation_nodes", (0, 1)), ("utilisation_burst_buffer", (0, 1)),
    ("makespan", (0, np.inf)), ("n_rejected", (0, np.inf)), ("window_start", (-np.inf, np.inf)),
])
def test_metric_domains(metric, domain):
    assert metric_domain(metric) == domain


def test_two_seed_intervals_stay_inside_the_metric_domain():
    """The quickstart's case: 2 seeds, t = 12.7; raw Student-t gave waits of -1.8e4 s and
    utilisations of 1.18."""
    rows = []
    for seed, (wait, util, bsld) in enumerate([(31000.0, 0.98, 1.2), (23800.0, 0.62, 5.0)]):
        rows.append({"run_id": f"p-{seed}", "variant": "p", "status": "ok",
                     "mean_waiting_time": wait, "utilisation_nodes": util,
                     "mean_bounded_slowdown": bsld})
    df = pd.DataFrame(rows)
    for metric, (lo, hi) in [("mean_waiting_time", (0, np.inf)), ("utilisation_nodes", (0, 1)),
                             ("mean_bounded_slowdown", (1, np.inf))]:
        raw = summarise(df, metric, clip=False).iloc[0]
        s = summarise(df, metric).iloc[0]
        assert raw["ci_low"] < lo or raw["ci_high"] > hi      # t alone leaves the domain
        assert lo <= s["ci_low"] <= s["mean"] <= s["ci_high"] <= hi and s["clipped"]
        assert "clipped" in s["interval"]


def test_clip_interval_keeps_nan_and_inner_bounds():
    assert clip_interval("utilisation_nodes", 0.2, 0.4) == (0.2, 0.4, False)
    low, high, clipped = clip_interval("utilisation_nodes", np.nan, np.nan)
    assert np.isnan(low) and np.isnan(high) and not clipped
    assert clip_interval("mean_slowdown", -3.0, 0.5) == (1.0, 1.0, True)


def _seeded(workloads_per_seed: int = 1):
    rows = []
    for policy in ("fcfs", "sjf"):
        for seed in (1, 2, 10):
            for w in range(workloads_per_seed):
                rows.append({"run_id": f"{policy}-{seed}-{w}", "policy": policy, "variant": policy,
                             "workload": f"/c/inputs/workload-synth-{seed}{w}a3f9c0d1e2.json",
                             "part": "", "seed": seed, "status": "ok",
                             "mean_waiting_time": 100.0 * seed + w + (policy == "sjf")})
    return pd.DataFrame(rows)


def test_pairs_are_labelled_by_seed_when_each_seed_has_its_own_workload():
    """A campaign generates one workload per seed: the pair is the seed, not the file hash."""
    df = _seeded()
    match = match_columns(df)
    assert match == ["workload", "seed"]
    labels, axis = pair_labels(df, match)
    assert axis == "seed" and sorted(set(labels)) == ["seed 1", "seed 10", "seed 2"]


def test_pairs_name_the_workload_when_a_seed_has_several():
    df = _seeded(workloads_per_seed=2)
    labels, axis = pair_labels(df, match_columns(df))
    assert axis == "seed / workload"
    assert labels.iloc[0] == "seed 1, workload-synth-10a3f9c0d1e2"


def test_pairs_by_part():
    labels, axis = pair_labels(_metrics(), match_columns(_metrics()))
    assert axis == "part" and list(labels[:3]) == ["part 0", "part 1", "part 2"]
