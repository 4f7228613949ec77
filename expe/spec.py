"""What one run is: the inputs, the policy and how to run it (a plain, picklable value).

A campaign expands into ``RunSpec`` values; executors ship them to workers (threads, dask)
and ``mrsched.expe.runner.execute_run`` turns one into a run directory.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field

ENGINES = ("embedded", "batsim", "docker")


@dataclass(frozen=True)
class RunSpec:
    """One simulation: ``platform`` + ``workload`` + ``policy(options)`` written to ``out_dir``.

    ``policy`` is a registered name or ``module.path:ClassName`` (a user's BatsimScheduler
    subclass); ``options`` are the policy's keyword options (values as given: strings are
    coerced by the registry). ``timeout`` is wall-clock seconds for the whole run (None: no
    limit). ``batsim`` is the Batsim command for ``engine="batsim"`` (a path or a command
    string such as ``"mrsched simulate"``). ``labels`` are copied into the manifest as is
    (campaigns record ``platform_name``, ``workload_name`` and a trace's ``part``).
    ``roles`` are Batsim ``-r`` specs (``"node_8,node_17:storage"``), given to every engine;
    ``bb_capacity`` (bytes) is the burst buffer of storage hosts that declare no
    ``bb_capacity`` (the Euro-Par artifact's platform keeps it in a YAML beside the XML); it
    reaches the scheduler through Batsim's ``--sched-cfg``, so real Batsim passes it too.
    ``compute_sharing`` starts the engine with Batsim's ``--enable-compute-sharing`` (several
    jobs may then share a compute host, its CPU shared as SimGrid shares it); ``energy`` with
    Batsim's ``-E`` (pstates and wattage, energy queries, ``out_consumed_energy.csv`` and
    ``out_pstate_changes.csv``).
    """

    run_id: str
    out_dir: str
    platform: str
    workload: str
    policy: str
    options: dict = field(default_factory=dict)
    seed: int | None = None
    engine: str = "embedded"
    batsim: str | None = None
    timeout: float | None = None
    labels: dict = field(default_factory=dict)  # recorded in the manifest (e.g. part)
    roles: tuple = ()
    bb_capacity: int | None = None
    compute_sharing: bool = False
    energy: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def dynamic_jobs(self) -> bool:
        """The I/O-phased job model runs each phase as a Batsim dynamic job: the engine must
        then be started with ``--enable-dynamic-jobs`` (the scheduler refuses to run without)."""
        return str(self.options.get("job_model", "alloc-only")) == "io-phased"

    @property
    def sched_cfg(self) -> str:
        """Batsim's ``--sched-cfg`` text for this run ("" when none is needed)."""
        if self.bb_capacity is None:
            return ""
        return json.dumps({"bb_capacity": int(self.bb_capacity)}, separators=(",", ":"))

    def batsim_flags(self) -> list[str]:
        """Extra Batsim command-line flags this run needs, for every engine alike."""
        flags = ["--enable-dynamic-jobs"] if self.dynamic_jobs else []
        for spec in self.roles:
            flags += ["-r", spec]
        if self.sched_cfg:
            flags += ["--sched-cfg", self.sched_cfg]
        if self.compute_sharing:
            flags.append("--enable-compute-sharing")
        if self.energy:
            flags.append("--energy")
        return flags

    def engine_options(self) -> dict:
        """The same flags as keyword arguments of the embedded engine's ``simulate``."""
        options: dict = {"dynamic_jobs": self.dynamic_jobs}
        if self.roles:
            options["roles"] = tuple(self.roles)
        if self.sched_cfg:
            options["sched_cfg"] = self.sched_cfg
        if self.compute_sharing:
            options["compute_sharing"] = True
        if self.energy:
            options["energy"] = True
        return options

    @classmethod
    def from_dict(cls, data: dict) -> "RunSpec":
        data = dict(data)
        data["roles"] = tuple(data.get("roles") or ())
        return cls(**data)

    def command_line(self) -> str:
        """The ``mrsched run`` command that reproduces this run on its own."""
        argv = ["mrsched", "run", "--platform", self.platform, "--workload", self.workload,
                "--policy", self.policy]
        for key, value in self.options.items():
            argv += ["--option", f"{key}={value}"]
        for spec in self.roles:
            argv += ["-r", spec]
        if self.bb_capacity is not None:
            argv += ["--bb-capacity", str(int(self.bb_capacity))]
        if self.compute_sharing:
            argv.append("--enable-compute-sharing")
        if self.energy:
            argv.append("--energy")
        argv += ["--out", self.out_dir, "--engine", self.engine]
        if self.batsim:
            argv += ["--batsim", self.batsim]
        if self.timeout is not None:
            argv += ["--timeout", f"{self.timeout:g}"]
        if self.seed is not None:
            argv += ["--seed", str(self.seed)]
        return shlex.join(argv)
