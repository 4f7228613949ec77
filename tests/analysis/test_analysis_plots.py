"""Comparison plots: what a reader of the report sees on each chart (axis ranges, tick
labels, whiskers, label placement)."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mrsched.analysis import plots  # noqa: E402
from mrsched.analysis.campaign import summarise  # noqa: E402


def _summary(values_by_policy: dict[str, list[float]], metric="mean_waiting_time"):
    rows = [{"run_id": f"{p}-{i}", "variant": p, "status": "ok", metric: v}
            for p, vs in values_by_policy.items() for i, v in enumerate(vs)]
    s = summarise(pd.DataFrame(rows), metric)
    s["group"] = s["variant"]
    return s, {p: np.asarray(v, float) for p, v in values_by_policy.items()}


def _whiskers(ax):
    """(x, low, high) of every vertical black segment."""
    out = []
    for line in ax.get_lines():
        x, y = line.get_xdata(), line.get_ydata()
        if len(x) == 2 and x[0] == x[1] and line.get_color() == "black":
            out.append((float(x[0]), float(min(y)), float(max(y))))
    return sorted(out)


def test_two_runs_whiskers_are_their_range_not_a_t_interval():
    """2 seeds: t = 12.7 made the whiskers of the quickstart's bars 3-9x the bars; the
    whisker is now the two runs' range, the axis ends near the tallest run."""
    s, points = _summary({"fcfs": [31000, 23800], "sjf-bb": [5400, 2800]})
    fig = plots.ci_plot(s, label="group", points=points)
    ax = fig.axes[0]
    assert _whiskers(ax) == [(0.0, 23800.0, 31000.0), (1.0, 2800.0, 5400.0)]
    assert ax.get_ylim() == pytest.approx((0.0, plots.CI_HEADROOM * 31000))
    assert "range of runs" in ax.get_title()


def test_a_long_t_whisker_is_cut_at_the_axis_with_its_bound_written():
    """Without the runs' values the axis follows the bars: a whisker reaching past it ends in
    an arrow, its bound written beside it."""
    s, _ = _summary({"a": [100, 110, 120, 130], "b": [10, 20, 30, 900]})
    high_b = float(s.set_index("variant").loc["b", "ci_high"])
    assert high_b > plots.CI_HEADROOM * 120      # the t-interval reaches past the axis
    fig = plots.ci_plot(s, label="group")
    ax = fig.axes[0]
    top = ax.get_ylim()[1]
    assert top == pytest.approx(plots.CI_HEADROOM * 240)    # the tallest bar: b's mean
    assert all(low >= 0 and high <= top + 1e-9 for _, low, high in _whiskers(ax))
    assert [t.get_text() for t in ax.texts] == [plots._short(high_b)]
    assert "CI" in ax.get_title()


def test_bar_chart_ticks_have_thousands_separators():
    s, points = _summary({"fcfs": [31000, 23800], "sjf-bb": [5400, 2800]})
    fig = plots.ci_plot(s, label="group", points=points)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "20,000" in labels and "20000" not in labels


def _visible_ytick_labels(ax) -> list[str]:
    ax.figure.canvas.draw()
    lo, hi = ax.get_ylim()
    return [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks())
            if t.get_text() and min(lo, hi) <= v <= max(lo, hi)]


@pytest.mark.parametrize("waits", [
    np.linspace(20000, 70000, 50),              # the quickstart's tail: under one decade
    np.geomspace(5, 50000, 50),                 # four decades, all positive
    np.concatenate([np.zeros(10), np.geomspace(1, 1e5, 40)]),   # zero waits: symlog
    np.geomspace(1.5, 9e8, 50),                 # nine decades
])
def test_tail_plot_has_y_tick_labels(waits):
    """The symlog axis labelled only powers of 10: a tail between 2e4 and 7e4 s had none."""
    jobs = {"a": pd.DataFrame({"waiting_time": waits}),
            "b": pd.DataFrame({"waiting_time": waits / 2})}
    ax = plots.tail_plot(jobs, "waiting_time", n=50).axes[0]
    labels = _visible_ytick_labels(ax)
    assert len(labels) >= 3, labels
    assert ax.get_ylabel() == "Waiting time (s)"
    assert all("," in t for t in labels if float(t.replace(",", "")) >= 1000)


def test_normalised_plot_labels_seeds_in_natural_order():
    from mrsched.analysis.campaign import match_columns, normalise, pair_labels

    rows = [{"run_id": f"{p}-{seed}", "variant": p, "status": "ok", "seed": seed,
             "workload": f"inputs/workload-synth300-{seed:02d}c9e52784eb9.json",
             "mean_waiting_time": 1000.0 * seed * (1 if p == "fcfs" else 0.3)}
            for p in ("fcfs", "sjf-bb") for seed in (1, 2, 10)]
    metrics = pd.DataFrame(rows)
    match = match_columns(metrics)
    norm = normalise(metrics, "mean_waiting_time", "fcfs", match=match)
    labels, axis = pair_labels(norm, match)
    fig = plots.normalised_plot(norm.assign(pair=labels), "mean_waiting_time", "fcfs", by="pair",
                                xlabel=axis)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["seed 1", "seed 2", "seed 10"]
    assert ax.get_xlabel() == "seed"
    assert len(_visible_ytick_labels(ax)) >= 2      # 0.3 and 1 both labelled


