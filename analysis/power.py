"""Energy and power of a run: the platform's power over time, energy per run and per job, mean
and peak power, energy-delay product.

Two sources, the run says which (``PowerSeries.measured``):

- **measured**: the engine ran with Batsim's ``-E`` (``mrsched run --energy``): its
  ``out_consumed_energy.csv`` gives the platform's energy at every job start and end and every
  pstate change (``EnergyConsumptionTracer``, Batsim ``src/export.cpp`` 824-868), so the power
  between two rows is their energy difference over their time difference (the power is
  constant between them: it changes only when a job or a pstate does); each job's energy is
  Batsim's ``consumed_energy`` (its machines' energy from its start to its end).
- **estimated** from the platform's ``wattage_per_state`` (SimGrid's ``Idle:Epsilon:AllCores``
  per pstate, ``host_energy.cpp``) when the engine did not run with ``-E``: every machine in
  its initial pstate, drawing Idle when no job runs on it and ``Epsilon + busy_load x (AllCores
  - Epsilon)`` while one does (``busy_load`` 1: a job keeps its machines' cores busy; SimGrid
  itself charges a ``delay`` job Idle, having no CPU load to see). Storage machines draw Idle
  throughout; the master host is not counted, as in Batsim's totals. Without wattage on the
  compute machines there is no estimate.

Over the run's window (first submission to last finish, the one utilisation uses): energy
(J), mean power (W) = energy / window, peak power (W) = the highest power in the window, and
the energy-delay product = energy x window (J s).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mrsched.analysis.jobs import parse_intervals
from mrsched.errors import MrschedError

ENERGY_METRICS = ("energy_j", "mean_power_w", "peak_power_w", "edp_js", "energy_per_job_j",
                  "energy_measured", "sleep_saved_j")


@dataclass
class PowerSeries:
    """The platform's power as a step function: ``power[i]`` watts on ``[time[i], time[i+1])``
    (the last value holds at the last time). ``idle_w`` / ``busy_w``: every machine idle / busy
    (estimates only; NaN when measured)."""

    time: np.ndarray
    power: np.ndarray
    measured: bool
    idle_w: float = math.nan
    busy_w: float = math.nan

    def energy(self, t0: float, t1: float) -> float:
        """Joules from ``t0`` to ``t1`` (the step function's integral)."""
        if not t1 > t0 or self.time.size == 0:
            return 0.0
        area = np.concatenate([[0.0], np.cumsum(self.power[:-1] * np.diff(self.time))])
        # beyond the last time the last power holds
        def integral(t: float) -> float:
            if t <= self.time[0]:
                return 0.0
            if t >= self.time[-1]:
                return float(area[-1] + self.power[-1] * (t - self.time[-1]))
            return float(np.interp(t, self.time, area))
        return integral(t1) - integral(t0)

    def peak(self, t0: float, t1: float) -> float:
        """The highest power on ``[t0, t1)``."""
        if self.time.size == 0:
            return math.nan
        first = max(int(np.searchsorted(self.time, t0, side="right")) - 1, 0)
        last = int(np.searchsorted(self.time, t1, side="left"))
        values = self.power[first:max(last, first + 1)]
        return float(values.max()) if values.size else math.nan


# -- measured (-E) ---------------------------------------------------------------------------
def read_energy_trace(path: str | Path) -> PowerSeries:
    """A ``*_consumed_energy.csv`` as power over time (mean power between rows)."""
    try:
        df = pd.read_csv(path, usecols=["time", "energy"], dtype=float)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as exc:
        raise MrschedError(f"cannot read the energy trace: {exc}", file=str(path)) from None
    time = np.concatenate([[0.0], df["time"].to_numpy(float)])
    energy = np.concatenate([[0.0], df["energy"].to_numpy(float)])
    keep = np.append(time[1:] != time[:-1], True)   # the last row at each instant
    time, energy = time[keep], energy[keep]
    if time.size < 2:
        return PowerSeries(time, np.zeros(time.size), measured=True)
    power = np.append(np.diff(energy) / np.diff(time), 0.0)
    power[-1] = power[-2]   # after the last row: the same as just before (nothing changed)
    return PowerSeries(time, power, measured=True)


def _trace(run) -> Path | None:
    direct = Path(run.path) / "out_consumed_energy.csv"
    if direct.is_file():
        return direct
    found = sorted(Path(run.path).glob("*_consumed_energy.csv"))
    return found[0] if found else None


# -- estimated from the platform's wattage ---------------------------------------------------
@dataclass
class Wattage:
    """Per Batsim resource id: Idle and busy watts (at its initial pstate), and which ids are
    compute machines (``n_compute`` first, as Batsim numbers them)."""

    idle: np.ndarray
    busy: np.ndarray
    n_compute: int


def platform_wattage(platform_path: str | Path, *, roles=(), mmax: int | None = None,
                     busy_load: float = 1.0) -> Wattage | None:
    """The wattage of a platform's machines (None when a compute machine has none); read once
    per file version (a campaign's runs share their platforms)."""
    path = Path(platform_path)
    return _wattage(str(path.resolve()), path.stat().st_mtime_ns, tuple(roles), mmax, busy_load)


@functools.lru_cache(maxsize=16)
def _machine_powers(path: str, _mtime: int, roles: tuple, mmax: int | None) -> tuple[tuple, tuple]:
    """The role and the power model of each machine (Batsim's resource order), from one load
    of the platform that the wattage and the sleep states below share."""
    from mrsched.simulator.energy import load_powers
    from mrsched.simulator.platform import load_platform

    platform = load_platform(path, roles=roles)
    hosts = platform.resources(mmax)
    return tuple(h.role for h in hosts), tuple(load_powers(platform, [h.name for h in hosts]))


@functools.lru_cache(maxsize=16)
def _wattage(path: str, _mtime: int, roles: tuple, mmax: int | None,
             busy_load: float) -> Wattage | None:
    host_roles, powers = _machine_powers(path, _mtime, roles, mmax)
    n_compute = sum(1 for role in host_roles if role == "compute")
    idle, busy = [], []
    for r, power in enumerate(powers):
        if power.ranges is None:
            if r < n_compute:
                return None
            idle.append(0.0)
            busy.append(0.0)
            continue
        rng = power.ranges[power.initial]
        idle.append(rng.idle)
        busy.append(rng.epsilon + busy_load * rng.slope)
    return Wattage(np.asarray(idle), np.asarray(busy), n_compute)


def estimate_power(phases: pd.DataFrame, wattage: Wattage) -> PowerSeries:
    """Power over time from the executed Batsim jobs (``phases``: ``starting_time``,
    ``finish_time``, ``allocated_resources``): all machines at Idle, plus busy - Idle on each
    compute machine while a job runs on it."""
    delta = wattage.busy - wattage.idle
    base = float(wattage.idle.sum())
    n = wattage.n_compute
    starts = phases["starting_time"].to_numpy(float)
    ends = phases["finish_time"].to_numpy(float)
    uniform = n > 0 and np.all(delta[:n] == delta[0])
    adds = np.empty(len(phases))
    for i, text in enumerate(phases["allocated_resources"].astype(str)):
        ids = [r for r in parse_intervals(text) if r < n]
        adds[i] = delta[0] * len(ids) if uniform else float(delta[ids].sum()) if ids else 0.0
    ok = np.isfinite(starts) & np.isfinite(ends)
    times = np.concatenate([[0.0], starts[ok], ends[ok]])
    steps = np.concatenate([[base], adds[ok], -adds[ok]])
    order = np.lexsort((steps, times))     # at equal times ends before starts (no false peak)
    times, steps = times[order], steps[order]
    power = np.cumsum(steps)
    keep = np.append(times[1:] != times[:-1], True)
    return PowerSeries(times[keep], power[keep], measured=False, idle_w=base,
                       busy_w=base + float(delta[:n].sum()))


def _manifest_paths(run) -> tuple[Path | None, list[str], int | None]:
    from mrsched.analysis.runs import _paths, _resolve, _roles

    m = run.manifest or {}
    platforms = _paths(m.get("platform"))
    path = _resolve(platforms[0], Path(run.path)) if platforms else None
    mmax = m.get("mmax")
    return path, _roles(m), int(mmax) if isinstance(mmax, (int, float)) and mmax > 0 else None


def run_power(run, *, busy_load: float = 1.0) -> PowerSeries | None:
    """The power of a loaded run (``analysis.load_run``): measured when it has an energy trace,
    else estimated from its platform's wattage; None when neither is possible."""
    trace = _trace(run)
    if trace is not None:
        return read_energy_trace(trace)
    if run.phases is None:
        return None
    wattage = _run_wattage(run, busy_load)
    return None if wattage is None else estimate_power(run.phases, wattage)


def _run_wattage(run, busy_load: float):
    """The wattage of the run's platform as its manifest names it, or None (no platform
    recorded, unreadable, or without wattage_per_state)."""
    path, roles, mmax = _manifest_paths(run)
    if path is None:
        return None
    try:
        return platform_wattage(path, roles=roles, mmax=mmax, busy_load=busy_load)
    except MrschedError:
        return None


def job_energy(run, *, busy_load: float = 1.0) -> pd.DataFrame:
    """Energy of each executed Batsim job (``job_id``, ``energy_j``): Batsim's
    ``consumed_energy`` when the engine ran with -E, else its compute machines' busy watts
    over its run time; empty when unknown."""
    empty = pd.DataFrame({"job_id": pd.Series(dtype=str), "energy_j": pd.Series(dtype=float)})
    phases = run.phases
    if phases is None or phases.empty:
        return empty
    if "consumed_energy" in phases.columns and _trace(run) is not None:
        energy = pd.to_numeric(phases["consumed_energy"], errors="coerce")
        return pd.DataFrame({"job_id": phases["job_id"].astype(str),
                             "energy_j": energy.where(energy >= 0).to_numpy(float)})
    wattage = _run_wattage(run, busy_load)
    if wattage is None:
        return empty
    n = wattage.n_compute
    run_time = (phases["finish_time"] - phases["starting_time"]).to_numpy(float)
    watts = [float(wattage.busy[[r for r in parse_intervals(t) if r < n]].sum())
             for t in phases["allocated_resources"].astype(str)]
    return pd.DataFrame({"job_id": phases["job_id"].astype(str),
                         "energy_j": np.asarray(watts) * run_time})


@functools.lru_cache(maxsize=16)
def _sleep_wattage(path: str, _mtime: int, roles: tuple, mmax: int | None
                   ) -> tuple[float, float, float, float] | None:
    """(Idle, asleep, switching off, switching on) watts of the compute machines, from their
    first ``sleep_pstates`` triplet; None unless every compute machine has the same."""
    host_roles, powers = _machine_powers(path, _mtime, roles, mmax)
    found = set()
    for role, power in zip(host_roles, powers):
        if role != "compute":
            continue
        if power.ranges is None or not power.sleep:
            return None
        sleep_ps = min(power.sleep)
        off, on = power.sleep[sleep_ps]
        found.add((power.ranges[power.initial].idle, power.ranges[sleep_ps].idle,
                   power.ranges[off].idle, power.ranges[on].idle))
    return found.pop() if len(found) == 1 else None


def sleep_saving(run, t0: float, t1: float) -> float:
    """Joules the sleeping machines saved over ``[t0, t1)``: what the machines asleep or
    switching (Batsim's ``out_machine_states.csv``) would have drawn idle, minus what they
    drew in the sleep and the virtual switch pstates (their wattage). Can be negative (a
    switch costs more than the sleep saved); 0 when no machine slept; NaN when unknown (no
    states file, or compute machines of different wattage)."""
    states = Path(run.path) / "out_machine_states.csv"
    if not states.is_file():
        return math.nan
    try:
        df = pd.read_csv(states, dtype=float)
        cols = ["time", "nb_sleeping", "nb_switching_off", "nb_switching_on"]
        time, asleep, off, on = (df[c].to_numpy(float) for c in cols)
    except (ValueError, KeyError, pd.errors.ParserError, pd.errors.EmptyDataError, OSError):
        return math.nan
    if not (asleep.any() or off.any() or on.any()):
        return 0.0
    path, roles, mmax = _manifest_paths(run)
    if path is None:
        return math.nan
    try:
        watts = _sleep_wattage(str(Path(path).resolve()), Path(path).stat().st_mtime_ns,
                               tuple(roles), mmax)
    except (MrschedError, OSError):
        return math.nan
    if watts is None:
        return math.nan
    idle, w_sleep, w_off, w_on = watts
    saved = asleep * (idle - w_sleep) + off * (idle - w_off) + on * (idle - w_on)
    # the step function from the states' rows (none before the first: every machine idle)
    series = PowerSeries(np.concatenate([[min(0.0, t0)], time]),
                         np.concatenate([[0.0], saved]), measured=True)
    return series.energy(t0, t1)


def run_energy_metrics(run, *, busy_load: float = 1.0) -> dict[str, float]:
    """``ENERGY_METRICS`` of a loaded run over its window (first submission to last finish);
    {} when its power is unknown."""
    if run.jobs is None or run.status != "ok":
        return {}
    series = run_power(run, busy_load=busy_load)
    if series is None:
        return {}
    jobs = run.jobs
    ran = jobs[jobs["final_state"] != "REJECTED"]
    if ran.empty:
        return {}
    t0 = float(jobs["submission_time"].min())
    t1 = float(ran["finish_time"].max())
    span = t1 - t0
    energy = series.energy(t0, t1)
    per_job = job_energy(run, busy_load=busy_load)["energy_j"].to_numpy(float)
    per_job = per_job[np.isfinite(per_job)]
    return {
        "energy_j": energy,
        "mean_power_w": energy / span if span > 0 else math.nan,
        "peak_power_w": series.peak(t0, t1),
        "edp_js": energy * span,
        "energy_per_job_j": float(per_job.mean()) if per_job.size else math.nan,
        "energy_measured": 1.0 if series.measured else 0.0,
        "sleep_saved_j": sleep_saving(run, t0, t1) if series.measured else math.nan,
    }
