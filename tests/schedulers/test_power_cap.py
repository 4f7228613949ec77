"""Power as a managed resource (schedulers/execution/power.py): under ``power_cap`` the
machine's power over time (the analysis' wattage estimate of the real run) never passes the
cap, in any policy the cap is for; a job whose power alone passes it is rejected."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from mrsched.analysis import load_run
from mrsched.analysis.power import run_power
from mrsched.cli import main
from mrsched.errors import ConfigError
from mrsched.schedulers.execution.power import cap_steps, pstate0_wattage
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.registry import make_runtime

PLATFORM = Path(__file__).parents[1] / "simulator" / "cases" / "sleeper" / "platform.xml"   # 7 x 30:100 W
BASE, DELTA = 7 * 30.0, 70.0          # the idle machine; a busy node's watts over Idle

#: the policies the cap is for (docs/POLICIES.md "power_cap")
CAPPED = ("fcfs", "filler", "fcfs-easy", "fcfs-bb", "sjf-bb", "easy-bf", "conservative-bb",
          "plan-2", "bbsched", "naive", "weighted", "constrained-cpu", "bin-packing", "multisched")


def _workload(tmp_path: Path, n: int = 60, seed: int = 3, power_field: bool = False) -> Path:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(1 / 8.0)
        run = rng.choice((10, 20, 40, 80))
        job = {"id": i, "subtime": round(t, 1), "res": rng.randint(1, 4),
               "walltime": run + rng.choice((0, 10, 60)), "profile": f"d{run}"}
        if power_field:
            job["power"] = job["res"] * 100.0        # AllCores of its nodes: the platform's own
        jobs.append(job)
    profiles = {f"d{r}": {"type": "delay", "delay": r} for r in (10, 20, 40, 80)}
    path = tmp_path / "wl.json"
    path.write_text(json.dumps({"nb_res": 7, "jobs": jobs, "profiles": profiles}))
    return path


def _run(tmp_path: Path, policy: str, workload: Path, *options: str, name: str | None = None):
    out = tmp_path / (name or policy)
    args = ["run", "-p", str(PLATFORM), "-w", str(workload), "--policy", policy, "-o", str(out)]
    for o in options:
        args += ["-O", o]
    assert main(args) == 0
    return load_run(out)


def _peak_by_step(run, steps) -> list[float]:
    """The highest estimated power within each cap step."""
    series = run_power(run)
    ends = [s for s, _ in steps[1:]] + [np.inf]
    return [series.peak(t, end) for (t, _), end in zip(steps, ends)]


@pytest.mark.parametrize("policy", CAPPED)
def test_power_never_exceeds_the_cap(tmp_path, policy):
    """A cap of 4 busy nodes out of 7 (490 W), then 2 (350 W) from t=150, then 5 (560 W) from
    t=400: the wattage estimate of the run stays under each step's cap; the cap binds (an
    uncapped run passes it)."""
    wl = _workload(tmp_path)
    steps = "0:490,150:350,400:560"
    run = _run(tmp_path, policy, wl, f"power_cap_steps={steps}")
    parsed = cap_steps(0.0, steps)
    peaks = _peak_by_step(run, parsed)
    for (t, cap), peak in zip(parsed, peaks):
        assert peak <= cap + 1e-6, (policy, t, peak, cap)
    jobs = run.jobs
    ran = jobs[~jobs["rejected"]]
    # jobs of 3-4 nodes (+210 / +280 W) pass the final 560 W cap: none rejected
    assert len(ran) == len(jobs)
    free = _run(tmp_path, policy, wl, name=policy + "-free")
    assert max(_peak_by_step(free, parsed)[1:2]) > 350


def test_a_job_whose_power_alone_exceeds_the_cap_is_rejected(tmp_path):
    wl = json.loads(_workload(tmp_path, n=6).read_text())
    wl["jobs"][2]["res"] = 5                    # 210 + 5 x 70 = 560 W > 490 W
    path = tmp_path / "big.json"
    path.write_text(json.dumps(wl))
    run = _run(tmp_path, "fcfs-easy", path, "power_cap=490")
    rejected = run.jobs[run.jobs["rejected"]]
    assert list(rejected["requested_number_of_resources"]) == [5]
    metadata = (Path(run.path) / "out_jobs.csv").read_text()
    assert "exceeds the power cap of 490 W" in metadata
    assert run_power(run).peak(0, np.inf) <= 490 + 1e-6


def test_the_workload_field_power_is_the_jobs_power(tmp_path):
    """A 'power' field equal to the platform's AllCores gives the same schedule as none."""
    plain = _run(tmp_path, "conservative-bb", _workload(tmp_path), "power_cap=420", name="a")
    given = _run(tmp_path, "conservative-bb", _workload(tmp_path, power_field=True),
                 "power_cap=420", name="b")
    cols = ["job_id", "starting_time", "finish_time"]
    assert plain.jobs[cols].equals(given.jobs[cols])
    assert run_power(given).peak(0, np.inf) <= 420 + 1e-6


def test_without_a_cap_nothing_changes(tmp_path):
    """power_cap=0 (the default) is no cap: the same decisions as without the option."""
    wl = _workload(tmp_path)
    a = _run(tmp_path, "fcfs-easy", wl, name="a")
    b = _run(tmp_path, "fcfs-easy", wl, "power_cap=0", name="b")
    assert (Path(a.path) / "out_jobs.csv").read_text() == (Path(b.path) / "out_jobs.csv").read_text()


