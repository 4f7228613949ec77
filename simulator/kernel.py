"""The engine's kernel: SimGrid's clock and steps, sleeps, the server's mailbox, the message in
flight and the ptask_L07 executions, under actors written as plain callbacks.

Batsim is a set of SimGrid actors talking through one ``server`` mailbox on the master host; each
internal message (1 byte) takes the route latency (+ 1 byte / bottleneck bandwidth, shared
with the ptasks on its links: ``_contend``) from its sender's host to the master, and the
server receives them one at a time, in the order they were posted. That queue is what
produces Batsim's time offsets (JOB_SUBMITTED at 4.5e-05 on ``small_platform``, +0.0006 s per
hop on ``cluster512``), so the kernel models it explicitly.

Time advances in SimGrid's steps (``EngineImpl::solve``): the actors whose actions end in a step
run in the order those actions were created, and their messages are posted after all of them
ran (docs/DESIGN.md, "Equal times"), which decides what the server sees at equal times. As in
SimPy's ``Environment.step``, one loop takes the next step, ends the actions it ends and
resumes their actors; the actors call back into the kernel:

- ``sleep(duration, cb)`` / ``at(t, cb)``: a sleep action (``this_actor::sleep_for``); the
  returned timer's ``alive = False`` cancels it;
- ``put(src, type, payload, on_sent)``: a message from host ``src`` to the server, which
  receives it as ``receive(type, payload)`` (the ``run`` argument) when it arrives;
- ``start_ptask`` / ``stop_ptask``: a parallel task of the ptask_L07 model (``ptask.py``);
  ``orphan_ptask``: one left running with no actor waiting for it (a walltime's zombie);
- ``spawn(start, *args)``: an actor created now (``Actor::create``), started once this step's
  actors ran and their messages were posted;
- ``stop()``: the simulation is over (the loop returns after this step).

The steps are taken by ``Kernel`` (plain Python) or, when built, by ``CompiledKernel``, whose
loop and primitives are ``_steps.c``: the same operations in the same order on C arrays (the
actors stay Python either way). ``Kernel.run`` is the specification of both.
"""

from __future__ import annotations

import math
from functools import reduce
from operator import attrgetter, itemgetter, sub
from typing import Any, Callable

from mrsched import native
from mrsched.errors import SimulationError

try:   # the step loop in C (optional: without it, Kernel.run)
    from mrsched.simulator import _steps
except ImportError:   # pragma: no cover - an install without a C compiler
    _steps = None

INF = math.inf
#: SimGrid 3.32's precisions (kernel/lmm/System.cpp): ``surf/precision`` (a sleep or latency
#: left below it is over) and maxmin x surf (work left below it is done, Action::update_remains)
SURF_PRECISION = 1e-9
REMAINS_PRECISION = 1e-5 * SURF_PRECISION

_compiled_steps = False   # whether new kernels step in C (use_compiled_steps)


def use_compiled_steps(compiled: bool) -> bool:
    """Step the kernels created from now on in C (``_steps.c``, when built) or in Python
    (``Kernel.run``); whether C is now in use. ``MRSCHED_PURE_PYTHON=1`` starts with
    Python. Both give the same runs: the same operations in the same order."""
    global _compiled_steps
    _compiled_steps = compiled and _steps is not None
    return _compiled_steps


use_compiled_steps(native.wanted())


def make_kernel(net: Any) -> "Kernel | CompiledKernel":
    """A kernel for one run, stepping in C or in Python as ``use_compiled_steps`` chose.
    ``net`` gives the master host's name (``master``), the cost of a message from the master
    (``loopback``) and from any host (``comm_spec(src)``: latency, rate, work), the platform
    (``platform``) and the host names by resource id (``names``, for the ptask model)."""
    return CompiledKernel(net) if _compiled_steps else Kernel(net)


# wake-ups by creation rank; the sort is stable, so a received message's server (appended
# first) runs before its sender, which shares the rank of their comm
_wake_order = itemgetter(0)
_alive = attrgetter("alive")


def _arrives() -> None:
    """The marker of the message in flight among the model's ptasks (``_contend``)."""


def _nothing() -> None:
    pass


