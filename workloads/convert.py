"""SWF trace -> Batsim workload, with seed 001's request models and splitting.

Mapping (seed 001 Sect. 4.1): submit times shifted so the first selected job arrives at 0
(the artifact starts at 1, a pybatsim work-around), ``walltime`` = requested time, ``res`` =
requested processors in the platform's unit (:mod:`mrsched.workloads.resource_unit`: whole
nodes = processors / cores per node rounded up, or cores on a per-core platform; KTH-SP2 has
one processor per node, so there ``res`` = processors), the SWF run time kept as job field
``run_time``. Profile models:

- ``delay``: ``delay`` = run time (no platform effect);
- ``compute``: ``parallel_homogeneous`` with ``cpu`` = run time x host speed, ``com`` 0;
- ``burst-buffer``: ``compute`` plus job fields ``bb_per_node`` (bytes per processor, see
  :mod:`mrsched.workloads.burst_buffer`) and ``burst_buffer`` = ``bb_per_node * res`` (whole
  job). Variant ``alloc-only`` (default) keeps the full run time: the burst buffer is only
  held, which is what every policy's default ``job_model=alloc-only`` runs. Variant
  ``io-phased`` (seed 001, run with ``job_model=io-phased``, whose phases do the I/O) shortens
  compute to leave time for I/O as the artifact does: ``cpu = speed * max(run - 40 *
  bb_per_node / link_bandwidth, 0.05 * run)`` for jobs with walltime > 120 s
  (``link_bandwidth`` = 1250 MB/s, the node link; the factor 40 and the 5 % floor are the
  artifact's ``multiply_factor_runtime`` and minimum).

Differences from the artifact's 1000-job file (``KTH-SP2-1996-2.1-cln-io-aware-1000.json``):
its ``bb`` is a profile field (bytes per node), ours are job fields (DESIGN.md "Job requests");
its ``com`` is a Gaussian number of bytes per pair for multi-node jobs, not in the paper, ours
0; its sizes come from Python's global RNG (not reproducible), ours from ``seed``; it
decrements sizes by 1 byte to make (walltime, size) pairs unique (a bookkeeping trick of its
scheduler), we do not; its subtimes start at 1, ours at 0.

Splitting: ``part=(i, n)`` keeps the jobs submitted in the i-th (1-based) of n equal,
non-overlapping time windows over the cleaned trace (seed 001: 16 parts of ~3 weeks over
KTH-SP2's 333 days), or windows of ``part_length`` seconds if given; ``jobs=N`` then keeps the
first N. Burst-buffer sizes are drawn for the whole cleaned trace before selection, so a job
gets the same size in a part as in the whole trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from mrsched.errors import WorkloadError
from mrsched.workloads.burst_buffer import LogNormalBurstBuffer
from mrsched.workloads.platform_info import PlatformInfo
from mrsched.workloads.resource_unit import ResourceUnit, choose_unit
from mrsched.workloads.swf import CleaningReport, SwfTrace, clean_swf, read_swf

MODELS = ("delay", "compute", "burst-buffer")
VARIANTS = ("io-phased", "alloc-only")


@dataclass
class JobColumns:
    """The selected jobs as columns (one array per field) and the profile model to apply.

    A million jobs are ~50 MB of columns but ~1 GB of dicts, so the dicts are made one job
    at a time by :meth:`rows` (writing, checking) and all at once only on demand.
    """

    ids: np.ndarray
    subtime: np.ndarray
    walltime: np.ndarray
    res: np.ndarray
    run: np.ndarray
    bb_per_node: np.ndarray | None
    model_args: dict[str, Any]

    def rows(self) -> Iterator[tuple[dict, str, dict]]:
        return iter_jobs(self.ids, self.subtime, self.walltime, self.res, self.run, bb_per_node=self.bb_per_node,
                         **self.model_args)

    def workload(self, head: dict[str, Any]) -> dict[str, Any]:
        """The whole workload dict: ``head``'s members, then ``jobs`` and ``profiles``."""
        jobs, profiles = [], {}
        for job, name, profile in self.rows():
            jobs.append(job)
            profiles[name] = profile
        return {**head, "jobs": jobs, "profiles": profiles}

    def write(self, path: str | Path, head: dict[str, Any], *, platform: PlatformInfo | None = None,
              check_every: int = 10_000) -> Path:
        """Write ``workload(head)`` job by job (the same bytes as ``write_workload``), never
        building it.

        Every ``check_every`` jobs are checked together with their profiles by
        :func:`~mrsched.workloads.check.check_workload` (duplicate ids are refused when the
        columns are made, the one check that needs all jobs); a problem is a generator bug,
        never written.
        """
        from mrsched.workloads.batsim_json import write_workload_items
        from mrsched.workloads.check import check_workload

        def checked(chunk):
            part = {"nb_res": head["nb_res"], "jobs": [r[0] for r in chunk],
                    "profiles": {r[1]: r[2] for r in chunk}}
            problems = check_workload(part, file=path, platform=platform)
            if problems:
                raise WorkloadError(f"generated workload fails its check: {problems[0]}")
            return chunk

        def checked_rows():
            chunk: list[tuple[dict, str, dict]] = []
            for row in self.rows():
                chunk.append(row)
                if len(chunk) >= check_every:
                    yield from checked(chunk)
                    chunk = []
            yield from checked(chunk)

        def items():
            yield from head.items()
            yield "jobs", (job for job, _, _ in checked_rows())
            yield "profiles", ((name, prof) for _, name, prof in self.rows())

        return write_workload_items(path, items())


