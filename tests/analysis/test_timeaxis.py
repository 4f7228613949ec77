"""The time axis shared by a run's panels: unit by span, origin at the first submission,
natural ticks in the report's number format (issue 41 item 7)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from mrsched.analysis.timeaxis import number_text, time_axis  # noqa: E402


@pytest.mark.parametrize("span, unit", [(600, "s"), (3 * 3600, "s"), (3 * 3600 + 1, "h"),
                                        (85_000, "h"), (3 * 86400, "h"), (2_000_000, "d")])
def test_the_unit_follows_the_span(span, unit):
    assert time_axis(0.0, span).unit == unit


def test_the_axis_starts_at_zero_at_the_first_submission_and_says_so():
    axis = time_axis(1_000_000.0, 1_000_000.0 + 2 * 86400)
    assert axis.x(1_000_000.0) == 0 and axis.right == pytest.approx(48.0)
    assert axis.label == "time since the first submission (h)"
    assert time_axis(0.0, 7200).label == "time (s)"


@pytest.mark.parametrize("span", [7_000, 85_000, 2_000_000])
def test_ticks_start_at_zero_and_read_plainly(span):
    axis = time_axis(0.0, span)
    fig, ax = plt.subplots()
    axis.apply(ax)
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    assert lo == 0 and hi == pytest.approx(axis.right)
    labels = [t.get_text() for t, v in zip(ax.get_xticklabels(), ax.get_xticks()) if 0 <= v <= hi]
    assert labels[0] == "0" and len(labels) >= 3
    assert not any("e" in t or "+" in t for t in labels), labels
    if axis.unit == "h":
        steps = {float(b) - float(a) for a, b in zip(labels, labels[1:])}
        assert steps <= {1, 2, 3, 4, 6, 10, 12, 20, 30, 40, 60}, steps
    plt.close(fig)


def test_number_text_is_the_report_format():
    assert number_text(20000) == "20,000" and number_text(0.5) == "0.5" and number_text(0) == "0"
    assert number_text(12.0) == "12"