class Timer:
    """A SimGrid sleep action (its remaining max duration lives in ``Kernel._sleep_md``, ``md``
    is 0 once it ended); ``seq`` its creation rank. ``_steps.Timer`` is its compiled twin."""

    __slots__ = ("md", "cb", "alive", "seq")

    def __init__(self, md: float, cb: Callable[[], None], seq: int):
        self.md, self.cb, self.alive, self.seq = md, cb, True, seq


class _PtaskEnd:
    """Wakes the actor of a ptask that ended in this step, unless it was stopped meanwhile."""

    __slots__ = ("k", "p", "cb")

    def __init__(self, kernel: "KernelBase", p, cb: Callable[[], None]):
        self.k, self.p, self.cb = kernel, p, cb

    def __call__(self) -> None:
        if self.k._ending.pop(id(self.p), None) is not None:
            self.cb()


class KernelBase:
    """What both step loops share: the actors' calls that take no step themselves (``spawn``,
    ``at``, the ptasks), and the switches of the loop's shortcuts."""

    #: Shortcuts of the step arithmetic (the same operations in the same order, less work):
    #: sleeps' subtractions batched until one ends, a message's latency step done together
    #: with its transfer step. False: one plain step at a time (tests compare both).
    _batch_sleeps = True
    _fold_latency = True

    def _init_ptasks(self, net: Any) -> None:
        self._platform = net.platform
        self._hosts = net.names
        self._message_bytes = getattr(net, "message_size", 1.0)
        self._message_dst = net.master
        self._ptasks: dict[int, tuple[Any, Callable[[], None], int]] = {}
        self._ptask_model = None
        self._ending: dict[int, Any] = {}   # ptasks ending in the current step, not yet handled
        self._speeds: dict[str, float] = {}   # hosts whose pstate changed: their speed now

    def round_token(self) -> Any:
        """What identifies the sub-round of actors running now (SimGrid's ``EngineImpl::run``
        runs the ready actors, then handles their simcalls, then runs the actors those made
        ready): the list actors spawned now go to, which the loop replaces before it starts
        them. An actor that yields spawns its continuation, so a list some actor spawned into
        is never current again once its sub-round ended."""
        return self._spawned

    def transfer_in_flight(self) -> bool:
        """Whether a message is on its way to the server (the server took it from its mailbox,
        or it was posted while the server waited)."""
        return self._transfer is not None

    def set_host_speed(self, name: str, speed: float) -> None:
        """Host ``name`` computes at ``speed`` flop/s per core from now on (a pstate change,
        ``CpuImpl::set_pstate``): running ptasks share its new capacity from the next step."""
        self._speeds[name] = speed
        if self._ptask_model is not None:
            from mrsched.simulator.ptask_speed import set_speed

            set_speed(self._ptask_model, name, speed, self.now)

    def spawn(self, start: Callable, *args: Any) -> None:
        """An actor created now (``Actor::create``): ``start(*args)`` runs once the actors of
        this step ran and their simcalls were applied (before the first step: when ``run``
        starts), its own simcalls applied after it."""
        self._spawned.append((start, args))

    def at(self, t: float, cb: Callable[[], None]):
        """Sleep until ``t``: for ``t - now`` seconds, as Batsim's ``send_message_at_time``."""
        return self.sleep(t - self.now, cb)

    def start_ptask(self, spec, on_done: Callable[[], None], *,
                    copies: dict[str, int] | None = None, uniform: tuple[list, float] | None = None):
        """Run ``spec`` (a ``profiles.PtaskSpec``; or, ``uniform = (id ranges, flops)``, the
        same flops on every resource of those ranges) as one ptask; ``on_done`` when it ends."""
        if self._ptask_model is None:
            try:
                from mrsched.simulator.ptask import PtaskModel
            except ImportError:
                raise SimulationError("this workload needs the ptask_L07 model "
                                      "(mrsched.simulator.ptask), which is not available") from None
            self._ptask_model = PtaskModel(self._platform, stepped=True, hosts=self._hosts)
            if self._speeds:
                from mrsched.simulator.ptask_speed import set_speed

                for name, speed in self._speeds.items():
                    set_speed(self._ptask_model, name, speed, self.now)
        seq = self.next_seq()
        if uniform is not None:
            p = self._ptask_model.add_uniform(uniform[0], uniform[1], self.now, seq=seq)
        else:
            p = self._ptask_model.add(spec.flops, spec.bytes, self.now, copies=copies, seq=seq)
        self._ptasks[id(p)] = (p, on_done, seq)
        if self._transfer is not None and self._tr_lat <= 0 and self._tr_rem < INF:
            self._contend()    # it may share a link with the new task from now on
        return p

    def _ptask_ends(self, now: float, delta: float) -> list[tuple[int, _PtaskEnd]]:
        """The ptasks that end in this step, as wake-ups (creation rank, actor). The message
        in flight, when the model carries it (``_contend``), arrives instead: its work left
        is 0 for the step's transfer check, which wakes the server at its rank."""
        ends = []
        ptasks = self._ptasks
        for p in self._ptask_model.step(now, delta):
            entry = ptasks.pop(id(p), None)
            if entry is not None:
                if entry[1] is _arrives:
                    self._tr_rem = 0.0
                    continue
                # a ptask ending now may still be stopped now (a walltime, a kill)
                self._ending[id(p)] = p
                ends.append((entry[2], _PtaskEnd(self, p, entry[1])))
        return ends

    def _contend(self) -> None:
        """The message in flight, its latency paid, shares a link with a running ptask: it
        joins the ptask model with the work it has left. In SimGrid a message is an L07 action
        like a job's ptask (``NetworkL07Model::communicate``, ``ptask_L07.cpp`` 231-242) that
        enters the fair-bottleneck solve once its latency is paid (``update_actions_state``
        118-131); the solver splits a link's capacity equally among the variables crossing it
        (``fair_bottleneck.cpp`` 55-140), so for the instant a 1-byte message crosses a task's
        link, the task runs at a fraction of its rate and the message more slowly than alone
        (docs/DESIGN.md, "Message contention"). A message sharing nothing stays the kernel's
        own transfer (same rate, same steps: no variable links them). The model then carries
        it; ``_ptask_ends`` reports its arrival. Called once a message's latency is paid (by
        the step loop, while ptasks run) and when a ptask starts during a transfer."""
        self._tr_checked = True
        model = self._ptask_model
        transfer = self._transfer
        rem = self._tr_rem
        if (model is None or transfer is None or self._tr_lat > 0 or not 0 < rem < INF
                or len(transfer[0]) < 4):
            return
        from mrsched.simulator.ptask_steps import enable_key

        enabled = enable_key(self._tr_enabled, self._tr_created, self._transfer_seq)
        p = model.add_message(transfer[0][3], self._message_dst, self._message_bytes, rem, self.now,
                              enabled)
        if p is not None:
            self._ptasks[id(p)] = (p, _arrives, self._transfer_seq)
            self._tr_rem = INF     # the model decides when it arrives

    def orphan_ptask(self, p) -> None:
        """A ptask nobody waits for any more: it runs on, its end wakes no actor."""
        entry = self._ptasks.get(id(p))
        if entry is not None:
            self._ptasks[id(p)] = (p, _nothing, entry[2])
        else:
            self._ending.pop(id(p), None)   # ended in this step: nothing to wake either

    def stop_ptask(self, p) -> None:
        if self._ptasks.pop(id(p), None) is not None:
            self._ptask_model.remove(p, self.now)
        else:
            self._ending.pop(id(p), None)   # ended in this step, its actor not woken yet


