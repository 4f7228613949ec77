"""Batsim 4.2.1's energy model (``batsim -E``): host pstates, SimGrid's energy accounting, the
machines' sleeping and switching states, and the energy output files.

What Batsim and SimGrid do (tags v4.2.1 and v3.32; docs/DESIGN.md, "Energy"):

- **Pstates** (Batsim ``src/machines.cpp`` 89-210): a host's ``speed`` lists one speed per
  pstate; its ``sleep_pstates`` property holds ``sleep:off:on`` triplets (a sleep pstate, the
  virtual pstate a switch-off passes through, the one a switch-on passes through); every other
  pstate computes.
- **Power** (SimGrid ``src/plugins/host_energy.cpp`` 140-330): ``wattage_per_state`` gives
  ``Idle:Epsilon:AllCores`` (or ``Idle:AllCores``, Epsilon = Idle) per pstate. A host draws Idle
  while its CPU has no load, else ``Epsilon + load x (AllCores - Epsilon)``, load = the flop/s
  its running tasks use over speed x cores, at most 1.
- **Accounting** (``HostEnergy::update``, 185-212): each host keeps its energy, the time of its
  last update and the pstate it had then (0 at creation). An update adds ``power x (now -
  last)``, the power taken from that saved pstate and the CPU's load *now* (the last solve's
  rates), then saves the current pstate. Hosts are updated when a task on them ends (maestro,
  before any actor runs: ``on_action_state_change``), when their pstate changes
  (``on_speed_change``) and when an actor reads their energy (``get_consumed_energy``: a
  simcall when the host is behind the clock, so the actor yields to the next sub-round and
  the update is seen by the others only then).
- Batsim reads the energy of every compute and storage machine (``Machines::
  total_consumed_energy``, ``src/machines.cpp`` 413, a ``long double`` sum) at each job start
  and end, each pstate request and switch, each QUERY and at the first submission.

``Energy`` holds all of it for one run; ``EnergyMachines`` the machines' five states (Batsim's
``MachineState``) and their time in each; ``EnergyRecorder`` writes ``_consumed_energy.csv``
and ``_pstate_changes.csv`` and the energy columns of the other files. The scheduler's side
(SET_RESOURCE_STATE, QUERY, the switch actors) is ``energy_server.py``.
"""

from __future__ import annotations

import math
import logging
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mrsched.errors import PlatformError, SimulationError
from mrsched.simulator.machines import Machines
from mrsched.simulator.outputs import MachineStateTracker, Recorder, _temporary, _write_error, f6, g6

logger = logging.getLogger("mrsched.simulator.engine")

# Batsim's PStateType (src/pstate.hpp)
COMPUTATION, SLEEP, VIRTUAL = "computation", "sleep", "virtual"
# Batsim's MachineState, in the order of _machine_states.csv's columns (src/export.cpp)
SLEEPING, SWITCHING_ON, SWITCHING_OFF, IDLE, COMPUTING = range(5)
STATE_NAMES = ("sleeping", "switching_on", "switching_off", "idle", "computing")

LD = np.longdouble   # Batsim sums energies and times in long double (x87 80-bit here)
LD_ZERO = LD(0)


# -- the platform's energy properties -------------------------------------------------------
@dataclass(frozen=True)
class PowerRange:
    """One pstate's wattage (SimGrid's ``PowerRange``): idle, epsilon, all cores, slope."""

    idle: float
    epsilon: float
    max: float
    slope: float


@dataclass
class HostPower:
    """A machine's pstates and wattage: speeds (flop/s per core), Batsim's kind of each pstate,
    the (off, on) virtual pstates of each sleep pstate, the power ranges (None: the host has
    no ``wattage_per_state`` and draws 0 W, as SimGrid after its warning)."""

    name: str
    speeds: tuple
    cores: int
    initial: int
    kinds: dict
    sleep: dict
    ranges: tuple | None