@pytest.mark.parametrize("n_metrics", [3, 5, 7])
def test_kiviat_labels_do_not_overlap(n_metrics):
    """Metric names, radial scale, legend and title each in its own place, inside the figure
    (the names at 0 and 180 degrees crossed the radial scale, the legend the top names)."""
    metrics = ["mean_waiting_time", "mean_bounded_slowdown", "mean_turnaround_time", "makespan",
               "utilisation_nodes", "utilisation_burst_buffer", "utilisation_gpus"][:n_metrics]
    rng = np.random.default_rng(n_metrics)
    scores = pd.DataFrame(rng.uniform(0.2, 1.0, (5, n_metrics)), columns=metrics,
                          index=["fcfs", "fcfs-easy", "conservative-bb(variant=batsched)",
                                 "sjf-bb", "filler"])
    fig = plots.kiviat_plot(scores)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    names = [t for t in ax.texts]
    assert sorted(t.get_text().replace("\n", " ") for t in names) == \
        sorted(re.sub(r" \([^)]*\)$", "", plots.metric_label(m)) for m in metrics)
    assert "Mean waiting time" in [t.get_text().replace("\n", " ") for t in names]
    boxes = [t.get_window_extent(renderer) for t in names]
    boxes += [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
    boxes += [fig.legends[0].get_window_extent(renderer), fig._suptitle.get_window_extent(renderer)]
    for i, a in enumerate(boxes):
        assert fig.bbox.contains(a.x0, a.y0) and fig.bbox.contains(a.x1, a.y1), i
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def test_bar_chart_has_one_kind_of_whisker_named_in_its_title():
    """Issue 41: a chart mixed the runs' range (policies of 2-3 runs) and t-intervals; one
    kind per figure, the range as soon as one policy has too few runs for a t-interval."""
    one, points = _summary({"a": [100.0], "b": [50.0]})
    ax = plots.ci_plot(one, label="group", points=points).axes[0]
    assert ax.get_title() == "Mean waiting time (s): mean" and _whiskers(ax) == []
    many, points = _summary({"a": [1, 2], "b": [1, 2, 3, 4, 5]})
    ax = plots.ci_plot(many, label="group", points=points).axes[0]
    assert ax.get_title() == "Mean waiting time (s): mean, range of runs"
    assert _whiskers(ax) == [(0.0, 1.0, 2.0), (1.0, 1.0, 5.0)]
    enough, points = _summary({"a": [1, 2, 3, 4], "b": [1, 2, 3, 4, 5]})
    ax = plots.ci_plot(enough, label="group", points=points).axes[0]
    assert ax.get_title() == "Mean waiting time (s): mean, 95% CI"
    t = enough.set_index("variant")
    assert _whiskers(ax)[1][1:] == pytest.approx((t.loc["b", "ci_low"], t.loc["b", "ci_high"]))
    assert plots.whisker_kind([1, 4, 6]) == "t" and plots.whisker_kind([1, 1]) == "none"
    assert plots.whisker_kind([3, 8]) == "range"


def test_binned_steps_mean_min_max_match_a_brute_force():
    """Per bin: the time-weighted mean and the range of the steps overlapping it."""
    from mrsched.analysis.timeaxis import binned_steps

    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(2, 60))
        t = np.sort(rng.choice(np.arange(1000), n, replace=False)).astype(float)
        v = rng.random(n)
        bins = int(rng.integers(1, 30))
        edges, mean, low, high = binned_steps(t, v, bins)
        ends = np.append(t[1:], t[-1])
        for k in range(bins):
            a, b = edges[k], edges[k + 1]
            overlap = np.clip(np.minimum(ends, b) - np.maximum(t, a), 0, None)
            assert mean[k] == pytest.approx((overlap * v).sum() / (b - a), abs=1e-9)
            inside = v[(t < b) & (ends > a) | (t <= a) & (a < ends)]
            assert (low[k], high[k]) == (inside.min(), inside.max())


def test_a_long_utilisation_series_is_binned_and_says_so():
    """A million-job run's steps drawn whole are a solid block: beyond UTILISATION_STEPS the
    plot shows the mean per bin and the bin's range, and the title says how."""
    from mrsched.analysis.plots import utilisation_plot
    from mrsched.analysis.timeaxis import UTILISATION_STEPS

    n = UTILISATION_STEPS + 1
    time = np.arange(n, dtype=float) * 10.0
    fraction = np.where(np.arange(n) % 2 == 0, 1.0, 0.0)    # in use half of the time
    fig = utilisation_plot({"nodes": pd.DataFrame({"time": time, "fraction": fraction}),
                            "burst_buffer": pd.DataFrame({"time": [0.0, 5.0], "fraction": [0.5, 0.0]})})
    ax = fig.axes[0]
    assert "aggregated: mean per bin of 200 s over 1,000 bins" in ax.get_title()
    assert f"(steps: nodes {n:,})" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["nodes (mean)", "burst buffer"]
    stairs = [p for p in ax.patches if type(p).__name__ == "StepPatch"]
    assert len(stairs) == 1 and np.allclose(stairs[0].get_data().values, 50.0)   # percent
    colours = [line.get_color() for line in ax.get_lines()] + [stairs[0].get_edgecolor()]
    from matplotlib.colors import to_hex
    assert len({to_hex(c) for c in colours}) == 2          # nodes and burst buffer differ
    short = utilisation_plot({"nodes": pd.DataFrame({"time": time[:100], "fraction": fraction[:100]})})
    assert "aggregated" not in short.axes[0].get_title()
