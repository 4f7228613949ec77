"""The Policy contract: keyword-only knobs checked against one declared table (STYLE.md Do 1-3).

A policy's ``__init__`` only stores its knobs; ``get_params()`` returns them; run-time state
(trailing underscore) is created by ``setup(cluster)`` at simulation start. Every round the
runtime calls ``schedule(ctx)`` with a :class:`SchedulingContext` and gets decisions back.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Iterator

from mrsched.errors import ConfigError, suggest

from mrsched.schedulers.model.cluster import Cluster, NodeShares
from mrsched.schedulers.model.decisions import Allocation, Annotate, Decision, Reject, Start, WakeUp
from mrsched.schedulers.model.job import Job
from mrsched.schedulers.model.machine import MachineState, MachineView
from mrsched.schedulers.model.params import RUN_PARAMS, Param

if TYPE_CHECKING:   # the profile is built on this module; a policy receives one in its context
    from mrsched.schedulers.profile.availability import AvailabilityProfile, Reservation

INF = math.inf
#: How long (s) a job still running at or past its reservation's end (its walltime kill or
#: last phase not yet reported) is held in the profile beyond ``now`` during a round.
OVERRUN_HOLD = 1.0


ORDER_KEYS: dict[str, Callable[[Job], tuple]] = {
    # Ties keep submission order: the queue is submission-ordered and sorted() is stable.
    "fcfs": lambda j: (),
    "sjf": lambda j: (j.request.walltime,),
    "largest": lambda j: (-j.request.nodes,),
    "smallest": lambda j: (j.request.nodes,),
}


def order_queue(queue: Sequence[Job], order: str) -> Sequence[Job]:
    """The queue in policy order (stable: equal keys stay in submission order).

    Read-only: ``fcfs`` hands back ``queue`` itself (no copy, so a round that stops at the
    first blocked job costs O(1) however long the queue is); other orders a new sorted list.
    """
    if order == "fcfs":
        return queue
    if order == "sjf":   # the hottest sort (sjf-bb on whole traces): a bare float key
        return sorted(queue, key=_walltime)
    return sorted(queue, key=ORDER_KEYS[order])


def _walltime(job: Job) -> float:
    return job.request.walltime


class WaitingQueue(Sequence):
    """The runtime's waiting jobs (submission order) as a read-only sequence, without a copy.

    Why: copying a 28,000-job queue every round made whole-trace runs quadratic. Iteration
    reads the runtime's dict directly; indexing materialises a list once. Valid for the
    round it was made for (the runtime removes started jobs after ``schedule`` returns).
    """

    __slots__ = ("_jobs", "_list")

    def __init__(self, jobs: dict[str, Job]):
        self._jobs = jobs
        self._list: list[Job] | None = None

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs.values() if self._list is None else self._list)

    def __getitem__(self, index):
        if self._list is None:
            self._list = list(self._jobs.values())
        return self._list[index]

    def __contains__(self, job: object) -> bool:
        return self._jobs.get(getattr(job, "id", None)) is job

    def get(self, job_id: str, default: Job | None = None) -> Job | None:
        """The waiting job of that id, in O(1) (``hierarchical`` routes jobs by id)."""
        return self._jobs.get(job_id, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, WaitingQueue)):
            return list(self) == list(other)
        return NotImplemented

    def __add__(self, other):
        return list(self) + list(other)

    def __radd__(self, other):
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"WaitingQueue({list(self)!r})"


class NodeIds(Sequence):
    """The Batsim ids of a node bitmask, ascending, as ``Start.nodes`` (equal to the tuple of
    them), listed on first read: the alloc-only protocol path writes EXECUTE_JOB from the
    mask's runs and never reads them (as ``NodeShares`` for ``Start.bb``)."""

    __slots__ = ("_cluster", "_mask", "_ids")

    def __init__(self, cluster: Cluster, mask: int):
        self._cluster, self._mask, self._ids = cluster, mask, None

    def _built(self) -> tuple[int, ...]:
        if self._ids is None:
            self._ids = tuple(self._cluster.ids_of(self._mask))
        return self._ids

    def __getitem__(self, index):
        return self._built()[index]

    def __len__(self) -> int:
        return self._mask.bit_count()

    def __iter__(self) -> Iterator[int]:
        return iter(self._built())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeIds):
            other = other._built()
        return self._built() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._built())

    def __reduce__(self):
        return tuple, (self._built(),)      # copied or pickled as the plain tuple

    def __repr__(self) -> str:
        return repr(self._built())