def _parse_double(text: str) -> float | None:
    """``xbt_str_parse_double``: strtod over the whole string (leading blanks skipped)."""
    s = text.lstrip()
    if not s or s != s.rstrip() or "_" in s:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _wattage(host: Any, path: str | None) -> tuple | None:
    """SimGrid's ``HostEnergy::init_watts_range_list`` (host_energy.cpp 340-392)."""
    text = host.properties.get("wattage_per_state")
    if text is None:
        return None
    speeds = host.speeds or (host.speed,)
    parts = text.split(",")
    if len(parts) != len(speeds):
        raise PlatformError(f"host '{host.name}': {len(parts)} energetic profiles in "
                            f"wattage_per_state for {len(speeds)} pstates", file=path,
                            field="wattage_per_state", hint="SimGrid aborts on it")
    ranges = []
    for i, part in enumerate(parts):
        values = part.split(":")
        if len(values) not in (2, 3):
            raise PlatformError(f"host '{host.name}': power values of pstate {i} must be "
                                f"'Idle:AllCores' or 'Idle:Epsilon:AllCores', got {part.strip()!r}",
                                file=path, field="wattage_per_state")
        nums = [_parse_double(v) for v in values]
        if any(x is None or not 0 <= x < math.inf for x in nums):
            raise PlatformError(f"host '{host.name}': invalid power value in {part.strip()!r} "
                                f"(pstate {i}): watts are finite numbers >= 0", file=path,
                                field="wattage_per_state")
        idle = nums[0]
        epsilon, top = (nums[0], nums[1]) if len(nums) == 2 else (nums[1], nums[2])
        ranges.append(PowerRange(idle, epsilon, top, top - epsilon))
    return tuple(ranges)


def _uint(text: str) -> int | None:
    """``boost::lexical_cast<unsigned int>`` then ``static_cast<int>`` (a sign is read)."""
    m = re.fullmatch(r"([+-]?)(\d+)", text)
    if m is None:
        return None
    value = int(m.group(2))
    return -value if m.group(1) == "-" else value


def _sleep_pstates(host: Any, path: str | None) -> tuple[dict, dict]:
    """Batsim's reading of ``sleep_pstates`` (``Machines::create_machines``, machines.cpp
    89-210): (pstate -> kind, sleep pstate -> (off virtual, on virtual))."""
    n = len(host.speeds or (host.speed,))
    kinds: dict[int, str] = {}
    sleep: dict[int, tuple[int, int]] = {}
    text = host.properties.get("sleep_pstates")
    where = f"host '{host.name}' has an invalid 'sleep_pstates' property"
    if text is not None:
        for triplet in re.split(",+", text):   # boost::split, token_compress_on
            parts = re.split(":+", triplet)
            if len(parts) != 3:
                raise PlatformError(f"{where}: {triplet!r} is not three colon-separated pstates "
                                    "sleep:off:on", file=path, field="sleep_pstates")
            values = [_uint(p.strip()) for p in parts]
            if any(v is None for v in values):
                raise PlatformError(f"{where}: the pstates of {triplet!r} are not unsigned "
                                    "integers", file=path, field="sleep_pstates")
            sleep_ps, off_ps, on_ps = values
            for ps in (sleep_ps, on_ps, off_ps):
                if not 0 <= ps < n:
                    raise PlatformError(f"{where}: pstate {ps} of {triplet!r} does not exist "
                                        f"({n} pstates)", file=path, field="sleep_pstates")
            if sleep_ps in kinds:   # Batsim logs an error and goes on
                logger.error("%s: host '%s' has an invalid 'sleep_pstates' property: pstate %d "
                             "is defined twice", path, host.name, sleep_ps)
            for ps in (on_ps, off_ps):
                if ps in kinds and kinds[ps] != VIRTUAL:
                    raise PlatformError(f"{where}: pstate {ps} is a virtual transition pstate "
                                        "and another kind of pstate", file=path,
                                        field="sleep_pstates")
            sleep[sleep_ps] = (off_ps, on_ps)
            kinds[sleep_ps] = SLEEP
            kinds[on_ps] = VIRTUAL
            kinds[off_ps] = VIRTUAL
    for ps in range(n):
        kinds.setdefault(ps, COMPUTATION)
    return kinds, sleep


