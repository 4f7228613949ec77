"""``mrsched.errors``: the hints that name what is valid."""

from mrsched.errors import suggest


def test_suggest_names_the_closest_then_the_valid_names():
    assert suggest("fcfs-eays", ["fcfs", "fcfs-easy", "sjf-bb"]) == \
        "did you mean 'fcfs-easy'? valid: fcfs, fcfs-easy, sjf-bb"


def test_suggest_orders_names_naturally_each_once():
    assert suggest("zzz", ["job10", "job2", "job2"]) == "valid: job2, job10"


def test_suggest_says_when_nothing_is_defined():
    # a workload without profiles: not "valid: " followed by nothing
    assert suggest("1", {}) == "none is defined"
