"""Fuzz (issue 43 item 6): the option parser (``-O key=value`` / campaign mappings ->
``registry.make_scheduler``, ``schedulers/model/params.py``) over every registered policy, its
declared options and any value. Invariant (tests/fuzzing.py): a clean ConfigError naming the
option, or a scheduler whose every declared knob is within its table."""

from __future__ import annotations

import math

from hypothesis import given, strategies as st

from fuzzing import budget, clean
from mrsched.expe.cli_run import parse_options
from mrsched.schedulers import registry

POLICIES = sorted(registry.POLICIES)
TEXT = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e308", "1e999", "-1", "0", "0.5", "2", "true", "false", "yes",
                     "fcfs", "sjf", "none", "measured", "per_event=0.1", "per_job=nan", "", " ", "1_000",
                     "0x10", "1e-400", "noisy", "perfect", "contention", "io-phased", "9" * 40]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers().map(str), st.text(max_size=8))


@st.composite
def policy_options(draw):
    policy = draw(st.sampled_from(POLICIES))
    names = sorted(registry.scheduler_parameters(policy))
    keys = draw(st.lists(st.sampled_from(names) | st.text(min_size=1, max_size=5), max_size=3, unique=True))
    return policy, {k: draw(TEXT) for k in keys}


@budget(150)
@given(policy_options())
def test_fuzz_policy_options(case):
    policy, options = case
    sched = clean(registry.make_scheduler, policy, options)
    if sched is None:
        return
    from mrsched.schedulers.model.params import RunOptions

    run = getattr(sched, "options", None)
    if isinstance(run, RunOptions):
        run.check(policy)   # every runtime knob within its declared table (finite, in range)
        assert all(not isinstance(v, float) or math.isfinite(v) for v in vars(run).values())


@budget(60)
@given(st.lists(st.text(max_size=10), max_size=4))
def test_fuzz_option_pairs(pairs):
    options = clean(parse_options, pairs)
    if options is not None:
        assert all(isinstance(k, str) and k == k.strip() and k for k in options)
