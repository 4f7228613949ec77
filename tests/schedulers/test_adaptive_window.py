"""The seed 002 MILP window: halved on a timeout, doubled back after ten calm rounds."""

from mrsched.schedulers.optim.window import AdaptiveWindow


def test_timeout_halves_and_calm_rounds_double_back():
    w = AdaptiveWindow(200)
    w.timed_out()
    w.timed_out()
    assert w.current == 50
    for _ in range(9):
        w.solved(seconds=1.0, limit=5.0)
    assert w.current == 50                     # nine calm rounds are not enough
    w.solved(seconds=1.0, limit=5.0)
    assert w.current == 100
    for _ in range(10):
        w.solved(seconds=3.0, limit=5.0)       # over half the limit: not calm
    assert w.current == 100
    for _ in range(30):
        w.solved(seconds=0.1, limit=5.0)
    assert w.current == 200                    # never beyond its size


def test_never_below_one_and_a_timeout_resets_the_calm_count():
    w = AdaptiveWindow(3)
    for _ in range(5):
        w.timed_out()
    assert w.current == 1
    for _ in range(9):
        w.solved(0.0, 1.0)
    w.timed_out()
    w.solved(0.0, 1.0)
    assert w.current == 1 and w.calm == 1
