"""Fixtures and small schedulers shared by the engine tests (import them; no ../shared needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

# 4 compute hosts (a0..a3, 1 Gflop/s), a master host; zero latencies so that Batsim's
# internal message delays vanish and expected times are exact.
PLATFORM_XML = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
    <cluster id="c1" prefix="a" suffix="" radical="0-3" speed="1Gf" bw="125MBps" lat="0us"
             bb_bw="2.25GBps" bb_lat="0us"/>
    <cluster id="c2" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="125MBps"
             lat="0us" bb_bw="2.25GBps" bb_lat="0us">
        <prop id="role" value="master"/>
    </cluster>
    <link id="backbone" bandwidth="1.25GBps" latency="0us"/>
    <zoneRoute src="c1" dst="c2" gw_src="ac1_router" gw_dst="master_hostc2_router">
        <link_ctn id="backbone"/>
    </zoneRoute>
</zone>
</platform>
"""


@pytest.fixture
def platform_file(tmp_path: Path) -> Path:
    path = tmp_path / "platform.xml"
    path.write_text(PLATFORM_XML)
    return path


@pytest.fixture
def make_workload(tmp_path: Path) -> Callable[..., Path]:
    counter = {"n": 0}

    def make(jobs: list[dict], profiles: dict | None = None, nb_res: int = 4) -> Path:
        counter["n"] += 1
        path = tmp_path / f"workload{counter['n']}.json"
        if profiles is None:
            profiles = {"d10": {"type": "delay", "delay": 10}}
        path.write_text(json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": profiles}))
        return path

    return make


class Scripted:
    """An in-process scheduler: ``react(msg, sched) -> list of (type, data)`` stamped at now;
    records every message it receives."""

    def __init__(self, react: Callable | None = None):
        self.react = react
        self.messages: list[dict] = []

    def events(self, etype: str) -> list[dict]:
        return [e for m in self.messages for e in m["events"] if e["type"] == etype]

    def handle_message(self, msg: dict) -> dict:
        self.messages.append(msg)
        now = msg["now"]
        out = []
        if self.react is not None:
            for item in self.react(msg, self) or ():
                etype, data = item[0], item[1]
                ts = item[2] if len(item) > 2 else now
                out.append({"timestamp": ts, "type": etype, "data": data})
        reply_now = max([now] + [e["timestamp"] for e in out])
        return {"now": reply_now, "events": out}


class FCFS:
    """Trivial first-come first-served on the lowest free ids (delay workloads)."""

    def __init__(self, nb: int | None = None):
        self.nb = nb
        self.free: list[int] = []
        self.queue: list[tuple[str, int]] = []
        self.messages = 0

    def handle_message(self, msg: dict) -> dict:
        self.messages += 1
        for e in msg["events"]:
            t, d = e["type"], e["data"]
            if t == "SIMULATION_BEGINS":
                self.free = list(range(d["nb_compute_resources"]))
            elif t == "JOB_SUBMITTED":
                self.queue.append((d["job_id"], d["job"]["res"]))
            elif t == "JOB_COMPLETED":
                for tok in d["alloc"].split():
                    lo, _, hi = tok.partition("-")
                    self.free.extend(range(int(lo), int(hi or lo) + 1))
                self.free.sort()
        out = []
        while self.queue and self.queue[0][1] <= len(self.free):
            jid, res = self.queue.pop(0)
            ids, self.free = self.free[:res], self.free[res:]
            alloc = f"{ids[0]}-{ids[-1]}" if ids == list(range(ids[0], ids[-1] + 1)) else \
                " ".join(map(str, ids))
            out.append({"timestamp": msg["now"], "type": "EXECUTE_JOB",
                        "data": {"job_id": jid, "alloc": alloc}})
        return {"now": msg["now"], "events": out}


@pytest.fixture
def scripted():
    return Scripted


@pytest.fixture
def fcfs():
    return FCFS
