"""The step interface (mrsched/stepping.py): at each scheduling point the caller sees the
state and decides; its decisions reach the engine as a policy's do. A caller deciding as a
registered policy, or leaving every round to a stateless base, makes that policy's run
exactly."""

from __future__ import annotations

import threading

import pytest

import mrsched
from mrsched.errors import ConfigError, MrschedError
from mrsched.stepping import Stepper
from inputs_rule import reference_case as case  # noqa: E402


def first_fit(point) -> None:
    point.start(point.feasible[0])


@pytest.fixture(scope="module")
def bb_case(tmp_path_factory):
    """A generated burst-buffer machine and workload (requests of every kind but GPUs)."""
    from mrsched.platforms.cluster import generate_cluster
    from mrsched.workloads.platform_info import read_platform_info
    from mrsched.workloads.synthetic import generate_synthetic

    tmp = tmp_path_factory.mktemp("bb")
    platform = generate_cluster(nodes=8, storage=2, bb_capacity="50GB")
    (tmp / "platform.xml").write_text(platform.xml)
    workload = generate_synthetic(jobs=60, platform=read_platform_info(tmp / "platform.xml"), seed=5,
                                  mean_interarrival=60.0)
    return platform, workload


@pytest.mark.parametrize("name", ["delays", "walltime", "various", "easy250"])
def test_first_fit_caller_with_the_filler_base_is_the_filler(name):
    platform, workload = case(name)
    stepped = Stepper(platform, workload, base="filler", window=4).run(first_fit)
    assert stepped.csv_text("jobs") == mrsched.simulate(platform, workload, "filler").csv_text("jobs")


@pytest.mark.parametrize("base", ["fcfs", "fcfs-easy", "fcfs-bb", "sjf-bb"])
def test_a_caller_deciding_nothing_leaves_the_base_policys_run(bb_case, base):
    platform, workload = bb_case
    stepped = Stepper(platform, workload, base=base).run(lambda point: None)
    assert stepped.csv_text("jobs") == mrsched.simulate(platform, workload, base).csv_text("jobs")


def test_a_point_holds_the_state(bb_case):
    platform, workload = bb_case
    with Stepper(platform, workload, window=5) as stepper:
        point = stepper.next()
        assert point.capacity == {"nodes": 8.0, "burst_buffer": 100e9, "gpus": 0.0}
        assert point.free["nodes"] == 8.0 and point.running == {}
        assert len(point.window) <= 5 and point.mask[:len(point.feasible)] == [True] * len(point.feasible)
        job = point.feasible[0]
        assert job.request.bb_total > 0
        point.start(job)
        seen = 0
        while (point := stepper.next()) is not None and seen < 20:   # what runs is what is not free
            running = [r.job.request for r in point.running.values()] + [
                j.request for j in point.started]
            assert point.free["nodes"] == 8.0 - sum(r.nodes for r in running)
            assert point.free["burst_buffer"] == 100e9 - sum(r.bb_total for r in running)
            seen += len(running)
            point.start(point.feasible[-1])
        assert seen


def test_bad_decisions_are_refused_with_the_job_named(bb_case):
    platform, workload = bb_case
    with Stepper(platform, workload) as stepper:
        point = stepper.next()
        point.start(point.feasible[0])
        with pytest.raises(ConfigError) as info:
            point.start(point.feasible[0])
        assert info.value.job == point.feasible[0].id
        with pytest.raises(ConfigError):
            point.start(99)


def test_rejections_reach_the_outputs(bb_case):
    platform, workload = bb_case
    done = []

    def reject_first(point):
        if not done:
            point.reject(point.window[0], "not today")
            done.append(point.window[0].id)

    result = Stepper(platform, workload, base="filler").run(reject_first)
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[done[0].split("!")[1], "final_state"] == "REJECTED"
    assert "not today" in jobs.loc[done[0].split("!")[1], "metadata"]


def test_closing_an_unfinished_run_stops_its_thread(bb_case):
    platform, workload = bb_case
    before = threading.active_count()
    stepper = Stepper(platform, workload)
    assert stepper.next() is not None
    stepper.close()
    assert stepper.done and threading.active_count() == before


def test_errors_of_the_run_reach_the_caller(tmp_path):
    platform, _ = case("delays")
    bad = tmp_path / "bad.json"
    bad.write_text('{"nb_res": 2, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "x"}], '
                   '"profiles": {}}')
    with pytest.raises(MrschedError) as info:
        Stepper(platform, bad).next()
    assert "bad.json" in str(info.value)
    with pytest.raises(ConfigError):
        Stepper(platform, bad, base="conservative-bb")
    with pytest.raises(ConfigError):
        Stepper(platform, bad, window=0)


def test_the_gym_module_without_gymnasium_says_how_to_get_it():
    import subprocess
    import sys

    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "from mrsched.errors import ConfigError\n"
            "try:\n    import mrsched.gym\nexcept ConfigError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'mrsched[gym]'" in done.stdout, done.stderr
