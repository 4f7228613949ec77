"""The registry: names, options, coercion, clear errors, the ``mrsched policies`` command."""

from __future__ import annotations

import pytest

from mrsched.cli import main
from mrsched.errors import ConfigError
from mrsched.schedulers.model.contract import Policy
from mrsched.schedulers.registry import (POLICIES, make_policy, make_scheduler, policy_parameters,
                                         register)
from mrsched.schedulers.execution.runtime import PolicyScheduler


def test_papers_names_are_registered():
    assert {"fcfs", "filler", "fcfs-easy", "fcfs-bb", "sjf-bb", "conservative-bb"} <= set(POLICIES)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_round_trips_its_params(name):
    policy = make_policy(name)
    assert policy.get_params() == policy_parameters(name)
    clone = make_policy(name, **policy.get_params())
    assert clone.get_params() == policy.get_params()
    assert {"job_model", "period"} <= set(policy.get_params())


def test_defaults_follow_the_paper():
    assert policy_parameters("sjf-bb")["order"] == "sjf"
    assert policy_parameters("fcfs-easy")["reserve"] == "nodes"
    assert policy_parameters("fcfs-bb")["reserve"] == "all"
    assert policy_parameters("conservative-bb")["compression"] == "batsched"


def test_unknown_names_and_bad_values_are_config_errors():
    with pytest.raises(ConfigError, match="did you mean 'sjf-bb'"):
        make_policy("sjf_bb")
    with pytest.raises(ConfigError, match="unknown option 'deph'.*valid: depth"):
        make_policy("fcfs-bb", deph=2)
    with pytest.raises(ConfigError, match="'order' must be one of"):
        make_policy("fcfs-bb", order="random")
    with pytest.raises(ConfigError, match="'depth' must be >= 1"):
        make_policy("fcfs-bb", depth=0)
    with pytest.raises(ConfigError, match="'depth' must be int"):
        make_policy("fcfs-bb", depth=1.5)
    with pytest.raises(ConfigError, match="'job_model' must be one of"):
        make_policy("fcfs", job_model="io_phased")
    assert make_policy("fcfs", job_model="io-phased").job_model == "io-phased"   # schedulers/execution/iophased.py


def test_make_scheduler_coerces_strings():
    sched = make_scheduler("conservative-bb", {"period": "60", "order": "sjf"})
    assert isinstance(sched, PolicyScheduler)
    assert sched.policy.get_params()["period"] == 60.0
    assert make_scheduler("fcfs-bb", {"depth": "3"}).policy.depth == 3
    with pytest.raises(ConfigError, match="'depth' must be int"):
        make_scheduler("fcfs-bb", {"depth": "three"})
    with pytest.raises(ConfigError, match="unknown option"):
        make_scheduler("fcfs-bb", {"window": "3"})


def test_register_decorator_adds_and_refuses_clashes():
    @register("test-noop")
    class Noop(Policy):
        def __init__(self, *, job_model: str = "alloc-only", period: float = 0.0):
            self.job_model = job_model
            self.period = period

    try:
        assert make_policy("test-noop").get_params() == {"job_model": "alloc-only", "period": 0.0}
        with pytest.raises(ConfigError, match="already registered"):
            register("fcfs")(Noop)
    finally:
        del POLICIES["test-noop"]


def test_policies_command(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "sjf-bb" in out and "conservative-bb" in out
    assert main(["policies", "fcfs-bb"]) == 0
    out = capsys.readouterr().out
    assert "depth=1 (int" in out and "reserve='all'" in out
    assert main(["policies", "nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err
