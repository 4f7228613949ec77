#!/usr/bin/env python3
"""A scripted scheduler (pyzmq only) for the `energyprobe` case, run against batsim -E on the
8-host cut of Batsim's cluster_energy_128.xml. It exercises what the shared energy cases do
not: a pstate change under a running job (DVFS mid-run), a walltime reached, a request for a
machine still switching and one for a virtual pstate (both never acknowledged), two QUERYs at
one instant, switches acknowledged over a network with latency, and machines put to sleep
after the last job (SIMULATION_ENDS waits for them).

Timeline: at SIMULATION_BEGINS hosts 4-7 go to sleep (pstate 13). Once submitted (at 1.0)
w0!0 runs on 0-1 (wake-ups are asked for 2, 5, 12 and 20 s), w0!1 on 2, w0!2 on 3 (walltime
8 < its 10 s) with two QUERYs. At 2: host 4 (switching off) to 0, host 3 to pstate 14 (virtual).
At 5: hosts 0-1 to pstate 10 under w0!0, and a QUERY; at 12: back to 0. At 20: hosts 5-6 woken;
w0!3 (submitted at 30) runs on them once they are on. w0!4 runs on host 3 when w0!2 ended.
When w0!3 completes, hosts 0-3 go to sleep.
usage: energy_probe.py ENDPOINT
"""
import json
import sys

import zmq

ctx = zmq.Context()
sock = ctx.socket(zmq.REP)
sock.bind(sys.argv[1])
query = {"requests": {"consumed_energy": {}}}
calls = iter([2.0, 5.0, 12.0, 20.0])
awake56 = submitted3 = False
done = False
while not done:
    msg = json.loads(sock.recv())
    now = msg["now"]
    out = []

    def add(etype, data):
        out.append({"timestamp": now, "type": etype, "data": data})

    for ev in msg["events"]:
        t, d = ev["type"], ev["data"]
        if t == "SIMULATION_BEGINS":
            add("SET_RESOURCE_STATE", {"resources": "4-7", "state": "13"})
        elif t == "JOB_SUBMITTED":
            jid = d["job_id"]
            if jid == "w0!0":
                add("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0-1"})
                for when in calls:
                    add("CALL_ME_LATER", {"timestamp": when})
            elif jid == "w0!1":
                add("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "2"})
            elif jid == "w0!2":
                add("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "3"})
                add("QUERY", query)
                add("QUERY", query)
            elif jid == "w0!3":
                submitted3 = True
        elif t == "REQUESTED_CALL":
            if abs(now - 2.0) < 0.01:
                add("SET_RESOURCE_STATE", {"resources": "4", "state": "0"})
                add("SET_RESOURCE_STATE", {"resources": "3", "state": "14"})
            elif abs(now - 5.0) < 0.01:
                add("SET_RESOURCE_STATE", {"resources": "0-1", "state": "10"})
                add("QUERY", query)
            elif abs(now - 12.0) < 0.01:
                add("SET_RESOURCE_STATE", {"resources": "0-1", "state": "0"})
            elif abs(now - 20.0) < 0.01:
                add("SET_RESOURCE_STATE", {"resources": "5-6", "state": "0"})
        elif t == "RESOURCE_STATE_CHANGED":
            if d["resources"] == "5-6" and d["state"] == "0":
                awake56 = True
        elif t == "JOB_COMPLETED":
            if d["job_id"] == "w0!2":
                add("EXECUTE_JOB", {"job_id": "w0!4", "alloc": "3"})
            elif d["job_id"] == "w0!3":
                add("QUERY", query)
                add("SET_RESOURCE_STATE", {"resources": "0-3", "state": "13"})
        elif t == "SIMULATION_ENDS":
            done = True
    if awake56 and submitted3:
        add("EXECUTE_JOB", {"job_id": "w0!3", "alloc": "5-6"})
        awake56 = submitted3 = False
    sock.send(json.dumps({"now": now, "events": out}).encode())
