"""A stand-in for the embedded simulator while ``mrsched.simulator.engine`` is being written.

Delay profiles only, no platform model: enough to drive a real scheduler through real Batsim
v4 messages and write Batsim-shaped outputs, so the runner, engines and campaigns can be
tested end to end. In-process: ``simulate(platform, workloads, scheduler, export_prefix=)``.
As a Batsim binary: ``python fake_engine.py -p P -w W -e PREFIX -s tcp://127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
import sys
import xml.etree.ElementTree as ET


def _compute_hosts(platform: str) -> list[str]:
    names = []
    for host in ET.parse(platform).getroot().iter("host"):
        props = {p.get("id"): p.get("value") for p in host.iter("prop")}
        if props.get("role", "compute") in ("", "compute"):
            names.append(host.get("id"))
    return sorted(names)


def run_loop(platform: str, workloads: list[str], send, export_prefix: str) -> None:
    hosts = _compute_hosts(platform)
    data = json.load(open(workloads[0]))
    profiles = data["profiles"]
    jobs = {f"w0!{j['id']}": dict(j, id=f"w0!{j['id']}") for j in data["jobs"]}
    events: list = []  # (time, seq, kind, payload)
    seq = 0
    for jid, job in jobs.items():
        heapq.heappush(events, (float(job["subtime"]), seq, "submit", jid))
        seq += 1
    begins = {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": len(hosts), "nb_compute_resources": len(hosts), "nb_storage_resources": 0,
        "allow_compute_sharing": False, "allow_storage_sharing": True,
        "config": {"dynamic-jobs-enabled": False, "profiles-forwarded-on-submission": False,
                   "sched-config": ""},
        "compute_resources": [{"id": i, "name": n, "state": "idle", "properties": {"role": "compute"},
                               "zone_properties": {}} for i, n in enumerate(hosts)],
        "storage_resources": [], "workloads": {"w0": workloads[0]}, "profiles": {"w0": profiles}}}
    pending = [begins]
    now = 0.0
    rows = {}
    open_jobs = set(jobs)
    while True:
        while events and events[0][0] <= now:
            t, _, kind, payload = heapq.heappop(events)
            if kind == "submit":
                job = {k: v for k, v in jobs[payload].items()}
                pending.append({"timestamp": now, "type": "JOB_SUBMITTED",
                                "data": {"job_id": payload, "job": job}})
            elif kind == "finish":
                jid, alloc = payload
                open_jobs.discard(jid)
                pending.append({"timestamp": now, "type": "JOB_COMPLETED", "data": {
                    "job_id": jid, "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0,
                    "alloc": alloc}})
            elif kind == "call":
                pending.append({"timestamp": now, "type": "REQUESTED_CALL", "data": {}})
        if not open_jobs and not any(e[2] != "call" for e in events):
            pending.append({"timestamp": now, "type": "SIMULATION_ENDS", "data": {}})
            send({"now": now, "events": pending})
            break
        reply = send({"now": now, "events": pending})
        pending = []
        for ev in reply.get("events", []):
            d = ev.get("data", {})
            if ev["type"] == "EXECUTE_JOB":
                job = jobs[d["job_id"]]
                prof = profiles[job["profile"]]
                run = float(prof.get("delay", job.get("walltime", 1)))
                heapq.heappush(events, (now + run, seq, "finish", (d["job_id"], d["alloc"])))
                seq += 1
                rows[d["job_id"]] = (now, run, d["alloc"], "COMPLETED_SUCCESSFULLY")
            elif ev["type"] == "REJECT_JOB":
                open_jobs.discard(d["job_id"])
                rows[d["job_id"]] = (None, None, "", "REJECTED")
            elif ev["type"] == "CALL_ME_LATER":
                heapq.heappush(events, (float(d["timestamp"]), seq, "call", None))
                seq += 1
        if not events:
            if open_jobs:
                raise RuntimeError(f"deadlock: {len(open_jobs)} jobs never started")
            continue
        now = max(now, events[0][0])
    with open(f"{export_prefix}_jobs.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "workload_name", "profile", "submission_time",
                    "requested_number_of_resources", "requested_time", "success", "final_state",
                    "starting_time", "execution_time", "finish_time", "waiting_time",
                    "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata"])
        for jid, job in jobs.items():
            start, run, alloc, state = rows.get(jid, (None, None, "", "REJECTED"))
            sub = float(job["subtime"])
            if start is None:
                w.writerow([job["id"].split("!")[1], "w0", job["profile"], f"{sub:.6f}", job["res"],
                            f"{float(job['walltime']):.6f}", 0, state, "", "", "", "", "", "", "", -1, ""])
            else:
                w.writerow([job["id"].split("!")[1], "w0", job["profile"], f"{sub:.6f}", job["res"],
                            f"{float(job['walltime']):.6f}", 1, state, f"{start:.6f}", f"{run:.6f}",
                            f"{start + run:.6f}", f"{start - sub:.6f}", f"{start + run - sub:.6f}",
                            f"{(start + run - sub) / run:.6f}", alloc, -1, ""])
    with open(f"{export_prefix}_schedule.csv", "w") as fh:
        fh.write(f"batsim_version,makespan,nb_jobs\nfake,{now:.6f},{len(jobs)}\n")
    with open(f"{export_prefix}_machine_states.csv", "w") as fh:
        fh.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n")


def simulate(platform, workloads, scheduler, *, export_prefix, **_ignored):
    run_loop(str(platform), [str(w) for w in workloads], scheduler.handle_message, export_prefix)


def main(argv=None) -> int:
    import zmq

    p = argparse.ArgumentParser()
    p.add_argument("-p", required=True)
    p.add_argument("-w", action="append", required=True)
    p.add_argument("-e", required=True)
    p.add_argument("-s", required=True)
    args = p.parse_args(argv)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(args.s)

    def send(msg):
        sock.send_string(json.dumps(msg))
        if msg["events"] and msg["events"][-1]["type"] == "SIMULATION_ENDS":
            sock.recv_string()
            return {}
        return json.loads(sock.recv_string())

    run_loop(args.p, args.w, send, args.e)
    sock.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
