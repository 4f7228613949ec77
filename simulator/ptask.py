"""SimGrid's ``ptask_L07`` execution model, the one Batsim runs jobs with.

A parallel task (ptask) has flops per host and bytes per (src, dst) host pair. It is one
variable of a linear system: its rate ``x`` (fraction of the task done per second) consumes
``flops[h] * x`` of host ``h``'s CPU (capacity ``cores * speed``) and ``bytes * x`` of every link
on every route it uses (summed per link; FATPIPE links take the max and do not share), so all
its parts progress together at the pace of its bottleneck. As in SimGrid 3.32
(``ptask_L07.cpp``, ``lmm/fair_bottleneck.cpp``):

* the rates are solved by SimGrid's *fair bottleneck* algorithm, which gives every task
  crossing a saturated resource an equal share of its capacity (in bytes/s or flop/s), not an
  equal rate; a task's rate is also bounded by its slowest host's per-core speed
  (``speed / flops``) and by TCP-gamma over twice its largest ``latency * bytes``;
* a task first waits for the largest latency among its routes (during which it consumes
  nothing), then progresses; shares are recomputed only when the set of progressing tasks
  changes (a task added, removed, finished, or done waiting).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections import deque
from itertools import repeat
from typing import Any

import numpy as np

from mrsched.errors import SimulationError

from mrsched.simulator import maxmin
from mrsched.simulator.maxmin import (components, fair_bottleneck, fair_bottleneck_compiled,
                                     fair_bottleneck_small, solo_rate)
from mrsched.simulator.ptask_steps import REMAINS_PRECISION, Sim, enable_key, solver_left, step_solver

#: runs an iterator of side effects (``map`` of a setter) to its end in C
_consume = deque(maxlen=0).extend
#: Systems of more tasks are solved whole (the component split loops in Python; they are
#: stepped in numpy from ``ptask_steps._VECTOR_MIN`` tasks on); the results are the same.
_SPLIT_MAX = 128


class Ptask:
    """One parallel task; ``remaining`` is the fraction of its work left (1 -> 0).

    ``flops``, ``bytes``, ``start``, ``latency`` and ``tag`` are what it was created with;
    ``remaining``, ``latency_left`` and ``rate`` (fraction per second, as last solved) are
    live while it runs; ``finish`` is set when it completes.
    """

    __slots__ = ("id", "_flops", "bytes", "start", "latency", "tag", "finish", "_model", "_slot", "_final",
                 "_cnsts", "_ws", "_bound", "_empty", "_iso", "_t0", "_rem0", "_irate", "_ifinish", "_runs",
                 "_seq", "_enable")

    def __init__(self, id: int, flops: dict | None, bytes: dict, start: float, latency: float, tag: Any, model,
                 slot):
        self.id = id
        self._flops = flops  # None: made from ``_runs`` on first read (``add_uniform``)
        self._runs: list[tuple[int, int]] | None = None  # add_uniform's host ranges
        self.bytes = bytes
        self.start = start
        self.latency = latency
        self.tag = tag
        self.finish: float | None = None
        self._model = model
        self._slot = slot  # >= 0 while in the model, -1 once out
        self._final = (1.0, latency, 0.0)  # remaining, latency_left, rate once out of the model
        self._cnsts: tuple[int, ...] = ()  # constraints it uses (CPUs and links)
        self._ws: tuple[float, ...] = ()  # its weight on each of them
        self._bound = math.inf  # rate bound (slowest core, TCP window)
        self._empty = False  # nothing to do (no flops, no bytes)
        # isolated (fast path): constant rate ``_irate`` since ``_t0`` with ``_rem0`` left then
        self._iso = False
        self._t0 = start
        self._rem0 = 1.0
        self._irate = 0.0
        self._ifinish = math.inf
        self._seq = id          # its creation rank (the caller's, else the model's order)
        #: when its variable joined the solve, SimGrid's order of a constraint's elements
        #: (``enable_key``): set at its start without latency, else when its latency ends
        self._enable: tuple | None = None

    @property
    def flops(self) -> dict[str, float]:
        if self._flops is None:
            names, amount = self._model._hosts, self._ws[0]
            self._flops = {}
            for lo, hi in self._runs:
                self._flops.update(dict.fromkeys(names[lo:hi + 1], amount))
        return self._flops

    def _live(self, index: int) -> float:
        if self._slot < 0:
            return self._final[index]
        if self._iso:
            if index == 0:
                if self._model.stepped:
                    return self._rem0
                return max(0.0, self._rem0 - self._irate * (self._model.now - self._t0))
            return 0.0 if index == 1 else self._irate
        model = self._model
        i = model._act.index(self)
        return float((model._rem, model._lat, model._rate)[index][i])

    @property
    def remaining(self) -> float:
        return self._live(0)

    @property
    def latency_left(self) -> float:
        return self._live(1)

    @property
    def rate(self) -> float:
        return self._live(2)

    @property
    def waiting(self) -> bool:
        """Still paying its latency (not progressing yet)."""
        return self.latency_left > 0

    def __repr__(self) -> str:
        state = f"finished at {self.finish}" if self.finish is not None else f"remaining={self.remaining:.6g}"
        return f"Ptask(id={self.id}, start={self.start}, {state}, tag={self.tag!r})"


class PtaskModel:
    """Every CPU and link of a platform shared among running ptasks, advanced in time.

    Typical loop of an engine::

        model = PtaskModel(platform)
        task = model.add({"h1": 1e9}, {("h1", "pfs"): 5e9}, now=t)
        t_next, first = model.next_completion()
        done = model.advance(t_next)   # [first, ...] (all tasks finishing then)

    The tasks in the solver are a list in start order with their state (work left, latency
    left, rate) in parallel lists of floats: typical systems hold a handful of tasks, where
    plain-float loops cost far less than numpy calls; the arithmetic is the same operations
    in the same order as SimGrid's (and as the former numpy arrays'), so the same results.
    A solve is a function of the set of progressing tasks alone: its rates are kept for the
    last few sets (look-aheads through latency endings meet the same sets again), and for
    each connected component (tasks linked by shared CPUs or links) on its own, so that a
    change re-solves only its component. Systems of ``ptask_steps._VECTOR_MIN`` tasks or more
    are stepped on numpy arrays instead (same values); ``ptask_steps`` advances the solver's
    tasks in time (SimGrid's steps, or a look-ahead).

    Fast path: a task that starts with no latency on resources no other running task uses
    (typically a CPU-only job on exclusively allocated hosts) is *isolated*: its rate is
    constant (the solver's answer for it alone), so it stays out of the solve and the time
    steps, with an analytic completion time in a heap. It joins the solver (its remaining
    work computed at that instant) as soon as another task touches one of its resources.
    """

    #: Fast path for isolated tasks; False makes every task go through the solver (tests).
    _isolate = True
    #: Systems of at most this many elements are solved in plain floats (same rates: numpy's
    #: per-call cost dominates small systems); 0 sends every solve through numpy (tests).
    _small_solver = 32
    #: Every system is solved in C when the compiled solver is in use (``maxmin.use_compiled``);
    #: False sends them through the Python twins above (tests).
    _compiled_solver = True
    #: Solved rates kept per set of progressing tasks (the rates depend on nothing else), so a
    #: look-ahead's solves serve ``advance`` and the next look-ahead; 0 disables it (tests).
    _solve_cache_size = 64
    #: Solve the connected components of a system (tasks sharing no resource) one by one, each
    #: through the cache: a change re-solves only its component. False: one solve (tests).
    _split_components = True

    def __init__(self, platform, *, stepped: bool = False, hosts: list[str] | None = None):
        self.platform = platform
        #: stepped: the caller moves time in SimGrid's steps (``time_left`` then ``step``) and
        #: isolated tasks subtract ``rate * delta`` from their work at every step, as
        #: ``HostL07Model::update_actions_state`` does, instead of ending at an analytic time
        #: (their order at equal times is then SimGrid's: docs/DESIGN.md, "Equal times")
        self.stepped = stepped
        self._iso_left: float | None = None  # stepped: smallest time left of isolated tasks
        self.now = 0.0
        self._ids = itertools.count()
        self._tcp_gamma = float(getattr(platform, "tcp_gamma", 4194304.0))
        # constraints (CPUs and links), created on first use
        self._cnst_index: dict[Any, int] = {}
        self._cap_list: list[float] = []
        self._fat_list: list[bool] = []
        self._cap = np.zeros(0)
        self._fat = np.zeros(0, dtype=bool)
        # tasks in the solver, in start order, and their state (parallel lists)
        self._act: list[Ptask] = []
        self._rem: list[float] = []
        self._lat: list[float] = []
        self._rate: list[float] = []
        self._dirty = True
        self._pending: list[Ptask] = []
        self._lookahead: tuple | None = None  # the solver's next completion (when, task)
        # the look-ahead simulation that found it (its state at that completion), adopted by
        # ``advance`` to exactly that time instead of simulating it again; valid only while
        # ``_lookahead`` is (every change resets both)
        self._ahead: Sim | None = None
        self._iso_tasks: dict[int, Ptask] = {}  # isolated tasks by id
        self._users: list[int] = []  # running tasks per constraint
        # 1 where ``_users`` is not 0: whether a range of CPUs is free is one C-level search
        # (``add_uniform``: ten-thousand-node jobs), not a copy and a scan of the counts
        self._busy = bytearray()
        self._owner: list[Ptask | None] = []  # per constraint: the isolated task using it
        # ``add_uniform``'s isolated tasks keep neither counts nor owners per CPU (a wide job
        # wrote a thousand of each at its start and end): their ranges instead, sorted and
        # disjoint, ``_busy`` set over them; a task joining the solver gets its counts then
        self._range_lo: list[int] = []
        self._range_hi: list[int] = []
        self._range_task: list[Ptask] = []
        self._iso_heap: list[tuple[float, int, Ptask]] = []  # (finish, id, task), lazy deletes
        self._cpus: dict[str, tuple[float, int]] = {}  # host name -> (speed, CPU constraint)
        self._speed: list[float] = []  # per constraint: its host's speed (CPUs), 0 (links)
        # progressing tasks (tuple, start order) -> their solved rates, oldest first
        self._solved: dict[tuple, list[float]] = {}
        self._empties: set[Ptask] = set()  # running tasks with nothing to do (rare)
        #: ``add_uniform``'s hosts by position: the CPU constraint of ``hosts[i]`` is ``i`` (the
        #: numbering of constraints changes no rate: the solver reads them in element order)
        self._hosts = list(hosts or ())
        for name in self._hosts:
            self._cpu(name)
        #: (speed, capacity) when every one of those hosts has the same
        self._same_cpus = None
        if self._hosts and len(set(self._speed)) == 1 and len(set(self._cap_list)) == 1:
            self._same_cpus = (self._speed[0], self._cap_list[0])

    # -- public API -------------------------------------------------------------------------------
    @property
    def tasks(self) -> list[Ptask]:
        """The running ptasks (waiting for latency or progressing), in start order."""
        return sorted(self._act + list(self._iso_tasks.values()), key=_task_id)

    @property
    def _n_solver(self) -> int:
        """Running tasks in the solver (not isolated)."""
        return len(self._act)

    def add(self, flops: dict[str, float], bytes: dict[tuple[str, str], float], now: float,
            tag: Any = None, copies: dict[str, int] | None = None, seq: int | None = None) -> Ptask:
        """Start a ptask at ``now``: ``flops[host]``, ``bytes[(src, dst)]`` (hosts by name).

        ``copies[host]``: the host appears that many times in SimGrid's host list, each copy
        computing ``flops[host]`` (Batsim's usage_trace phases): they add up on its CPU, and
        each is bounded by one core. ``seq``: its creation rank among the caller's actions
        (the kernel's), which orders the variables that join the solve in one step."""
        hosts = self.platform.hosts
        weights: dict[int, float] = {}
        bound = math.inf
        used = 0
        cpus = self._cpus
        for name, amount in flops.items():
            amount = float(amount)
            if amount > 0 and amount != math.inf:
                cpu = cpus.get(name)
                if cpu is None:
                    cpu = self._cpu(name)
                used += 1
                c = cpu[1]
                if copies:
                    n = copies.get(name, 1)
                    used += n - 1
                    for _ in range(n):   # SimGrid's expand, copy by copy
                        weights[c] = weights.get(c, 0.0) + amount
                else:
                    weights[c] = weights.get(c, 0.0) + amount
                per_core = cpu[0] / amount  # one core per host and task
                if per_core < bound:
                    bound = per_core
            elif name not in hosts:
                raise SimulationError(f"ptask on unknown host '{name}'")
            elif not amount >= 0 or math.isinf(amount):
                raise SimulationError(f"invalid flop amount {amount!r} on host '{name}'")
        latency = 0.0
        lat_current = 0.0
        n_links = 0
        for pair, amount in bytes.items():
            try:
                src, dst = pair
            except (TypeError, ValueError):
                raise SimulationError(f"ptask bytes key {pair!r} is not a (src, dst) pair") from None
            amount = float(amount)
            if not amount >= 0 or math.isinf(amount):
                raise SimulationError(f"invalid byte amount {amount!r} from '{src}' to '{dst}'")
            if amount <= 0:
                continue
            for name in (src, dst):
                if name not in hosts:
                    raise SimulationError(f"ptask communicates with unknown host '{name}'")
            route = self.platform.route(src, dst)
            latency = max(latency, route.latency)
            lat_current = max(lat_current, route.latency * amount)
            for link in route.links:
                fat = link.sharing == "FATPIPE"
                c = self._constraint(("link", link.name), link.bandwidth, fat)
                if c not in weights:
                    n_links += 1
                    weights[c] = amount
                elif fat:
                    weights[c] = max(weights[c], amount)
                else:
                    weights[c] += amount
        if lat_current > 0:
            bound = min(bound, self._tcp_gamma / (2.0 * lat_current))  # TCP window limit
        if now != self.now:
            self._catch_up(now)
        users, busy = self._users, self._busy
        fat = self._fat_list
        isolated = self._isolate and latency == 0 and used + n_links > 0
        for c in weights:
            if busy[c]:   # a running task uses it (a count, or an isolated uniform task's range)
                isolated = False
                owner = self._owner[c]
                if owner is None:
                    owner = self._range_owner(c)
                if owner is not None:  # it shares a resource now: back into the solver
                    self._materialise(owner)
            elif fat[c]:
                isolated = False
            users[c] += 1
            busy[c] = 1
        task = Ptask(next(self._ids), dict(flops), dict(bytes), now, latency, tag, self, 0)
        if seq is not None:
            task._seq = seq
        if latency == 0:
            task._enable = enable_key(now, True, task._seq)
        task._cnsts = tuple(weights)
        task._ws = tuple(weights.values())
        task._bound = bound
        if isolated:
            _consume(map(self._owner.__setitem__, task._cnsts, repeat(task)))
            self._isolated(task, solo_rate(list(map(self._cap_list.__getitem__, task._cnsts)), task._ws, bound))
            return task
        empty = used + n_links == 0  # nothing to do: done at once (SimGrid sets remains to 0)
        task._empty = empty
        if empty:
            self._empties.add(task)
        self._act.append(task)
        self._rem.append(0.0 if empty else 1.0)
        self._lat.append(latency)
        self._rate.append(0.0)
        self._dirty = True
        self._lookahead = None
        return task

    def add_uniform(self, runs: list[tuple[int, int]], amount: float, now: float, tag: Any = None,
                    seq: int | None = None) -> Ptask:
        """``add`` of ``amount`` flops on every host of ``runs`` (closed ranges of positions in
        the model's ``hosts``) and nothing else: a ``parallel_homogeneous`` job on its
        allocation. When no running task uses those CPUs it is isolated range by range, no
        Python step per host (ten-thousand-node jobs); else ``add`` decides.

        Same task as ``add``: its CPU constraints are the positions, its bound the slowest
        core's ``speed / amount`` (the least speed over ``amount``: division is monotonic), its
        rate ``solo_rate`` of the least capacity, equal to the per-host call's as it ends in
        the first round (every capacity, ``cores * speed`` with ``cores >= 1``, offers at least
        the bound)."""
        if self._isolate and 0 < amount < math.inf and runs and max(hi for _, hi in runs) < len(self._hosts):
            if now != self.now:
                self._catch_up(now)
            busy = self._busy
            for lo, hi in runs:
                if busy.find(1, lo, hi + 1) >= 0:
                    break   # a CPU in use: ``add`` decides
            else:
                if self._same_cpus is not None:   # (one speed and one core count: no min to take)
                    speed, cap = self._same_cpus
                else:
                    speed = min(min(self._speed[lo:hi + 1]) for lo, hi in runs)
                    cap = min(min(self._cap_list[lo:hi + 1]) for lo, hi in runs)
                bound = speed / amount
                task = Ptask(next(self._ids), None, {}, now, 0.0, tag, self, 0)
                if seq is not None:
                    task._seq = seq
                task._enable = enable_key(now, True, task._seq)
                task._runs = runs   # its constraints (``_cnsts``) are made if it joins the solver
                task._ws = (amount,) * sum(hi + 1 - lo for lo, hi in runs)
                task._bound = bound
                for lo, hi in runs:
                    busy[lo:hi + 1] = b"\x01" * (hi + 1 - lo)
                    k = bisect.bisect_left(self._range_lo, lo)
                    self._range_lo.insert(k, lo)
                    self._range_hi.insert(k, hi)
                    self._range_task.insert(k, task)
                self._isolated(task, solo_rate([cap], (amount,), bound))
                return task
        flops: dict[str, float] = {}
        for lo, hi in runs:
            flops.update(dict.fromkeys(self._hosts[lo:hi + 1], amount))
        return self.add(flops, {}, now, tag, seq=seq)

    def add_message(self, src: str, dst: str, size: float, remaining: float, now: float,
                    enabled: tuple | None = None) -> Ptask | None:
        """A message of ``size`` bytes from ``src`` to ``dst`` whose latency is paid, with
        ``remaining`` of its work left, when its route crosses a resource a running task uses:
        it joins the solver at once (SimGrid's comm action, its penalty set to 1 once its
        latency is paid; ``enabled`` is when, ``enable_key``: now if not given); None when it
        shares nothing (the kernel's own transfer then runs it alone at the same rate)."""
        index, busy = self._cnst_index, self._busy
        if not any(busy[c] for link in self.platform.route(src, dst).links
                   if (c := index.get(("link", link.name))) is not None):
            return None
        task = self.add({}, {(src, dst): size}, now)
        self._lat[-1] = 0.0            # (added last: shared, so in the solver)
        self._rem[-1] = remaining
        task._enable = enabled if enabled is not None else enable_key(now, True, task._seq)
        return task

    def _isolated(self, task: Ptask, rate: float) -> None:
        """A new task alone on its resources (their owner): constant ``rate``, out of the
        solver (class doc)."""
        task._iso = True
        task._irate = rate
        task._ifinish = task.start + 1.0 / rate if rate > 0 else math.inf
        self._iso_tasks[task.id] = task
        if self.stepped:
            left = 1.0 / rate if rate > 0 else math.inf
            if self._iso_left is not None and left < self._iso_left:
                self._iso_left = left
        else:
            heapq.heappush(self._iso_heap, (task._ifinish, task.id, task))

    def remove(self, ptask: Ptask, now: float) -> None:
        """Stop a running ptask at ``now`` (a kill): it frees its share at once."""
        self._catch_up(now)
        self._pending = [t for t in self._pending if t is not ptask]
        if ptask._slot < 0 or ptask._model is not self:
            return
        isolated = ptask._iso
        if isolated:
            ptask._final = (ptask.remaining, 0.0, 0.0)
            ptask._iso = False
            del self._iso_tasks[ptask.id]
            self._iso_left = None
        else:
            try:
                i = self._act.index(ptask)
            except ValueError:
                return
            ptask._final = (float(self._rem[i]), float(self._lat[i]), 0.0)
            for seq in (self._act, self._rem, self._lat, self._rate):
                del seq[i]
            self._dirty = True
            self._lookahead = None
        ptask._slot = -1
        self._empties.discard(ptask)
        self._release(ptask, isolated)

    def next_completion(self) -> tuple[float, Ptask] | None:
        """When the next ptask finishes if nothing is added or removed before, and which one."""
        if self._pending:  # finished while the caller moved time through add/remove
            return self._pending[0].finish, self._pending[0]
        best = self._solver_next() if self._act else None
        heap = self._iso_heap
        while heap:
            finish, tid, task = heap[0]
            if not (task._iso and task._ifinish == finish):  # removed or back in the solver
                heapq.heappop(heap)
                continue
            if math.isinf(finish):
                break
            if best is None or (finish, tid) < (best[0], best[1].id):
                best = (finish, task)
            break
        return best

    def _solver_next(self) -> tuple[float, Ptask] | None:
        if self._lookahead is None:
            self._ahead = None
            sim = Sim(self, copy=False)
            sim.solve_if_needed()
            sim.commit()
            finished = sim.finished()
            if finished:  # tasks with nothing to do finish where they stand
                self._lookahead = (self.now, self._act[finished[0]])
            else:
                delta, is_latency, first = sim.next_delta()
                if math.isinf(delta):
                    self._lookahead = (None, None)
                elif not is_latency:
                    self._lookahead = (self.now + delta, self._act[first])
                else:  # a latency ends first and reshuffles shares: simulate ahead on a copy
                    ahead = Sim(self, copy=True)
                    ahead.run(math.inf, stop_at_completion=True)
                    done = ahead.done
                    self._lookahead = (ahead.now, done[0]) if done else (None, None)
                    self._ahead = ahead if done else None
        when, task = self._lookahead
        return None if task is None else (when, task)

    def advance(self, to_time: float) -> list[Ptask]:
        """Move time to ``to_time``; return the ptasks that finished (in completion order)."""
        if to_time < self.now:
            raise SimulationError(f"cannot move the ptask model back in time ({to_time} < {self.now})")
        done = self._pending
        self._pending = []
        if self._act or self._dirty:
            sim = Sim(self, copy=False)
            self._adopt_ahead(sim, to_time)  # the look-ahead's state when it went that far
            sim.run(to_time, stop_at_completion=False)
            for task, when in zip(sim.done, sim.finish_times):
                task.finish = when
                task._final = (0.0, 0.0, 0.0)
                task._slot = -1
                self._empties.discard(task)
                self._release(task)
                done.append(task)
            sim.commit()
            self._lookahead = None
        elif not math.isinf(to_time):
            self.now = to_time
        heap = self._iso_heap
        if heap:
            iso_done = []
            while heap:
                finish, tid, task = heap[0]
                if not (task._iso and task._ifinish == finish):
                    heapq.heappop(heap)
                    continue
                if finish <= to_time:
                    when = finish
                elif (finish - to_time) * task._irate < REMAINS_PRECISION:  # as the solver's step
                    when = to_time
                else:
                    break
                heapq.heappop(heap)
                task.finish = when
                task._final = (0.0, 0.0, 0.0)
                task._iso = False
                task._slot = -1
                del self._iso_tasks[task.id]
                self._release(task, isolated=True)
                iso_done.append(task)
            if iso_done:
                done = sorted(done + iso_done, key=_finish_order) if done else iso_done
        return done

    def time_left(self) -> float:
        """Stepped mode: time to the next event of any running task, as SimGrid's
        ``next_occurring_event`` computes it (an isolated task: its work left / its rate; the
        solver's tasks: its next completion or latency end); inf when none."""
        left = self._iso_left
        if left is None:
            left = math.inf
            for task in self._iso_tasks.values():
                rem = task._rem0
                x = rem / task._irate if rem > 0 else 0.0
                if x < left:
                    left = x
            self._iso_left = left
        if self._pending:   # finished while catching up (a step the caller did not take)
            return 0.0
        if self._act:
            x = solver_left(self)
            if x < left:
                left = x
        return left

    def step(self, now: float, delta: float) -> list[Ptask]:
        """Stepped mode: one SimGrid step of ``delta`` ending at ``now``; returns the tasks that
        finished in it. Isolated tasks: ``remains -= rate * delta``, done below 1e-14
        (``Action::update_remains``); the solver's tasks advance to ``now``."""
        done: list[Ptask] = []
        iso = self._iso_tasks
        if iso:
            left = math.inf
            for task in iso.values():
                rem = task._rem0 - task._irate * delta
                if rem < REMAINS_PRECISION:
                    task._rem0 = 0.0
                    done.append(task)
                else:
                    task._rem0 = rem
                    x = rem / task._irate
                    if x < left:
                        left = x
            self._iso_left = left
            for task in done:
                task.finish = now
                task._final = (0.0, 0.0, 0.0)
                task._iso = False
                task._slot = -1
                del iso[task.id]
                self._release(task, isolated=True)
        if self._act or self._pending:
            solver_done = self._pending + step_solver(self, now, delta)
            self._pending = []
            if solver_done:
                done = sorted(done + solver_done, key=_task_id) if done else solver_done
        self.now = now
        return done

    def rates(self) -> dict[int, float]:
        """Current rate (fraction per second) of every running ptask, by ptask id."""
        sim = Sim(self, copy=False)
        sim.solve_if_needed()
        sim.commit()
        return {t.id: t.rate for t in self.tasks}

    # -- internals --------------------------------------------------------------------------------
    def _adopt_ahead(self, sim: Sim, to_time: float) -> list[Ptask]:
        """Advancing to the look-ahead's completion: take its state instead of re-simulating.

        The look-ahead ran the same steps from the same state (``advance`` stops at the same
        completion, as ``now + delta > to_time`` is false there), so the state is identical;
        returns the tasks it finished (put, with their times, in ``sim``)."""
        src = self._ahead
        if src is None or self._lookahead is None:
            return []
        self._ahead = None
        if src.now != to_time:
            return []
        sim.act = src.act
        sim.vec = src.vec
        sim.rem = src.rem
        sim.lat = src.lat
        sim.rate = src.rate
        sim.now = src.now
        sim.dirty = src.dirty
        sim.done = list(src.done)
        sim.finish_times = list(src.finish_times)
        return src.done

    def _materialise(self, task: Ptask) -> None:
        """An isolated task enters the solver with the work it has left now."""
        i = bisect.bisect(self._act, task.id, key=_task_id)
        self._act.insert(i, task)
        self._rem.insert(i, task._rem0 if self.stepped
                         else task._rem0 - task._irate * (self.now - task._t0))
        self._lat.insert(i, 0.0)
        self._rate.insert(i, task._irate)  # as last solved, until the next solve
        del self._iso_tasks[task.id]
        self._iso_left = None
        task._iso = False
        if task._runs is not None and not task._cnsts:   # an add_uniform task: its CPUs, one by one
            task._cnsts = tuple(itertools.chain.from_iterable(range(lo, hi + 1) for lo, hi in task._runs))
            users = self._users
            for lo, hi in task._runs:    # its counts, kept from now on (it never had owners)
                users[lo:hi + 1] = [1] * (hi + 1 - lo)
                self._drop_range(lo)
        else:
            for c in task._cnsts:
                if self._owner[c] is task:
                    self._owner[c] = None
        self._dirty = True
        self._lookahead = None

    def _range_owner(self, c: int) -> Ptask | None:
        """The isolated ``add_uniform`` task whose ranges hold CPU ``c``, or None."""
        k = bisect.bisect_right(self._range_lo, c) - 1
        return self._range_task[k] if k >= 0 and c <= self._range_hi[k] else None

    def _drop_range(self, lo: int) -> None:
        """Forget the isolated range starting at ``lo`` (its task ended or joined the solver)."""
        k = bisect.bisect_left(self._range_lo, lo)
        if k == len(self._range_lo) or self._range_lo[k] != lo:   # never silently another's
            raise SimulationError(f"ptask model: no isolated range starts at CPU {lo}")
        del self._range_lo[k], self._range_hi[k], self._range_task[k]

    def _release(self, task: Ptask, isolated: bool = False) -> None:
        """A task left the model: its resources have one user less. An ``isolated`` task was
        their only user and their owner (any other user would have sent it to the solver):
        they are freed in C-level passes."""
        users = self._users
        owner = self._owner
        busy = self._busy
        if isolated:
            if task._runs is not None:   # no counts nor owners: its ranges
                for lo, hi in task._runs:
                    busy[lo:hi + 1] = bytes(hi + 1 - lo)
                    self._drop_range(lo)
            else:
                _consume(map(users.__setitem__, task._cnsts, repeat(0)))
                _consume(map(owner.__setitem__, task._cnsts, repeat(None)))
                _consume(map(busy.__setitem__, task._cnsts, repeat(0)))
            return
        for c in task._cnsts:
            users[c] -= 1
            if not users[c]:
                busy[c] = 0
            if owner[c] is task:
                owner[c] = None

    def _catch_up(self, now: float) -> None:
        if now < self.now:
            raise SimulationError(f"cannot act on the ptask model in the past ({now} < {self.now})")
        if now > self.now:
            if self.stepped:   # a step the caller did not take (it steps whenever tasks run)
                self._pending += step_solver(self, now, now - self.now) if self._act else []
                self.now = now
            else:
                self._pending = self.advance(now)  # includes earlier pending completions

    def _cpu(self, name: str) -> tuple[float, int]:
        """(speed, CPU constraint) of a host, its constraint created on first use."""
        host = self.platform.hosts.get(name)
        if host is None:
            raise SimulationError(f"ptask on unknown host '{name}'")
        c = self._constraint(("cpu", name), host.cores * host.speed, False)
        self._speed[c] = host.speed
        cpu = self._cpus[name] = (host.speed, c)
        return cpu

    def _constraint(self, key, capacity: float, fatpipe: bool) -> int:
        c = self._cnst_index.get(key)
        if c is None:
            c = len(self._cap_list)
            self._cnst_index[key] = c
            self._cap_list.append(float(capacity))
            self._fat_list.append(bool(fatpipe))
            self._users.append(0)
            self._busy.append(0)
            self._owner.append(None)
            self._speed.append(0.0)
        return c

    def _remember(self, tasks: tuple, rates: list[float]) -> None:
        cache = self._solved
        if self._solve_cache_size:
            if len(cache) >= self._solve_cache_size:
                del cache[next(iter(cache))]  # the oldest entry
            cache[tasks] = rates

    def _solve_split(self, tasks: tuple) -> list[float]:
        """``_solve`` component by component (tasks linked by shared CPUs or links), each
        component's rates from the cache when that set was solved before.

        The same rates bit for bit: in the fair-bottleneck rounds a task's increments depend
        only on the resources of its component, and a component whose tasks are all frozen
        changes nothing in the rounds the others still need."""
        if len(tasks) > _SPLIT_MAX:  # the split's Python loops would cost more than they save
            return self._solve(tasks)
        groups = components(tasks)
        if len(groups) == 1:
            return self._solve(tasks)
        rates = [0.0] * len(tasks)
        cache = self._solved
        for members in groups:
            part = tuple([tasks[i] for i in members])
            got = cache.get(part)
            if got is None:
                got = self._solve(part)
                self._remember(part, got)
            for i, x in zip(members, got):
                rates[i] = x
        return rates

    def _solve(self, tasks: list[Ptask]) -> list[float]:
        """Rates of progressing tasks (start order) by the fair-bottleneck solver; ``rank``
        orders each resource's elements as SimGrid's (``enable_key``)."""
        sizes = [len(task._cnsts) for task in tasks]
        n_el = sum(sizes)
        bound = [task._bound for task in tasks]
        rank = [0] * len(tasks)
        for r, i in enumerate(sorted(range(len(tasks)), key=lambda i: tasks[i]._enable)):
            rank[i] = r
        in_c = self._compiled_solver and maxmin.compiled()
        if in_c or n_el <= self._small_solver:
            ev: list[int] = []
            ec: list[int] = []
            ew: list[float] = []
            starts: list[int] = []
            for v, task in enumerate(tasks):
                starts.append(len(ec))
                ec.extend(task._cnsts)
                ew.extend(task._ws)
                ev.extend([v] * sizes[v])
            solver = fair_bottleneck_compiled if in_c else fair_bottleneck_small
            return solver(ev, ec, ew, starts, self._cap_list, self._fat_list, bound, rank)
        if len(self._cap) != len(self._cap_list):
            self._cap = np.asarray(self._cap_list, dtype=np.float64)
            self._fat = np.asarray(self._fat_list, dtype=bool)
        chain = itertools.chain.from_iterable
        sizes_a = np.array(sizes, dtype=np.int64)
        starts_a = np.zeros(len(tasks), dtype=np.int64)
        np.cumsum(sizes_a[:-1], out=starts_a[1:])
        return fair_bottleneck(np.repeat(np.arange(len(tasks), dtype=np.int64), sizes_a),
                                np.fromiter(chain([t._cnsts for t in tasks]), dtype=np.int64, count=n_el),
                                np.fromiter(chain([t._ws for t in tasks]), dtype=np.float64, count=n_el),
                                starts_a, self._cap, self._fat, np.array(bound, dtype=np.float64),
                                np.array(rank, dtype=np.int64)).tolist()


def _task_id(task: Ptask) -> int:
    return task.id


def _finish_order(task: Ptask) -> tuple[float, int]:
    return task.finish, task.id
