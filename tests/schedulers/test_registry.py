"""The registry: names, options, coercion, clear errors, the ``mrsched policies`` command."""

from __future__ import annotations

import pytest

from mrsched.cli import main
from mrsched.errors import ConfigError
from mrsched.schedulers.model.contract import Policy
from mrsched.schedulers.execution.runtime import PolicyScheduler
from mrsched.schedulers.model.params import RunOptions
from mrsched.schedulers.registry import (POLICIES, make_policy, make_runtime, make_scheduler,
                                         make_scheduler_of_class, policy_parameters, scheduler_parameters)


def test_papers_names_are_registered():
    assert {"fcfs", "filler", "fcfs-easy", "fcfs-bb", "sjf-bb", "conservative-bb"} <= set(POLICIES)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_round_trips_its_params(name):
    policy = make_policy(name)
    assert policy.get_params() == policy_parameters(name)
    clone = make_policy(name, **policy.get_params())
    assert clone.get_params() == policy.get_params()
    assert {"job_model", "period", "decision_cost"} <= set(scheduler_parameters(name))
    assert "job_model" not in policy.get_params()        # the runtime's knob, declared once


def test_variants_are_data_not_subclasses():
    """``fcfs-easy``, ``fcfs-bb`` and ``sjf-bb`` are one class with other defaults."""
    classes = {type(make_policy(n)) for n in ("fcfs-easy", "fcfs-bb", "sjf-bb", "easy-bf")}
    assert len(classes) == 1
    assert type(make_policy("plan-1")) is type(make_policy("plan-3"))
    assert make_policy("plan-3").alpha == 3.0 and make_policy("weighted-cpu").node_weight == 0.8
    assert make_policy("fcfs-easy").policy_name() == "fcfs-easy"


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
        make_runtime("fcfs", job_model="io_phased")
    assert make_runtime("fcfs", job_model="io-phased").options.job_model == "io-phased"
    with pytest.raises(ConfigError, match="'job_model' is an option of the runtime"):
        make_policy("fcfs", job_model="io-phased")
    with pytest.raises(ConfigError, match="'knowledge_noise' must be a finite number"):
        make_runtime("fcfs-easy", knowledge_noise=float("nan"))
    with pytest.raises(ConfigError, match="'period' must be a finite number"):
        make_scheduler("fcfs", {"period": "inf"})
    with pytest.raises(ConfigError, match="unknown option 'io_aware'"):   # no io service
        make_scheduler("plan-2", {"io_aware": "true"})


def test_make_scheduler_coerces_strings():
    sched = make_scheduler("conservative-bb", {"period": "60", "order": "sjf"})
    assert isinstance(sched, PolicyScheduler)
    assert sched.runtime.options.period == 60.0 and sched.policy.order == "sjf"
    ips = make_scheduler("ipsched", {"period": "10"})      # ipsched's own knob, the runtime's too
    assert ips.policy.period == 10.0 and ips.runtime.options.period == 10.0
    assert make_scheduler("aucsched").runtime.options.period == 5.0
    assert make_scheduler("fcfs-bb", {"depth": "3"}).policy.depth == 3
    with pytest.raises(ConfigError, match="'depth' must be int"):
        make_scheduler("fcfs-bb", {"depth": "three"})
    # integers are read exactly, not through a float; "1e3" and "2.0" are whole numbers too
    assert make_scheduler("fcfs-bb", {"depth": "12345678901234567891"}).policy.depth == 12345678901234567891
    assert make_scheduler("fcfs-bb", {"depth": "1e3"}).policy.depth == 1000
    with pytest.raises(ConfigError, match="'depth' must be int"):
        make_scheduler("fcfs-bb", {"depth": "2.5"})
    with pytest.raises(ConfigError, match="unknown option"):
        make_scheduler("fcfs-bb", {"window": "3"})


def test_a_users_policy_class_runs_with_the_runtimes_options():
    class Noop(Policy):
        name = "noop"

        def __init__(self, *, depth: int = 1):
            self.depth = depth

        def schedule(self, ctx):
            return ctx.decisions

    sched = make_scheduler_of_class(Noop, {"depth": "2", "period": "30"})
    assert sched.policy.depth == 2 and sched.runtime.options == RunOptions(period=30.0)
    with pytest.raises(ConfigError, match="unknown option 'io_aware'"):
        make_scheduler_of_class(Noop, {"io_aware": "true"})


def test_policies_command(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "sjf-bb" in out and "conservative-bb" in out
    assert main(["policies", "fcfs-bb"]) == 0
    out = capsys.readouterr().out
    assert "depth=1 (int" in out and "reserve='all'" in out
    assert main(["policies", "nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err
