"""The idle-node service (``idle_sleep``, execution/runtime.py ``IdleNodes``): idle nodes are
switched to their sleep pstate and woken for waiting jobs, with any placing policy; on a light
workload it saves energy, measured by the engine's energy model (-E)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from mrsched.analysis import load_run
from mrsched.analysis.power import run_energy_metrics
from mrsched.cli import main
from mrsched.errors import ConfigError
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Start, SwitchPower
from mrsched.schedulers.registry import make_scheduler

CASE = Path(__file__).parents[1] / "simulator" / "cases" / "sleeper"
PLATFORM = CASE / "platform.xml"     # 7 hosts: 30 W idle, 100 W busy, 9.75 W asleep


def _light(tmp_path: Path) -> Path:
    """20 jobs of 1-3 of the 7 nodes, 20-120 s each, one every ~400 s on average."""
    rng = random.Random(1)
    jobs, t = [], 0.0
    for i in range(20):
        t += rng.expovariate(1 / 400.0)
        run = rng.choice((20, 60, 120))
        jobs.append({"id": i, "subtime": round(t, 1), "res": rng.randint(1, 3),
                     "walltime": run + 30, "profile": f"d{run}"})
    path = tmp_path / "light.json"
    path.write_text(json.dumps({"nb_res": 7, "jobs": jobs, "profiles": {
        f"d{r}": {"type": "delay", "delay": r} for r in (20, 60, 120)}}))
    return path


def _run(tmp_path, policy, workload, name, *options):
    out = tmp_path / name
    args = ["run", "-p", str(PLATFORM), "-w", str(workload), "--policy", policy, "--energy",
            "-o", str(out)]
    for o in options:
        args += ["-O", o]
    assert main(args) == 0
    return load_run(out)


@pytest.mark.parametrize("policy", ["fcfs", "fcfs-easy", "conservative-bb", "bbsched"])
def test_sleeping_idle_nodes_saves_energy_on_a_light_workload(tmp_path, policy):
    wl = _light(tmp_path)
    awake = _run(tmp_path, policy, wl, "awake")
    asleep = _run(tmp_path, policy, wl, "asleep", "idle_sleep=60")
    e_awake = run_energy_metrics(awake)["energy_j"]
    e_asleep = run_energy_metrics(asleep)["energy_j"]
    # measured (-E); fcfs: 1,326,171 J awake, 840,794 J with idle_sleep=60 (-37%)
    assert run_energy_metrics(asleep)["energy_measured"] == 1.0
    assert e_asleep < 0.75 * e_awake
    states = list(csv.DictReader(open(Path(asleep.path) / "out_jobs.csv")))
    assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in states) and len(states) == 20
    changes = list(csv.DictReader(open(Path(asleep.path) / "out_pstate_changes.csv")))
    assert {r["new_pstate"] for r in changes} >= {"1", "0"}       # slept and woke
    # the saving the report shows: delay jobs draw Idle (SimGrid sees no load), so the
    # machine awake would have drawn 7 x 30 W over the whole window
    m = run_energy_metrics(asleep)
    span = m["energy_j"] / m["mean_power_w"]
    assert m["sleep_saved_j"] == pytest.approx(7 * 30.0 * span - m["energy_j"], rel=1e-9)
    assert run_energy_metrics(awake)["sleep_saved_j"] == 0.0
    # the price: a job that finds its nodes asleep waits for the switch-on (20 s here)
    wait = lambda run: float(run.jobs["waiting_time"].mean())
    assert wait(asleep) > wait(awake)


def _cluster(sleep: bool) -> Cluster:
    cl = Cluster.simple(4)
    if sleep:
        cl.properties = {rid: {"wattage_per_state": "30:100, 9.75:9.75, 200:200, 425:425",
                               "sleep_pstates": "1:2:3"} for rid in cl.compute_ids}
    return cl


def test_the_service_sleeps_idle_nodes_and_wakes_what_the_queue_needs():
    sched = make_scheduler("fcfs", {"idle_sleep": "10"})
    rt = sched.runtime
    rt.begin(_cluster(True), 0.0)
    out = rt.step(0.0)
    assert [type(d) for d in out] == [type(d) for d in out if type(d).__name__ == "WakeUp"]
    out = rt.step(10.0)
    assert SwitchPower((0, 1, 2, 3), 1) in out
    rt.sleeper.changed(12.0, rt.cluster, [0, 1, 2, 3], 1)
    assert rt.sleeper.asleep == 0b1111
    rt.submit(20.0, "w!1", {"id": 1, "subtime": 20, "res": 2, "walltime": 50})
    out = rt.step(20.0)
    assert not [d for d in out if type(d) is Start]          # nothing awake
    assert SwitchPower((0, 1), 0) in out                      # two nodes woken, not four
    out = rt.step(25.0)
    assert not [d for d in out if type(d) is SwitchPower or type(d) is Start]
    rt.sleeper.changed(40.0, rt.cluster, [0, 1], 0)
    out = rt.step(40.0)
    starts = [d for d in out if type(d) is Start]
    assert [s.nodes for s in starts] == [(0, 1)]


def test_refusals():
    with pytest.raises(ConfigError, match="no sleep_pstates"):
        make_scheduler("fcfs", {"idle_sleep": "10"}).runtime.begin(_cluster(False), 0.0)
    with pytest.raises(ConfigError, match="idle_sleep and power_cap together"):
        make_scheduler("fcfs", {"idle_sleep": "10", "power_cap": "500"})
    with pytest.raises(ConfigError, match="idle_sleep is not available"):
        make_scheduler("hierarchical", {"idle_sleep": "10"})
