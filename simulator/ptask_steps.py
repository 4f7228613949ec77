"""The solver's tasks of the ptask_L07 model over time (the tasks of a ``ptask.PtaskModel``, the
``model`` argument here, that share a resource: their rates are the fair-bottleneck solver's).

In stepped mode (the engine's kernel takes SimGrid's steps) they advance as SimGrid advances its
actions: ``solver_left`` is the least time left (``Model::next_occurring_event_full``), and
``step_solver`` subtracts one step's delta from every task (``HostL07Model::update_actions_state``),
the rates solved again when the set of progressing tasks changes. Otherwise ``Sim`` simulates
them ahead of the model (``PtaskModel.next_completion`` / ``advance``), on copies of its state
or on the state itself. Systems of ``_VECTOR_MIN`` tasks or more are stepped on numpy arrays:
the same operations on each task, vectorised.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from mrsched.simulator.maxmin import MAXMIN_PRECISION

try:  # the C function behind np.count_nonzero, without its Python wrapper (hot path)
    from numpy._core.multiarray import count_nonzero as _count
except ImportError:  # pragma: no cover - other numpy layouts
    _count = np.count_nonzero

#: SimGrid precisions: ``surf/precision`` (timing), and remaining work below this fraction is
#: done (SimGrid: maxmin precision x surf precision).
SURF_PRECISION = 1e-9
REMAINS_PRECISION = MAXMIN_PRECISION * SURF_PRECISION
#: Systems of more tasks are stepped in numpy (per-task Python loops outgrow numpy's per-call
#: cost); the results are the same.
_VECTOR_MIN = 96


def enable_key(now: float, created: bool, seq: int) -> tuple:
    """When a task's variable joined the solve, as SimGrid orders a constraint's elements
    (``System::expand_create_elem`` and ``enable_var`` push them at the front: the newest
    first, ``src/kernel/lmm/System.cpp`` 246-253, 530-547): by time; in one step the
    variables whose latency ended (``update_actions_state``, in creation order) before those
    created by the actors then (in creation order)."""
    return (now, 1 if created else 0, seq)


def solver_left(model) -> float:
    """Stepped mode: the least time left of the solver's tasks, as SimGrid's
    ``Model::next_occurring_event_full`` and ``HostL07Model::next_occurring_event``
    (``Model.cpp`` 113-137, ``ptask_L07.cpp`` 88-101) compute it from the current state:
    a waiting task's latency left, a progressing one's work left over its rate (0 once
    none is left), the rates solved again when the set of progressing tasks changed."""
    if model._dirty:
        sim = Sim(model, copy=False)
        sim.solve_if_needed()
        sim.commit()
    left = math.inf
    rem, lat, rate = model._rem, model._lat, model._rate
    if len(rem) >= _VECTOR_MIN:   # the same values on arrays
        lat_a, rem_a, rate_a = np.array(lat), np.array(rem), np.array(rate)
        waiting = lat_a > 0
        if _count(waiting):
            left = float(lat_a[waiting].min())
        done = ~waiting & (rem_a <= 0)
        if _count(done):
            return 0.0
        moving = ~waiting & (rate_a > 0)
        if _count(moving):
            left = min(left, float((rem_a[moving] / rate_a[moving]).min()))
        return left
    for i in range(len(rem)):
        latency = lat[i]
        if latency > 0:
            x = latency
        else:
            r = rem[i]
            if r <= 0:
                x = 0.0
            else:
                v = rate[i]
                if not v > 0:
                    continue
                x = r / v
        if x < left:
            left = x
    return left


def step_solver(model, now: float, delta: float) -> list:
    """Stepped mode: ``HostL07Model::update_actions_state`` (``ptask_L07.cpp`` 103-151) on
    the solver's tasks for one step of ``delta``, SimGrid's operations in its order: a
    waiting task pays the latency (``double_update`` at surf precision, 0 when not more
    than ``delta``); every task's work loses its last solved rate times ``delta``
    (``Action::update_remains``: 0 below 1e-14); a task with no work and no latency left
    is done. A task done waiting, or done, changes the progressing set: solve again."""
    if model._dirty:   # a change since the last time_left (the caller's delta is that)
        sim = Sim(model, copy=False)
        sim.solve_if_needed()
        sim.commit()
    rem, lat, rate = model._rem, model._lat, model._rate
    if len(rem) >= _VECTOR_MIN:   # the same operations on arrays
        lat_a, rem_a, rate_a = np.array(lat), np.array(rem), np.array(rate)
        waiting = lat_a > 0
        if _count(waiting):
            longer = waiting & (lat_a > delta)
            lat_a[longer] -= delta
            lat_a[longer & (lat_a < SURF_PRECISION)] = 0.0
            lat_a[waiting & ~longer] = 0.0
            ended = waiting & (lat_a <= 0)
            if _count(ended):
                model._dirty = True
                act = model._act
                for i in ended.nonzero()[0].tolist():   # in creation order, as SimGrid's loop
                    act[i]._enable = enable_key(now, False, act[i]._seq)
            lat = model._lat = lat_a.tolist()
        rem_a -= rate_a * delta
        rem_a[rem_a < REMAINS_PRECISION] = 0.0
        rem = model._rem = rem_a.tolist()
        finished = ((rem_a <= 0) & (lat_a <= 0)).nonzero()[0].tolist()
    else:
        finished = []
        for i in range(len(rem)):
            latency = lat[i]
            if latency > 0:
                if latency > delta:
                    latency -= delta
                    if latency < SURF_PRECISION:
                        latency = 0.0
                else:
                    latency = 0.0
                lat[i] = latency
                if latency <= 0:
                    model._dirty = True
                    task = model._act[i]
                    task._enable = enable_key(now, False, task._seq)
            r = rem[i] - rate[i] * delta
            if r < REMAINS_PRECISION:
                r = 0.0
            rem[i] = r
            if r <= 0 and lat[i] <= 0:
                finished.append(i)
    if not finished:
        return []
    act = model._act
    done = [act[i] for i in finished]
    gone = set(finished)
    keep = [i for i in range(len(act)) if i not in gone]
    model._act = [act[i] for i in keep]
    model._rem = [rem[i] for i in keep]
    model._lat = [lat[i] for i in keep]
    model._rate = [rate[i] for i in keep]
    model._dirty = True
    model._lookahead = None
    for task in done:
        task.finish = now
        task._final = (0.0, 0.0, 0.0)
        task._slot = -1
        model._empties.discard(task)
        model._release(task)
    return done


class Sim:
    """The time-stepping loop over the model's task state, or over copies of it (look-ahead).

    Lists are replaced, never shrunk in place (``act``), or updated in place only when they
    are the sim's own (``rem`` and ``lat`` are copied for a look-ahead), so that a look-ahead
    leaves the model untouched; ``commit`` hands the state back to the model.

    Large systems (``_VECTOR_MIN`` tasks or more) are simulated on numpy arrays (``vec``),
    converted once per sim: the same operations on each task, vectorised."""

    __slots__ = ("model", "now", "dirty", "act", "rem", "lat", "rate", "done", "finish_times", "vec")

    def __init__(self, model, copy: bool):
        self.model = model
        self.now = model.now
        self.dirty = model._dirty
        act = self.act = model._act
        self.vec = len(act) >= _VECTOR_MIN
        if self.vec:
            self.rem = np.array(model._rem, dtype=np.float64)
            self.lat = np.array(model._lat, dtype=np.float64)
            self.rate = np.array(model._rate, dtype=np.float64)
        else:
            self.rem = model._rem.copy() if copy else model._rem
            self.lat = model._lat.copy() if copy else model._lat
            self.rate = model._rate
        self.done: list = []   # the tasks (ptask.Ptask) finished, in order
        self.finish_times: list[float] = []

    def commit(self) -> None:
        model = self.model
        model.now = self.now
        model._dirty = self.dirty
        model._act = self.act
        if self.vec:
            model._rem = self.rem.tolist()
            model._lat = self.lat.tolist()
            model._rate = self.rate.tolist()
        else:
            model._rem = self.rem
            model._lat = self.lat
            model._rate = self.rate

    def finished(self) -> list[int]:
        """Positions of the tasks with no work and no latency left."""
        rem, lat = self.rem, self.lat
        if self.vec:
            return ((rem <= 0) & (lat <= 0)).nonzero()[0].tolist()
        return [i for i in range(len(rem)) if rem[i] <= 0 and lat[i] <= 0]

    def solve_if_needed(self) -> None:
        if not self.dirty:
            return
        act, lat = self.act, self.lat
        if self.vec:
            rate = np.zeros(len(act))
            progressing = lat <= 0
            empties = self.model._empties
            if empties:
                progressing &= np.fromiter([t not in empties for t in act], dtype=bool, count=len(act))
            active = progressing.nonzero()[0].tolist()
        else:
            rate = [0.0] * len(act)
            active = [i for i in range(len(act)) if lat[i] <= 0 and not act[i]._empty]
        if active:
            # the rates are a function of the progressing set alone (elements, capacities and
            # bounds of a task never change): a set solved before gets the same rates back
            model = self.model
            tasks = operator.itemgetter(*active)(act) if len(active) > 1 else (act[active[0]],)
            cache = model._solved
            rates = cache.get(tasks)
            if rates is None:
                rates = model._solve_split(tasks) if model._split_components else model._solve(tasks)
                model._remember(tasks, rates)
            if self.vec:
                rate[active] = rates
            else:
                for i, x in zip(active, rates):
                    rate[i] = x
        self.rate = rate
        self.dirty = False

    def next_delta(self) -> tuple[float, bool, int]:
        """Time to the next internal event, whether it is a latency ending, and (if not) the
        position of the first task to finish then."""
        lat, rem, rate = self.lat, self.rem, self.rate
        if self.vec:
            return self._next_delta_np()
        d_lat = math.inf
        d_run = math.inf
        first = -1
        for i in range(len(lat)):
            latency = lat[i]
            if latency > 0:
                if latency < d_lat:
                    d_lat = latency
            else:
                x = rate[i]
                if x > 0:
                    ratio = rem[i] / x
                    if ratio < d_run:
                        d_run = ratio
                        first = i
        return (d_lat, True, -1) if d_lat < d_run else (d_run, False, first)

    def run(self, to_time: float, stop_at_completion: bool) -> None:
        """Simulate to ``to_time`` (or to the first completion); finished tasks go to ``done``."""
        checked = False  # finished tasks already taken out since the last step
        while True:
            if not checked:
                finished = self.finished()
                if finished:  # e.g. tasks with nothing to do
                    self._finish(finished)
                    if stop_at_completion:
                        return
                    continue
            self.solve_if_needed()
            delta = self.next_delta()[0]
            if math.isinf(delta) or self.now + delta > to_time:
                if not math.isinf(to_time) and to_time > self.now:
                    self._step(to_time - self.now)
                    self.now = to_time
                return
            finished = self._step(delta)
            self.now = self.now + delta
            checked = True  # _finish takes every task finished now: none left for the loop top
            if finished:
                self._finish(finished)
                if stop_at_completion:
                    return

    def _step(self, delta: float) -> list[int]:
        """SimGrid ``HostL07Model::update_actions_state`` for one time step; returns the
        positions of the tasks with no work and no latency left after it."""
        lat, rem, rate = self.lat, self.rem, self.rate
        if self.vec:
            return self._step_np(delta)
        finished = []
        started = False
        for i in range(len(lat)):
            latency = lat[i]
            if latency > 0:  # waiting: pays latency, no progress in this step
                if latency > delta:
                    latency -= delta
                    if latency < SURF_PRECISION:
                        latency = 0.0
                else:
                    latency = 0.0
                lat[i] = latency
                if latency <= 0:
                    started = True
                    task = self.act[i]
                    task._enable = enable_key(self.now + delta, False, task._seq)
                    if rem[i] <= 0:
                        finished.append(i)
            else:
                x = rate[i]
                if x > 0:
                    r = rem[i] - x * delta
                    if r < REMAINS_PRECISION:
                        r = 0.0
                    rem[i] = r
                    if r <= 0:
                        finished.append(i)
                elif rem[i] <= 0:
                    finished.append(i)
        if started:
            self.dirty = True  # starts progressing: shares change
        return finished

    def _next_delta_np(self) -> tuple[float, bool, int]:
        """``next_delta`` on arrays (the same values)."""
        lat, rate = self.lat, self.rate
        waiting = lat > 0
        d_lat = float(lat[waiting].min()) if _count(waiting) else math.inf
        moving = ~waiting & (rate > 0)
        if not _count(moving):
            return (d_lat, True, -1) if d_lat < math.inf else (math.inf, False, -1)
        where = moving.nonzero()[0]
        ratios = self.rem[where] / rate[where]
        k = int(ratios.argmin())  # the first of equal minima, as the loop's strict <
        d_run = float(ratios[k])
        return (d_lat, True, -1) if d_lat < d_run else (d_run, False, int(where[k]))

    def _step_np(self, delta: float) -> list[int]:
        """``_step`` on arrays (the same operations on each task)."""
        lat, rem, rate = self.lat, self.rem, self.rate
        waiting = lat > 0
        moving = ~waiting & (rate > 0)
        if _count(waiting):
            longer = waiting & (lat > delta)
            lat[longer] -= delta
            lat[longer & (lat < SURF_PRECISION)] = 0.0
            lat[waiting & ~longer] = 0.0
            ended = waiting & (lat <= 0)
            if _count(ended):
                self.dirty = True  # starts progressing: shares change
                for i in ended.nonzero()[0].tolist():
                    task = self.act[i]
                    task._enable = enable_key(self.now + delta, False, task._seq)
        if _count(moving):
            rem[moving] -= rate[moving] * delta
            rem[moving & (rem < REMAINS_PRECISION)] = 0.0
        return ((lat <= 0) & (rem <= 0)).nonzero()[0].tolist()

    def _finish(self, finished: list[int]) -> None:
        act = self.act
        self.done.extend([act[i] for i in finished])
        self.finish_times.extend([self.now] * len(finished))
        if self.vec:
            mask = np.ones(len(act), dtype=bool)
            mask[finished] = False
            keep = mask.nonzero()[0]
            self.act = [act[i] for i in keep.tolist()]
            self.rem = self.rem[keep]
            self.lat = self.lat[keep]
            self.rate = self.rate[keep]
            self.dirty = True
            return
        gone = set(finished)
        keep = [i for i in range(len(act)) if i not in gone]
        self.act = [act[i] for i in keep]
        rem, lat, rate = self.rem, self.lat, self.rate
        self.rem = [rem[i] for i in keep]
        self.lat = [lat[i] for i in keep]
        self.rate = [rate[i] for i in keep]
        self.dirty = True