class SchedulingContext:
    """What a policy sees in one round and how it records decisions.

    ``start(job, allocation)`` reserves the job's window in ``profile`` and takes its resources
    from the runtime's :class:`MachineState` at once (refused there when anything is already in
    use), so later checks in the same round see it, and appends a :class:`Start`. ``machine``
    is the read-only view of that state (None for a context made without one, in tests).
    """

    def __init__(self, now: float, cluster: Cluster, profile: AvailabilityProfile, queue: list[Job],
                 running: dict[str, Any], submitted: list[str], ended: list[str], *, estimates: bool = False,
                 machine: MachineState | None = None):
        self.now = now
        self.estimates = estimates      # requests carry a knowledge source's estimates, not the users' word
        self.cluster = cluster
        self.profile = profile
        self.queue = queue              # waiting jobs, submission order
        self.running = running          # job id -> runtime record
        self.submitted = submitted      # ids submitted since the previous round
        self.ended = ended              # ids finished since the previous round
        self.decisions: list[Decision] = []
        self.reservations: dict[str, Reservation] = {}
        self._state = machine
        self.machine = MachineView(machine) if machine is not None else None

    def start(self, job: Job, allocation: Allocation) -> Start:
        end = self.now + job.request.walltime
        self.reservations[job.id] = self.profile.reserve(self.now, end, allocation, tag=job.id)
        if self._state is not None:
            self._state.take(job, allocation, self.now)
        cl = self.cluster
        bb = NodeShares(cl, allocation.placement) if allocation.placement else {}
        decision = Start(job.id, NodeIds(cl, allocation.nodes), bb, allocation)
        self.decisions.append(decision)
        return decision

    def reject(self, job: Job, reason: str) -> Reject:
        decision = Reject(job.id, reason)
        self.decisions.append(decision)
        return decision

    def annotate(self, job: Job, text: str) -> Annotate:
        decision = Annotate(job.id, text)
        self.decisions.append(decision)
        return decision

    def wake_up(self, time: float) -> WakeUp:
        decision = WakeUp(time)
        self.decisions.append(decision)
        return decision


class Policy:
    """A scheduling policy: declared knobs, and one decision hook per round.

    ``__init__`` only stores the policy's own keyword-only knobs (``get_params()`` returns
    them); run-time state (trailing underscore) is made by ``setup`` at simulation start. The
    runtime's knobs (``RUN_PARAMS``: job model, period, decision cost) are not the policy's:
    a policy declares one only when its algorithm reads it (``ipsched``'s period is its MILP
    interval). ``services`` names the runtime services the policy's decisions stay correct
    under; the runtime refuses the knobs of the others (``{"io"}``: ``IO_PARAMS``, an
    I/O-aware profile and estimated requests).
    """

    name: ClassVar[str] = ""
    _parameter_constraints: ClassVar[dict[str, Param]] = {}
    services: ClassVar[frozenset[str]] = frozenset()
    #: whether the runtime's profile keeps its log of releases (``released_span``)
    release_log: ClassVar[bool] = False
    #: whether ``job_model=io-phased`` may run this policy's starts
    io_phased: ClassVar[bool] = True
    #: whether the policy places the profile's counters now and in reservations, so that
    #: ``power_cap`` (a counter, ``execution/power.py``) holds under it
    power_capped: ClassVar[bool] = True
    #: whether the policy counts the GPUs a node shares among the jobs on its cores (a
    #: per-core platform, ``model/machine.py``); a policy that places hosts does not, and the
    #: runtime rejects GPU jobs there rather than have it over-allocate a node's GPUs
    shares_gpus: ClassVar[bool] = False

    @classmethod
    def param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]

    @classmethod
    def param_defaults(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {p.name: p.default for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}

    @classmethod
    def param_table(cls) -> dict[str, Param]:
        table = dict(RUN_PARAMS)
        for klass in reversed(cls.__mro__):
            table.update(getattr(klass, "_parameter_constraints", {}))
        return {name: table[name] for name in cls.param_names() if name in table}

    def policy_name(self) -> str:
        """The registered name this policy was made under (else the class's)."""
        return self.name or type(self).__name__

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.param_names()}

    def validate_params(self) -> None:
        """Check every knob against the table; ConfigError naming policy, option and allowed values."""
        table = self.param_table()
        for name, value in self.get_params().items():
            if name in table:
                table[name].check(self.policy_name(), name, value)

    def check_option_names(self, options: Mapping[str, Any], also: Sequence[str] = ()) -> None:
        valid = [*self.param_names(), *also]
        for name in options:
            if name not in valid:
                raise ConfigError(f"policy '{self.policy_name()}': unknown option '{name}'", field=name,
                                  hint=suggest(name, valid))

    # -- run time ------------------------------------------------------------------------
    def setup(self, cluster: Cluster) -> None:
        """Create run-time state at simulation start (never in ``__init__``)."""
        self.cluster_ = cluster

    def schedule(self, ctx: SchedulingContext) -> list[Decision]:
        """This round's decisions (``ctx.start``, ``ctx.reject``, ... record them)."""
        raise NotImplementedError

    def idle_round(self, profile: AvailabilityProfile, queue: Mapping[str, Job]) -> bool:
        """True when ``schedule`` is known to decide nothing on this profile and queue (waiting
        jobs by id, submission order): the runtime then skips the round without building its
        context. Optional and exact: False (the default) always runs the round."""
        return False

    def kept_reservations(self) -> Iterable[Reservation]:
        """The reservations this policy keeps in the runtime's profile across rounds (its plan),
        so that the runtime's services account for them (an I/O-aware round takes their
        bandwidth too). None by default."""
        return ()

    def bind_catalog(self, catalog: Any) -> None:
        """A policy made of other policies (``hierarchical``) receives the registry's factories
        here when the registry makes it; others need nothing."""

    def run_table(self) -> tuple[str, list[dict[str, Any]]] | None:
        """A table of the run this policy keeps itself, ``(name, rows)``, written after the
        simulation as ``out_<name>.csv`` by the embedded engine's worker (names listed in
        ``expe.manifest.POLICY_SUFFIXES``: ``hierarchical``'s metrics per instance). None by
        default."""
        return None

    def declared_counters(self) -> dict[str, float]:
        """Capacities of countable resources this policy declares (its ``counters`` knob), added
        to the machine's before the run when ``sched-config`` gives none."""
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"
