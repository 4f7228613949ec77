"""A Gymnasium environment on the step interface (``mrsched.stepping``): an agent chooses which
waiting job starts, on Batsim's semantics with burst buffers and GPUs (issue 45, item 3).

``make(platform, workload, **options)`` returns a :class:`SchedulingEnv` (the ``gym`` extra:
``pip install mrsched[gym]``, Gymnasium 1.x). One step is one decision at a scheduling point:

- observation: a float32 vector, per slot of the queue window (the first ``window`` waiting
  jobs in submission order) ``JOB_FEATURES``, then per resource kind (``KINDS``) its free share
  now; ``info["action_mask"]`` (and ``action_masks()``) the window slots whose job can start
  now; a point is only made when one can;
- action: a window slot; its job starts now. A masked slot starts the first feasible job
  instead (``info["invalid_action"]``). When no window job fits any more, the ``base`` policy
  (``fcfs-easy`` by default: the head's reservation, backfilling) decides on the whole queue
  and the engine goes on to the next point;
- reward: 0 until the episode ends, then the chosen metric of ``mrsched report``
  (``Result.metrics``): its negation for a cost (``mean_bounded_slowdown``, the default,
  with ``tau`` 600 s), itself for ``utilisation_*``; or ``reward(result) -> float``;
- episodes: the whole workload, or with ``episode_jobs=N`` N consecutive jobs from a start
  drawn by the ``reset`` seed, their submission times shifted to start at 0 (RLScheduler's
  sampling of trace windows).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Callable

try:
    import gymnasium
    from gymnasium import spaces
except ModuleNotFoundError as exc:   # the optional extra: say how to get it, in one line
    if exc.name != "gymnasium":
        raise
    from mrsched.errors import ConfigError

    raise ConfigError("mrsched.gym needs Gymnasium 1.x", hint="pip install 'mrsched[gym]'") from None
import numpy as np

from mrsched.errors import ConfigError
from mrsched.stepping import Stepper

#: per window slot: present, can start now, wait (h), walltime (h), nodes, burst buffer and GPU
#: shares of the machine
JOB_FEATURES = ("present", "feasible", "wait_hours", "walltime_hours", "nodes_share", "bb_share",
                "gpu_share")
KINDS = ("nodes", "burst_buffer", "gpus")
#: metrics where more is better (the reward is the value, not its negation)
HIGHER_IS_BETTER = ("utilisation",)
#: every value is capped here (hours of wait or walltime; an oversized job's shares): the
#: observation space is bounded
MAX_VALUE = 1e4


def make(platform: Any, workload: Any, **options: Any) -> "SchedulingEnv":
    """A :class:`SchedulingEnv` on ``platform`` and ``workload`` (paths or the generators'
    objects, as ``mrsched.simulate`` takes them); ``options`` are its keywords."""
    return SchedulingEnv(platform, workload, **options)


class SchedulingEnv(gymnasium.Env):
    """Which waiting job starts next (see the module docstring). Keywords: ``window`` (16),
    ``base`` (``"fcfs-easy"``; None: no backfilling), ``reward`` (a metric name or a
    function of the ``mrsched.Result``), ``tau`` (bounded slowdown threshold, 600 s),
    ``episode_jobs`` (None: the whole workload), ``options`` (the runtime's, as
    ``mrsched.simulate``), and ``simulate``'s keywords (``roles``, ``bb_capacity``...)."""

    metadata = {"render_modes": []}

    def __init__(self, platform: Any, workload: Any, *, window: int = 16, base: str | None = "fcfs-easy",
                 reward: str | Callable = "mean_bounded_slowdown", tau: float = 600.0,
                 episode_jobs: int | None = None, options: dict | None = None, **simulate_kw: Any):
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ConfigError(f"window must be a positive number of jobs, got {window!r}", field="window")
        if not callable(reward) and not isinstance(reward, str):
            raise ConfigError("reward must be a metric name or a function of the result", field="reward")
        self.platform, self.window, self.base = platform, window, base
        self.reward_spec, self.tau = reward, float(tau)
        self.options, self.simulate_kw = dict(options or {}), simulate_kw
        self.workload = _read_workload(workload)
        nb = len(self.workload["jobs"])
        if episode_jobs is not None and (isinstance(episode_jobs, bool) or not isinstance(episode_jobs, int)
                                         or not 1 <= episode_jobs):
            raise ConfigError(f"episode_jobs must be a positive number of jobs, got {episode_jobs!r}",
                              field="episode_jobs")
        self.episode_jobs = None if episode_jobs is None or episode_jobs >= nb else episode_jobs
        size = window * len(JOB_FEATURES) + len(KINDS)
        self.observation_space = spaces.Box(0.0, MAX_VALUE, shape=(size,), dtype=np.float32)
        self.action_space = spaces.Discrete(window)
        self._stepper: Stepper | None = None
        self._point = None
        self.result = None

    # -- Gymnasium's interface -----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.close()
        self.result = None
        self._stepper = Stepper(self.platform, self._episode(), base=self.base, window=self.window,
                                options=self.options, **self.simulate_kw)
        self._point = self._stepper.next()
        if self._point is None:
            raise ConfigError("the episode's workload gives the agent no decision to take "
                              "(no job can ever start)", field="workload")
        return self._observation(), self._info()

    def step(self, action):
        point = self._point
        if point is None:
            raise ConfigError("step() after the episode ended: call reset()")
        action = int(action)
        invalid = not (0 <= action < len(point.mask) and point.mask[action])
        point.start(point.feasible[0] if invalid else point.window[action])
        self._point = self._stepper.next()
        if self._point is None:
            self.result = self._stepper.result
            obs = np.zeros(self.observation_space.shape, dtype=np.float32)
            return obs, self._reward(self.result), True, False, {"action_mask": self._mask(None),
                                                                "invalid_action": invalid,
                                                                "result": self.result}
        return self._observation(), 0.0, False, False, {**self._info(), "invalid_action": invalid}

    def action_masks(self) -> np.ndarray:
        """The slots whose job can start now (sb3-contrib's MaskablePPO reads this)."""
        return self._mask(self._point)

    def close(self) -> None:
        if self._stepper is not None:
            self._stepper.close()
            self._stepper = None
        self._point = None

    # -- what the agent sees -------------------------------------------------------------
    def _mask(self, point) -> np.ndarray:
        mask = np.zeros(self.window, dtype=np.int8)
        if point is not None:
            mask[:len(point.mask)] = point.mask
        return mask

    def _info(self) -> dict:
        point = self._point
        return {"action_mask": self._mask(point), "now": point.now, "waiting": point.waiting,
                "jobs": [job.id for job in point.window]}

    def _observation(self) -> np.ndarray:
        point = self._point
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        cap = point.capacity
        width = len(JOB_FEATURES)
        for slot, (job, ok) in enumerate(zip(point.window, point.mask)):
            req = job.request
            obs[slot * width:(slot + 1) * width] = (
                1.0, float(ok), max(0.0, point.now - job.subtime) / 3600.0, req.walltime / 3600.0,
                req.nodes / cap["nodes"] if cap["nodes"] else 0.0,
                req.bb_total / cap["burst_buffer"] if cap["burst_buffer"] else 0.0,
                req.gpus_per_node * req.nodes / cap["gpus"] if cap["gpus"] else 0.0)
        base = self.window * width
        for k, kind in enumerate(KINDS):
            obs[base + k] = point.free[kind] / cap[kind] if cap.get(kind) else 0.0
        return np.minimum(obs, MAX_VALUE, out=obs)

    def _reward(self, result) -> float:
        if callable(self.reward_spec):
            return float(self.reward_spec(result))
        metrics = result.metrics if self.tau == 600.0 else result.metrics_at(self.tau)
        if self.reward_spec not in metrics:
            raise ConfigError(f"no metric '{self.reward_spec}'", field="reward",
                              hint=f"one of {', '.join(k for k, v in metrics.items() if isinstance(v, float))}")
        value = float(metrics[self.reward_spec])
        if math.isnan(value):
            return 0.0
        return value if self.reward_spec.startswith(HIGHER_IS_BETTER) else -value

    # -- episodes ------------------------------------------------------------------------
    def _episode(self) -> dict:
        """The workload of the next episode (see the module docstring)."""
        if self.episode_jobs is None:
            return self.workload
        jobs = sorted(self.workload["jobs"], key=lambda j: float(j["subtime"]))
        first = int(self.np_random.integers(0, len(jobs) - self.episode_jobs + 1))
        chosen = copy.deepcopy(jobs[first:first + self.episode_jobs])
        t0 = float(chosen[0]["subtime"])
        for job in chosen:
            job["subtime"] = float(job["subtime"]) - t0
        return {**self.workload, "jobs": chosen}


def _read_workload(workload: Any) -> dict:
    """The workload as a dict (episodes are cut from it)."""
    if isinstance(workload, dict):
        if not isinstance(workload.get("jobs"), list) or not workload["jobs"]:
            raise ConfigError("the workload has no 'jobs' list", field="workload")
        return workload
    if isinstance(workload, (str, Path)):
        from mrsched.expe.validation import read_workload

        data = read_workload(workload, key="workload")
        if not data.get("jobs"):
            raise ConfigError("the workload has no job", file=str(workload), field="jobs")
        return data
    raise ConfigError(f"workload must be a path or a workload dict, got {type(workload).__name__}",
                      field="workload")