def load_powers(platform: Any, names: list[str]) -> list[HostPower]:
    """The pstates and wattage of the machines ``names`` (by resource id), every host of the
    platform checked as SimGrid and Batsim check them under ``-E`` (a bad property aborts
    them: PlatformError, one line)."""
    path = getattr(platform, "path", None)
    parsed = {}
    for host in platform.hosts.values():
        ranges = _wattage(host, path)
        kinds, sleep = _sleep_pstates(host, path)
        speeds = tuple(host.speeds or (host.speed,))
        if host.role == "compute":   # COMPUTE_FLOPS machines: computation pstates must compute
            for ps, kind in kinds.items():
                if kind == COMPUTATION and not speeds[ps] > 0:
                    raise PlatformError(f"host '{host.name}' has a non-positive speed in its "
                                        f"computation pstate {ps}", file=path, field="speed")
        parsed[host.name] = HostPower(host.name, speeds, int(getattr(host, "cores", 1) or 1),
                                      int(getattr(host, "pstate", 0) or 0), kinds, sleep, ranges)
    return [parsed[name] for name in names]


# -- formatting ------------------------------------------------------------------------------
def fmt_ld(x: Any) -> str:
    """C's ``%Lf`` of a long double: six decimals, the exact value rounded half to even."""
    if not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    num, den = (x if isinstance(x, np.floating) else LD(x)).as_integer_ratio()
    q = Fraction(num, den) * 1_000_000
    units = round(q)   # Fraction.__round__: half to even
    sign = "-" if units < 0 or (units == 0 and q < 0) else ""
    units = abs(units)
    return f"{sign}{units // 1_000_000}.{units % 1_000_000:06d}"


