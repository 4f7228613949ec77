"""The seed 002 MILP window: halved on each timeout, never below one job, never grown back."""

from mrsched.schedulers.optim.window import AdaptiveWindow


def test_each_timeout_halves_down_to_one():
    w = AdaptiveWindow(200)
    w.timed_out()
    w.timed_out()
    assert w.current == 50 and w.size == 200
    for _ in range(10):
        w.timed_out()
    assert w.current == 1