class Conversion:
    """The converted workload plus what cleaning and selection did.

    ``workload`` is the full dict (built on first use); :meth:`write` streams the same bytes
    to a file without building it, checking every job on the way.
    """

    def __init__(self, head: dict[str, Any], columns: JobColumns, report: CleaningReport,
                 notes: list[str] | None = None, unit: ResourceUnit | None = None):
        self.head = head
        self.columns = columns
        self.report = report
        self.notes = notes or []
        self.unit = unit
        self._workload: dict[str, Any] | None = None

    @property
    def workload(self) -> dict[str, Any]:
        if self._workload is None:
            self._workload = self.columns.workload(self.head)
        return self._workload

    def summary_lines(self) -> list[str]:
        return ([self.unit.describe()] if self.unit else []) + self.report.lines() + self.notes

    def write(self, path: str | Path, *, platform: PlatformInfo | None = None, check_every: int = 10_000) -> Path:
        """Write the workload file job by job (``JobColumns.write``)."""
        return self.columns.write(path, self.head, platform=platform, check_every=check_every)


def parse_part(text: str) -> tuple[int, int]:
    """``"3/16"`` -> (3, 16); 1-based part index."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise WorkloadError(f"cannot read part '{text}'", field="part", hint="I/N, e.g. 3/16 (1-based)") from None
    if n < 1 or not 1 <= i <= n:
        raise WorkloadError(f"part {i}/{n} does not exist", field="part", hint=f"I from 1 to {max(n, 1)}")
    return i, n


def part_mask(submit: np.ndarray, part: tuple[int, int], part_length: float | None = None) -> np.ndarray:
    """Jobs submitted in window i of n (equal split of [first, last] submit, or fixed length)."""
    i, n = part
    if len(submit) == 0:
        return np.zeros(0, dtype=bool)
    t0, t1 = float(submit.min()), float(submit.max())
    length = float(part_length) if part_length else (t1 - t0) / n
    if length <= 0:
        return np.full(len(submit), i == 1)
    lo, hi = t0 + (i - 1) * length, t0 + i * length
    if i == n and not part_length:
        return submit >= lo
    return (submit >= lo) & (submit < hi)


def iter_jobs(ids, subtime, walltime, res, run, *, model: str, variant: str = "alloc-only", speed: float = 1e9,
              bb_per_node=None, link_bandwidth: float = 1.25e9, io_factor: float = 40.0,
              min_compute_fraction: float = 0.05) -> Iterator[tuple[dict, str, dict]]:
    """``(job, profile name, profile)`` for each job under a profile model (profile named by the job id)."""
    for k in range(len(ids)):
        pname = str(ids[k])
        job = {"id": int(ids[k]), "subtime": float(subtime[k]), "walltime": float(walltime[k]),
               "res": int(res[k]), "profile": pname, "run_time": float(run[k])}
        if model == "delay":
            profile = {"type": "delay", "delay": float(run[k])}
        else:
            seconds = float(run[k])
            if bb_per_node is not None:
                per_node = int(bb_per_node[k])
                job["burst_buffer"] = per_node * int(res[k])
                job["bb_per_node"] = per_node
                if variant == "io-phased" and walltime[k] > LogNormalBurstBuffer.short_walltime:
                    seconds = max(seconds - io_factor * per_node / link_bandwidth, min_compute_fraction * seconds)
            profile = {"type": "parallel_homogeneous", "cpu": round(seconds * speed), "com": 0}
        yield job, pname, profile


def convert_swf(trace: SwfTrace | str | Path, *, platform: PlatformInfo | None = None, nodes: int | None = None,
                speed: float = 1e9, model: str = "delay", variant: str = "alloc-only", seed: int = 0,
                jobs: int | None = None, part: tuple[int, int] | str | None = None,
                part_length: float | None = None, oversize: str = "drop", exclude_status: tuple[int, ...] = (),
                link_bandwidth: float = 1.25e9, io_factor: float = 40.0, min_compute_fraction: float = 0.05,
                bb_model: LogNormalBurstBuffer | None = None, name: str | None = None,
                cores_per_node: int | None = None) -> Conversion:
    """Convert an SWF trace to a Batsim workload dict (see the module docstring for the rules)."""
    if model not in MODELS:
        raise WorkloadError(f"unknown profile model '{model}'", field="model", hint=f"valid: {', '.join(MODELS)}")
    if variant not in VARIANTS:
        raise WorkloadError(f"unknown variant '{variant}'", field="variant", hint=f"valid: {', '.join(VARIANTS)}")
    if not isinstance(trace, SwfTrace):
        trace = read_swf(trace)
    if platform is not None:
        speed = platform.speed
    unit = choose_unit(trace, platform=platform, nodes=nodes, cores_per_node=cores_per_node)
    nodes = unit.resources
    if jobs is not None and jobs < 1:
        raise WorkloadError(f"--jobs must be >= 1, got {jobs}", field="jobs")
    kept, report = clean_swf(trace, max_nodes=nodes, oversize=oversize, exclude_status=exclude_status,
                             cores_per_node=unit.divisor)
    kept = kept[np.argsort(trace.column("submit_time")[kept], kind="stable")]
    job_id = trace.column("job_number")[kept].astype(np.int64)  # the five columns used, not all 18
    submit = trace.column("submit_time")[kept]
    run = trace.column("run_time")[kept]
    res = np.minimum(unit.size(trace.column("requested_processors")[kept]), nodes)
    walltime = trace.column("requested_time")[kept]

    bb_per_node = None
    if model == "burst-buffer":
        if platform is None or not platform.bb_capacities:
            raise WorkloadError("the burst-buffer model needs a platform with storage nodes (bb_capacity)",
                                field="platform", hint="e.g. --platform platforms/dragonfly96.xml")
        bb_model = bb_model or LogNormalBurstBuffer()
        rng = np.random.default_rng(seed)
        bb_per_node = bb_model.per_processor(res, walltime, rng, capacity=platform.bb_per_storage_node,
                                             storage_nodes=len(platform.bb_capacities))

    select = np.ones(len(kept), dtype=bool)
    notes = []
    if part is not None:
        part = parse_part(part if isinstance(part, str) else f"{part[0]}/{part[1]}")
        select &= part_mask(submit, part, part_length)
        notes.append(f"part {part[0]}/{part[1]}: {int(select.sum())} jobs")
    index = np.flatnonzero(select)
    if jobs is not None:
        index = index[:jobs]
    notes.append(f"{len(index)} jobs written")
    if len(index) == 0:
        raise WorkloadError("no job left after cleaning and selection", file=trace.path)
    t0 = submit[index[0]]

    columns = JobColumns(job_id[index], submit[index] - t0, walltime[index], res[index], run[index],
                         None if bb_per_node is None else bb_per_node[index],
                         {"model": model, "variant": variant, "speed": speed, "link_bandwidth": link_bandwidth,
                          "io_factor": io_factor, "min_compute_fraction": min_compute_fraction})
    if len(np.unique(columns.ids)) != len(index):
        raise WorkloadError("duplicate job numbers in the trace", file=trace.path, field="job_number")

    label = name or Path(trace.path).name.removesuffix(".gz").removesuffix(".swf")
    head = {
        "name": label,
        "description": f"{len(index)} jobs of {Path(trace.path).name}, model {model}"
                       + (f" ({variant})" if model == "burst-buffer" else "")
                       + (f", part {part[0]}/{part[1]}" if part else "")
                       + ("" if unit.trivial else f", sizes in {unit.unit}s"
                          + (f" of {unit.cores_per_node} cores" if unit.unit == "node" else "")),
        "nb_res": int(nodes),
        "generator": {"command": "swf", "model": model, "variant": variant if model == "burst-buffer" else None,
                      "seed": seed if model == "burst-buffer" else None, "part": list(part) if part else None,
                      "jobs": jobs, "oversize": oversize, "cleaning": report.lines(),
                      # one processor per node (KTH-SP2): nothing to record, same bytes as before units
                      **({} if unit.trivial else {"unit": unit.unit, "cores_per_node": unit.cores_per_node})},
    }
    return Conversion(head, columns, report, notes, unit)