# -- SimGrid's energy plugin, for Batsim's machines ------------------------------------------
class Energy:
    """The energy of one run's machines (by resource id), their pstates, and the two energy
    traces (``_consumed_energy.csv`` rows, ``_pstate_changes.csv`` rows).

    Actors read energies through ``read`` (continuation style: an actor that has to wait for
    an update yields to the next sub-round, as its simcall makes it in SimGrid); the
    maestro-side updates (a task ending on a host) are applied at once."""

    def __init__(self, kernel: Any, machines: Any, powers: list[HostPower]):
        self.k = kernel
        self.machines = machines
        self.powers = powers
        #: the first machine without wattage_per_state: the first energy read, of every machine
        #: at the first submission, aborts on it (``_no_wattage``)
        self._unpowered = next((p.name for p in powers if p.ranges is None), None)
        n = len(powers)
        self.n = n
        self.ids = {p.name: r for r, p in enumerate(powers)}
        self.pstate = [p.initial for p in powers]   # host->get_pstate()
        self.saved = [0] * n     # HostEnergy::pstate_ (0 at the plugin's creation)
        self.energy = [0.0] * n
        self.last = [0.0] * n
        self.pending: list[Any] = [None] * n   # round token of an update others cannot see yet
        self.tasks: list[list] = [[] for _ in range(n)]   # running ptasks: (ptask, flops)
        self.sleeps: list[list] = [[] for _ in range(n)]  # sleep actions on the host (timers)
        self._task_hosts: dict[int, tuple] = {}   # id(ptask) -> (ptask, host ids)
        # traces
        self.energy_rows: list[str] = []
        self.pstate_rows: list[str] = []
        self._last_date = LD_ZERO
        self._last_energy = LD_ZERO
        self.first_submission = LD(-1)
        self.last_completion = LD(-1)
        self.job_energy: dict[str, str] = {}   # job id -> consumed_energy text
        # running kernel: the maestro-side updates of the ptasks that end in a step
        self._ptask_ends = kernel._ptask_ends
        kernel._ptask_ends = self._hooked_ptask_ends

    # -- the initial pstates ---------------------------------------------------------------
    def initial_pstate_rows(self) -> None:
        """``prepare_batsim_outputs`` (export.cpp 45-75): each initial pstate and its machines."""
        by_pstate: dict[int, list[int]] = {}
        for r, ps in enumerate(self.pstate):
            by_pstate.setdefault(ps, []).append(r)
        for ps in sorted(by_pstate):
            self.pstate_row(by_pstate[ps], ps)

    def pstate_row(self, ids, pstate: int) -> None:
        """``PStateChangeTracer::add_pstate_change`` (``%g,%s,%d``)."""
        from mrsched.schedulers.batsim.intervals import format_intervals

        self.pstate_rows.append(f"{g6(self.k.now)},{format_intervals(ids)},{pstate}\n")

    # -- power and updates -----------------------------------------------------------------
    def _load(self, r: int, rates: dict | None) -> float:
        usage = 0.0
        for p, flops in self.tasks[r]:
            if flops > 0:
                rate = rates.get(id(p)) if rates is not None else None
                if rate is None:
                    rate = p.rate
                usage += flops * rate
        return usage

    def _power(self, r: int, rates: dict | None = None) -> float:
        """``HostEnergy::get_current_watts_value`` with the saved pstate and the load now."""
        power = self.powers[r]
        if power.ranges is None:
            return 0.0
        ps = self.saved[r]
        speed = power.speeds[ps]
        if speed <= 0:
            load = 1.0
        else:
            load = self._load(r, rates) / speed
            load /= power.cores
            if load > 1:
                load = 1.0
        rng = power.ranges[ps]
        return rng.epsilon + load * rng.slope if load > 0 else rng.idle

    def _update(self, r: int, rates: dict | None = None) -> bool:
        """``HostEnergy::update``; whether energy was added (the host was behind the clock)."""
        now = self.k.now
        last = self.last[r]
        added = False
        if last < now:
            self.energy[r] = self.energy[r] + self._power(r, rates) * (now - last)
            self.last[r] = now
            added = True
        self.saved[r] = self.pstate[r]
        return added

    def _resolve(self, r: int, rates: dict | None = None) -> None:
        """The maestro updates of sleep actions on ``r`` that ended and whose actor has not run
        yet (SimGrid applies them before any actor runs). ``rates``: the step's, when a task on
        ``r`` ends in the same step (its load still counts at the sleep's end). A timeout its
        task beat is no sleep any more (``sleep_dropped``)."""
        timers = self.sleeps[r]
        if timers and any(t.md == 0.0 for t in timers):
            self.sleeps[r] = [t for t in timers if t.md != 0.0]
            self._update(r, rates)

    def behind(self, r: int) -> bool:
        """Whether reading host ``r`` is a simcall now (its update not done, or done in this
        sub-round by another actor: SimGrid handles simcalls after the sub-round's actors)."""
        self._resolve(r)
        return self.last[r] < self.k.now or self.pending[r] is self.k.round_token()

    def touch(self, r: int) -> None:
        """A maestro-side update of host ``r`` (a message from it arrived, a task on it was
        cancelled): applied at once."""
        self._resolve(r)
        self._update(r)

    def actor_update(self, r: int) -> None:
        """An update an actor's simcall makes (a pstate change, an execution's start): the other
        actors of this sub-round do not see it yet."""
        self._resolve(r)
        if self._update(r):
            self.pending[r] = self.k.round_token()

    def set_pstate(self, r: int, pstate: int) -> None:
        """``Host::set_pstate`` (a simcall: the caller yields after it): the new speed applies
        to the host's tasks from the next solve; the energy is updated with the former pstate
        (``on_speed_change``)."""
        self._resolve(r)
        self.pstate[r] = pstate
        if self._update(r):
            self.pending[r] = self.k.round_token()
        speed = self.powers[r].speeds[pstate]
        self.k.set_host_speed(self.powers[r].name, speed)

    def read(self, ids, then: Callable[[Any], None]) -> None:
        """``sg_host_get_consumed_energy`` of each machine of ``ids`` in order, summed in long
        double; ``then(total)`` once all are read (at once when no read had to wait)."""
        if self._unpowered is not None:
            raise _no_wattage(self._unpowered)
        self._read(iter(ids), LD_ZERO, then)

    def _read(self, it, total, then) -> None:
        k = self.k
        energy = self.energy
        for r in it:
            if self.behind(r):
                if self._update(r):
                    self.pending[r] = k.round_token()
                total += LD(energy[r])
                k.spawn(self._read, it, total, then)   # the simcall: next sub-round
                return
            total += LD(energy[r])
        then(total)

    def read_all(self, then: Callable[[Any], None]) -> None:
        self.read(range(self.n), then)

    def wattmin(self) -> Any:
        """``Machines::total_wattmin``: Epsilon at each machine's current pstate (long double)."""
        total = LD_ZERO
        for r, power in enumerate(self.powers):
            if power.ranges is not None:
                total += LD(power.ranges[self.pstate[r]].epsilon)
        return total

    def entry(self, kind: str, then: Callable[[Any], None] | None = None) -> None:
        """``EnergyConsumptionTracer::add_entry`` (export.cpp 824-868): a row of the platform's
        energy (read now), Epsilon's sum and the mean power since the previous row."""
        def write(total):
            date = self.k.now
            diff = LD(date) - self._last_date
            epower = f6(float((total - self._last_energy) / diff)) if diff > 0 else "NA"
            self.energy_rows.append(f"{f6(date)},{fmt_ld(total)},{kind},"
                                    f"{fmt_ld(self.wattmin())},{epower}\n")
            self._last_date = LD(date)
            self._last_energy = total
            if kind == "e":
                self.last_completion = total
            if then is not None:
                then(total)
        self.read_all(write)

    # -- the tasks on the hosts (their load) -----------------------------------------------
    def task_started(self, p: Any) -> None:
        """A ptask runs: its flops count in its hosts' load."""
        hosts = []
        ids = self.ids
        for name, flops in p.flops.items():
            r = ids.get(name)
            if r is not None:
                self.tasks[r].append((p, float(flops)))
                hosts.append(r)
        for pair in p.bytes:
            for name in pair:
                r = ids.get(name)
                if r is not None and r not in hosts:
                    self.tasks[r].append((p, 0.0))
                    hosts.append(r)
        self._task_hosts[id(p)] = (p, tuple(hosts))

    def task_stopped(self, p: Any) -> None:
        """A ptask is cancelled (a kill, or its walltime job's deletion): its hosts are updated
        with it still running (``Action::cancel`` changes its state), then it leaves them."""
        entry = self._task_hosts.pop(id(p), None)
        if entry is None:
            return
        for r in entry[1]:
            self.touch(r)
            self.tasks[r] = [e for e in self.tasks[r] if e[0] is not p]

    def _hooked_ptask_ends(self, now: float, delta: float):
        """The kernel's ``_ptask_ends`` with SimGrid's maestro updates: every host of a task
        that ends in this step, with the rates of the step (``on_action_state_change``)."""
        if not self._task_hosts:
            return self._ptask_ends(now, delta)
        rates = {key: p.rate for key, (p, _hosts) in self._task_hosts.items()}
        ends = self._ptask_ends(now, delta)
        for _rank, end in ends:
            entry = self._task_hosts.pop(id(end.p), None)
            if entry is None:
                continue
            p, hosts = entry
            for r in hosts:
                self._resolve(r, rates)
                self._update(r, rates)
            for r in hosts:
                self.tasks[r] = [e for e in self.tasks[r] if e[0] is not p]
        return ends

    def sleep_started(self, r: int, timer: Any) -> None:
        """A sleep action on host ``r`` (a delay job, a walltime): its end updates the host."""
        self.sleeps[r].append(timer)

    def sleep_over(self, r: int, timer: Any) -> None:
        """The sleep's actor runs (it ended) or cancels it: its maestro update, if it ended."""
        if self.sleep_dropped(r, timer) and timer.md == 0.0:
            self._update(r)

    def sleep_dropped(self, r: int, timer: Any) -> bool:
        """A task ended before its timeout: the wait's synchro goes with the task's end, and its
        sleep action with it, never ending (``ExecImpl::finish`` drops the last reference;
        ``ActivityImpl::~ActivityImpl`` -> ``clean_action``): no update of the host. Whether
        the host had the timer."""
        timers = self.sleeps[r]
        if not any(t is timer for t in timers):
            return False
        self.sleeps[r] = [t for t in timers if t is not timer]
        return True

    def total_now(self) -> Any:
        """The platform's energy without reading (no update): for the run's summary."""
        total = LD_ZERO
        for e in self.energy:
            total += LD(e)
        return total