class Kernel(KernelBase):
    """The kernel in plain Python (``_steps.c`` is its compiled twin, ``CompiledKernel``)."""

    def __init__(self, net: Any):
        self.now = 0.0                   # SimGrid's clock: the running sum of the steps' deltas
        # sleep actions and their remaining max durations (parallel lists; a cancelled one is
        # dropped when one ends or when it is the next to end), the least and its sleep
        self._sleeps: list[Timer] = []
        self._sleep_md: list[float] = []
        self._sleep_least = INF
        self._sleep_first: Timer | None = None
        self._sleep_pend: list[float] = []   # deltas not yet subtracted from _sleep_md
        self._seq = 0
        # server mailbox: FIFO of posted puts, one transfer at a time
        self._queue: list = []          # deque-like list with head index
        self._qhead = 0
        self._transfer = None            # (spec, type, payload, on_sent) of the message in flight
        # its SimGrid comm action (an L07 ptask of 1 byte): latency left, work left, rate
        self._tr_lat = self._tr_rem = self._tr_rate = 0.0
        self._transfer_seq = 0           # creation rank of its SimGrid comm action
        self._tr_checked = False         # _contend has seen it since its latency was paid
        # when its variable joined SimGrid's solve (ptask_steps.enable_key): its latency paid
        # in a step, or created without latency by the actors
        self._tr_enabled, self._tr_created = 0.0, False
        self._server_waiting = True      # the server is blocked in its mailbox get()
        # Simcalls of the actors woken in one SimGrid sub-round (puts, the server's next get),
        # applied in the order those actors ran once all of them ran; None outside a step.
        self._simcalls: list | None = None
        self._spawned: list[tuple[Callable, tuple]] = []   # actors created, not started yet
        self._stopped = False
        self._receive: Callable[[Any, Any], None] | None = None   # the server (run's argument)
        self.master = net.master
        self._loopback = net.loopback
        self._comm_spec = net.comm_spec
        self._init_ptasks(net)

    # -- the actors' calls -----------------------------------------------------------------
    def sleep(self, duration: float, cb: Callable[[], None]) -> Timer:
        """An actor sleeps ``duration`` seconds (``this_actor::sleep_for``): a new sleep action
        whose max duration every step decrements; ``cb`` resumes the actor when it ends."""
        self._seq += 1
        timer = Timer(duration, cb, self._seq)
        if self._sleep_pend:
            self._flush_sleeps()
        self._sleeps.append(timer)
        self._sleep_md.append(duration)
        if duration < self._sleep_least:
            self._sleep_least = duration
            self._sleep_first = timer
        return timer

    def put(self, src: str, mtype: Any, payload: Any,
            on_sent: Callable[[], None] | None = None) -> None:
        """An actor on host ``src`` sends one message to the server (synchronous for it:
        ``on_sent`` resumes the actor once the server received it)."""
        dt = self._comm_spec(src) if src != self.master else self._loopback
        if self._simcalls is not None:
            self._simcalls.append((dt, mtype, payload, on_sent))
        elif self._server_waiting:
            self._start_transfer((dt, mtype, payload, on_sent))
        else:
            self._queue.append((dt, mtype, payload, on_sent))

    def next_seq(self) -> int:
        """The creation rank of a new action."""
        self._seq += 1
        return self._seq

    def mailbox_empty(self) -> bool:
        """Whether the server's mailbox holds no message (those posted in the current
        sub-round are not there yet)."""
        return self._qhead >= len(self._queue)

    def stop(self) -> None:
        """The simulation is over: ``run`` returns after the current step."""
        self._stopped = True

    # -- the steps' primitives -------------------------------------------------------------
    def _flush_sleeps(self) -> list[float]:
        """Every sleep's max duration now: the steps' deltas since the last flush subtracted
        one after the other (the same operations as one subtraction per step)."""
        pend = self._sleep_pend
        if pend:
            n = len(pend)
            if n == 1:
                d = pend[0]
                self._sleep_md = [m - d for m in self._sleep_md]
            elif n == 2:
                d, e = pend
                self._sleep_md = [m - d - e for m in self._sleep_md]
            elif n == 3:
                d, e, f = pend
                self._sleep_md = [m - d - e - f for m in self._sleep_md]
            else:
                self._sleep_md = [reduce(sub, pend, m) for m in self._sleep_md]
            pend.clear()
        return self._sleep_md

    def _forget_cancelled(self) -> None:
        """The sleep with the least time left was cancelled: drop the cancelled ones and find
        the next (a cancelled sleep is no candidate for SimGrid's next step)."""
        keep = [(s, m) for s, m in zip(self._sleeps, self._flush_sleeps()) if s.alive]
        self._sleeps = [s for s, _m in keep]
        self._sleep_md = [m for _s, m in keep]
        self._sleep_least = min(self._sleep_md, default=INF)
        if self._sleep_least < INF:
            self._sleep_first = self._sleeps[self._sleep_md.index(self._sleep_least)]

    def _start_transfer(self, message: tuple) -> None:
        """A message (spec, type, payload, on_sent) starts its way to the server: a new comm
        action, ranked among the actions by creation."""
        self._server_waiting = False
        self._transfer = message
        self._tr_lat, self._tr_rate, self._tr_rem = message[0][:3]
        self._tr_checked = False
        self._tr_enabled, self._tr_created = self.now, True
        self._seq += 1
        self._transfer_seq = self._seq

    def _server_get(self) -> None:
        """The server's next ``get()``: the oldest queued message, or wait for the next put."""
        if self._qhead < len(self._queue):
            entry = self._queue[self._qhead]
            self._queue[self._qhead] = None
            self._qhead += 1
            if self._qhead > 1024 and self._qhead * 2 > len(self._queue):
                del self._queue[:self._qhead]
                self._qhead = 0
            self._start_transfer(entry)
        else:
            self._server_waiting = True

    def _deliver(self, message: tuple) -> None:
        """The server got a message: it handles it (and may call the scheduler), then asks for
        the next one (a simcall, applied in turn)."""
        self._receive(message[1], message[2])
        self._simcalls.append(None)

    def _wake(self, wakes: list, received) -> None:
        """Several actors woken in one step: they run in the order their actions were created
        (the server and then the sender of a received message at the rank of its comm)."""
        wakes.sort(key=_wake_order)
        for _seq, fn in wakes:
            if fn is None:
                self._deliver(received)
            elif type(fn) is Timer:
                if fn.alive:    # not cancelled by an actor woken before it
                    fn.cb()
            else:
                fn()

    def _apply_simcalls(self, calls: list) -> None:
        for call in calls:
            if call is None:
                self._server_get()
            elif self._server_waiting:
                self._start_transfer(call)
            else:
                self._queue.append(call)

    # -- the loop --------------------------------------------------------------------------
    def run(self, receive: Callable[[Any, Any], None], stalled: Callable[[], None]) -> None:
        """SimGrid's steps until ``stop()``: each message reaching the server is handed to
        ``receive(type, payload)``; ``stalled()`` is called (and must raise) when no action is
        left to end. ``_steps.c``'s ``Kernel.run`` is its compiled twin."""
        self._receive = receive
        try:
            spawned, self._spawned = self._spawned, []
            for start, args in spawned:   # actors created before the run: their puts at once
                start(*args)
            self._steps(stalled)
        finally:
            self._receive = None

    def _steps(self, stalled: Callable[[], None]) -> None:
        ptasks = self._ptasks
        pend = self._sleep_pend   # the same list throughout (flushes clear it)
        P_SURF, P_WORK, inf = SURF_PRECISION, REMAINS_PRECISION, INF
        fold, batch = self._fold_latency, self._batch_sleeps
        while not self._stopped:
            # One SimGrid step (docs/DESIGN.md, "Equal times"). EngineImpl::solve: delta is the
            # smallest time left of any action (HostL07Model::next_occurring_event: a sleep's
            # max duration, a progressing action's work / rate, a comm's latency); the clock
            # advances by it (now_ += delta) and every action is decremented by it
            # (HostL07Model::update_actions_state), ending those that reach zero within
            # SimGrid's precisions.
            delta = self._sleep_least
            if delta < inf and not self._sleep_first.alive:   # cancelled since: look again
                self._forget_cancelled()
                delta = self._sleep_least
            mds = self._sleep_md
            transfer = self._transfer
            if transfer is not None:
                left = self._tr_lat
                if left <= 0:
                    if ptasks and not self._tr_checked:
                        self._contend()
                    left = self._tr_rem / self._tr_rate if self._tr_rem > 0 else 0.0
                if left < delta:
                    delta = left
            if ptasks:
                left = self._ptask_model.time_left()
                if left < delta:
                    delta = left
            if delta == inf:
                stalled()
            pre = 0.0
            if (transfer is not None and delta == self._tr_lat > 0 and not ptasks and fold
                    and self._sleep_least - delta >= P_SURF):
                # the common step where only a message's latency ends (nothing else does, no
                # actor runs) is done here with the next one: the same operations in the same
                # order (clock, sleeps: minus this delta, then minus the next)
                pre = delta
                self.now = self.now + delta
                self._tr_lat = 0.0
                self._tr_enabled, self._tr_created = self.now, False
                delta = self._tr_rem / self._tr_rate if self._tr_rem > 0 else 0.0
                least = self._sleep_least - pre
                if least < delta:
                    delta = least
            now = self.now = self.now + delta
            # the actors woken by the actions that ended, then (below) run in creation order,
            # the server among them (it handles the message and decides whether to call the
            # scheduler, seeing only the messages posted before this step); their puts and the
            # server's next get are then applied in that same order; actors created meanwhile
            # run after.
            wakes = []
            if mds:
                # Action::update_max_duration: every sleep loses delta, below surf/precision it
                # is over (double_update). The others' subtractions wait in ``_sleep_pend``
                # until one ends (the least one, which is tracked exactly: subtracting the
                # same delta keeps the order), then are done in order, as SimGrid's.
                if pre:
                    pend.append(pre)
                    least = self._sleep_least - pre - delta
                else:
                    least = self._sleep_least - delta
                pend.append(delta)
                if not batch:
                    self._flush_sleeps()
                if least < P_SURF:
                    mds = self._flush_sleeps()
                    timers = self._sleeps
                    if all(map(_alive, timers)):
                        # nothing cancelled to drop (the common case): the ended sleeps, the
                        # least ones, are taken out in place, the others keep their order
                        least = min(mds)
                        while least < P_SURF:
                            i = mds.index(least)
                            del mds[i]
                            s = timers.pop(i)
                            s.md = 0.0
                            wakes.append((s.seq, s))
                            least = min(mds) if mds else inf
                    else:
                        for i, m in enumerate(mds):
                            if m < P_SURF:
                                s = timers[i]
                                s.md = 0.0
                                if s.alive:
                                    wakes.append((s.seq, s))
                        keep = [i for i, m in enumerate(mds) if m >= P_SURF and timers[i].alive]
                        timers = self._sleeps = [timers[i] for i in keep]
                        mds = self._sleep_md = [mds[i] for i in keep]
                        least = min(mds) if mds else inf
                    if least < inf:
                        self._sleep_first = timers[mds.index(least)]
                self._sleep_least = least
            if ptasks:
                wakes.extend(self._ptask_ends(now, delta))
            arrived = False
            if transfer is not None:
                lat = self._tr_lat
                if lat > 0:   # paying its latency: no progress in this step (rate 0 when solved)
                    if lat > delta:
                        lat -= delta
                        if lat < P_SURF:
                            lat = 0.0
                    else:
                        lat = 0.0
                    self._tr_lat = lat
                    if lat == 0.0:
                        self._tr_enabled, self._tr_created = now, False
                else:
                    rem = self._tr_rem
                    if rem > 0:
                        rem -= self._tr_rate * delta
                        if rem < P_WORK:
                            rem = self._tr_rem = 0.0
                        else:
                            self._tr_rem = rem
                    arrived = rem <= 0
            if not arrived and not wakes:   # e.g. a message's latency paid: no actor runs
                continue
            calls = self._simcalls = []
            if arrived:
                received = transfer
                self._transfer = None
                if not wakes:   # the common step: one message, nothing else ends
                    self._receive(received[1], received[2])   # (_deliver, inlined: hot)
                    calls.append(None)
                    if received[3] is not None:
                        received[3]()
                else:
                    seq = self._transfer_seq
                    wakes.append((seq, None))      # the server: receives `received`
                    if received[3] is not None:
                        wakes.append((seq, received[3]))   # then the sender resumes
                    self._wake(wakes, received)
            elif len(wakes) == 1:   # one sleep or execution ends
                fn = wakes[0][1]
                if type(fn) is Timer:
                    fn.cb()
                else:
                    fn()
            elif wakes:
                self._wake(wakes, None)
            self._simcalls = None
            if calls:
                self._apply_simcalls(calls)
            if self._ending:
                self._ending.clear()
            while self._spawned:
                spawned, self._spawned = self._spawned, []
                calls = self._simcalls = []
                for start, args in spawned:
                    start(*args)
                self._simcalls = None
                if calls:
                    self._apply_simcalls(calls)


if _steps is not None:
    class CompiledKernel(KernelBase, _steps.Kernel):
        """The kernel whose steps and primitives (``sleep``, ``put``, ``spawn``, ``run`` ...)
        are ``_steps.c``'s: the twin of ``Kernel``, the same operations in the same order."""

        def __init__(self, net: Any):
            _steps.Kernel.__init__(self, net, SURF_PRECISION, REMAINS_PRECISION)
            self._init_ptasks(net)
else:   # pragma: no cover - an install without a C compiler
    CompiledKernel = None   # type: ignore[assignment,misc]
