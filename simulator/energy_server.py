"""The server, the job executors and the switch actors of a ``-E`` run (Batsim 4.2.1's
``server.cpp``, ``pstate.cpp``, ``jobs_execution.cpp`` with the energy plugin on).

- ``SET_RESOURCE_STATE`` (``server_on_pstate_modification``, server.cpp 424-510): the request
  is recorded, a ``p`` row of the energy trace written, then machine by machine: computation
  to computation is set at once (RESOURCE_STATE_CHANGED when the request's last machine is
  done, at the same instant); computation to sleep and sleep to computation start a switch
  actor on the machine; a machine in a virtual pstate (still switching) or a request for one
  only logs an error, and that request is never acknowledged; sleep to sleep aborts.
- A **switch actor** (``switch_off_machine_process`` / ``switch_on_machine_process``,
  pstate.cpp 17-84) sets the virtual pstate, computes 1 flop (so it lasts 1 / its speed and
  draws its power), sets the target pstate, marks the machine sleeping or idle and tells the
  server, which acknowledges the request once all its machines told it
  (``CurrentSwitches::mark_switch_as_done``, pstate.cpp 104).
- ``QUERY`` ``consumed_energy`` (``handle_query``, protocol.cpp 761-802, and
  ``server_on_sched_tell_me_energy``, server.cpp 562): an ANSWER with the platform's energy.
- A **job's actor** (``execute_job_process``, jobs_execution.cpp 456-580) reads its machines'
  energy and writes an ``s`` row before it runs, an ``e`` row after; the difference is the
  job's ``consumed_energy``.

Every energy read and every pstate change is a SimGrid simcall: an actor making one yields to
the next sub-round (``Energy.read``), which decides the order of what actors ending together
send to the server. A handler that yields finishes in a continuation (``_done``).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Callable

from mrsched.errors import ProtocolError, SimulationError
from mrsched.schedulers.batsim.intervals import format_intervals, parse_ids
from mrsched.simulator.energy import (COMPUTATION, IDLE, SLEEP, SLEEPING, SWITCHING_OFF,
                                      SWITCHING_ON, COMPUTING, fmt_ld)
from mrsched.simulator.executors import Executors, JobExecutor
from mrsched.simulator.jobs import SUBMITTED, JobState
from mrsched.simulator.profiles import PtaskSpec
from mrsched.simulator.server import Server, check_query

logger = logging.getLogger("mrsched.simulator.engine")

#: simcalls of ``this_actor::execute(1)`` before its action exists (SimGrid 3.32 s4u_Actor.cpp
#: 359-362: ``exec_init`` sets the flops and the host, then the priority, then starts it)
EXEC_INIT_SIMCALLS = 3
#: the same for a job's parallel task (``exec_init(hosts, flops, bytes)``: flops, bytes, hosts)
PTASK_INIT_SIMCALLS = 3


def _stoi(text: str) -> int | None:
    """``std::stoi``: an integer at the start of the text (blanks skipped), or None."""
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else None


class CurrentSwitches:
    """Batsim's ``CurrentSwitches`` (pstate.cpp 86-140): the pending requests by target pstate,
    each with its machines and those still switching."""

    def __init__(self) -> None:
        self._switches: dict[int, list[tuple[list[int], set[int]]]] = {}

    def add(self, ids: list[int], target: int) -> None:
        self._switches.setdefault(target, []).append((ids, set(ids)))

    def done(self, r: int, target: int) -> list[int] | None:
        """Machine ``r`` reached ``target``: the machines of its request if it was the last."""
        requests = self._switches.get(target)
        if not requests:
            raise SimulationError(f"machine {r} was not switching to pstate {target}",
                                  event="RESOURCE_STATE_CHANGED")
        for i, (ids, switching) in enumerate(requests):
            if r in switching:
                switching.discard(r)
                if switching:
                    return None
                del requests[i]
                if not requests:
                    del self._switches[target]
                return ids
        raise SimulationError(f"machine {r} was not switching to pstate {target}",
                              event="RESOURCE_STATE_CHANGED")


class SwitchActor:
    """One machine's switch off (to a sleep pstate) or on (to a computation pstate)."""

    __slots__ = ("s", "r", "target", "off")

    def __init__(self, server: "EnergyServer", r: int, target: int, off: bool):
        self.s, self.r, self.target, self.off = server, r, target, off

    def start(self) -> None:
        e, r = self.s.energy, self.r
        power = e.powers[r]
        virtual = (power.sleep[self.target][0] if self.off
                   else power.sleep[e.pstate[r]][1])
        e.set_pstate(r, virtual)
        self.s.k.spawn(self._exec, EXEC_INIT_SIMCALLS)

    def _exec(self, simcalls: int) -> None:
        k = self.s.k
        if simcalls:
            k.spawn(self._exec, simcalls - 1)
            return
        e, r = self.s.energy, self.r
        name = e.powers[r].name
        p = k.start_ptask(PtaskSpec({name: 1.0}, {}, (name,)), self._done)
        e.task_started(p)
        e.actor_update(r)   # Exec::on_start: a one-host execution updates its host

    def _done(self) -> None:
        self.s.energy.set_pstate(self.r, self.target)
        self.s.k.spawn(self._report)

    def _report(self) -> None:
        s = self.s
        s.machines.set_state(self.r, SLEEPING if self.off else IDLE)
        s.k.put(s.energy.powers[self.r].name, "SWITCHED", (self.r, self.target))