# -- the machines' five states --------------------------------------------------------------
class EnergyStateTracker(MachineStateTracker):
    """``MachineStateTracker`` with Batsim's five counts (``MachineStateTracer``): a row is
    written when Batsim writes one, whatever changed."""

    def __init__(self, nb_machines: int):
        super().__init__(nb_machines)
        self.counts = [0, 0, 0, nb_machines, 0]

    def write(self, t: float) -> None:
        self.rows.append((t, *self.counts))
        if self.sink is not None and len(self.rows) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.sink.write("".join([f"{g6(t)},{a},{b},{c},{d},{e}\n"
                                     for t, a, b, c, d, e in self.rows]))
            self.rows.clear()


class EnergyMachines(Machines):
    """The machines of a ``-E`` run: each one's state (Batsim's ``MachineState``: sleeping,
    switching on or off, idle, computing) and its time in each, in long double as Batsim's
    ``Machine::update_machine_state`` (machines.cpp 640-652); ``job_starts`` only marks the
    machines busy, the job's actor sets their states (``job_runs``)."""

    def __init__(self, platform: Any, **kwargs):
        super().__init__(platform, **kwargs)
        n = len(self.resources)
        self.tracker = EnergyStateTracker(self.nb_compute)
        self.state = [IDLE] * n
        self.changed = [LD_ZERO] * n
        self.spent = [[LD_ZERO] * 5 for _ in range(n)]
        self.users = [0] * n
        self.now: Callable[[], float] = lambda: 0.0   # the kernel's clock (set by the engine)

    def set_state(self, r: int, new: int) -> None:
        now = LD(self.now())
        self.spent[r][self.state[r]] += now - self.changed[r]
        counts = self.tracker.counts
        counts[self.state[r]] -= 1
        counts[new] += 1
        self.state[r] = new
        self.changed[r] = now

    def write_states(self) -> None:
        self.tracker.write(self.now())

    def job_starts(self, now: float, comp, comp_runs, storage=()) -> None:
        if not self.compute_sharing:
            busy = self.busy
            for lo, hi in comp_runs:
                busy |= (1 << (hi + 1)) - (1 << lo)
            self.busy = busy

    def job_runs(self, comp) -> None:
        """``update_machines_on_job_run`` (machines.cpp 476-509): computing, then a row."""
        for r in comp:
            self.users[r] += 1
            self.set_state(r, COMPUTING)
        self.write_states()

    def job_ends(self, now: float, ncomp: int, comp_runs, storage=()) -> None:
        """``update_machines_on_job_end`` (machines.cpp 511-552): idle once no job is left."""
        if not self.compute_sharing:
            busy = self.busy
            for lo, hi in comp_runs:
                busy &= ~((1 << (hi + 1)) - (1 << lo))
            self.busy = busy
        for r in [r for lo, hi in comp_runs for r in range(lo, hi + 1)] + list(storage):
            self.users[r] -= 1
            if not self.users[r]:
                self.set_state(r, IDLE)
        if ncomp or storage:
            self.write_states()

    def totals(self) -> dict[str, float]:
        """Time spent in each state, summed over the machines (long double, then double)."""
        sums = [LD_ZERO] * 5
        for spent in self.spent:
            for i in range(5):
                sums[i] += spent[i]
        return {name: float(x) for name, x in zip(STATE_NAMES, sums)}


