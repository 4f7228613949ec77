"""Policy tests on the embedded engine, in process: a machine, jobs, a scheduler -> what ran.

``simulate(scheduler, machine, jobs)`` writes the machine as a SimGrid platform and the jobs as
a Batsim workload (one delay profile per job, its ``runtime``), then runs
:func:`mrsched.simulator.engine.simulate` with the scheduler's ``handle_message``: every
decision goes through the engine's own checks (no compute sharing, alloc sizes, known jobs,
calls in the past...), which raise ``SimulationError`` and fail the test; and every job must
have run as Batsim runs it (its runtime, or killed at its walltime).

The platform's network has no latency and a 1e300 B/s bandwidth, so Batsim's message offsets
vanish and a job runs from exactly the time it is started: the tests can assert exact times.

``machine`` is in SIMULATION_BEGINS' shape (``begins_data``, also used by the unit tests that
feed ``handle_message`` directly); the run checks that the engine announces those very
resources, so the platform written here is the machine the test describes.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

from mrsched.simulator.engine import simulate as engine_simulate


def begins_data(nb_nodes: int, *, storage: list[dict] | None = None, gpus: list[int] | None = None,
                node_props: list[dict] | None = None, sched_config: str = "") -> dict:
    """SIMULATION_BEGINS data for a flat machine (ids 0..n-1, storage ids after).

    Compute names sort as their ids (Batsim numbers resources in name order): ``node_00``...
    """
    width = len(str(max(nb_nodes - 1, 0)))
    compute = []
    for k in range(nb_nodes):
        props = {"role": ""}
        if gpus is not None:
            props["gpus"] = str(gpus[k])
        if node_props is not None:
            props.update(node_props[k])
        compute.append({"id": k, "name": f"node_{k:0{width}d}", "state": "idle",
                        "properties": props, "zone_properties": {}})
    stor = []
    for s, props in enumerate(storage or []):
        stor.append({"id": nb_nodes + s, "name": props.get("name", f"bb_{s}"), "state": "idle",
                     "properties": {"role": "storage",
                                    **{k: str(v) for k, v in props.items() if k != "name"}},
                     "zone_properties": {}})
    return {"nb_resources": nb_nodes + len(stor), "nb_compute_resources": nb_nodes,
            "nb_storage_resources": len(stor), "allow_compute_sharing": False, "allow_storage_sharing": True,
            "config": {"sched-config": sched_config, "profiles-forwarded-on-submission": False,
                       "dynamic-jobs-enabled": False},
            "compute_resources": compute, "storage_resources": stor, "workloads": {"w0": "w.json"},
            "profiles": {"w0": {}}}


def platform_xml(machine: dict) -> str:
    """The machine as a SimGrid platform: one Full zone, every host wired to the master by a
    zero-latency link."""
    hosts = machine["compute_resources"] + machine["storage_resources"]
    lines = ['<?xml version="1.0"?>',
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">',
             '  <config><prop id="network/loopback-lat" value="0"/>'
             '<prop id="network/loopback-bw" value="1e300Bps"/></config>',
             '  <zone id="machine" routing="Full">',
             '    <host id="master" speed="1Gf"><prop id="role" value="master"/></host>']
    for h in hosts:
        props = "".join(f'<prop id={quoteattr(k)} value={quoteattr(v)}/>'
                        for k, v in h["properties"].items() if v != "")
        lines.append(f'    <host id={quoteattr(h["name"])} speed="1Gf">{props}</host>')
    lines.append('    <link id="wire" bandwidth="1e300Bps" latency="0s" sharing_policy="FATPIPE"/>')
    for h in hosts:
        lines.append(f'    <route src={quoteattr(h["name"])} dst="master"><link_ctn id="wire"/></route>')
    lines += ['  </zone>', '</platform>', '']
    return "\n".join(lines)


def workload_json(jobs: list[dict], nb_res: int) -> dict:
    """The jobs as a Batsim workload: each runs a delay profile of its ``runtime``; every other
    field (walltime, requests...) goes to the scheduler as written."""
    profiles, entries = {}, []
    for j in jobs:
        name = f"run{float(j['runtime'])!r}"
        profiles[name] = {"type": "delay", "delay": float(j["runtime"])}
        entry = {k: v for k, v in j.items() if k != "runtime"}
        entry["profile"] = name
        entry.setdefault("walltime", -1)
        entries.append(entry)
    return {"nb_res": nb_res, "jobs": entries, "profiles": profiles}


def simulate(scheduler, machine: dict, jobs: list[dict]) -> dict:
    """Run ``jobs`` under ``scheduler`` on ``machine`` (see the module docstring).

    Each job dict: id, subtime, res, walltime, runtime, plus request fields. Returns
    ``{"start": {id: t}, "finish": {id: t}, "alloc": {id: [ids]}, "rejected": set,
    "replies": [...]}`` (ids as Batsim writes them, ``w0!<id>``; times to Batsim's 6 decimals).
    """
    from mrsched.schedulers.batsim.intervals import parse_ids

    with tempfile.TemporaryDirectory(prefix="mrsched-engine-run-") as tmp:
        platform = Path(tmp) / "platform.xml"
        platform.write_text(platform_xml(machine))
        workload = Path(tmp) / "workload.json"
        workload.write_text(json.dumps(workload_json(jobs, machine["nb_compute_resources"])))
        result = engine_simulate(platform, [workload], scheduler, export_prefix=None,
                                 sched_cfg=machine["config"].get("sched-config", ""),
                                 record_transcript=True)
    begins = result.transcript[0]["msg"]["events"][0]["data"]
    for key in ("compute_resources", "storage_resources"):
        assert [(r["id"], r["name"], r["properties"]) for r in begins[key]] == \
            [(r["id"], r["name"], r["properties"]) for r in machine[key]], \
            "the engine does not announce the machine the test describes"
    out = {"start": {}, "finish": {}, "alloc": {}, "rejected": set(),
           "replies": [m["msg"] for m in result.transcript if m["from"] == "scheduler"]}
    by_id = {f"w0!{j['id']}": j for j in jobs}
    for rec in result.jobs:
        job_id = f"{rec.workload}!{rec.local_id}"
        if rec.final_state == "REJECTED":
            out["rejected"].add(job_id)
            continue
        out["start"][job_id] = round(rec.starting_time, 6)
        out["finish"][job_id] = round(rec.finish_time, 6)
        out["alloc"][job_id] = parse_ids(rec.alloc, job=job_id)
        check_execution(by_id[job_id], rec)
    return out


def check_execution(job: dict, rec) -> None:
    """The engine ran the job as Batsim does: its runtime, or killed at a walltime that is not
    longer (a delay equal to the walltime is killed: see the reference run ``walltime``)."""
    runtime, walltime = float(job["runtime"]), float(job.get("walltime", -1))
    killed = 0 < walltime <= runtime
    assert rec.final_state == ("COMPLETED_WALLTIME_REACHED" if killed else "COMPLETED_SUCCESSFULLY"), \
        f"{rec.local_id}: {rec.final_state}"
    ran = rec.finish_time - rec.starting_time
    assert abs(ran - (walltime if killed else runtime)) < 1e-6, f"{rec.local_id} ran {ran} s"
