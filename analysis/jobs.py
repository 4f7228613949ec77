"""Per-job tables from an engine's ``*_jobs.csv`` (Batsim 4.2.1 format), one row per user job.

Batsim writes one row per Batsim job; under the I/O-phased job model one user job becomes a
rejected parent plus dynamic phase jobs ``{parent}.{k}.{phase}`` of workload ``{wl}-io``
(docs/DESIGN.md "Sub-jobs"). Metrics are about user jobs, so the phases are folded back here;
the executed Batsim rows stay available (``phase_table``) for the Gantt chart and node usage.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from procset import ProcSet

from mrsched.errors import ProtocolError, WorkloadError
from mrsched.schedulers.batsim.intervals import format_intervals, parse_intervals
from mrsched.workloads.batsim_json import scan_workload

JOBS_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time",
    "finish_time", "waiting_time", "turnaround_time", "stretch", "allocated_resources",
    "consumed_energy", "metadata",
)
_REQUIRED = ("job_id", "workload_name", "submission_time", "requested_number_of_resources",
             "final_state", "starting_time", "finish_time", "allocated_resources")
_TIME_COLUMNS = ("submission_time", "requested_time", "starting_time", "execution_time",
                 "finish_time", "waiting_time", "turnaround_time", "stretch", "consumed_energy")

# Severity used to pick "the worst phase state" when folding (DESIGN.md "Sub-jobs").
STATE_SEVERITY = {
    "COMPLETED_SUCCESSFULLY": 0,
    "COMPLETED_FAILED": 1,
    "COMPLETED_WALLTIME_REACHED": 2,
    "COMPLETED_KILLED": 3,
    "REJECTED": 4,
}
_KNOWN_STATES = frozenset(STATE_SEVERITY) | {"NOT_SUBMITTED", "SUBMITTED", "RUNNING"}
_PHASE_ID = re.compile(r"^(?P<parent>.+)\.(?P<k>\d+)\.(?P<phase>[^.]+)$")

# Workload job fields that are requests, not identity or timing (DESIGN.md "Job requests").
_NOT_REQUESTS = frozenset({"id", "subtime", "walltime", "res", "profile"})


# --------------------------------------------------------------------------- reading
def read_jobs_csv(path) -> pd.DataFrame:
    """The raw ``_jobs.csv`` rows, typed: ids and workload names as text, times as floats
    (NaN for rejected jobs, whose time cells Batsim leaves empty). ``path`` may also be an
    open text (``io.StringIO``: ``mrsched.simulate`` keeps a run's rows in memory), named in
    errors by its ``name`` attribute."""
    if hasattr(path, "read"):
        source, path = path, getattr(path, "name", "<jobs CSV>")
    else:
        source = path = Path(path)
        if not path.is_file():
            raise WorkloadError("jobs file not found", file=str(path),
                                hint="expected an engine's *_jobs.csv (Batsim export prefix + _jobs.csv)")
    try:
        df = pd.read_csv(source, dtype={"job_id": str, "workload_name": str, "profile": str,
                                      "final_state": str, "allocated_resources": str,
                                      "metadata": str},
                         keep_default_na=False, na_values={c: [""] for c in _TIME_COLUMNS})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"cannot read jobs CSV: {exc}", file=str(path)) from None
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise WorkloadError("not a Batsim jobs CSV", file=str(path), field=missing[0],
                            hint=f"missing column(s) {', '.join(missing)}")
    for col in _TIME_COLUMNS + ("requested_number_of_resources", "success"):
        if col not in df.columns:
            df[col] = np.nan
            continue
        converted = pd.to_numeric(df[col], errors="coerce")
        bad = converted.isna() & df[col].notna() & (df[col].astype(str).str.strip() != "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise WorkloadError(f"not a number: '{df[col].iloc[i]}'", file=str(path), line=i + 2,
                                job=str(df["job_id"].iloc[i]), field=col)
        df[col] = converted.astype(float)
    for col in ("profile", "metadata"):
        if col not in df.columns:
            df[col] = ""
    unknown = ~df["final_state"].isin(_KNOWN_STATES)
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise WorkloadError(f"unknown final state '{df['final_state'].iloc[i]}'", file=str(path),
                            line=i + 2, job=str(df["job_id"].iloc[i]), field="final_state")
    executed = df["final_state"].str.startswith("COMPLETED")
    no_times = executed & (df["starting_time"].isna() | df["finish_time"].isna())
    if no_times.any():
        i = int(np.flatnonzero(no_times.to_numpy())[0])
        raise WorkloadError("completed job without start or finish time", file=str(path),
                            line=i + 2, job=str(df["job_id"].iloc[i]), field="starting_time")
    df["metadata"] = df["metadata"].fillna("").astype(str)
    df["allocated_resources"] = df["allocated_resources"].fillna("").astype(str)
    df["nb_allocated"] = _check_allocations(df, path)
    return df


def id_ranges(text: str) -> list[tuple[int, int]]:
    """The closed ranges ``(lo, hi)`` of a Batsim interval set (``"0-3 7"`` -> ``[(0, 3), (7,
    7)]``), read by the protocol's own parser (``schedulers/batsim/intervals.py``: the wire
    format has one reader)."""
    return [(itv.inf, itv.sup) for itv in parse_intervals(text).intervals()]


def id_counts(texts) -> np.ndarray:
    """Resource ids in each interval set of ``texts`` (NaN and "" count 0), each distinct text
    parsed once."""
    seen: dict[str, int] = {}
    out = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            continue
        n = seen.get(text)
        if n is None:
            n = seen[text] = len(parse_intervals(text))
        out[i] = n
    return out


def _check_allocations(df: pd.DataFrame, path: Path) -> np.ndarray:
    """Every ``allocated_resources`` cell is an interval set, or the file, line and job are named;
    returns each row's id count (the check parses them anyway)."""
    try:
        return id_counts(df["allocated_resources"].to_numpy(dtype=object))
    except ProtocolError as exc:
        for i, text in enumerate(df["allocated_resources"]):
            try:
                parse_intervals(text, field="allocated_resources")
            except ProtocolError as row_exc:
                raise WorkloadError(row_exc.message, file=str(path), line=i + 2,
                                    job=str(df["job_id"].iloc[i]), field="allocated_resources",
                                    hint=row_exc.hint) from None
        raise WorkloadError(exc.message, file=str(path), field="allocated_resources") from None