def _no_wattage(host: str) -> SimulationError:
    """SimGrid's ``sg_host_get_consumed_energy`` on a host without ``wattage_per_state``: an
    assertion that aborts Batsim (``host_energy.cpp`` 536), at the first job submission under
    ``-E`` since Batsim reads every machine's energy then (``job_submitter.cpp`` 141-147)."""
    return SimulationError(f"host {host} has no wattage_per_state: Batsim's -E reads the energy of "
                           "every compute and storage machine, and SimGrid aborts on it",
                           field="wattage_per_state",
                           hint="give every machine one: mrsched platform ... --wattage W "
                                "--storage-wattage W; or run without --energy")


# -- the output files -----------------------------------------------------------------------
class EnergyRecorder(Recorder):
    """``Recorder`` of a ``-E`` run: jobs' ``consumed_energy``, ``_schedule.csv``'s energy
    columns, and ``{prefix}_consumed_energy.csv`` and ``_pstate_changes.csv``."""

    def __init__(self, tracker: Any, energy: Energy | None = None, **kwargs):
        super().__init__(tracker, **kwargs)
        self.energy = energy
        self._prefix: str | None = None

    def open(self, prefix: str | Path, *, machine_states: bool = True) -> None:
        super().open(prefix, machine_states=machine_states)
        self._prefix = str(prefix)

    def add(self, record) -> None:
        if self.energy is not None and record.starting_time is not None:
            record.energy = self.energy.job_energy.pop(f"{record.workload}!{record.local_id}",
                                                       None)
        super().add(record)

    def texts(self) -> dict[str, str]:
        """``_consumed_energy.csv``'s and ``_pstate_changes.csv``'s text, by suffix."""
        energy = self.energy
        return {"consumed_energy": ("time,energy,event_type,wattmin,epower\n"
                                    + "".join(energy.energy_rows)),
                "pstate_changes": "time,machine_id,new_pstate\n" + "".join(energy.pstate_rows)}

    def finish(self, **totals: Any) -> dict[str, Path]:
        if self.files is None:
            return {}
        paths = {}
        for key, text in self.texts().items():
            path = Path(f"{self._prefix}_{key}.csv")
            tmp = _temporary(path)
            try:
                with open(tmp, "w", newline="") as fh:
                    fh.write(text)
                os.replace(tmp, path)
            except OSError as exc:
                try:
                    tmp.unlink(missing_ok=True)
                except OSError:
                    pass
                raise _write_error(exc) from None
            paths[key] = path
        paths.update(super().finish(**totals))
        return paths


def schedule_energy(energy: Energy, machines: EnergyMachines, switches: tuple[int, int]
                    ) -> dict[str, str]:
    """``_schedule.csv``'s energy values (export.cpp 1071-1100): the energy between the first
    submission and the last job completion, the switches, the time in each state."""
    consumed = energy.last_completion - energy.first_submission
    times = machines.totals()
    return {
        "consumed_joules": f6(float(consumed)),
        "nb_machine_switches": str(switches[0]),
        "nb_grouped_switches": str(switches[1]),
        "time_computing": f6(times["computing"]),
        "time_idle": f6(times["idle"]),
        "time_sleeping": f6(times["sleeping"]),
        "time_switching_off": f6(times["switching_off"]),
        "time_switching_on": f6(times["switching_on"]),
    }
