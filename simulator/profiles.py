"""Batsim profiles: validation, and expansion into one parallel task (flops per host, bytes per
host pair) for the ``ptask_L07`` model.

Semantics follow Batsim 4.2.1 (see docs/PROTOCOL.md, profile table): a profile runs on the
job's allocation in allocation order (or the ``mapping`` order), storage labels resolve through
the EXECUTE_JOB ``storage_mapping``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mrsched.errors import SimulationError, WorkloadError, suggest

PROFILE_FIELDS: dict[str, tuple[str, ...]] = {
    "delay": ("delay",),
    "parallel": ("cpu", "com"),
    "parallel_homogeneous": ("cpu", "com"),
    "parallel_homogeneous_total": ("cpu", "com"),
    "composed": ("seq",),
    "parallel_homogeneous_pfs": (),   # bytes_to_read and/or bytes_to_write (the other is 0)
    "data_staging": ("nb_bytes", "from", "to"),
    "usage_trace": ("trace",),   # its rank files are read by usage_trace.load_usage_trace
}


@dataclass
class PtaskSpec:
    """One SimGrid parallel task: flops per host name, bytes per (src, dst) host names."""

    flops: dict[str, float]
    bytes: dict[tuple[str, str], float]
    hosts: tuple[str, ...]


def _is_number(value: Any) -> bool:
    """A JSON number as Batsim's rapidjson reads one: finite (``1e999`` is refused)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_profile(name: str, prof: Any, profiles: dict[str, Any], *,
                  file: str | None = None) -> None:
    """Refuse what Batsim would refuse when loading a profile (WorkloadError naming it)."""
    element = f"profile {name}"
    if not isinstance(prof, dict):
        raise WorkloadError("a profile must be a JSON object", file=file, element=element)
    ptype = prof.get("type")
    if ptype == "smpi":
        raise WorkloadError("'smpi' profiles need SimGrid's SMPI, which the embedded engine does "
                            "not have", file=file, element=element, field="type",
                            hint="use --engine batsim: real Batsim runs them")
    if ptype not in PROFILE_FIELDS:
        raise WorkloadError(f"unknown profile type {ptype!r}", file=file, element=element,
                            field="type", hint=suggest(str(ptype), PROFILE_FIELDS))
    for key in PROFILE_FIELDS[ptype]:
        if key not in prof:
            raise WorkloadError(f"'{ptype}' profile has no '{key}'", file=file,
                                element=element, field=key)
    if ptype == "delay":
        delay = prof["delay"]
        if not _is_number(delay) or not 0 < delay < math.inf:
            # Batsim 4.2.1 (profiles.cpp): "has a non-strictly-positive 'delay' field"
            raise WorkloadError(f"'delay' must be a strictly positive finite number, got {delay!r}",
                                file=file, element=element, field="delay",
                                hint="a zero-length job is written as Batsim takes it: "
                                     '{"type": "parallel_homogeneous", "cpu": 0, "com": 0}')
    elif ptype == "parallel":
        cpu, com = prof["cpu"], prof["com"]
        if not isinstance(cpu, list) or not all(_is_number(x) and x >= 0 for x in cpu):
            raise WorkloadError("'cpu' must be a list of non-negative numbers", file=file,
                                element=element, field="cpu")
        if not isinstance(com, list) or not all(_is_number(x) and x >= 0 for x in com):
            raise WorkloadError("'com' must be a list of non-negative numbers", file=file,
                                element=element, field="com")
        if len(com) != len(cpu) ** 2:
            raise WorkloadError(f"'com' must hold {len(cpu)}x{len(cpu)} values, got {len(com)}",
                                file=file, element=element, field="com")
    elif ptype in ("parallel_homogeneous", "parallel_homogeneous_total"):
        for key in ("cpu", "com"):
            if not _is_number(prof[key]) or prof[key] < 0:
                raise WorkloadError(f"'{key}' must be a non-negative number", file=file,
                                    element=element, field=key)
    elif ptype == "composed":
        seq = prof["seq"]
        if not isinstance(seq, list) or not seq or not all(isinstance(s, str) for s in seq):
            raise WorkloadError("'seq' must be a non-empty list of profile names", file=file,
                                element=element, field="seq")
        for sub in seq:
            if sub not in profiles:
                raise WorkloadError(f"'seq' names unknown profile '{sub}'", file=file,
                                    element=element, field="seq",
                                    hint=suggest(sub, profiles))
            if sub == name:
                raise WorkloadError("a composed profile cannot contain itself", file=file,
                                    element=element, field="seq")
        repeat = prof.get("repeat", 1)
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise WorkloadError("'repeat' must be a positive integer", file=file,
                                element=element, field="repeat")
    elif ptype == "parallel_homogeneous_pfs":
        if "bytes_to_read" not in prof and "bytes_to_write" not in prof:
            raise WorkloadError("'parallel_homogeneous_pfs' profile has no 'bytes_to_read' or "
                                "'bytes_to_write' (0 if not set)", file=file, element=element,
                                field="bytes_to_read")
        for key in ("bytes_to_read", "bytes_to_write"):
            value = prof.get(key, 0)
            if not _is_number(value) or not 0 <= value < math.inf:
                raise WorkloadError(f"'{key}' must be a non-negative number", file=file,
                                    element=element, field=key)
        key = "storage" if "storage" in prof else "host"   # Batsim takes either, storage first
        if not isinstance(prof.get(key, "pfs"), str):
            raise WorkloadError(f"'{key}' must be a label", file=file, element=element,
                                field=key)
    elif ptype == "usage_trace":
        if not isinstance(prof["trace"], str):
            raise WorkloadError("'trace' must be a file name", file=file, element=element,
                                field="trace")
    elif ptype == "data_staging":
        if not _is_number(prof["nb_bytes"]) or prof["nb_bytes"] < 0:
            raise WorkloadError("'nb_bytes' must be a non-negative number", file=file,
                                element=element, field="nb_bytes")
        for key in ("from", "to"):
            if not isinstance(prof[key], str):
                raise WorkloadError(f"'{key}' must be a storage label", file=file,
                                    element=element, field=key)


