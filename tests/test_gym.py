"""mrsched.gym (the ``gym`` extra): Gymnasium's environment checker passes, an episode of the
first-fit agent is the registered ``filler`` run, masks, rewards and seeded episodes behave,
and docs/GYM.md's agents run. Skipped, saying why, only when Gymnasium is not installed."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium", reason="the gym extra (Gymnasium) is not installed")

import numpy as np  # noqa: E402

import mrsched  # noqa: E402
import mrsched.gym  # noqa: E402
from mrsched.errors import ConfigError  # noqa: E402
from inputs_rule import reference_case as case  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def first_fit_episode(env, seed=0):
    obs, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        obs, reward, done, truncated, info = env.step(int(np.argmax(info["action_mask"])))
        assert env.observation_space.contains(obs) and not truncated
        steps += 1
    return steps, reward


def test_the_environment_checker_passes():
    from gymnasium.utils.env_checker import check_env

    env = mrsched.gym.make(*case("walltime"), window=4, episode_jobs=12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert not [w for w in caught if "mrsched" in str(w.filename) or "WARN" in str(w.message)], \
        [str(w.message) for w in caught]
    env.close()


@pytest.mark.parametrize("name", ["walltime", "easy250"])
def test_first_fit_episode_is_the_registered_filler(name):
    platform, workload = case(name)
    env = mrsched.gym.make(platform, workload, window=6, base="filler")
    steps, reward = first_fit_episode(env)
    ref = mrsched.simulate(platform, workload, "filler")
    assert env.result.csv_text("jobs") == ref.csv_text("jobs")
    assert steps > 0 and reward == -ref.metrics["mean_bounded_slowdown"]


def test_masks_observations_and_invalid_actions():
    env = mrsched.gym.make(*case("easy250"), window=5)
    obs, info = env.reset(seed=1)
    assert obs.shape == (5 * len(mrsched.gym.JOB_FEATURES) + len(mrsched.gym.KINDS),)
    mask = info["action_mask"]
    assert mask.dtype == np.int8 and mask.any() and (env.action_masks() == mask).all()
    feasible = obs[1:5 * 7:7]                     # the "feasible" feature of each slot
    assert (feasible == mask).all()
    blocked = np.flatnonzero(mask == 0)
    action = int(blocked[0]) if len(blocked) else 0
    _, _, _, _, info = env.step(action)
    assert info["invalid_action"] is bool(len(blocked))
    env.close()


def test_rewards_are_the_chosen_metric():
    platform, workload = case("walltime")
    for reward, sign in (("mean_waiting_time", -1), ("utilisation_nodes", 1)):
        env = mrsched.gym.make(platform, workload, base="filler", reward=reward)
        _, value = first_fit_episode(env)
        assert value == sign * env.result.metrics[reward]
    env = mrsched.gym.make(platform, workload, reward=lambda result: result.makespan)
    _, value = first_fit_episode(env)
    assert value == env.result.makespan
    env = mrsched.gym.make(platform, workload, reward="no_such_metric")
    with pytest.raises(ConfigError):
        first_fit_episode(env)


def test_episodes_are_drawn_by_the_seed():
    env = mrsched.gym.make(*case("easy250"), window=4, episode_jobs=20)
    runs = {}
    for seed in (0, 0, 1):
        first_fit_episode(env, seed)
        runs.setdefault(seed, []).append(env.result.csv_text("jobs"))
        assert len(env.result.jobs) == 20
    assert runs[0][0] == runs[0][1] and runs[0][0] != runs[1][0]


def test_bad_options_are_refused():
    with pytest.raises(ConfigError):
        mrsched.gym.make(*case("delays"), window=0)
    with pytest.raises(ConfigError):
        mrsched.gym.make(*case("delays"), episode_jobs=-1)


def test_the_guide_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "GYM.md").read_text(), re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "gym_guide"}
    for i, body in enumerate(blocks):
        exec(compile(body, f"GYM.md block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "random_agent" in out and "first_fit_agent" in out
