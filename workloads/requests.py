"""``mrsched workload requests``: a hand-written CSV job list -> a Batsim workload for a
per-core CPU+GPU platform (seed 002's request kinds, docs/WORKLOADS.md "Job requests").

Columns: ``id,subtime,walltime,runtime,cores,nodes,cores_per_node,gpus_per_node`` (an empty
cell: not requested), optionally ``nodes_min``, ``nodes_max``, ``contiguous``. ``cores`` may be
left out when ``nodes`` and ``cores_per_node`` give it (their product, seed 002's third request
kind, as a user writes "4 nodes of 16 cores"). Each job becomes a delay of ``runtime`` seconds on
``res = cores`` core resources; a row that is not a valid request, or can never fit the machine,
is one error line naming the file, row and field.
"""

from __future__ import annotations

import csv
from pathlib import Path

from mrsched.errors import MrschedError, WorkloadError
from mrsched.schedulers.optim.bestfit import never_fits
from mrsched.schedulers.model.cores import core_request
from mrsched.workloads.cpugpu import Machine

REQUIRED = ("id", "subtime", "walltime", "runtime")
OPTIONAL = ("cores", "nodes", "cores_per_node", "gpus_per_node", "nodes_min", "nodes_max", "contiguous")


def _num(text: str, where: dict, field: str, *, integer: bool = False) -> float | int | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
        if integer:
            if value != int(value):
                raise ValueError
            value = int(value)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise WorkloadError(f"expected {kind}, got {text!r}", field=field, **where) from None
    if value < 0:
        raise WorkloadError(f"expected a non-negative value, got {text!r}", field=field, **where)
    return value


def requests_workload(path: str | Path, machine: Machine) -> dict:
    """The workload dict of the CSV job list at ``path`` for ``machine``."""
    path = Path(path)
    if not machine.per_core:
        raise WorkloadError("needs a per-core platform (`mrsched platform cluster --cores C`)", field="platform")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"cannot read: {exc.strerror}", file=str(path)) from None
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise WorkloadError(f"missing column(s) {', '.join(missing)}", file=str(path), line=1,
                            hint="columns: " + ",".join(REQUIRED + OPTIONAL[:4]))
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise WorkloadError(f"unknown column(s) {', '.join(unknown)}", file=str(path), line=1)
    jobs, profiles, seen = [], {}, set()
    for line, raw in enumerate(reader, start=2):
        row = {k.strip(): (v or "") for k, v in raw.items() if k}
        jid = row["id"].strip()
        where = {"file": str(path), "line": line, "job": jid}
        if not jid:
            raise WorkloadError("empty id", field="id", **where)
        if jid in seen:
            raise WorkloadError("duplicate id", field="id", **where)
        seen.add(jid)
        subtime = _num(row["subtime"], where, "subtime")
        walltime = _num(row["walltime"], where, "walltime")
        runtime = _num(row["runtime"], where, "runtime")
        for name, value in (("subtime", subtime), ("runtime", runtime)):
            if value is None:
                raise WorkloadError("required", field=name, **where)
        job = {"id": jid, "subtime": subtime, "walltime": walltime if walltime else -1}
        fields = {}
        for name in ("cores", "nodes", "cores_per_node", "gpus_per_node", "nodes_min", "nodes_max"):
            value = _num(row.get(name, ""), where, name, integer=True)
            if value is not None:
                fields[name] = value
        if "cores" not in fields:
            if not fields.get("nodes") or not fields.get("cores_per_node"):
                raise WorkloadError("required, unless nodes and cores_per_node give it", field="cores",
                                    **where)
            fields["cores"] = fields["nodes"] * fields["cores_per_node"]
        contiguous = row.get("contiguous", "").strip().lower()
        if contiguous not in ("", "0", "1", "true", "false", "yes", "no"):
            raise WorkloadError(f"expected true or false, got {contiguous!r}", field="contiguous", **where)
        if contiguous in ("1", "true", "yes"):
            fields["contiguous"] = True
        try:
            req = core_request(jid, {"res": fields["cores"], **fields})
        except MrschedError as exc:
            raise WorkloadError(exc.message, field=exc.field,
                                **where) from None
        reason = never_fits(req, machine.cores, machine.gpus)
        if reason is not None:
            raise WorkloadError(f"can never run on this platform: {reason}", **where)
        pname = f"delay{runtime:g}"
        profiles.setdefault(pname, {"type": "delay", "delay": runtime})
        job.update(res=fields["cores"], profile=pname, run_time=runtime, **fields)
        jobs.append(job)
    if not jobs:
        raise WorkloadError("no job rows", file=str(path))
    return {"name": path.stem, "description": f"job requests from {path.name}", "nb_res": machine.total_cores,
            "jobs": jobs, "profiles": dict(sorted(profiles.items()))}
