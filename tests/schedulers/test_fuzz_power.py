"""Fuzz: power caps and sleeping nodes (execution/power.py, the runtime's ``IdleNodes``) over
generated machines, workloads and options, every run measured by the engine's energy model
(-E). Invariant: that of every fuzzed run (tests/fuzzing.py ``fuzz_run``), and the measured
power never over the cap while the run lasts, asleep, switching or busy."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import event, given, strategies as st

from fuzzing import budget, fuzz_run
from mrsched.analysis import load_run
from mrsched.analysis.power import run_power
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.wattage import with_wattage

#: cheap policies the cap is for (docs/POLICIES.md "power_cap"); idle_sleep takes any of them
POLICIES = ("fcfs", "filler", "fcfs-easy", "sjf-bb", "easy-bf", "conservative-bb", "bbsched",
            "plan-2")
EPS = 1e-6
KILL_TAIL = 1e-3       # seconds a killed job loads its nodes past its walltime, at most


@st.composite
def machines(draw):
    nodes = draw(st.integers(2, 6))
    idle = draw(st.integers(5, 60))
    busy = idle + draw(st.integers(5, 150))
    sleep = None
    if draw(st.booleans()):     # (asleep W, switch-off s, W, switch-on s, W): sleep_states
        sleep = (draw(st.integers(0, idle - 1)), draw(st.integers(1, 10)),
                 draw(st.integers(1, busy + 40)), draw(st.integers(1, 30)),
                 draw(st.integers(1, busy + 40)))
    return nodes, idle, busy, sleep


@st.composite
def workloads(draw, nodes: int):
    jobs, t = [], 0.0
    profiles = {}
    for i in range(draw(st.integers(1, 12))):
        t += draw(st.sampled_from([0.0, 0.5, 3.0, 20.0, 200.0]))
        run = draw(st.sampled_from([1, 10, 40, 120]))
        loaded = draw(st.booleans())       # computing jobs draw AllCores, delay jobs Idle
        name = f"{'c' if loaded else 'd'}{run}"
        profiles[name] = ({"type": "parallel_homogeneous", "cpu": run * 1e9, "com": 0} if loaded
                          else {"type": "delay", "delay": run})
        # some walltimes cut the job: it is killed, its nodes freed at the walltime
        wall = draw(st.sampled_from([-1, run + 30, max(1, run // 2)]))
        jobs.append({"id": i, "subtime": t, "res": draw(st.integers(1, nodes)), "walltime": wall,
                     "profile": name})
    return {"nb_res": nodes, "jobs": jobs, "profiles": profiles}


@st.composite
def cases(draw):
    nodes, idle, busy, sleep = draw(machines())
    workload = draw(workloads(nodes))
    policy = draw(st.sampled_from(POLICIES))
    floor = nodes * idle
    # mostly room for 0..nodes busy nodes over the idle machine, now and then a little less
    caps = [max(1, floor + draw(st.integers(0, nodes)) * (busy - idle) + draw(st.integers(-5, 30)))
            for _ in range(draw(st.integers(1, 3)))]
    options = {}
    if len(caps) == 1:
        options["power_cap"] = str(caps[0])
    else:
        times = sorted(draw(st.lists(st.integers(1, 400), min_size=len(caps) - 1,
                                     max_size=len(caps) - 1, unique=True)))
        options["power_cap_steps"] = ",".join(f"{t}:{c}" for t, c in zip([0, *times], caps))
    if sleep is not None and draw(st.booleans()):
        options["idle_sleep"] = str(draw(st.sampled_from([0, 5, 60])))
    if draw(st.integers(0, 3)) == 0:     # rounds on a period: a cap's rise may fall between
        options["period"] = draw(st.sampled_from(["7", "60"]))
    # 500 us links: 1.5 ms a message from Batsim's master host to its server
    latency = draw(st.sampled_from(["50us", "500us"]))
    xml = with_wattage(generate_cluster(nodes=nodes, pfs=False, link_latency=latency).xml,
                       f"{idle}:{busy}", sleep)
    return xml, workload, policy, options, busy - idle


def _caps(options: dict) -> list[tuple[float, float]]:
    if "power_cap" in options:
        return [(0.0, float(options["power_cap"]))]
    return [(float(t), float(c)) for t, c in
            (step.split(":") for step in options["power_cap_steps"].split(","))]


def under_the_cap(out: Path, policy: str, options: dict, node_delta: float) -> None:
    """Measured power (mean between rows of out_consumed_energy.csv) over each cap step while
    the run lasts. A job killed at its walltime loads its nodes until Batsim's kill is done (a
    task cut by its walltime runs on until its actor ends, DESIGN.md), past the end the cap
    planned for it: the only energy allowed over the cap, KILL_TAIL seconds of each killed
    job's watts."""
    run = load_run(out)
    series = run_power(run)
    assert series.measured
    killed = run.jobs[run.jobs["final_state"] == "COMPLETED_WALLTIME_REACHED"]
    allowed = KILL_TAIL * node_delta * float(killed["requested_number_of_resources"].sum())
    steps = _caps(options)
    ends = [t for t, _ in steps[1:]] + [float("inf")]
    time, power = series.time, series.power
    for (t, cap), end in zip(steps, ends):
        for k in range(len(time) - 1):        # the run ends at its last row
            if time[k + 1] > t and time[k] < end:
                excess = (power[k] - cap) * (time[k + 1] - time[k])
                assert excess <= allowed + EPS, (policy, options, t, cap, time[k], power[k])


def _fuzz(xml: str, workload: dict, policy: str, options: dict, node_delta: float) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        platform = Path(tmp) / "platform.xml"
        platform.write_text(xml)
        return fuzz_run(platform, workload, policy, options, energy=True,
                        inspect=lambda out: under_the_cap(out, policy, options, node_delta))


@budget(25)
@given(cases())
def test_fuzz_power_cap_and_sleep(case):
    xml, workload, policy, options, node_delta = case
    finished = _fuzz(xml, workload, policy, options, node_delta)
    event(f"ran, idle_sleep {'idle_sleep' in options}" if finished else "refused")


@st.composite
def tree_cases(draw):
    """``hierarchical`` under its own ``power_cap``, with its own ``decision_cost`` (each leaf
    decision held until its stamped time; the runtime refuses a cost beside a cap for the other
    policies, docs/POLICIES.md)."""
    nodes, idle, busy, _ = draw(machines())
    # jobs of up to half the machine and a cap of room for half of it or more: the tree splits
    # both among its leaves, and a job no leaf can hold is rejected
    workload = draw(workloads(max(1, nodes // 2)))
    cap = max(1, nodes * idle + draw(st.integers(nodes // 2, nodes)) * (busy - idle)
              + draw(st.integers(-5, 30)))
    options = {"power_cap": str(cap),
               "decision_cost": draw(st.sampled_from(
                   ["none", "per_job=0.5", "per_event=0.001,per_start=2", "per_start=6.5",
                    "per_event=1,per_job=2,per_start=1"]))}
    latency = draw(st.sampled_from(["50us", "500us"]))
    xml = with_wattage(generate_cluster(nodes=nodes, pfs=False, link_latency=latency).xml,
                       f"{idle}:{busy}", None)
    return xml, workload, options, busy - idle


@budget(15)
@given(tree_cases())
def test_fuzz_hierarchical_power_cap_with_decision_cost(case):
    """The measured power stays under the tree's cap whatever the leaves' decision cost."""
    xml, workload, options, node_delta = case
    finished = _fuzz(xml, workload, "hierarchical", options, node_delta)
    event("ran" if finished else "refused")
