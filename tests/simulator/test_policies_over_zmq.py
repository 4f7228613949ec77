"""Our own policies give the same schedule in-process and over ZeroMQ (issue 7).

The ZeroMQ side is the real endpoint (`mrsched.schedulers.batsim.endpoint.serve`) in a thread
and the engine's REQ connection, on a bundled burst-buffer platform with a generated
burst-buffer workload, so nodes, burst-buffer placement and storage mappings all cross the
wire. The whole `_jobs.csv` must be identical.
"""

from __future__ import annotations

import socket as pysocket
import threading

import pytest

from mrsched.platforms.bundled import bundled_path
from mrsched.schedulers.registry import make_scheduler
from mrsched.simulator.connection import ZmqScheduler
from mrsched.simulator.engine import simulate
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.platform_info import read_platform_info
from mrsched.workloads.synthetic import generate_synthetic

POLICIES = ["fcfs", "filler", "fcfs-easy", "fcfs-bb", "sjf-bb", "conservative-bb"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    platform = bundled_path("cluster16")
    wl = generate_synthetic(jobs=40, platform=read_platform_info(platform), seed=3,
                            mean_interarrival=60.0, model="burst-buffer")
    path = tmp_path_factory.mktemp("wl") / "workload.json"
    write_workload(path, wl)
    return platform, path


def _free_port() -> int:
    with pysocket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("policy", POLICIES)
def test_same_jobs_csv_in_process_and_over_zmq(inputs, policy, tmp_path):
    from mrsched.schedulers.batsim.endpoint import serve

    platform, workload = inputs
    simulate(platform, [workload], make_scheduler(policy, {}), export_prefix=tmp_path / "inproc")

    url = f"tcp://127.0.0.1:{_free_port()}"
    codes = []
    thread = threading.Thread(target=lambda: codes.append(serve(make_scheduler(policy, {}), url,
                                                                timeout=60)), daemon=True)
    thread.start()
    with ZmqScheduler(url, timeout=60) as conn:
        simulate(platform, [workload], conn, export_prefix=tmp_path / "zmq")
    thread.join(10)
    assert codes == [0]

    inproc = (tmp_path / "inproc_jobs.csv").read_text()
    over_zmq = (tmp_path / "zmq_jobs.csv").read_text()
    assert inproc.count("\n") == 41  # header + 40 jobs
    assert "COMPLETED_SUCCESSFULLY" in inproc
    assert over_zmq == inproc