class EnergyServer(Server):
    """``Server`` with the energy plugin: SET_RESOURCE_STATE, QUERY, the switches."""

    def __init__(self, *args: Any, energy: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.energy = energy
        self.switches = CurrentSwitches()
        self.nb_switching = 0
        self.nb_grouped_switches = 0
        self.nb_machine_switches = 0
        self._continues = False
        self.handlers.update({
            "SET_RESOURCE_STATE": self._set_resource_state, "QUERY": self._query,
            "SWITCHED": self._on_switched, "JOB_COMPLETED": self._on_job_completed,
        })

    # -- the loop --------------------------------------------------------------------------
    def begin(self) -> None:
        self.energy.initial_pstate_rows()
        super().begin()

    def _submitter(self, workload: Any) -> Any:
        sub = super()._submitter(workload)
        sub.first_read = self._first_submission
        return sub

    def _first_submission(self, then: Callable[[], None]) -> None:
        """The submitter's first job: the platform's energy then (job_submitter.cpp 141-147)."""
        e = self.energy
        if e.first_submission >= 0:
            then()
            return

        def keep(total):
            e.first_submission = total
            then()
        e.read_all(keep)

    def receive(self, mtype: str, payload: Any) -> None:
        self._continues = False
        self.handlers[mtype](payload)
        if not self._continues and self.sched_ready and self.buffer and not self.finished \
                and self.k.mailbox_empty():
            self._send_to_scheduler()

    def _done(self) -> None:
        """A handler that went on in later sub-rounds is over: the server's check, with what
        was posted to it meanwhile still in its mailbox (its next get came after)."""
        if (self.sched_ready and self.buffer and not self.finished and self.k.mailbox_empty()
                and not self.k.transfer_in_flight()):
            self._send_to_scheduler()

    def _is_finished(self) -> bool:
        return self.nb_switching == 0 and super()._is_finished()

    # -- jobs --------------------------------------------------------------------------------
    def _on_job_completed(self, js: JobState) -> None:
        self.energy.touch(js.alloc[0])   # the message's end updates its sender's host
        self._on_completed(js)

    def _execute(self, data: dict) -> None:
        """Besides the base checks, every machine must be idle or computing and in a
        computation pstate (server.cpp 982-1005)."""
        js = self.states.get(data.get("job_id")) if isinstance(data, dict) else None
        text = data.get("alloc") if isinstance(data, dict) else None
        if type(js) is JobState and js.state == SUBMITTED and not js.final_state \
                and isinstance(text, str):
            try:
                ids = parse_ids(text, job=js.job.id)
            except ProtocolError:
                ids = []   # the base refuses it
            e, m = self.energy, self.machines
            for r in ids:
                if r >= e.n:
                    break
                state = m.state[r]
                if state not in (IDLE, COMPUTING):
                    from mrsched.simulator.energy import STATE_NAMES

                    raise SimulationError(
                        f"invalid allocation {text!r}: machine {r} ({m.names[r]}) cannot compute "
                        f"jobs now (it is {STATE_NAMES[state]})", event="EXECUTE_JOB",
                        job=js.job.id, field="alloc")
                ps = e.pstate[r]
                if e.powers[r].kinds.get(ps) != COMPUTATION:
                    raise SimulationError(
                        f"invalid allocation {text!r}: machine {r} ({m.names[r]}) is not in a "
                        f"computation pstate (pstate {ps})", event="EXECUTE_JOB",
                        job=js.job.id, field="alloc")
        super()._execute(data)

    # -- SET_RESOURCE_STATE ----------------------------------------------------------------
    def _set_resource_state(self, data: dict) -> None:
        etype = "SET_RESOURCE_STATE"
        if set(data) != {"resources", "state"}:
            raise ProtocolError("SET_RESOURCE_STATE data must hold exactly 'resources' and "
                                f"'state' (got {sorted(data)})", event=etype)
        ids = parse_ids(data["resources"], job=None, field="resources", event=etype)
        state = data["state"]
        target = _stoi(state) if isinstance(state, str) else None
        if target is None:
            raise ProtocolError(f"'state' must be a string holding an integer, got {state!r}",
                                event=etype, field="state")
        e = self.energy
        if ids[-1] >= e.n:
            raise SimulationError(f"machine {ids[-1]} does not exist (ids 0-{e.n - 1})",
                                  event=etype, field="resources")
        self.switches.add(ids, target)
        self._continues = True
        e.entry("p", lambda _total: self._request_arrived(ids, target))

    def _kind(self, r: int, pstate: int) -> str:
        # Batsim reads Machine::pstates with operator[]: an unknown pstate counts as computation
        return self.energy.powers[r].kinds.get(pstate, COMPUTATION)

    def _request_arrived(self, ids: list[int], target: int) -> None:
        kind = self._kind(ids[0], target)
        self.energy.pstate_row(ids, -1 if kind == COMPUTATION else -2 if kind == SLEEP else -42)
        self.nb_grouped_switches += 1
        self.nb_machine_switches += len(ids)
        self._switch_machines(iter(ids), target)

    def _switch_machines(self, it, target: int) -> None:
        e, m, k = self.energy, self.machines, self.k
        for r in it:
            current = self._kind(r, e.pstate[r])
            wanted = self._kind(r, target)
            if wanted == COMPUTATION and target >= len(e.powers[r].speeds):
                raise SimulationError(f"machine {r} ({m.names[r]}) has no pstate {target} "
                                      f"({len(e.powers[r].speeds)} pstates)",
                                      event="SET_RESOURCE_STATE", field="state")
            if current == COMPUTATION:
                if wanted == COMPUTATION:
                    e.set_pstate(r, target)
                    k.spawn(self._set_at_once, r, target, it)
                    return
                if wanted == SLEEP:
                    m.set_state(r, SWITCHING_OFF)
                    self._create_switch(r, target, True, it)
                    return
                logger.error("switching machine %d (%s) from a computation pstate to pstate %d, "
                             "a virtual one: ignored, never acknowledged", r, m.names[r], target)
            elif current == SLEEP:
                if wanted != COMPUTATION:
                    raise SimulationError(
                        f"machine {r} ({m.names[r]}) sleeps in pstate {e.pstate[r]}: it can only "
                        f"switch to a computation pstate, not {target}",
                        event="SET_RESOURCE_STATE", field="state")
                m.set_state(r, SWITCHING_ON)
                self._create_switch(r, target, False, it)
                return
            else:
                logger.error("machine %d (%s) is switching (pstate %d): the request to pstate %d "
                             "is ignored and never acknowledged", r, m.names[r], e.pstate[r],
                             target)
        m.write_states()
        self._done()

    def _create_switch(self, r: int, target: int, off: bool, it) -> None:
        """``Actor::create`` of a switch actor (a simcall: it runs before the server goes on)."""
        self.nb_switching += 1
        self.k.spawn(SwitchActor(self, r, target, off).start)
        self.k.spawn(self._switch_machines, it, target)

    def _set_at_once(self, r: int, target: int, it) -> None:
        ids = self.switches.done(r, target)
        if ids is None:
            self._switch_machines(it, target)
            return

        def acknowledged(_total):
            self._append("RESOURCE_STATE_CHANGED",
                         {"resources": format_intervals(ids), "state": str(target)})
            self._switch_machines(it, target)
        self.energy.pstate_row(ids, target)
        self.energy.entry("p", acknowledged)

    def _on_switched(self, payload: tuple[int, int]) -> None:
        """``server_on_switched`` (server.cpp 585-610)."""
        r, target = payload
        e = self.energy
        self._continues = True
        e.touch(r)   # the message's end updates its sender's host
        if e.pstate[r] != target:
            raise SimulationError(f"pstate inconsistency: machine {r} switched to pstate "
                                  f"{target} but is in pstate {e.pstate[r]}",
                                  event="SET_RESOURCE_STATE")
        ids = self.switches.done(r, target)

        def over(_total=None):
            if ids is not None:
                self.machines.write_states()
                self._append("RESOURCE_STATE_CHANGED",
                             {"resources": format_intervals(ids), "state": str(target)})
            self.nb_switching -= 1
            self._done()
        if ids is None:
            over()
            return
        e.pstate_row(ids, target)
        e.entry("p", over)

    # -- QUERY -----------------------------------------------------------------------------
    def _query(self, data: dict) -> None:
        check_query(data)
        self._continues = True

        def answer(total):
            self._append("ANSWER", {"consumed_energy": round(float(total), 6)})
            self._done()
        self.energy.read_all(answer)


class EnergyExecutors(Executors):
    """``Executors`` whose job actors read the energy before and after the job runs."""

    def __init__(self, kernel: Any, machines: Any, jobs: Any, energy: Any):
        super().__init__(kernel, machines, jobs)
        self.energy = energy
        self.before: dict[str, Any] = {}   # job id -> its machines' energy at its start

    def launch(self, js: JobState, host_ids, steps, storage_mapping, extra) -> None:
        """``server_on_execute_job`` creates the job's actor: it runs in the next sub-round."""
        self.k.spawn(self._job_actor, js, host_ids, steps, storage_mapping, extra)

    def _job_actor(self, js: JobState, host_ids, steps, storage_mapping, extra) -> None:
        e = self.energy

        def started(before):
            self.before[js.job.id] = before
            e.entry("s", running)

        def running(_total):
            self.m.job_runs([r for lo, hi in js.comp_runs for r in range(lo, hi + 1)] + list(js.storage))
            simcalls = 0 if steps[0][1]["type"] == "delay" else PTASK_INIT_SIMCALLS
            self._after(simcalls, js, host_ids, steps, storage_mapping, extra)
        e.read(js.alloc, started)

    def _after(self, simcalls: int, *args) -> None:
        if simcalls:
            self.k.spawn(self._after, simcalls - 1, *args)
            return
        js, host_ids, steps, storage_mapping, extra = args
        ex = EnergyJobExecutor(self, js, host_ids, steps, storage_mapping, extra)
        js.executor = ex
        ex.start()


class EnergyJobExecutor(JobExecutor):
    """``JobExecutor`` whose sleeps and tasks count in its machines' energy."""

    __slots__ = ()

    def start(self) -> None:
        super().start()
        if self.wall_timer is not None:
            self.x.energy.sleep_started(self.js.alloc[0], self.wall_timer)

    def next_step(self) -> None:
        super().next_step()
        e = self.x.energy
        if self.timer is not None:
            e.sleep_started(self.js.alloc[0], self.timer)
        if self.ptask is not None:
            e.task_started(self.ptask)

    def on_step_done(self) -> None:
        e = self.x.energy
        if self.timer is not None:
            e.sleep_over(self.js.alloc[0], self.timer)
        if self.wall_timer is not None:   # the task ended first: its timeout's sleep is freed
            e.sleep_dropped(self.js.alloc[0], self.wall_timer)
        super().on_step_done()

    def on_delay_done(self) -> None:
        """A delay's sleep ended: the host is updated now, before the next task of a composed
        profile loads it (SimGrid's maestro update when the sleep action ends)."""
        self.x.energy.sleep_over(self.js.alloc[0], self.timer)
        super().on_delay_done()

    def on_walltime(self) -> None:
        e = self.x.energy
        if self.timer is not None:   # a delay cut by the walltime
            e.sleep_over(self.js.alloc[0], self.timer)
        e.sleep_over(self.js.alloc[0], self.wall_timer)
        super().on_walltime()

    def stop(self) -> None:
        e = self.x.energy
        if self.timer is not None:
            e.sleep_over(self.js.alloc[0], self.timer)
        if self.ptask is not None:
            e.task_stopped(self.ptask)
        super().stop()

    def kill(self) -> dict:
        if self.wall_timer is not None:
            self.x.energy.sleep_over(self.js.alloc[0], self.wall_timer)
        return super().kill()

    def finish(self, state: str, code: int, zombie=None) -> None:
        if self.wall_timer is not None:
            self.x.energy.sleep_over(self.js.alloc[0], self.wall_timer)
        super().finish(state, code, zombie)

    def ended(self, state: str, code: int, *, notify: bool, zombie=None) -> None:
        """The machines are freed (states, a row), then their energy read (the job's
        consumed energy), then an ``e`` row, then JOB_COMPLETED (jobs_execution.cpp 550-578).
        ``zombie``: the task a walltime left running; it loads its hosts until it is cancelled,
        once the server received the JOB_COMPLETED (``JobExecutor.on_walltime``)."""
        super().ended(state, code, notify=False)
        x, js = self.x, self.js
        e = x.energy

        def after(total):
            before = x.before.pop(js.job.id)
            e.job_energy[js.job.id] = fmt_ld(total - before)
            e.entry("e", notified)

        def notified(_total):
            if not notify:
                return
            k = self.k
            if zombie is None:
                k.put(x.m.names[js.alloc[0]], "JOB_COMPLETED", js)
            else:
                def cancelled():   # its hosts are updated with it still running, then it stops
                    e.task_stopped(zombie)
                    k.stop_ptask(zombie)
                k.put(x.m.names[js.alloc[0]], "JOB_COMPLETED", js, cancelled)
        e.read(js.alloc, after)