def test_cap_steps_and_wattage_parse():
    assert cap_steps(0.0, "") == ()
    assert cap_steps(500.0, "") == ((0.0, 500.0),)
    assert cap_steps(500.0, "100:300, 10:400") == ((0.0, 500.0), (10.0, 400.0), (100.0, 300.0))
    for bad in ("10", "a:b", "10:-1", "5:10,5:20"):
        with pytest.raises(ConfigError):
            cap_steps(0.0, bad)
    assert pstate0_wattage("95.0:190.7, 9.75:9.75", "h") == (95.0, 190.7)
    assert pstate0_wattage("30:40:100", "h") == (30.0, 100.0)
    assert pstate0_wattage(None, "h") is None


def _cluster(watts: str | None) -> Cluster:
    cl = Cluster.simple(4)
    if watts is not None:
        cl.properties = {rid: {"wattage_per_state": watts} for rid in cl.compute_ids}
    return cl


def test_a_cap_below_the_idle_machine_is_refused():
    runtime = make_runtime("fcfs", power_cap=100.0)
    with pytest.raises(ConfigError, match="below the idle machine's power"):
        runtime.begin(_cluster("30:100"))


def test_without_wattage_a_job_needs_a_power_field():
    runtime = make_runtime("fcfs", power_cap=250.0)
    runtime.begin(_cluster(None))
    runtime.submit(0.0, "w!1", {"id": 1, "subtime": 0, "res": 2, "walltime": 10})
    runtime.submit(0.0, "w!2", {"id": 2, "subtime": 0, "res": 2, "walltime": 10, "power": 200})
    runtime.submit(0.0, "w!3", {"id": 3, "subtime": 0, "res": 1, "walltime": 10, "power": 100})
    out = runtime.step(0.0)
    reasons = {d.job_id: getattr(d, "reason", None) for d in out}
    assert "no 'power' field" in reasons["w!1"]
    assert [d.job_id for d in out if type(d).__name__ == "Start"] == ["w!2"]   # 200 + 100 > 250


def test_the_runtime_refuses_a_start_over_the_cap():
    """A policy that ignores the cap (a start by hand, no profile allocation) is stopped by
    the runtime's own check, also against a lower cap later in the job's window."""
    from mrsched.errors import SimulationError
    from mrsched.schedulers.execution.runtime import PolicyRuntime
    from mrsched.schedulers.model.decisions import Start
    from test_runtime import Scripted

    from mrsched.schedulers.model.params import RunOptions

    rt = PolicyRuntime(Scripted(), RunOptions(power_cap_steps="0:330,50:260"))
    rt.begin(_cluster("30:100"), 0.0)                    # idle 120 W; +70 W a busy node
    for i in (1, 2, 3):
        rt.submit(0, f"w0!{i}", {"subtime": 0, "res": 1, "walltime": 100})
    rt.policy.script_ = [Start("w0!1", (0,))]
    rt.step(0)                                           # 190 W now, and 190 <= 260 later
    rt.policy.script_ = [Start("w0!2", (1,))]            # 260 W now, 260 <= 260 later
    rt.step(1)
    rt.policy.script_ = [Start("w0!3", (2,))]            # 330 W now: fits 330, not 260 later
    with pytest.raises(SimulationError, match="exceeds the power cap at t=50"):
        rt.step(2)


@pytest.mark.parametrize("policy,options", [
    ("slurm-bf", {"power_cap": "500"}),
    ("hierarchical", {"power_cap_share": "0.5"}),   # its leaves take power_cap, split by the tree
])
def test_policies_that_do_not_place_counters_refuse_the_cap(policy, options):
    from mrsched.schedulers.registry import make_scheduler

    with pytest.raises(ConfigError, match="power_cap is not available"):
        make_scheduler(policy, options)


def test_a_cap_as_a_share_of_peak_on_a_generated_platform(tmp_path):
    """`mrsched platform cluster --wattage 100:200` (every compute host) and power_cap_share:
    8 nodes peak at 1,600 W; at 0.7 (1,120 W) at most 3 run at once; the report's panel
    draws the same cap."""
    from mrsched.analysis.schedule import run_cap_steps

    plat = tmp_path / "c8.xml"
    assert main(["platform", "cluster", "--nodes", "8", "--wattage", "100:200", "-o", str(plat)]) == 0
    wl = tmp_path / "wl.json"
    jobs = [{"id": i, "subtime": i, "res": 1 + i % 3, "walltime": 50, "profile": "d"} for i in range(12)]
    wl.write_text(json.dumps({"nb_res": 8, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 40}}}))
    out = tmp_path / "run"
    assert main(["run", "-p", str(plat), "-w", str(wl), "--policy", "fcfs-easy", "-o", str(out),
                 "-O", "power_cap_share=0.7"]) == 0
    run = load_run(out)
    series = run_power(run)
    assert series.busy_w == 1600.0 and series.idle_w == 800.0
    assert 1000.0 <= series.peak(0, np.inf) <= 1120.0
    assert run_cap_steps(run) == [(0.0, pytest.approx(1120.0))]


@pytest.mark.parametrize("policy", ["fcfs", "filler", "fcfs-easy", "conservative-bb", "bbsched"])
def test_a_job_waiting_for_the_cap_to_rise_starts_when_it_rises(tmp_path, policy):
    """The idle machine draws 210 W: a cap of 210 W until t=5, then 280 W, leaves no power for
    a job before t=5 and one node's 70 W after. Nothing ends or arrives at t=5: the runtime
    asks to be called at the rise (found by tests/schedulers/test_fuzz_power.py: the run
    stalled with the job waiting)."""
    wl = tmp_path / "one.json"
    wl.write_text(json.dumps({"nb_res": 7, "jobs": [
        {"id": 0, "subtime": 0, "res": 1, "walltime": 50, "profile": "d10"}],
        "profiles": {"d10": {"type": "delay", "delay": 10}}}))
    run = _run(tmp_path, policy, wl, "power_cap_steps=0:210,5:280")
    assert list(run.jobs["starting_time"]) == [5.0]
