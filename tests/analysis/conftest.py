"""Figures a test draws with the plot functions are closed after it: a caller that keeps a
returned figure owns it (pyplot holds it until closed); the report closes its own, which
``test_report_outputs`` checks."""

import sys

import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