# --------------------------------------------------------------------------- folding
def phase_table(raw: pd.DataFrame) -> pd.DataFrame:
    """The Batsim jobs that ran (not rejected), with ``parent`` (the user job they belong to),
    ``phase_index`` and ``phase`` (``""`` for a job that ran as itself): the Gantt's input."""
    ran = raw[raw["final_state"] != "REJECTED"].copy()
    parents, ks, phases = [], [], []
    for job_id, wl in zip(ran["job_id"], ran["workload_name"]):
        m = _PHASE_ID.match(job_id) if wl.endswith("-io") else None
        if m:
            parents.append((wl[:-3], m.group("parent")))
            ks.append(int(m.group("k")))
            phases.append(m.group("phase"))
        else:
            parents.append((wl, job_id))
            ks.append(-1)
            phases.append("")
    ran["parent_workload"] = [p[0] for p in parents]
    ran["parent"] = [p[1] for p in parents]
    ran["phase_index"] = ks
    ran["phase"] = phases
    if "nb_allocated" not in ran.columns:
        ran["nb_allocated"] = id_counts(ran["allocated_resources"].to_numpy(dtype=object))
    return ran.reset_index(drop=True)


def fold_subjobs(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per user job: phases of ``{wl}-io`` folded into their parent (DESIGN.md).

    Folded row: submission time of the parent, start = first phase start, finish = last
    phase finish, state = the worst phase state, allocation = union of the phases'
    allocations, ``n_phases`` = number of phases. Jobs without phases pass through unchanged.
    """
    is_phase = raw["workload_name"].str.endswith("-io") & raw["job_id"].str.match(_PHASE_ID.pattern)
    if not is_phase.any():
        out = raw.copy()
        out["n_phases"] = 0
        return _finish_table(out)
    phases = raw[is_phase].copy()
    keys = [(wl[:-3], _PHASE_ID.match(j).group("parent"))
            for j, wl in zip(phases["job_id"], phases["workload_name"])]
    phases["_key"] = keys
    phases["_k"] = [int(_PHASE_ID.match(j).group("k")) for j in phases["job_id"]]
    by_parent: dict[tuple[str, str], pd.DataFrame] = {k: g for k, g in phases.groupby("_key", sort=False)}

    rows = []
    for rec in raw[~is_phase].to_dict("records"):
        key = (rec["workload_name"], rec["job_id"])
        group = by_parent.pop(key, None)
        rows.append(_fold_one(rec, group) if group is not None else {**rec, "n_phases": 0})
    for key, group in by_parent.items():  # phases whose parent row is absent from the CSV
        first = group.sort_values("_k").iloc[0].to_dict()
        parent = {**first, "workload_name": key[0], "job_id": key[1], "metadata": "io-phased"}
        rows.append(_fold_one(parent, group))
    out = pd.DataFrame(rows, columns=list(raw.columns) + ["n_phases"])
    return _finish_table(out)


def _fold_one(parent: dict, group: pd.DataFrame) -> dict:
    ran = group[group["final_state"] != "REJECTED"]
    row = dict(parent)
    row["n_phases"] = int(len(group))
    if ran.empty:
        row.update(final_state="REJECTED", success=0.0, starting_time=np.nan,
                   finish_time=np.nan, allocated_resources="")
        return row
    states = list(ran["final_state"])
    worst = max(states, key=lambda s: STATE_SEVERITY.get(s, 0))
    row["final_state"] = worst
    row["success"] = float(worst == "COMPLETED_SUCCESSFULLY")
    row["starting_time"] = float(ran["starting_time"].min())
    row["finish_time"] = float(ran["finish_time"].max())
    ids = ProcSet()
    for a in ran["allocated_resources"]:
        ids |= parse_intervals(a)
    row["allocated_resources"] = format_intervals(ids)
    row["nb_allocated"] = len(ids)
    if pd.isna(row.get("requested_number_of_resources")):
        row["requested_number_of_resources"] = float(ran["requested_number_of_resources"].max())
    row["metadata"] = parent.get("metadata", "")
    return row


def _finish_table(df: pd.DataFrame) -> pd.DataFrame:
    """Recompute derived times from start/finish (uniform for folded and plain rows)."""
    df = df.copy()
    df["rejected"] = df["final_state"] == "REJECTED"
    df["killed"] = df["final_state"].isin(("COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED"))
    ran = ~df["rejected"]
    df["execution_time"] = np.where(ran, df["finish_time"] - df["starting_time"], np.nan)
    df["waiting_time"] = np.where(ran, df["starting_time"] - df["submission_time"], np.nan)
    df["turnaround_time"] = np.where(ran, df["finish_time"] - df["submission_time"], np.nan)
    if "nb_allocated" not in df.columns or df["nb_allocated"].isna().any():
        df["nb_allocated"] = id_counts(df["allocated_resources"].to_numpy(dtype=object))
    df["nb_allocated"] = df["nb_allocated"].astype(np.int64)
    df["n_phases"] = df["n_phases"].astype(int)
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------- requests
def workload_requests(path: str | Path) -> pd.DataFrame:
    """Per-job requests from a Batsim workload JSON: ``job_id`` (text, no ``w0!`` prefix),
    ``res``, ``walltime``, ``burst_buffer`` (bytes for the whole job; from the job field or
    the Euro-Par profile field ``bb`` x ``res``) and every other numeric job field.

    Read job by job into columns (``scan_workload``): a million-job workload's parsed jobs
    and profiles (~1 KB a job) are never held, only the numbers kept here."""
    path = Path(path)
    cols: dict[str, list] = {"job_id": [], "res": [], "walltime": []}
    via_profile: list[tuple[int, str]] = []     # (row, profile name): bb from the profile
    profile_bb: dict[str, object] = {}

    def job(item) -> None:
        n = len(cols["job_id"])
        if not isinstance(item, dict) or "id" not in item:
            raise WorkloadError("job without 'id'", file=str(path), element=f"jobs[{n}]", field="id")
        job_id = str(item["id"]).split("!", 1)[-1]
        res = item.get("res")
        if not isinstance(res, (int, float)) or isinstance(res, bool) or res < 0:
            raise WorkloadError(f"'res' must be a non-negative number, got {res!r}", file=str(path),
                                job=job_id, field="res")
        walltime = item.get("walltime", -1)
        cols["job_id"].append(job_id)
        cols["res"].append(float(res))
        cols["walltime"].append(float(walltime) if isinstance(walltime, (int, float)) and walltime >= 0
                                else np.nan)
        for key, value in item.items():
            if key in _NOT_REQUESTS or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if not math.isfinite(value) or value < 0:
                raise WorkloadError(f"request must be a finite non-negative number, got {value!r}",
                                    file=str(path), job=job_id, field=key)
            col = cols.get(key)
            if col is None:
                col = cols[key] = [np.nan] * n
            col.append(float(value))
        bb = cols.get("burst_buffer")
        if (bb is None or len(bb) == n) and isinstance(item.get("profile"), str):
            via_profile.append((n, item["profile"]))
        for col in cols.values():       # requests this job lacks
            if len(col) == n:
                col.append(np.nan)

    def profile(name: str, item) -> None:
        if isinstance(item, dict) and "bb" in item:
            profile_bb[name] = item["bb"]

    top = scan_workload(path, job, profile)
    _remember_header(path, top)
    if top.get("jobs") is not True:
        raise WorkloadError("a Batsim workload needs a 'jobs' list", file=str(path), field="jobs")
    for row, name in via_profile:
        bb = profile_bb.get(name)
        if isinstance(bb, (int, float)) and not isinstance(bb, bool):
            if bb < 0:
                raise WorkloadError(f"profile field 'bb' must be >= 0, got {bb!r}", file=str(path),
                                    job=cols["job_id"][row], field="bb")
            bbs = cols.setdefault("burst_buffer", [np.nan] * len(cols["job_id"]))
            bbs[row] = float(bb) * cols["res"][row]
    if not cols["job_id"]:
        return pd.DataFrame(columns=["job_id", "res", "walltime"])
    df = pd.DataFrame(cols)
    dup = df["job_id"].duplicated()
    if dup.any():
        raise WorkloadError("duplicate job id", file=str(path), job=str(df["job_id"][dup].iloc[0]),
                            field="id")
    for col in df.columns.difference(["job_id", "res", "walltime"]):
        df[col] = df[col].fillna(0.0)  # a request absent from a job = none of it
    return df


_HEADERS: dict[tuple, dict] = {}


def _header_key(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def _remember_header(path: Path, top: dict) -> None:
    if len(_HEADERS) > 256:
        _HEADERS.clear()
    _HEADERS[_header_key(path)] = {k: v for k, v in top.items() if k not in ("jobs", "profiles")}


def workload_header(path: str | Path) -> dict:
    """A workload's top-level members but its jobs and profiles (``name``, ``description``,
    ``nb_res``, ``generator``...): kept when ``workload_requests`` read the file, else read
    job by job here (a million-job workload is scanned once per report, not twice)."""
    path = Path(path)
    try:
        key = _header_key(path)
    except OSError:
        raise WorkloadError("workload file not found", file=str(path)) from None
    if key not in _HEADERS:
        _remember_header(path, scan_workload(path, lambda item: None, lambda name, item: None))
    return dict(_HEADERS[key])


def attach_requests(jobs: pd.DataFrame, workloads: dict[str, str | Path] | list | str | Path) -> pd.DataFrame:
    """Join the workload requests onto the job table by (workload name, job id).

    ``workloads`` maps Batsim workload names (``w0``, ``w1``... in command-line order) to
    workload files; a single path or a list is numbered ``w0, w1...``. Jobs of a workload
    without a file keep NaN requests. Derived: ``gpus = gpus_per_node x nodes``.
    """
    if isinstance(workloads, (str, Path)):
        workloads = {"w0": workloads}
    elif isinstance(workloads, (list, tuple)):
        workloads = {f"w{i}": p for i, p in enumerate(workloads)}
    frames = []
    for name, path in workloads.items():
        req = workload_requests(path)
        req.insert(0, "workload_name", name)
        frames.append(req)
    if not frames:
        return jobs
    req = pd.concat(frames, ignore_index=True).drop(columns=["res", "walltime"])
    req_cols = [c for c in req.columns if c not in ("workload_name", "job_id")]
    out = jobs.drop(columns=[c for c in req_cols if c in jobs.columns]).merge(
        req, how="left", on=["workload_name", "job_id"], validate="many_to_one")
    if "gpus_per_node" in out.columns:
        nodes = out["requested_number_of_resources"]
        out["gpus"] = out["gpus_per_node"] * nodes
    return out


def job_table(jobs_csv: str | Path, workload=None) -> pd.DataFrame:
    """Per-user-job table of one run: folded sub-jobs, derived times and (with ``workload``:
    a path, a list of paths, or ``{workload_name: path}``) the requests of each job.

    Columns: the Batsim columns, plus ``rejected``, ``killed``, ``n_phases``,
    ``nb_allocated`` and the request columns (``burst_buffer``, ``gpus_per_node``, ...).
    Times of rejected jobs are NaN.
    """
    table = fold_subjobs(read_jobs_csv(jobs_csv))
    if workload is not None:
        table = attach_requests(table, workload)
    return table
