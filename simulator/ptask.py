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

import heapq
import itertools
import math
import operator
from typing import Any

import numpy as np

from mrsched.errors import SimulationError

try:  # the C function behind np.count_nonzero, without its Python wrapper (hot path)
    from numpy._core.multiarray import count_nonzero as _count
except ImportError:  # pragma: no cover - other numpy layouts
    _count = np.count_nonzero

#: SimGrid precisions: ``maxmin/precision`` (constraint slack), ``surf/precision`` (timing).
MAXMIN_PRECISION = 1e-5
SURF_PRECISION = 1e-9
#: Remaining work below this fraction is done (SimGrid: maxmin precision x surf precision).
REMAINS_PRECISION = MAXMIN_PRECISION * SURF_PRECISION
_MAX_ROUNDS = 1_000_000


class Ptask:
    """One parallel task; ``remaining`` is the fraction of its work left (1 -> 0).

    ``flops``, ``bytes``, ``start``, ``latency`` and ``tag`` are what it was created with;
    ``remaining``, ``latency_left`` and ``rate`` (fraction per second, as last solved) are
    live while it runs; ``finish`` is set when it completes.
    """

    __slots__ = ("id", "flops", "bytes", "start", "latency", "tag", "finish", "_model", "_slot", "_final",
                 "_cnsts", "_iso", "_t0", "_rem0", "_irate", "_ifinish")

    def __init__(self, id: int, flops: dict, bytes: dict, start: float, latency: float, tag: Any, model, slot):
        self.id = id
        self.flops = flops
        self.bytes = bytes
        self.start = start
        self.latency = latency
        self.tag = tag
        self.finish: float | None = None
        self._model = model
        self._slot = slot
        self._final = (1.0, latency, 0.0)  # remaining, latency_left, rate once out of the model
        self._cnsts: tuple[int, ...] = ()  # constraints it uses (CPUs and links)
        # isolated (fast path): constant rate ``_irate`` since ``_t0`` with ``_rem0`` left then
        self._iso = False
        self._t0 = start
        self._rem0 = 1.0
        self._irate = 0.0
        self._ifinish = math.inf

    def _live(self, array_name: str, index: int) -> float:
        if self._slot < 0:
            return self._final[index]
        if self._iso:
            if index == 0:
                return max(0.0, self._rem0 - self._irate * (self._model.now - self._t0))
            return 0.0 if index == 1 else self._irate
        return float(getattr(self._model, array_name)[self._slot])

    @property
    def remaining(self) -> float:
        return self._live("_rem", 0)

    @property
    def latency_left(self) -> float:
        return self._live("_lat", 1)

    @property
    def rate(self) -> float:
        return self._live("_rate", 2)

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

    Tasks live in numpy arrays indexed by slot (never reused until compaction), and their
    resource consumptions in flat element arrays kept in slot order, so that a solve and a
    time step are a few vector operations whatever the number of tasks.

    Fast path: a task that starts with no latency on resources no other running task uses
    (typically a CPU-only job on exclusively allocated hosts) is *isolated*: its rate is
    constant (the solver's answer for it alone), so it stays out of the arrays' solve and
    steps, with an analytic completion time in a heap. It joins the solver (its remaining
    work computed at that instant) as soon as another task touches one of its resources.
    """

    #: Fast path for isolated tasks; False makes every task go through the solver (tests).
    _isolate = True
    #: Systems of at most this many elements are solved in plain floats (same rates: numpy's
    #: per-call cost dominates small systems); 0 sends every solve through numpy (tests).
    _small_solver = 32

    def __init__(self, platform):
        self.platform = platform
        self.now = 0.0
        self._ids = itertools.count()
        self._tcp_gamma = float(getattr(platform, "tcp_gamma", 4194304.0))
        # constraints (CPUs and links), created on first use
        self._cnst_index: dict[Any, int] = {}
        self._cap_list: list[float] = []
        self._fat_list: list[bool] = []
        self._cap = np.zeros(0)
        self._fat = np.zeros(0, dtype=bool)
        # task slots
        self._n = 0
        self._rem = np.zeros(16)
        self._lat = np.zeros(16)
        self._rate = np.zeros(16)
        self._bound = np.full(16, np.inf)
        self._alive = np.zeros(16, dtype=bool)
        self._empty = np.zeros(16, dtype=bool)
        self._task_of: list[Ptask | None] = []
        self._n_alive = 0
        # elements: (slot, constraint, weight), in slot order
        self._ne = 0
        self._el_slot = np.zeros(64, dtype=np.int64)
        self._el_cnst = np.zeros(64, dtype=np.int64)
        self._el_w = np.zeros(64)
        self._dirty = True
        self._pending: list[Ptask] = []
        self._lookahead: tuple | None = None  # the solver's next completion (when, task)
        # the look-ahead simulation that found it (copied arrays at that completion, finished
        # slots), adopted by ``advance`` to exactly that time instead of simulating it again;
        # valid only while ``_lookahead`` is (every change resets both)
        self._ahead: tuple | None = None
        self._isom = np.zeros(16, dtype=bool)  # slots of isolated tasks
        self._n_solver = 0  # running tasks in the solver (not isolated)
        self._users: list[int] = []  # running tasks per constraint
        self._owner: dict[int, Ptask] = {}  # constraint -> the isolated task using it
        self._iso_heap: list[tuple[float, int, Ptask]] = []  # (finish, id, task), lazy deletes
        self._cpus: dict[str, tuple[float, int]] = {}  # host name -> (speed, CPU constraint)

    # -- public API -------------------------------------------------------------------------------
    @property
    def tasks(self) -> list[Ptask]:
        """The running ptasks (waiting for latency or progressing), in start order."""
        n = self._n
        return [self._task_of[i] for i in np.flatnonzero(self._alive[:n] | self._isom[:n])]

    def add(self, flops: dict[str, float], bytes: dict[tuple[str, str], float], now: float,
            tag: Any = None) -> Ptask:
        """Start a ptask at ``now``: ``flops[host]``, ``bytes[(src, dst)]`` (hosts by name)."""
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
                    host = hosts.get(name)
                    if host is None:
                        raise SimulationError(f"ptask on unknown host '{name}'")
                    cpu = cpus[name] = (host.speed, self._constraint(("cpu", name), host.cores * host.speed,
                                                                     False))
                used += 1
                c = cpu[1]
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
        users = self._users
        fat = self._fat_list
        isolated = self._isolate and latency == 0 and used + n_links > 0
        for c in weights:
            if users[c]:
                isolated = False
                owner = self._owner.get(c)
                if owner is not None:  # it shares a resource now: back into the solver
                    self._materialise(owner)
            elif fat[c]:
                isolated = False
            users[c] += 1
        slot = self._new_slot()
        task = Ptask(next(self._ids), dict(flops), dict(bytes), now, latency, tag, self, slot)
        task._cnsts = tuple(weights)
        self._task_of.append(task)
        self._rem[slot] = 1.0
        self._lat[slot] = latency
        self._rate[slot] = 0.0
        self._bound[slot] = bound
        self._n_alive += 1
        self._add_elements(slot, weights)
        if isolated:
            cap = self._cap_list
            rate = _solo_rate([cap[c] for c in weights], list(weights.values()), bound)
            task._iso = True
            task._irate = rate
            task._ifinish = now + 1.0 / rate if rate > 0 else math.inf
            self._isom[slot] = True
            for c in weights:
                self._owner[c] = task
            heapq.heappush(self._iso_heap, (task._ifinish, task.id, task))
            return task
        self._alive[slot] = True
        self._n_solver += 1
        if used + n_links == 0:  # nothing to do: done at once (SimGrid sets remains to 0)
            self._rem[slot] = 0.0
            self._empty[slot] = True
        self._dirty = True
        self._lookahead = None
        return task

    def remove(self, ptask: Ptask, now: float) -> None:
        """Stop a running ptask at ``now`` (a kill): it frees its share at once."""
        self._catch_up(now)
        self._pending = [t for t in self._pending if t is not ptask]
        slot = ptask._slot
        if slot < 0 or ptask._model is not self:
            return
        if ptask._iso:
            ptask._final = (ptask.remaining, 0.0, 0.0)
            ptask._iso = False
            self._isom[slot] = False
        elif self._alive[slot]:
            ptask._final = (float(self._rem[slot]), float(self._lat[slot]), 0.0)
            self._alive[slot] = False
            self._rate[slot] = 0.0
            self._n_solver -= 1
            self._dirty = True
            self._lookahead = None
        else:
            return
        self._n_alive -= 1
        ptask._slot = -1
        self._task_of[slot] = None
        self._release(ptask)

    def next_completion(self) -> tuple[float, Ptask] | None:
        """When the next ptask finishes if nothing is added or removed before, and which one."""
        if self._pending:  # finished while the caller moved time through add/remove
            return self._pending[0].finish, self._pending[0]
        best = self._solver_next() if self._n_solver else None
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
            sim = _Sim(self, copy=False)
            sim.solve_if_needed()
            sim.commit()
            delta, is_latency = sim.next_delta()
            finished = _nonzero(sim.finished_mask())
            if len(finished):  # tasks with nothing to do finish where they stand
                self._lookahead = (self.now, self._task_of[finished[0]])
            elif math.isinf(delta):
                self._lookahead = (None, None)
            elif not is_latency:
                first = sim.first_to_finish(delta)
                self._lookahead = (self.now + delta, self._task_of[first])
            else:  # a latency ends first and reshuffles shares: simulate ahead on a copy
                ahead = _Sim(self, copy=True)
                slots = ahead.run(math.inf, stop_at_completion=True)
                self._lookahead = (ahead.now, self._task_of[slots[0]]) if slots else (None, None)
                self._ahead = (ahead, slots) if slots else None
        when, task = self._lookahead
        return None if task is None else (when, task)

    def advance(self, to_time: float) -> list[Ptask]:
        """Move time to ``to_time``; return the ptasks that finished (in completion order)."""
        if to_time < self.now:
            raise SimulationError(f"cannot move the ptask model back in time ({to_time} < {self.now})")
        done = self._pending
        self._pending = []
        if self._n_solver or self._dirty:
            sim = _Sim(self, copy=False)
            adopted = self._adopt_ahead(sim, to_time)
            for slot, when in zip(adopted + sim.run(to_time, stop_at_completion=False), sim.finish_times):
                task = self._task_of[slot]
                task.finish = when
                task._final = (0.0, 0.0, 0.0)
                task._slot = -1
                self._task_of[slot] = None
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
                slot = task._slot
                task.finish = when
                task._final = (0.0, 0.0, 0.0)
                task._iso = False
                task._slot = -1
                self._isom[slot] = False
                self._task_of[slot] = None
                self._n_alive -= 1
                self._release(task)
                iso_done.append(task)
            if iso_done:
                done = sorted(done + iso_done, key=_finish_order) if done else iso_done
        return done

    def rates(self) -> dict[int, float]:
        """Current rate (fraction per second) of every running ptask, by ptask id."""
        sim = _Sim(self, copy=False)
        sim.solve_if_needed()
        sim.commit()
        return {t.id: t.rate for t in self.tasks}

    # -- internals --------------------------------------------------------------------------------
    def _adopt_ahead(self, sim: _Sim, to_time: float) -> list[int]:
        """Advancing to the look-ahead's completion: take its state instead of re-simulating.

        The look-ahead ran the same steps from the same state (``advance`` stops at the same
        completion, as ``now + delta > to_time`` is false there), so the arrays are identical;
        returns the slots it finished (their times are put in ``sim.finish_times``)."""
        ahead = self._ahead
        if ahead is None or self._lookahead is None:
            return []
        self._ahead = None
        src, slots = ahead
        if src.now != to_time or src.n != sim.n:
            return []
        sim.rem[:] = src.rem
        sim.lat[:] = src.lat
        sim.rate[:] = src.rate
        sim.alive[:] = src.alive
        sim.now = src.now
        sim.dirty = src.dirty
        self._n_alive -= len(slots)
        self._n_solver -= len(slots)
        sim.finish_times.extend(src.finish_times)
        return slots

    def _materialise(self, task: Ptask) -> None:
        """An isolated task enters the solver with the work it has left now."""
        slot = task._slot
        self._rem[slot] = task._rem0 - task._irate * (self.now - task._t0)
        self._lat[slot] = 0.0
        self._rate[slot] = task._irate  # as last solved, until the next solve
        self._isom[slot] = False
        self._alive[slot] = True
        task._iso = False
        for c in task._cnsts:
            if self._owner.get(c) is task:
                del self._owner[c]
        self._n_solver += 1
        self._dirty = True
        self._lookahead = None

    def _release(self, task: Ptask) -> None:
        """A task left the model: its resources have one user less."""
        users = self._users
        owner = self._owner
        for c in task._cnsts:
            users[c] -= 1
            if owner.get(c) is task:
                del owner[c]

    def _catch_up(self, now: float) -> None:
        if now < self.now:
            raise SimulationError(f"cannot act on the ptask model in the past ({now} < {self.now})")
        if now > self.now:
            self._pending = self.advance(now)  # includes earlier pending completions

    def _constraint(self, key, capacity: float, fatpipe: bool) -> int:
        c = self._cnst_index.get(key)
        if c is None:
            c = len(self._cap_list)
            self._cnst_index[key] = c
            self._cap_list.append(float(capacity))
            self._fat_list.append(bool(fatpipe))
            self._users.append(0)
        return c

    def _new_slot(self) -> int:
        if self._n >= 64 and self._n_alive * 2 < self._n:
            self._compact()
        if self._n == len(self._rem):
            grow = len(self._rem)
            self._rem = np.concatenate([self._rem, np.zeros(grow)])
            self._lat = np.concatenate([self._lat, np.zeros(grow)])
            self._rate = np.concatenate([self._rate, np.zeros(grow)])
            self._bound = np.concatenate([self._bound, np.full(grow, np.inf)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
            self._empty = np.concatenate([self._empty, np.zeros(grow, dtype=bool)])
            self._isom = np.concatenate([self._isom, np.zeros(grow, dtype=bool)])
        slot = self._n
        self._n += 1
        return slot

    def _add_elements(self, slot: int, weights: dict[int, float]) -> None:
        k = len(weights)
        while self._ne + k > len(self._el_slot):
            grow = len(self._el_slot)
            self._el_slot = np.concatenate([self._el_slot, np.zeros(grow, dtype=np.int64)])
            self._el_cnst = np.concatenate([self._el_cnst, np.zeros(grow, dtype=np.int64)])
            self._el_w = np.concatenate([self._el_w, np.zeros(grow)])
        end = self._ne + k
        self._el_slot[self._ne:end] = slot
        self._el_cnst[self._ne:end] = list(weights.keys())
        self._el_w[self._ne:end] = list(weights.values())
        self._ne = end

    def _compact(self) -> None:
        """Drop dead slots and their elements, keeping order (slots get renumbered)."""
        n = self._n
        keep = np.flatnonzero(self._alive[:n] | self._isom[:n])
        new_index = np.full(n, -1, dtype=np.int64)
        new_index[keep] = np.arange(len(keep))
        for name in ("_rem", "_lat", "_rate", "_bound", "_alive", "_empty", "_isom"):
            array = getattr(self, name)
            array[:len(keep)] = array[keep]
            array[len(keep):n] = np.inf if name == "_bound" else 0
        ne = self._ne
        live = new_index[self._el_slot[:ne]] >= 0
        m = int(live.sum())
        self._el_slot[:m] = new_index[self._el_slot[:ne][live]]
        self._el_cnst[:m] = self._el_cnst[:ne][live]
        self._el_w[:m] = self._el_w[:ne][live]
        self._ne = m
        tasks = [self._task_of[i] for i in keep]
        for i, task in enumerate(tasks):
            task._slot = i
        self._task_of = tasks
        self._n = len(keep)


class _Sim:
    """The time-stepping loop over the model's arrays, or over copies of them (look-ahead)."""

    def __init__(self, model: PtaskModel, copy: bool):
        self.model = model
        n = model._n
        self.n = n
        self.now = model.now
        self.dirty = model._dirty
        if copy:
            self.rem = model._rem[:n].copy()
            self.lat = model._lat[:n].copy()
            self.rate = model._rate[:n].copy()
            self.alive = model._alive[:n].copy()
        else:  # views: updates land in the model
            self.rem = model._rem[:n]
            self.lat = model._lat[:n]
            self.rate = model._rate[:n]
            self.alive = model._alive[:n]
        self.copy = copy
        self.finish_times: list[float] = []
        self._masks: tuple | None = None  # next_delta's masks, reused by _step / first_to_finish

    def commit(self) -> None:
        self.model.now = self.now
        self.model._dirty = self.dirty

    def finished_mask(self) -> np.ndarray:
        return self.alive & (self.lat <= 0) & (self.rem <= 0)

    def solve_if_needed(self) -> None:
        if not self.dirty:
            return
        self._masks = None
        model = self.model
        self.rate[:] = 0.0
        active = self.alive & (self.lat <= 0) & ~model._empty[:self.n]
        if _count(active):
            if len(model._cap) != len(model._cap_list):
                model._cap = np.asarray(model._cap_list, dtype=np.float64)
                model._fat = np.asarray(model._fat_list, dtype=bool)
            ne = model._ne
            el_slot = model._el_slot[:ne]
            m = active[el_slot]
            es = el_slot[m]
            ec = model._el_cnst[:ne][m]
            ew = model._el_w[:ne][m]
            if len(ec) <= model._small_solver:
                es_l = es.tolist()
                starts_l = [i for i in range(len(es_l)) if i == 0 or es_l[i] != es_l[i - 1]]
                var_l = [es_l[i] for i in starts_l]
                ev_l = []
                for v, i in enumerate(starts_l):
                    ev_l.extend([v] * ((starts_l[v + 1] if v + 1 < len(starts_l) else len(es_l)) - i))
                self.rate[var_l] = _fair_bottleneck_small(ev_l, ec.tolist(), ew.tolist(), starts_l,
                                                          model._cap_list, model._fat_list,
                                                          model._bound[var_l].tolist())
                self.dirty = False
                return
            first = np.ones(len(es), dtype=bool)
            first[1:] = es[1:] != es[:-1]
            starts = _nonzero(first)
            var_slots = es[starts]
            ev = np.cumsum(first) - 1
            self.rate[var_slots] = _fair_bottleneck(ev, ec, ew, starts, model._cap, model._fat,
                                                    model._bound[var_slots])
        self.dirty = False

    def next_delta(self) -> tuple[float, bool]:
        """Time to the next internal event, and whether it is a latency ending."""
        alive, lat, rate = self.alive, self.lat, self.rate
        waiting = alive & (lat > 0)
        n_wait = _count(waiting)
        d_lat = float(lat[waiting].min()) if n_wait else math.inf
        moving = (alive ^ waiting) & (rate > 0)  # alive and lat <= 0 (lat is never NaN)
        if _count(moving):
            ratios = self.rem[moving] / rate[moving]
            d_run = float(ratios.min())
        else:
            ratios = None
            d_run = math.inf
        self._masks = (waiting, n_wait, moving, ratios)  # valid until the state changes
        return (d_lat, True) if d_lat < d_run else (d_run, False)

    def first_to_finish(self, delta: float) -> int:
        if self._masks is None:
            self.next_delta()
        _, _, moving, ratios = self._masks
        return int(_nonzero(moving)[_nonzero(ratios == delta)[0]])

    def run(self, to_time: float, stop_at_completion: bool) -> list[int]:
        done: list[int] = []
        checked = False  # finished tasks already taken out since the last step
        while True:
            if not checked:
                finished = self.finished_mask()
                if _count(finished):  # e.g. tasks with nothing to do
                    self._finish(finished, done)
                    if stop_at_completion:
                        return done
                    continue
            self.solve_if_needed()
            delta, _ = self.next_delta()
            if math.isinf(delta) or self.now + delta > to_time:
                if not math.isinf(to_time) and to_time > self.now:
                    self._step(to_time - self.now)
                    self.now = to_time
                return done
            self._step(delta)
            self.now = self.now + delta
            finished = self.finished_mask()
            checked = True  # _finish takes every task finished now: none left for the loop top
            if _count(finished):
                self._finish(finished, done)
                if stop_at_completion:
                    return done

    def _step(self, delta: float) -> None:
        """SimGrid ``HostL07Model::update_actions_state`` for one time step."""
        if self._masks is None:
            self.next_delta()
        waiting, n_wait, moving, _ = self._masks
        self._masks = None
        lat = self.lat
        if n_wait:
            longer = waiting & (lat > delta)
            lat[longer] -= delta
            lat[longer & (lat < SURF_PRECISION)] = 0.0
            lat[waiting & ~longer] = 0.0
            if _count(waiting & (lat <= 0)):
                self.dirty = True  # starts progressing: shares change
        if _count(moving):
            rem = self.rem
            rem[moving] -= self.rate[moving] * delta
            rem[moving & (rem < REMAINS_PRECISION)] = 0.0

    def _finish(self, finished: np.ndarray, done: list[int]) -> None:
        slots = _nonzero(finished)
        self._masks = None
        self.alive[slots] = False
        self.rate[slots] = 0.0
        self.rem[slots] = 0.0
        if not self.copy:
            self.model._n_alive -= len(slots)
            self.model._n_solver -= len(slots)
        done.extend(int(s) for s in slots)
        self.finish_times.extend([self.now] * len(slots))
        self.dirty = True


def _nonzero(mask: np.ndarray) -> np.ndarray:
    return mask.nonzero()[0]


def _finish_order(task: Ptask) -> tuple[float, int]:
    return task.finish, task.id


def _solo_rate(capacities: list[float], weights: list[float], bound: float) -> float:
    """``_fair_bottleneck`` for one task alone on its resources (capacities and the task's
    weights on them), in plain floats: the same operations in the same order, so the same rate."""
    value = 0.0
    remaining = capacities
    for _ in range(_MAX_ROUNDS):
        inc = min(map(operator.truediv, remaining, weights))
        if bound - value < inc:
            inc = bound - value
        value += inc
        if value == bound:
            return value
        remaining = [r - w * inc for r, w in zip(remaining, weights)]
        remaining = [r if r >= MAXMIN_PRECISION else 0.0 for r in remaining]
        if min(remaining) <= 0:
            return value
    raise SimulationError("the ptask share solver did not converge")


def _fair_bottleneck_small(ev: list[int], ec_all: list[int], ew: list[float], starts: list[int],
                           cap: list[float], fat: list[bool], bound: list[float]) -> list[float]:
    """``_fair_bottleneck`` in plain floats for small systems (numpy's per-call cost dominates
    there): the same operations in the same order (sums in element order), so the same rates."""
    n_var = len(bound)
    n_el = len(ev)
    # local numbering of the constraints used
    local: dict[int, int] = {}
    ec_loc = []
    for c in ec_all:
        k = local.get(c)
        if k is None:
            k = local[c] = len(local)
        ec_loc.append(k)
    ec = ec_loc
    n_c = len(local)
    cap_l = cap
    fat_l = fat
    remaining = [cap_l[c] for c in local]
    is_fat = [fat_l[c] for c in local]
    any_fat = any(is_fat)
    usage = [0.0] * n_c
    cnst_live = [True] * n_c
    value = [0.0] * n_var
    mu = [0.0] * n_var
    var_live = [True] * n_var
    n_live = n_var
    el_range = range(n_el)
    var_els = list(zip(starts, starts[1:] + [n_el]))
    rounds = 0
    while n_live:
        rounds += 1
        if rounds > _MAX_ROUNDS:
            raise SimulationError("the ptask share solver did not converge",
                                  hint="FATPIPE links shared by tasks bottlenecked elsewhere can make "
                                       "SimGrid's fair-bottleneck solver crawl")
        nb = [0] * n_c
        for e in el_range:
            if var_live[ev[e]]:
                nb[ec[e]] += 1
        for c in range(n_c):
            if cnst_live[c]:
                k = nb[c]
                if k == 0:
                    remaining[c] = 0.0
                    usage[c] = 0.0
                    cnst_live[c] = False
                else:
                    usage[c] = remaining[c] / (1.0 if is_fat[c] else float(k))
        for v in range(n_var):
            if var_live[v]:
                s, t = var_els[v]
                m = min([usage[ec[e]] / ew[e] for e in range(s, t)])
                room = bound[v] - value[v]
                inc = m if m <= room else room
                mu[v] = inc
                value[v] += inc
                if value[v] == bound[v]:
                    var_live[v] = False
                    n_live -= 1
        dec = [0.0] * n_c
        if any_fat:
            fat_min = [math.inf] * n_c
            for e in el_range:
                c = ec[e]
                x = ew[e] * mu[ev[e]]
                dec[c] += x
                if x < fat_min[c]:
                    fat_min[c] = x
            for c in range(n_c):
                if is_fat[c]:
                    dec[c] = usage[c] if usage[c] <= fat_min[c] else fat_min[c]
        else:
            for e in el_range:
                dec[ec[e]] += ew[e] * mu[ev[e]]
        saturated = []
        for c in range(n_c):
            if cnst_live[c]:
                r = remaining[c] - dec[c]
                if r < MAXMIN_PRECISION:
                    r = 0.0
                remaining[c] = r
                if r <= 0:
                    cnst_live[c] = False
                    saturated.append(c)
        if saturated:
            sat = set(saturated)
            for e in el_range:
                if ec[e] in sat:
                    v = ev[e]
                    if var_live[v]:
                        var_live[v] = False
                        n_live -= 1
    return value


def _fair_bottleneck(ev: np.ndarray, ec: np.ndarray, ew: np.ndarray, starts: np.ndarray,
                     cap: np.ndarray, fat: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Rates by SimGrid's fair-bottleneck solver (``lmm/fair_bottleneck.cpp``).

    ``ev``/``ec``/``ew``: variable, constraint and weight of every element (grouped by
    variable, ``starts`` their first element). Each round, every unsaturated resource offers an
    equal share of its remaining capacity to each unfrozen task crossing it (a FATPIPE link
    offers all of it to each); a task grows by the smallest share/weight among its resources
    (or up to its bound); resources left with no capacity freeze their tasks. Quirk kept on
    purpose for fidelity: frozen tasks keep subtracting their last increment from the
    resources they cross.
    """
    n_var = len(starts)
    n_cnst = len(cap)
    value = np.zeros(n_var)
    mu = np.zeros(n_var)
    var_live = np.ones(n_var, dtype=bool)
    cnst_live = np.ones(n_cnst, dtype=bool)
    remaining = cap.copy()
    usage = np.zeros(n_cnst)
    any_fat = bool(fat[ec].any())
    rounds = 0
    while _count(var_live):
        rounds += 1
        if rounds > _MAX_ROUNDS:
            raise SimulationError("the ptask share solver did not converge",
                                  hint="FATPIPE links shared by tasks bottlenecked elsewhere can make "
                                       "SimGrid's fair-bottleneck solver crawl")
        # shares offered by each live constraint
        live_elem = var_live[ev]
        nb = np.bincount(ec[live_elem], minlength=n_cnst).astype(np.float64)
        if any_fat:
            nb[fat & (nb > 0)] = 1.0
        empty = cnst_live & (nb == 0)
        remaining[empty] = 0.0
        usage[empty] = 0.0
        cnst_live &= ~empty
        usage[cnst_live] = remaining[cnst_live] / nb[cnst_live]
        # each live variable's increment
        min_inc = np.minimum.reduceat(usage[ec] / ew, starts)
        inc = np.minimum(min_inc, bound - value)
        mu[var_live] = inc[var_live]
        value[var_live] += mu[var_live]
        var_live &= value != bound
        # resources consumed by this round's increments (every element, frozen ones included)
        contrib = ew * mu[ev]
        dec = np.bincount(ec, weights=contrib, minlength=n_cnst)
        if any_fat:
            fat_min = np.full(n_cnst, np.inf)
            np.minimum.at(fat_min, ec, contrib)
            dec = np.where(fat, np.minimum(usage, fat_min), dec)
        remaining[cnst_live] -= dec[cnst_live]
        remaining[cnst_live & (remaining < MAXMIN_PRECISION)] = 0.0
        saturated = cnst_live & (remaining <= 0)
        if _count(saturated):
            cnst_live &= ~saturated
            var_live[ev[saturated[ec]]] = False
    return value
