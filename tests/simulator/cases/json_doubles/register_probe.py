#!/usr/bin/env python3
"""A scripted scheduler (pyzmq only) for the `json_doubles` case, run against batsim
--enable-dynamic-jobs --acknowledge-dynamic-jobs on a 4-host cluster. Batsim writes every
double of its messages with six decimals ("%6f", src/protocol.hpp 39-56), and loads what a
scheduler registers from its own writing of it (src/protocol.cpp 1413, 1510): a registered
delay of 0.0000014 s runs 0.000001 s (its stretch shows it), a walltime of 2.3456789 s cuts at 2.345679 s.

Timeline: each static job runs when submitted (w0!0 on 0, w0!1 on 1; their profiles and fields
have more than six decimals). At the first message the probe registers profile dyn!d (delay
0.0000014), dyn!w (delay 9.87654321) and jobs dyn!a (d, walltime 2.3456789) and dyn!b (w,
walltime 2.3456789: cut), then runs them on 2 and 3 once acknowledged.
usage: register_probe.py ENDPOINT
"""
import json
import sys

import zmq

ctx = zmq.Context()
sock = ctx.socket(zmq.REP)
sock.bind(sys.argv[1])
hosts = {"w0!0": "0", "w0!1": "1", "dyn!a": "2", "dyn!b": "3"}
registered = False
done = False
while not done:
    msg = json.loads(sock.recv())
    now = msg["now"]
    out = []

    def add(etype, data):
        out.append({"timestamp": now, "type": etype, "data": data})

    for ev in msg["events"]:
        t, d = ev["type"], ev["data"]
        if t == "SIMULATION_BEGINS" and not registered:
            registered = True
            add("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "d",
                                     "profile": {"type": "delay", "delay": 0.0000014}})
            add("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "w",
                                     "profile": {"type": "delay", "delay": 9.87654321}})
            for name, prof in (("a", "d"), ("b", "w")):
                add("REGISTER_JOB", {"job_id": f"dyn!{name}", "job": {
                    "id": f"dyn!{name}", "subtime": 0.1234567, "res": 1, "profile": prof,
                    "walltime": 2.3456789, "ratio": 0.333333333333}})
            add("NOTIFY", {"type": "registration_finished"})
        elif t == "JOB_SUBMITTED":
            add("EXECUTE_JOB", {"job_id": d["job_id"], "alloc": hosts[d["job_id"]]})
        elif t == "SIMULATION_ENDS":
            done = True
    sock.send_string(json.dumps({"now": now, "events": out}))
sock.close(linger=1000)
ctx.term()
