"""Run a :class:`Policy` against Batsim: queue, running jobs, availability, checked decisions.

``PolicyRuntime`` is the protocol-free core (plain dicts in, decisions out) so that it can be
driven by a test loop or the embedded engine alike; ``PolicyScheduler`` is the
``BatsimScheduler`` that feeds it events and turns its decisions into protocol actions under
the ``alloc-only`` job model (one Batsim job per job, ``alloc`` = its compute nodes).
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import OrderedDict
import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from mrsched.errors import ConfigError, MrschedError, ProtocolError, SimulationError
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import AvailabilityProfile, Reservation
from mrsched.schedulers.batsim.intervals import procset_of_ids, procset_of_runs
from mrsched.schedulers.batsim.scheduler import BatsimScheduler
from mrsched.schedulers.model.cluster import Cluster, cluster_from_simulation_begins
from mrsched.schedulers.execution.cost import NO_COST, DecisionCost, charge_reply, parse_decision_cost
from mrsched.schedulers.model.decisions import Annotate, Decision, Reject, Start, SwitchPower, WakeUp
from mrsched.schedulers.model.job import Job, job_from_batsim
from mrsched.schedulers.model.machine import MachineState
from mrsched.schedulers.profile.placement import BurstBufferPlacer
from mrsched.schedulers.execution.ioaware import io_profile, unrunnable
from mrsched.schedulers.execution.knowledge import make_tracker
from mrsched.schedulers.model.contract import OVERRUN_HOLD, Policy, SchedulingContext, WaitingQueue
from mrsched.schedulers.model.params import RunOptions
from mrsched.schedulers.profile.bandwidth import BandwidthTree
from mrsched.schedulers.profile.feasibility import infeasible_reason
from mrsched.schedulers.execution.power import POWER, capped, power_cap_of, sleep_holds, with_power
from mrsched.sums import ordered_sum

logger = logging.getLogger(__name__)

INF = math.inf
#: Request shapes whose feasibility is remembered (then forgotten all at once).
_INFEASIBLE_MEMO = 1 << 16
#: Tolerance when deciding whether ``now`` is on a scheduling tick (Batsim's clock drifts by a
#: few tens of microseconds per round-trip, see PROTOCOL.md).
TICK_TOLERANCE = 1e-3


@dataclass
class RunningJob:
    """A started job: where it runs and the profile reservation it holds until it ends."""

    job: Job
    start: float
    allocation: Allocation
    reservation: Reservation


class IdleNodes:
    """The idle-node service (``idle_sleep``): a free compute node idle for ``after`` seconds
    while no job waits is switched to its sleep pstate (the first of its ``sleep_pstates``
    triplets, Batsim ``src/machines.cpp``); while jobs wait, as many sleeping nodes as they
    need beyond the free awake ones are switched back to pstate 0. Sleeping and switching
    nodes are ``unavailable``: the runtime holds them out of each round's profile and refuses
    a start on them; a reservation keeping a plan that counts on sleeping nodes now waits for
    them, and they are woken (``planned``: without it nothing would wake them when the free
    awake nodes outnumber the waiting jobs' need). Batsim answers a request once, when all
    its machines are done (``RESOURCE_STATE_CHANGED``).

    Under a power cap (``hold``, ``room``: docs/DESIGN.md "Idle nodes under a power cap") a node
    sleeps only when the cap's free power from now on pays its ``hold`` (the most it draws
    above Idle asleep or switching), which stays taken until its wake-up is acknowledged; so a
    wake-up never needs power, and while the waiting jobs ask more power than is free
    (``power_short``) sleeping nodes are woken to give theirs back."""

    hold: tuple[float, ...] = ()     # watts of the cap held per sleeping node (power_cap)
    room = None                      # () -> watts of the cap free from now on (power_cap)

    def __init__(self, cluster: Cluster, after: float, sleep: tuple[int, ...], now: float):
        self.after = after
        self.sleep = sleep                          # sleep pstate per compute index
        self.idle_since = [now] * cluster.nb_nodes
        self.asleep = 0          # nodes in their sleep pstate
        self.going = 0           # switching off (asked, not yet acknowledged)
        self.waking = 0          # switching on
        self._ids = cluster.compute_ids

    @classmethod
    def of(cls, cluster: Cluster, options: RunOptions, now: float) -> "IdleNodes":
        sleep = []
        for rid, name in zip(cluster.compute_ids, cluster.compute_names):
            text = str(cluster.properties.get(rid, {}).get("sleep_pstates", "")).strip()
            first = text.split(",")[0].split(":")[0].strip() if text else ""
            if not first.isdigit():
                raise ConfigError(f"idle_sleep: compute host {name} has no sleep_pstates property "
                                  "(sleep:off:on pstates), so it cannot sleep", field="idle_sleep")
            sleep.append(int(first))
        return cls(cluster, float(options.idle_sleep), tuple(sleep), now)

    @property
    def unavailable(self) -> int:
        return self.asleep | self.going | self.waking

    def freed(self, now: float, nodes: int) -> None:
        while nodes:
            low = nodes & -nodes
            self.idle_since[low.bit_length() - 1] = now
            nodes ^= low

    def changed(self, now: float, cluster: Cluster, ids: list[int], state: int) -> None:
        mask = 0
        for rid in ids:
            k = cluster.index_of.get(rid)
            if k is not None:
                mask |= 1 << k
        if mask & self.going and state != 0:
            self.going &= ~mask
            self.asleep |= mask
        elif mask & self.waking:
            self.waking &= ~mask
            self.freed(now, mask)

    def held_watts(self) -> float:
        """Watts of the cap the sleeping and switching nodes hold (power_cap)."""
        m, total = self.unavailable if self.hold else 0, 0.0
        while m:
            low = m & -m
            total += self.hold[low.bit_length() - 1]
            m ^= low
        return total

    def round(self, now: float, busy: int, queue, power_short: float = 0.0,
              planned: int = 0) -> list[Decision]:
        """The switches after a round: wake for the waiting jobs, else sleep the long idle.
        ``power_short``: watts the waiting jobs ask beyond the cap's free power (power_cap);
        ``planned``: nodes a kept plan counts on now (woken if asleep)."""
        all_nodes = (1 << len(self.idle_since)) - 1
        free_awake = all_nodes & ~busy & ~self.unavailable
        out: list[Decision] = []
        if queue:
            need = min(sum(j.request.nodes for j in queue.values()), len(self.idle_since))
            short = need - free_awake.bit_count() - self.waking.bit_count()
            wake = planned & self.asleep
            m = self.asleep & ~wake
            while (short > 0 or power_short > 1e-9) and m:
                low = m & -m
                wake |= low
                m ^= low
                short -= 1
                if self.hold:
                    power_short -= self.hold[low.bit_length() - 1]
            if wake:
                self.asleep &= ~wake
                self.waking |= wake
                out += self._switch(wake, lambda k: 0)
            return out
        due, soonest = 0, INF
        m = free_awake
        while m:
            low = m & -m
            m ^= low
            at = self.idle_since[low.bit_length() - 1] + self.after
            if at <= now + 1e-9:
                due |= low
            else:
                soonest = min(soonest, at)
        if due and self.room is not None:     # under a cap: only the nodes whose hold is paid
            room, m, due = self.room(), due, 0
            while m:
                low = m & -m
                m ^= low
                room -= self.hold[low.bit_length() - 1]
                if room < -1e-9:
                    break
                due |= low
        if due:
            self.going |= due
            out += self._switch(due, lambda k: self.sleep[k])
        if soonest < INF:
            out.append(WakeUp(soonest))
        return out

    def _switch(self, mask: int, pstate) -> list[Decision]:
        """One SwitchPower per target pstate (nodes of one pstate in one request)."""
        groups: dict[int, list[int]] = {}
        k = 0
        while mask:
            if mask & 1:
                groups.setdefault(pstate(k), []).append(k)
            mask >>= 1
            k += 1
        return [SwitchPower(tuple(self._ids[k] for k in idx), p) for p, idx in groups.items()]


class PolicyRuntime:
    """Bookkeeping around a policy; every decision is checked before it reaches Batsim."""

    def __init__(self, policy: Policy, options: RunOptions | None = None):
        self.policy = policy
        self.options = options if options is not None else RunOptions()

    # -- lifecycle ---------------------------------------------------------------------------
    def begin(self, cluster: Cluster, now: float = 0.0, profiles: Mapping[str, Any] | None = None) -> None:
        policy, options = self.policy, self.options
        policy.validate_params()
        options.check(policy.policy_name())
        # capacities a policy declares (its `counters` knob) for runs without sched-config;
        # sched-config wins
        cluster.counters = {**policy.declared_counters(), **cluster.counters}
        # the power cap (execution/power.py): one more counter of the profile, asked by every job
        self.power = power_cap_of(cluster, options.power_cap, options.power_cap_steps,
                                  options.power_cap_share)
        if self.power is not None and not policy.power_capped:
            raise ConfigError(f"policy '{policy.policy_name()}': power_cap is not available for this "
                              "policy (it does not place the profile's counters)", field="power_cap")
        if self.power is not None:
            cluster.counters = {**cluster.counters, POWER: self.power.capacity}
            self._job_counters = tuple(c for c in cluster.counters if c != POWER)
        self.cluster = cluster
        self.sleeper = IdleNodes.of(cluster, options, now) if options.idle_sleep else None
        if self.sleeper is not None and not policy.power_capped:
            raise ConfigError(f"policy '{policy.policy_name()}': idle_sleep is not available here "
                              "(for a policy not on whole nodes)", field="idle_sleep")
        self._sleep_hold: Reservation | None = None    # the cap held by sleeping nodes
        self._planned_asleep = 0      # sleeping nodes the kept plan counts on now: to wake
        if self.sleeper is not None and self.power is not None:
            self.sleeper.hold = sleep_holds(cluster)
            self.sleeper.room = self._power_room
        self.profiles = dict(profiles or {})          # workload -> {profile name -> profile}
        # the release log only for a policy that reads it (``release_log``, conservative)
        self.profile = AvailabilityProfile(cluster, now, placer=BurstBufferPlacer(cluster),
                                           release_log=policy.release_log)
        if self.power is not None:
            self._cap_reservations(now)
        # waiting, submission order. Not a plain dict: a dict keeps a hole per removed entry
        # until it grows again and iteration walks the holes, so reading the head of a long
        # FIFO queue (every round) cost O(jobs started so far); OrderedDict unlinks instead.
        self.queue: dict[str, Job] = OrderedDict()
        self.running: dict[str, RunningJob] = {}
        # the one truth of what is in use (resources, burst-buffer bytes, cores and GPUs per node
        # of a per-core platform), apart from the policy's profile; every start is taken from it
        self.machine = MachineState(cluster, f"policy '{policy.policy_name()}'")
        self.submitted: list[str] = []
        self.ended: list[str] = []
        self.pending: list[Decision] = []              # rejections decided at submission
        self._infeasible: dict = {}                    # request shape -> infeasible_reason
        self._capacities = tuple(s.capacity for s in cluster.storage)
        self._ends: list[tuple[float, str]] = []       # heap: reservation end, running job id
        self._overrun: dict[str, RunningJob] = {}      # running at or past their reservation's end
        self.period = float(options.period or 0.0)
        self.next_tick: float | None = None
        self._cap_wakeup: float | None = None          # the cap rise a WakeUp was asked for
        # the runtime's services (seed 004): the bandwidth tree of an I/O-aware run, and the
        # knowledge source whose estimates the policy sees instead of the users' requests
        self.tree = BandwidthTree.from_cluster(cluster) if options.io_aware else None
        self.knowledge = make_tracker(options, policy.policy_name(), self.tree)
        self._serviced = 0                             # submitted ids already estimated / checked
        self._ended_starts: dict[str, float] = {}      # ended since the last round: start time
        policy.setup(cluster)

    def counted(self, job: Job) -> tuple[Job | None, str | None]:
        """``job`` as this runtime counts it: under a power cap a new Job that also asks its
        power over its nodes' Idle (``submit`` does the same), or (None, why it cannot run);
        for a parent handing a job it parsed to this runtime (``hierarchical``)."""
        if self.power is None:
            return job, None
        delta, why = self.power.job_delta(job)
        if why is not None:
            return None, why
        return dataclasses.replace(job, request=with_power(job.request, delta)), None

    def submit(self, now: float, job_id: str, job: Mapping[str, Any], profile: Mapping | None = None) -> Job | None:
        """Queue a job, or reject it now when it can never run (or is malformed)."""
        workload = job_id.split("!", 1)[0]
        profiles = self.profiles.get(workload)
        if profile is not None:
            profiles = {job.get("profile"): profile}
        try:
            # a job field named like a counter of sched-config's "counters" is a countable request
            parsed = job_from_batsim(job_id, job, profiles, tuple(self.cluster.counters)
                                     if self.power is None else self._job_counters)
        except MrschedError as exc:
            self._reject_now(job_id, f"invalid request: {exc}")
            return None
        if self.power is not None:
            delta, why = self.power.job_delta(parsed)
            if why is not None:
                self._reject_now(job_id, why)
                return None
            parsed.request = with_power(parsed.request, delta)
        # a pure function of the request on a fixed machine: jobs of a trace repeat a few shapes
        req = parsed.request
        if req.gpus_per_node and not self.policy.shares_gpus and self.machine.nodes is not None:
            self._reject_now(job_id, f"asks {req.gpus_per_node} GPUs per node: on a per-core "
                                     f"platform policy '{self.policy.policy_name()}' places cores "
                                     "without counting the GPUs their node shares among jobs "
                                     "(slurm-bf, ipsched and aucsched do)")
            return None
        shape = (req.nodes, req.bb_total, req.bb_per_node, req.gpus_per_node, req.counters)
        reason = self._infeasible.get(shape, False)
        if reason is False:
            reason = None if self._surely_feasible(req) else infeasible_reason(self.cluster, req, self.profile.placer)
            if len(self._infeasible) >= _INFEASIBLE_MEMO:   # bounded: every job may have its own bytes
                self._infeasible.clear()
            self._infeasible[shape] = reason
        if reason is not None:
            self._reject_now(job_id, reason)
            return None
        self.queue[job_id] = parsed
        self.submitted.append(job_id)
        return parsed

    def _surely_feasible(self, req) -> bool:
        """A sufficient test that the empty machine runs ``req`` (``infeasible_reason`` says
        None), without its placement pass: few enough plain nodes, and burst-buffer shares that
        the storage nodes hold even at the largest share each (a greedy placement then cannot
        fail, placement.py)."""
        cl = self.cluster
        if req.nodes > cl.nb_nodes or req.gpus_per_node or req.counters:
            return False
        if not req.bb_total:
            return True
        return self.profile.placer.surely_fits(-(-req.bb_total // req.nodes), req.nodes, self._capacities)

    def _cap_reservations(self, now: float) -> None:
        """A cap over time: the power counter lowered by ``highest cap - cap`` over each step
        below the highest, with reservations that hold no node (never released)."""
        power = self.power
        index = self.profile.counter_names.index(POWER)
        zeros = [0.0] * len(self.profile.counter_names)
        steps = power.steps
        for (t, watts), nxt in zip(steps, [s for s, _ in steps[1:]] + [INF]):
            if watts < power.highest and nxt > now:
                vec = list(zeros)
                vec[index] = power.highest - watts
                self.profile.reserve(t, nxt, Allocation(0, (), {}, tuple(vec)), tag="power cap")

    def _check_power(self, now: float, job_id: str, delta: float, end: float) -> None:
        """The runtime's own check of a start under the cap: at every cap step the start's
        window meets, the running jobs still running then (by their reservation's end) plus
        this one stay under that step's cap over the idle machine."""
        power = self.power
        steps = power.steps
        for k, (t, watts) in enumerate(steps):
            nxt = steps[k + 1][0] if k + 1 < len(steps) else INF
            if nxt <= now or t >= end:
                continue
            at = max(t, now)
            used = delta + ordered_sum(dict(r.job.request.counters).get(POWER, 0.0)
                                       for r in self.running.values() if r.reservation.end > at)
            if self._sleep_hold is not None:     # sleeping nodes' hold: until their wake-up
                used += self._sleep_hold.allocation.counters[self.profile.counter_names.index(POWER)]
            if used > watts - power.base + 1e-6:
                self._fail(job_id, f"exceeds the power cap at t={at}: {power.base + used:.6g} W "
                                   f"with the idle machine, cap {watts:.6g} W")

    def _power_room(self) -> float:
        """Watts of the cap free from the profile's present on (idle_sleep under a cap)."""
        k = self.profile.counter_names.index(POWER)
        return min(c[k] for c in self.profile.cnt)

    def _power_short(self, now: float) -> float:
        """Watts the waiting jobs ask beyond the cap's free power now, less what a lower
        step of the cap later takes (a job crossing it needs its power then too; 0 with none
        asleep)."""
        if not self.queue or not self.sleeper.asleep:
            return 0.0
        k = self.profile.counter_names.index(POWER)
        asked = ordered_sum(dict(j.request.counters).get(POWER, 0.0) for j in self.queue.values())
        waking, m = 0.0, self.sleeper.waking      # their hold comes back with their wake-up
        while m:
            low = m & -m
            waking += self.sleeper.hold[low.bit_length() - 1]
            m ^= low
        later = [w for t, w in self.power.steps if t > now]
        drop = max(self.power.cap_at(now) - min(later), 0.0) if later else 0.0
        return asked - (self.profile.free_at(now)[2][k] - drop) - waking

    def _hold_sleep_power(self, now: float) -> None:
        """The profile's reservation of the cap held by sleeping and switching nodes, from now
        on, brought to ``IdleNodes.held_watts`` (taken when a node is sent to sleep, given back
        when its wake-up is acknowledged)."""
        want = self.sleeper.held_watts()
        old = self._sleep_hold
        k = self.profile.counter_names.index(POWER)
        if abs((old.allocation.counters[k] if old is not None else 0.0) - want) <= 1e-9:
            return
        if old is not None:
            self.profile.release(old, from_time=now)
        self._sleep_hold = None
        if want > 0:
            vec = [0.0] * len(self.profile.counter_names)
            vec[k] = want
            self._sleep_hold = self.profile.reserve(now, INF, Allocation(0, (), {}, tuple(vec)),
                                                    tag="asleep power")

    def _reject_now(self, job_id: str, reason: str) -> None:
        logger.info("rejecting job %s: %s", job_id, reason)
        self.pending.append(Reject(job_id, reason))

    def complete(self, now: float, job_id: str) -> None:
        """A job ended (possibly before its walltime): free what it still holds."""
        run = self.running.pop(job_id, None)
        if run is None:
            return  # a job we never started (e.g. rejected): nothing to free
        self.profile.advance(max(now, self.profile.now))
        self.profile.release(run.reservation, from_time=now)
        self._overrun.pop(job_id, None)
        self.machine.release(job_id, run.allocation)
        if self.sleeper is not None:
            self.sleeper.freed(now, run.allocation.nodes)
        self.ended.append(job_id)
        if self.knowledge is not None:
            self._ended_starts[job_id] = run.start

    # -- rounds ------------------------------------------------------------------------------
    def on_tick(self, now: float) -> bool:
        """Whether the policy runs at ``now`` (always when ``period`` is 0)."""
        if self.period <= 0:
            return True
        tick = math.floor(now / self.period + TICK_TOLERANCE / self.period) * self.period
        # every message on a tick gets a round (jobs submitted at the tick are included,
        # seed 001 Sect. 3.1: "the first iteration ... includes jobs submitted at time 0");
        # so does the first one past the tick asked for: Batsim's call may come later than
        # the tolerance (its messages take the platform's latencies: 1.5 ms over 500 us
        # links), and that tick's round is then late, not skipped
        return abs(now - tick) <= TICK_TOLERANCE or (self.next_tick is not None
                                                     and now >= self.next_tick)

    def step(self, now: float, *, force: bool = False) -> list[Decision]:
        """One round at ``now``: run the policy if due, check its decisions, return them all."""
        out = self.pending
        self.pending = []
        if self._sleep_hold is not None:      # wake-ups acknowledged: their power is free again
            self._hold_sleep_power(now)
        if force or self.period <= 0 or self.on_tick(now):
            out.extend(self.decide(now))
        if self.sleeper is not None:
            planned, self._planned_asleep = self._planned_asleep, 0
            if self.sleeper.room is not None:
                out.extend(self.sleeper.round(now, self.machine.busy, self.queue,
                                              self._power_short(now), planned))
                self._hold_sleep_power(now)
            else:
                out.extend(self.sleeper.round(now, self.machine.busy, self.queue, planned=planned))
        if self.power is not None and self.queue and len(self.power.steps) > 1:
            # a cap that rises later: nothing else may call the scheduler then
            rise = self.power.next_rise(now)
            if rise is not None and rise != self._cap_wakeup:
                self._cap_wakeup = rise
                out.append(WakeUp(rise))
        if self.period > 0 and self.queue:
            nxt = (math.floor(now / self.period + TICK_TOLERANCE / self.period) + 1) * self.period
            if self.next_tick is None or self.next_tick <= now + TICK_TOLERANCE or nxt < self.next_tick:
                self.next_tick = nxt
                out.append(WakeUp(nxt))
        return out

    def decide(self, now: float) -> list[Decision]:
        self.profile.advance(now)
        ends = self._ends
        while ends and ends[0][0] <= now:
            jid = heapq.heappop(ends)[1]
            if jid in self.running:
                self._overrun[jid] = self.running[jid]
        held = self._hold_overrun(now) if self._overrun else ()
        if held is None:   # a policy's own plan counts on the overrun resources: wait for them
            return []
        if self.sleeper is not None and self.sleeper.unavailable:
            # sleeping and switching nodes: out of the policy's reach for this round
            try:
                held = [*held, self.profile.reserve(now, now + OVERRUN_HOLD,
                                                    Allocation(self.sleeper.unavailable), tag="asleep")]
            except SimulationError:   # a kept plan counts on them: wait for them, and wake them
                for r in held:
                    self.profile.release(r)
                self._planned_asleep = self._plan_nodes(now + OVERRUN_HOLD) & self.sleeper.unavailable
                return []
        checked = self._services(now) if self.knowledge is not None or self.tree is not None else []
        if not held and self.policy.idle_round(self.profile, self.queue):
            return checked
        queue = WaitingQueue(self.queue)      # no copy: O(1) however long the queue
        profile = self.profile
        if self.tree is not None:
            profile = io_profile(profile, self.tree, now, self.running, self.queue,
                                 self.policy.kept_reservations(), OVERRUN_HOLD)
        ctx = SchedulingContext(now, self.cluster, profile, queue, self.running,
                                self.submitted, self.ended, estimates=self.knowledge is not None,
                                machine=self.machine)
        self.submitted, self.ended = [], []
        self._serviced = 0
        try:
            decisions = self.policy.schedule(ctx) or []
        finally:
            for r in held:
                self.profile.release(r)
        if not decisions:
            return checked
        for d in decisions:
            if type(d) is Start:
                checked.append(self._apply_start(now, d, ctx))
            elif type(d) is Reject:
                self._apply_reject(d)
                checked.append(d)
            elif type(d) is WakeUp:
                checked.append(d)
            elif type(d) is Annotate:
                if d.job_id not in self.queue and d.job_id not in self.running:
                    self._fail(d.job_id, "annotates a job that is neither waiting nor running")
                checked.append(d)
            else:
                raise SimulationError(f"policy '{self.policy.policy_name()}' returned {d!r}, not a decision")
        return checked

    def _services(self, now: float) -> list[Decision]:
        """Before the policy's round: the knowledge source learns from the jobs that ended and
        estimates the new ones (the waiting job is replaced by its estimated view), then the
        new jobs whose bandwidth can never be given are rejected (I/O-aware runs)."""
        fresh = self.submitted[self._serviced:]
        self._serviced = len(self.submitted)
        tracker = self.knowledge
        if tracker is not None:
            for jid, start in self._ended_starts.items():
                tracker.observe(jid, now - start)
            self._ended_starts.clear()
            for jid in fresh:
                job = self.queue.get(jid)
                if job is not None:
                    self.queue[jid] = tracker.estimate(job)
        out = []
        if self.tree is not None:
            waiting = [job for job in map(self.queue.get, fresh) if job is not None]
            for job, reason in unrunnable(self.tree, waiting):
                d = Reject(job.id, reason)
                self._apply_reject(d)
                out.append(d)
        return out

    def _plan_nodes(self, before: float) -> int:
        """The nodes of the policy's kept reservations that start before ``before``."""
        mask = 0
        for r in self.policy.kept_reservations():
            if r.start < before:
                mask |= r.allocation.nodes
        return mask

    def _hold_overrun(self, now: float) -> list[Reservation] | None:
        """Reservations keeping the jobs that reached their reservation's end but have not
        ended yet (a walltime kill or an I/O phase reported in a later message at the same
        time) out of the policy's reach for this round; None when the profile already gives
        their resources to a planned job (a plan-keeping policy), so no round can be safe."""
        held = []
        for jid, run in self._overrun.items():
            try:
                held.append(self.profile.reserve(now, now + OVERRUN_HOLD, run.allocation, tag=jid))
            except SimulationError:
                for r in held:
                    self.profile.release(r)
                return None
        return held

    def _fail(self, job_id: str, message: str) -> None:
        raise SimulationError(f"policy '{self.policy.policy_name()}' {message}", job=job_id)

    def _allocation_of(self, d: Start) -> Allocation:
        """A Start built by hand (no profile Allocation): rebuild one from ids."""
        cl = self.cluster
        mask = 0
        for rid in d.nodes:
            if rid not in cl.index_of:
                self._fail(d.job_id, f"starts the job on unknown compute resource {rid}")
            mask |= 1 << cl.index_of[rid]
        sidx = {s.id: k for k, s in enumerate(cl.storage)}
        per = [0] * len(cl.storage)
        placement = {}
        for rid, shares in d.bb.items():
            for sid, nbytes in shares.items():
                if sid not in sidx:
                    self._fail(d.job_id, f"places burst buffer on unknown storage resource {sid}")
                per[sidx[sid]] += nbytes
                placement[cl.index_of.get(rid, -1)] = (sidx[sid], nbytes)
        job = self.queue.get(d.job_id)
        counters = self.profile.counter_vector(job.request) if job is not None and job.request.counters else ()
        return Allocation(mask, tuple(per) if any(per) else (), placement, counters)

    def _apply_start(self, now: float, d: Start, ctx: SchedulingContext) -> Start:
        job = self.queue.get(d.job_id)
        if job is None:
            self._fail(d.job_id, "starts a job that is not waiting (unknown, running or rejected)")
        # (a waiting job was submitted by a message at or before now: no job starts before its
        # submission. Its subtime is no bound: Batsim's submitter, whose clock is a sum of
        # steps, may submit it a hair before, even a printed microsecond: simulator/submitter.py)
        alloc = d.allocation if isinstance(d.allocation, Allocation) else self._allocation_of(d)
        req = job.request
        if alloc.nodes.bit_count() != req.nodes:
            self._fail(d.job_id, f"gives {alloc.nodes.bit_count()} nodes to a job asking {req.nodes}")
        if self.sleeper is not None and alloc.nodes & self.sleeper.unavailable:
            self._fail(d.job_id, f"starts the job on sleeping or switching nodes "
                                 f"{self.cluster.ids_of(alloc.nodes & self.sleeper.unavailable)}")
        if req.bb_total:
            given = sum(alloc.bb)
            if given < req.bb_total:
                self._fail(d.job_id, f"gives {given} bytes of burst buffer to a job asking {req.bb_total}")
        if self.power is not None:
            self._check_power(now, d.job_id, dict(req.counters).get(POWER, 0.0),
                              now + req.walltime)
        reservation = ctx.reservations.get(d.job_id)
        if reservation is None:   # a policy that did not go through ctx.start: take it now
            self.machine.take(job, alloc, now)
            reservation = self.profile.reserve(now, now + req.walltime, alloc, tag=d.job_id)
        elif reservation.allocation is not alloc:
            self._fail(d.job_id, "starts the job on another allocation than the one ctx.start took")
        del self.queue[d.job_id]
        self.running[d.job_id] = RunningJob(job, now, alloc, reservation)
        if reservation.end != INF:
            heapq.heappush(self._ends, (reservation.end, d.job_id))
        return d if d.allocation is not None else Start(d.job_id, d.nodes, d.bb, alloc)

    def _apply_reject(self, d: Reject) -> None:
        if d.job_id not in self.queue:
            self._fail(d.job_id, "rejects a job that is not waiting")
        if not d.reason:
            self._fail(d.job_id, "rejects a job without a reason")
        logger.info("rejecting job %s: %s", d.job_id, d.reason)
        del self.queue[d.job_id]

    # -- protocol edge helpers -------------------------------------------------------------
    def procset_of(self, d: Start):
        """The Batsim resource set of a checked start (from its node mask: no per-id work)."""
        runs = self.cluster.runs_of(d.allocation.nodes) if d.allocation is not None else None
        return procset_of_runs(runs) if runs else procset_of_ids(d.nodes)

    def storage_mapping(self, d: Start) -> dict[str, int] | None:
        """Labels of the job's profile -> storage ids, only for profiles that use labels.

        Decision: a label naming the PFS (contains "pfs") maps to the PFS; any other label to
        the storage host holding the job's first burst-buffer share, else the PFS.
        """
        run = self.running.get(d.job_id)
        prof = run.job.profile_data if run is not None else None
        if not prof:
            return None
        kind = prof.get("type")
        if kind == "delay":     # most profiles of a trace: no storage label
            return None
        labels = []
        if kind == "parallel_homogeneous_pfs":
            labels = [prof.get("storage", "pfs")]
        elif kind == "data_staging":
            labels = [prof.get("from", "pfs"), prof.get("to", "pfs")]
        if not labels:
            return None
        bb_host = next((sid for shares in d.bb.values() for sid in shares), None)
        mapping = {}
        for label in labels:
            if "pfs" in str(label).lower() and self.cluster.pfs_id is not None:
                mapping[label] = self.cluster.pfs_id
            elif bb_host is not None:
                mapping[label] = bb_host
            elif self.cluster.pfs_id is not None:
                mapping[label] = self.cluster.pfs_id
            elif len(self.cluster.storage_ids) == 1:
                return None   # Batsim maps a lone storage host itself
            else:
                raise SimulationError(f"cannot map storage label '{label}' of the job's profile", job=d.job_id)
        return mapping


#: prefix of a rejected job's metadata (``mrsched.expe.runner`` reads it back)
REJECT_METADATA_PREFIX = "rejected: "


def reject_metadata(reason: str) -> str:
    """A rejection reason as Batsim job metadata: one line, no ``"`` (Batsim refuses it)."""
    text = " ".join(str(reason or "no reason given").split()).replace('"', "'")
    return REJECT_METADATA_PREFIX + text


def with_default_bb_capacity(data: dict, sched_config: Any) -> dict:
    """SIMULATION_BEGINS data where burst-buffer storage hosts without ``bb_capacity`` get
    sched-config's ``bb_capacity`` (``mrsched run --bb-capacity``; Batsim ``--sched-cfg``).

    A platform whose storage hosts come from Batsim's ``-r`` (the Euro-Par artifact's) has no
    capacity in the XML; without this every burst-buffer job would be rejected. The PFS (a
    ``pfs="true"`` host, or one named ``pfs``) keeps none.
    """
    default = sched_config.get("bb_capacity") if isinstance(sched_config, dict) else None
    if default is None:
        return data
    if isinstance(default, bool) or not isinstance(default, (int, float)) or not default >= 0:
        raise SimulationError(f"sched-config bb_capacity must be a number of bytes >= 0, got "
                              f"{default!r}", event="SIMULATION_BEGINS",
                              field="sched-config.bb_capacity")
    storage = []
    for host in data.get("storage_resources") or []:
        props = host.get("properties") or {}
        is_pfs = str(props.get("pfs", "")).lower() == "true" or host.get("name") == "pfs"
        if "bb_capacity" not in props and not is_pfs:
            host = {**host, "properties": {**props, "bb_capacity": str(int(default))}}
        storage.append(host)
    return {**data, "storage_resources": storage}


#: callbacks the lean message path of PolicyScheduler stands in for
_LEAN_HOOKS = ("on_job_submission", "on_job_completion", "on_requested_call", "on_no_more_events")


class PolicyScheduler(BatsimScheduler):
    """A BatsimScheduler driven by a Policy (``make_scheduler(name, options)`` builds one)."""

    #: the policy's decision time charged to the simulation (``decision_cost`` option)
    decision_cost: DecisionCost = NO_COST

    def __init__(self, policy: Policy, run: RunOptions | None = None):
        run = run if run is not None else RunOptions()
        super().__init__({**policy.get_params(), **run.changed()})
        self.policy = policy
        self.runtime = PolicyRuntime(policy, run)
        self.decision_cost = parse_decision_cost(run.decision_cost, run.decision_scale)
        if not self.decision_cost.free and capped(run.power_cap, run.power_cap_steps,
                                                  run.power_cap_share):
            # a costed start takes effect after the time its reservation counted on: it may run
            # on past a lower step of the cap, or beside the start its reservation's end allowed
            raise ConfigError(f"policy '{policy.policy_name()}': decision_cost with a power cap is "
                              "not supported: a start takes effect when the scheduler's work is "
                              "done, later than its reservation, so the machine could exceed the "
                              "cap", field="decision_cost")
        # the lean path calls the runtime directly: only when no callback is overridden
        cls = type(self)
        self._lean = all(getattr(cls, name) is getattr(PolicyScheduler, name) for name in _LEAN_HOOKS)

    def handle_message(self, msg: dict) -> dict:
        """One message; with a ``decision_cost`` the reply is stamped when the work is done
        (``mrsched.schedulers.execution.cost``)."""
        if self.decision_cost.free:
            return self._handle_message(msg)
        return charge_reply(self.decision_cost, msg, self._handle_message,
                            lambda: self.message_latency)

    def _handle_message(self, msg: dict) -> dict:
        """Every message goes through :meth:`BatsimScheduler.handle_message`, except the
        common ones, which the lean path hands to the runtime without building event objects
        (``BatsimScheduler.handle_lean``): same effects, same reply, less work."""
        if self._lean:
            reply = self.handle_lean(msg)
            if reply is not None:
                return reply
        return super().handle_message(msg)

    def lean_submitted(self, now: float, job_id: str, job: dict) -> None:
        self.runtime.submit(now, job_id, job, None)

    def lean_completed(self, now: float, job_id: str) -> None:
        self.runtime.complete(now, job_id)

    def on_simulation_begins(self, event) -> None:
        data = with_default_bb_capacity(event.to_data(), self.sched_config)
        cluster = cluster_from_simulation_begins(data)
        self.runtime.begin(cluster, event.timestamp, self.profiles)

    def on_job_submission(self, event) -> None:
        self.runtime.submit(self.now, event.job_id, event.job, event.profile)

    def on_job_completion(self, event) -> None:
        self.runtime.complete(self.now, event.job_id)

    def on_requested_call(self, event) -> None:
        """Nothing to record: ``on_no_more_events`` runs the round (on a tick when periodic)."""

    def on_resource_state_changed(self, event) -> None:
        """A SET_RESOURCE_STATE of the idle-node service is done (Batsim acknowledges the
        whole request at once)."""
        if self.runtime.sleeper is not None:
            try:
                state = int(event.state)
            except (TypeError, ValueError):
                raise ProtocolError(f"RESOURCE_STATE_CHANGED state must be a pstate number, got "
                                    f"{event.state!r}", event="RESOURCE_STATE_CHANGED",
                                    field="state") from None
            self.runtime.sleeper.changed(self.now, self.runtime.cluster, list(event.resources), state)

    def on_no_more_events(self) -> None:
        runtime = self.runtime
        if not hasattr(runtime, "cluster"):
            return  # no SIMULATION_BEGINS yet
        decisions = runtime.step(self.now)
        if not decisions:
            return
        for d in decisions:
            if type(d) is Start:
                self.start_job(d)
            elif type(d) is Reject:
                # the reason goes to Batsim's _jobs.csv (metadata column), so that a run
                # directory says why, whatever engine ran it
                self.set_job_metadata(d.job_id, reject_metadata(d.reason))
                self.reject_job(d.job_id)
            elif type(d) is Annotate:
                self.set_job_metadata(d.job_id, d.text)
            elif type(d) is SwitchPower:
                self.set_resource_state(d.nodes, d.pstate)
            else:
                self.call_me_later(d.time)

    def start_job(self, d: Start) -> None:
        """Turn a checked Start into protocol actions (the job model's hook; alloc-only here,
        ``mrsched.schedulers.execution.iophased`` overrides it)."""
        alloc = d.allocation
        if self._lean_now is not None and alloc is not None:
            # in a lean round (``in_lean_round``) the runtime checked the start (waiting job,
            # existing free nodes): the EXECUTE_JOB is written directly from the node mask's runs
            runtime = self.runtime
            runs = runtime.cluster.runs_of(alloc.nodes, keep=False)
            if runs:
                self.execute_job_runs(d.job_id, runs, runtime.storage_mapping(d))
                return
        self.execute_job(d.job_id, self.runtime.procset_of(d), storage_mapping=self.runtime.storage_mapping(d))