def flatten(name: str, profiles: dict[str, dict]) -> list[tuple[str, dict]]:
    """A composed profile as its leaf (name, profile) list, repeats unrolled."""
    prof = profiles[name]
    if prof["type"] != "composed":
        return [(name, prof)]
    out: list[tuple[str, dict]] = []
    for _ in range(int(prof.get("repeat", 1))):
        for sub in prof["seq"]:
            out.extend(flatten(sub, profiles))
    return out


def resolve_storage(label: str, storage_mapping: dict[str, int] | None,
                    storage_names: dict[int, str], *, job: str, field: str) -> str:
    """A storage label -> host name through the job's storage_mapping (Batsim's rules)."""
    if storage_mapping and label in storage_mapping:
        sid = storage_mapping[label]
        if sid not in storage_names:
            raise SimulationError(f"storage_mapping maps '{label}' to {sid}, which is not a "
                                  "storage resource", job=job, field=field,
                                  event="EXECUTE_JOB")
        return storage_names[sid]
    if len(storage_names) == 1 and not storage_mapping:
        return next(iter(storage_names.values()))
    raise SimulationError(f"no storage_mapping entry for label '{label}'", job=job, field=field,
                          event="EXECUTE_JOB",
                          hint="give EXECUTE_JOB a storage_mapping {label: storage id}")


def ptask_of(prof: dict, hosts: list[str], *, storage_mapping: dict[str, int] | None,
             storage_names: dict[int, str], job: str) -> PtaskSpec:
    """One non-delay, non-composed profile on the given executor hosts -> PtaskSpec."""
    ptype = prof["type"]
    n = len(hosts)
    flops: dict[str, float] = {}
    nbytes: dict[tuple[str, str], float] = {}

    def add_bytes(src: str, dst: str, amount: float) -> None:
        if amount > 0:
            nbytes[(src, dst)] = nbytes.get((src, dst), 0.0) + float(amount)

    def add_flops(host: str, amount: float) -> None:
        flops[host] = flops.get(host, 0.0) + float(amount)

    if ptype == "parallel":
        cpu, com = prof["cpu"], prof["com"]
        if len(cpu) != n:
            raise SimulationError(f"'parallel' profile needs {len(cpu)} hosts, the job runs on {n}",
                                  job=job, event="EXECUTE_JOB", field="alloc")
        for i, h in enumerate(hosts):
            add_flops(h, cpu[i])
            if any(com[i * n:(i + 1) * n]):  # skip rows without traffic
                for j, h2 in enumerate(hosts):
                    add_bytes(h, h2, com[i * n + j])
        used = tuple(hosts)
    elif ptype in ("parallel_homogeneous", "parallel_homogeneous_total"):
        cpu, com = float(prof["cpu"]), float(prof["com"])
        if ptype == "parallel_homogeneous_total":
            cpu, com = cpu / n, com / n
        flops = dict.fromkeys(hosts, cpu)   # as add_flops on each host (0.0 + cpu is cpu)...
        if len(flops) != n:                 # ...unless a host is given twice: amounts add up
            flops = {}
            for h in hosts:
                add_flops(h, cpu)
        if com > 0:  # pairs only matter with traffic (add_bytes drops zeros anyway)
            for h in hosts:
                for h2 in hosts:
                    if h2 != h:
                        add_bytes(h, h2, com)
        used = tuple(hosts)
    elif ptype == "parallel_homogeneous_pfs":
        label = prof.get("storage", prof.get("host", "pfs"))
        storage = resolve_storage(label, storage_mapping, storage_names,
                                  job=job, field="storage_mapping")
        for h in hosts:
            add_flops(h, 0.0)
            add_bytes(h, storage, prof.get("bytes_to_write", 0))
            add_bytes(storage, h, prof.get("bytes_to_read", 0))
        add_flops(storage, 0.0)
        used = tuple(hosts) + ((storage,) if storage not in hosts else ())
    elif ptype == "data_staging":
        src = resolve_storage(prof["from"], storage_mapping, storage_names, job=job,
                              field="storage_mapping")
        dst = resolve_storage(prof["to"], storage_mapping, storage_names, job=job,
                              field="storage_mapping")
        add_flops(src, 0.0)
        add_flops(dst, 0.0)
        add_bytes(src, dst, prof["nb_bytes"])
        used = (src, dst) if src != dst else (src,)
    else:  # pragma: no cover - check_profile refuses other types
        raise SimulationError(f"profile type {ptype!r} cannot run as a parallel task", job=job)
    return PtaskSpec(flops=flops, bytes=nbytes, hosts=used)


def merge(a: PtaskSpec, b: PtaskSpec) -> PtaskSpec:
    """Two ptasks as one (EXECUTE_JOB's additional_io_job): amounts add up per host and pair."""
    flops = dict(a.flops)
    for h, v in b.flops.items():
        flops[h] = flops.get(h, 0.0) + v
    nbytes = dict(a.bytes)
    for k, v in b.bytes.items():
        nbytes[k] = nbytes.get(k, 0.0) + v
    hosts = tuple(dict.fromkeys(a.hosts + b.hosts))
    return PtaskSpec(flops=flops, bytes=nbytes, hosts=hosts)
