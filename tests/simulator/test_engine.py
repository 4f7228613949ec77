"""Engine behaviour on small self-contained inputs: times, protocol events, Batsim's fatal
errors, kills, CALL_ME_LATER, dynamic jobs, multiple workloads."""

from __future__ import annotations

import csv

import pytest

from mrsched.errors import ProtocolError, SimulationError, WorkloadError
from mrsched.schedulers.batsim.intervals import format_intervals, parse_ids
from mrsched.simulator.engine import simulate
from test_engine_support import (fcfs, make_workload, platform_file,  # noqa: F401 (fixtures)
                                 scripted)

EPS = 1e-6


def rows(prefix) -> dict[str, dict]:
    with open(f"{prefix}_jobs.csv", newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


def test_fcfs_delay_jobs_times_and_outputs(platform_file, make_workload, fcfs, tmp_path):
    wl = make_workload([{"id": i, "subtime": i, "res": 2, "profile": "d10"} for i in range(5)])
    res = simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")
    starts = {k: float(v["starting_time"]) for k, v in r.items()}
    assert starts == pytest.approx({"0": 0, "1": 1, "2": 10, "3": 11, "4": 20}, abs=EPS)
    assert all(v["final_state"] == "COMPLETED_SUCCESSFULLY" for v in r.values())
    assert r["2"]["allocated_resources"] == "0-1" and r["3"]["allocated_resources"] == "2-3"
    assert res.makespan == pytest.approx(30, abs=EPS)
    with open(tmp_path / "out_machine_states.csv") as fh:
        lines = fh.read().splitlines()
    assert lines[0] == "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing"
    first, last = lines[1].split(","), lines[-1].split(",")
    assert float(first[0]) == pytest.approx(0, abs=EPS) and first[1:] == ["0", "0", "0", "2", "2"]
    assert last == ["30", "0", "0", "0", "4", "0"]
    with open(tmp_path / "out_schedule.csv") as fh:
        sched = next(csv.DictReader(fh))
    assert sched["nb_jobs"] == "5" and sched["nb_jobs_success"] == "5"
    assert float(sched["time_computing"]) == pytest.approx(100, abs=1e-5)


def test_message_flow(platform_file, make_workload, scripted, tmp_path):
    wl = make_workload([{"id": "a", "subtime": 0, "res": 1, "profile": "d10", "walltime": 20,
                         "burst_buffer": 5}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": "3"}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=None)
    types = [[e["type"] for e in m["events"]] for m in sched.messages]
    # the submitter's last job, then its goodbye (its own message), the completion, the end
    assert types == [["SIMULATION_BEGINS"], ["JOB_SUBMITTED"], ["NOTIFY"], ["JOB_COMPLETED"],
                     ["SIMULATION_ENDS"]]
    assert sched.events("NOTIFY")[0]["data"] == {"type": "no_more_static_job_to_submit"}
    sub = sched.events("JOB_SUBMITTED")[0]["data"]
    assert sub == {"job_id": "w0!a", "job": {"id": "w0!a", "subtime": 0, "res": 1,
                                            "profile": "d10", "walltime": 20,
                                            "burst_buffer": 5}}
    assert list(sub["job"]) == ["id", "subtime", "res", "profile", "walltime", "burst_buffer"]
    done = sched.events("JOB_COMPLETED")[0]
    assert done["data"] == {"job_id": "w0!a", "job_state": "COMPLETED_SUCCESSFULLY",
                            "return_code": 0, "alloc": "3"}
    assert done["timestamp"] == pytest.approx(10, abs=EPS)
    begins = sched.messages[0]["events"][0]["data"]
    assert begins["nb_compute_resources"] == 4 and begins["nb_storage_resources"] == 0
    assert [r["name"] for r in begins["compute_resources"]] == ["a0", "a1", "a2", "a3"]
    assert begins["profiles"] == {"w0": {"d10": {"type": "delay", "delay": 10}}}


def test_walltime_kill(platform_file, make_workload, fcfs, tmp_path):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10", "walltime": 4}])
    simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")["1"]
    assert r["final_state"] == "COMPLETED_WALLTIME_REACHED" and r["success"] == "0"
    assert float(r["finish_time"]) == pytest.approx(4, abs=EPS)


def test_composed_profile_runs_in_sequence_under_walltime(platform_file, make_workload, fcfs,
                                                          tmp_path):
    profiles = {"d10": {"type": "delay", "delay": 10}, "d5": {"type": "delay", "delay": 5},
                "seq": {"type": "composed", "seq": ["d10", "d5"], "repeat": 2}}
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "seq"},
                        {"id": 2, "subtime": 0, "res": 1, "profile": "seq", "walltime": 20}],
                       profiles)
    simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")
    assert float(r["1"]["finish_time"]) == pytest.approx(30, abs=EPS)
    assert r["2"]["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert float(r["2"]["finish_time"]) == pytest.approx(20, abs=EPS)


def test_parallel_homogeneous_uses_ptask_model(platform_file, make_workload, fcfs, tmp_path):
    profiles = {"cpu": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0}}
    wl = make_workload([{"id": 1, "subtime": 0, "res": 2, "profile": "cpu"}], profiles)
    simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")["1"]
    assert float(r["execution_time"]) == pytest.approx(2.0, rel=1e-6)  # 2 Gflop at 1 Gflop/s


def test_call_me_later_and_end_waits_for_it(platform_file, make_workload, scripted):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}
                yield "CALL_ME_LATER", {"timestamp": 50.5}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=None)
    calls = sched.events("REQUESTED_CALL")
    assert len(calls) == 1 and calls[0]["timestamp"] == pytest.approx(50.5, abs=EPS)
    assert sched.events("SIMULATION_ENDS")[0]["timestamp"] >= 50.5


def test_call_me_later_sooner_than_batsims_shortest_sleep_comes_after_it(platform_file, make_workload,
                                                                          scripted):
    """Batsim's waiter sleeps at least 1e-5 s (jobs_execution.cpp ``waiter_process``): a call
    asked 2e-6 s ahead comes 1e-5 s after the request; one asked 3e-5 s ahead comes then."""
    wl = make_workload([{"id": 1, "subtime": 5, "res": 1, "profile": "d10"},
                        {"id": 2, "subtime": 20, "res": 1, "profile": "d10"}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                ahead = 2e-6 if e["data"]["job_id"] == "w0!1" else 3e-5
                yield "CALL_ME_LATER", {"timestamp": msg["now"] + ahead}
                yield "REJECT_JOB", {"job_id": e["data"]["job_id"]}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=None)
    calls = [e["timestamp"] for e in sched.events("REQUESTED_CALL")]
    assert calls == [pytest.approx(5 + 1e-5, abs=1e-9), pytest.approx(20 + 3e-5, abs=1e-9)]


def test_call_me_later_in_the_past_is_fatal(platform_file, make_workload, scripted):
    wl = make_workload([{"id": 1, "subtime": 5, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "CALL_ME_LATER", {"timestamp": 1.0}

    with pytest.raises(SimulationError, match="awaken in the past") as err:
        simulate(platform_file, [wl], scripted(react), export_prefix=None)
    assert err.value.event == "CALL_ME_LATER"


@pytest.mark.parametrize("decision, error, message", [
    (("EXECUTE_JOB", {"job_id": "w0!nope", "alloc": "0"}), SimulationError, "unknown job"),
    (("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0-1"}), SimulationError, "has 2 resources"),
    (("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "9"}), SimulationError, "names resource 9"),
    (("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0", "mapping": {"0": 0},
                      "storage_mapping": {"a": 0}}), SimulationError, "at most one of"),
    (("REJECT_JOB", {"job_id": "w0!2"}), SimulationError, "not submitted"),
    (("EXPLODE", {}), ProtocolError, "unknown event type"),
])
def test_batsim_fatal_errors_name_event_and_job(platform_file, make_workload, scripted,
                                                decision, error, message):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"},
                        {"id": 2, "subtime": 100, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield decision

    with pytest.raises(error, match=message) as err:
        simulate(platform_file, [wl], scripted(react), export_prefix=None)
    assert err.value.event == decision[0]


def test_busy_host_and_running_job_are_fatal(platform_file, make_workload, scripted):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"},
                        {"id": 2, "subtime": 1, "res": 1, "profile": "d10"}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": "0"}

    with pytest.raises(SimulationError, match="busy with job w0!1") as err:
        simulate(platform_file, [wl], scripted(react), export_prefix=None)
    assert err.value.job == "w0!2"

    def twice(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}
            yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "1"}

    with pytest.raises(SimulationError, match="running"):
        simulate(platform_file, [wl], scripted(twice), export_prefix=None)


def test_event_after_now_is_fatal(platform_file, make_workload):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    class Bad:
        def handle_message(self, msg):
            ev = {"timestamp": msg["now"] + 5, "type": "REJECT_JOB", "data": {"job_id": "w0!1"}}
            return {"now": msg["now"], "events": [ev]}

    with pytest.raises(SimulationError, match="after the reply's now"):
        simulate(platform_file, [wl], Bad(), export_prefix=None)


def test_reply_now_ahead_delays_decisions(platform_file, make_workload, scripted, tmp_path):
    """Events stamped in the future (decision time) apply then, as in Batsim."""
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}, msg["now"] + 2.5

    simulate(platform_file, [wl], scripted(react), export_prefix=tmp_path / "out")
    assert float(rows(tmp_path / "out")["1"]["starting_time"]) == pytest.approx(2.5, abs=EPS)


def test_reject_row(platform_file, make_workload, scripted, tmp_path):
    wl = make_workload([{"id": 1, "subtime": 3, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "REJECT_JOB", {"job_id": "w0!1"}

    simulate(platform_file, [wl], scripted(react), export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")["1"]
    assert r["final_state"] == "REJECTED" and r["starting_time"] == "" and r["success"] == "0"


def test_kill_job_reports_progress_and_completion(platform_file, make_workload, scripted, tmp_path):
    profiles = {"d10": {"type": "delay", "delay": 10},
                "seq": {"type": "composed", "seq": ["d10", "d10"]}}
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"},
                        {"id": 2, "subtime": 0, "res": 1, "profile": "seq"}], profiles)

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": e["data"]["job_id"],
                                      "alloc": "0" if e["data"]["job_id"] == "w0!1" else "1"}
                if e["data"]["job_id"] == "w0!2":
                    yield "CALL_ME_LATER", {"timestamp": 14.0}
            elif e["type"] == "REQUESTED_CALL":
                yield "KILL_JOB", {"job_ids": ["w0!2"]}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=tmp_path / "out")
    killed = sched.events("JOB_KILLED")
    assert len(killed) == 1 and killed[0]["data"]["job_ids"] == ["w0!2"]
    prog = killed[0]["data"]["job_progress"]["w0!2"]
    assert prog["profile_name"] == "seq" and prog["current_task_index"] == 1
    assert prog["current_task"]["progress"] == pytest.approx(0.4, abs=1e-6)
    completed = {e["data"]["job_id"]: e["data"] for e in sched.events("JOB_COMPLETED")}
    assert completed["w0!2"]["job_state"] == "COMPLETED_KILLED"
    r = rows(tmp_path / "out")
    assert r["2"]["final_state"] == "COMPLETED_KILLED"
    assert float(r["2"]["finish_time"]) == pytest.approx(14.0, abs=EPS)


def test_dynamic_jobs(platform_file, make_workload, scripted, tmp_path):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "REJECT_JOB", {"job_id": "w0!1"}
                yield "REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p",
                                           "profile": {"type": "delay", "delay": 3}}
                yield "REGISTER_JOB", {"job_id": "dyn!a", "job": {"id": "dyn!a", "res": 1,
                                                                  "profile": "p", "walltime": -1,
                                                                  "subtime": 0.5}}
                yield "EXECUTE_JOB", {"job_id": "dyn!a", "alloc": "2"}
                yield "NOTIFY", {"type": "registration_finished"}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=tmp_path / "out", dynamic_jobs=True)
    r = rows(tmp_path / "out")
    assert r["a"]["workload_name"] == "dyn" and r["a"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(r["a"]["execution_time"]) == pytest.approx(3, abs=EPS)
    assert r["a"]["submission_time"] == "0.500000"   # the registered subtime, as Batsim
    assert float(r["a"]["waiting_time"]) == pytest.approx(float(r["a"]["starting_time"]) - 0.5)
    config = sched.messages[0]["events"][0]["data"]["config"]
    assert config["dynamic-jobs-enabled"] is True


@pytest.mark.parametrize("job, field", [
    ({"res": 1, "profile": "p", "subtime": 0}, "id"),
    ({"id": "a", "res": 1, "profile": "p"}, "subtime"),
    ({"id": "b", "res": 1, "profile": "p", "subtime": 0}, "id"),
])
def test_registered_job_is_checked_as_batsim_does(platform_file, make_workload, scripted, job,
                                                 field):
    """Batsim 4.2.1 reads a registered job like a workload's (Job::from_json): an 'id' naming
    the registered job and a 'subtime' are required."""
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p",
                                       "profile": {"type": "delay", "delay": 3}}
            yield "REGISTER_JOB", {"job_id": "dyn!a", "job": job}

    with pytest.raises(SimulationError) as err:
        simulate(platform_file, [wl], scripted(react), export_prefix=None, dynamic_jobs=True)
    assert (err.value.job, err.value.field) == ("dyn!a", field)


def test_registered_job_needs_an_existing_workload(platform_file, make_workload, scripted):
    """A job registered in a workload nothing created (no workload file, no profile
    registered in it): Batsim 4.2.1 aborts ("Workload 'dyn' should exist")."""
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "REGISTER_JOB", {"job_id": "dyn!a", "job": {"id": "a", "res": 1, "subtime": 0,
                                                              "profile": "p"}}

    with pytest.raises(SimulationError, match="workload 'dyn' does not exist") as err:
        simulate(platform_file, [wl], scripted(react), export_prefix=None, dynamic_jobs=True)
    assert err.value.job == "dyn!a"


def test_dynamic_jobs_without_registration_finished_stall(platform_file, make_workload, scripted):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}

    with pytest.raises(SimulationError, match="registration_finished"):
        simulate(platform_file, [wl], scripted(react), export_prefix=None, dynamic_jobs=True)

    def register(msg, s):
        if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
            yield "REGISTER_JOB", {"job_id": "w0!x", "job": {"res": 1, "profile": "d10"}}

    with pytest.raises(SimulationError, match="dynamic-jobs"):
        simulate(platform_file, [wl], scripted(register), export_prefix=None)


def test_scheduler_that_never_decides_is_reported(platform_file, make_workload, scripted):
    wl = make_workload([{"id": 7, "subtime": 0, "res": 1, "profile": "d10"}])
    with pytest.raises(SimulationError, match="never executed nor rejected .first: w0!7"):
        simulate(platform_file, [wl], scripted(None), export_prefix=None)


def test_two_workloads_are_w0_and_w1(platform_file, make_workload, fcfs, tmp_path):
    a = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])
    b = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])
    simulate(platform_file, [a, b], fcfs(), export_prefix=tmp_path / "out")
    with open(tmp_path / "out_jobs.csv") as fh:
        got = {(r["workload_name"], r["job_id"]) for r in csv.DictReader(fh)}
    assert got == {("w0", "1"), ("w1", "1")}


class _RejectAll:
    """Rejects every submitted job (what a scheduler does with a job larger than the machine)."""

    def handle_message(self, msg):
        events = [{"timestamp": msg["now"], "type": "REJECT_JOB",
                   "data": {"job_id": e["data"]["job_id"]}}
                  for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        return {"now": msg["now"], "events": events}


def test_mmax_and_too_big_job(platform_file, make_workload, scripted, caplog):
    # Batsim 4.2.1 loads a job larger than the machine and leaves it to the scheduler
    wl = make_workload([{"id": 1, "subtime": 0, "res": 3, "profile": "d10"}])
    with caplog.at_level("WARNING", logger="mrsched.simulator.engine"):
        result = simulate(platform_file, [wl], _RejectAll(), export_prefix=None, mmax=2)
    assert [r.final_state for r in result.jobs] == ["REJECTED"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "1 job(s) request more than the 2 compute resources (first: w0!1, 3" in warnings[0]
    sched = scripted(None)
    wl2 = make_workload([])
    simulate(platform_file, [wl2], sched, export_prefix=None, mmax=2)
    assert sched.messages[0]["events"][0]["data"]["nb_resources"] == 2


def test_alloc_strings():
    assert parse_ids("0-3 7 9-10", job=None) == [0, 1, 2, 3, 7, 9, 10]
    assert format_intervals([0, 1, 2, 3, 7, 9, 10]) == "0-3 7 9-10"
    with pytest.raises(ProtocolError, match="invalid interval set '3-1'") as err:
        parse_ids("3-1", job="w0!1")
    assert (err.value.event, err.value.job, err.value.field) == ("EXECUTE_JOB", "w0!1", "alloc")


@pytest.mark.parametrize("text", ["0-1 3", "0 1 3", "3 1 0", "0-0 1 3", "0-1 3-3", "00-1 3"])
def test_any_alloc_text_comes_back_canonical(platform_file, make_workload, scripted, tmp_path, text):
    """Batsim answers JOB_COMPLETED and writes _jobs.csv with the canonical text of the set,
    whatever text EXECUTE_JOB gave (the canonical ones are read range by range)."""
    wl = make_workload([{"id": 1, "subtime": 0, "res": 3, "profile": "d10"}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": text}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=tmp_path / "out")
    assert sched.events("JOB_COMPLETED")[0]["data"]["alloc"] == "0-1 3"
    assert rows(tmp_path / "out")["1"]["allocated_resources"] == "0-1 3"


@pytest.mark.parametrize("reuse", [False, True])
def test_dynamic_profiles_dropped_without_reuse(platform_file, make_workload, scripted, reuse):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])
    state = {"second": False}

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "REJECT_JOB", {"job_id": "w0!1"}
                yield "REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p",
                                           "profile": {"type": "delay", "delay": 1}}
                yield "REGISTER_JOB", {"job_id": "dyn!a", "job": {"id": "a", "res": 1,
                                                                  "profile": "p", "subtime": 0}}
                yield "EXECUTE_JOB", {"job_id": "dyn!a", "alloc": "0"}
            elif e["type"] == "JOB_COMPLETED" and not state["second"]:
                state["second"] = True
                yield "REGISTER_JOB", {"job_id": "dyn!b", "job": {"id": "b", "res": 1,
                                                                  "profile": "p", "subtime": 0}}
                yield "EXECUTE_JOB", {"job_id": "dyn!b", "alloc": "0"}
                yield "NOTIFY", {"type": "registration_finished"}

    if reuse:
        sched = scripted(react)
        simulate(platform_file, [wl], sched, export_prefix=None, dynamic_jobs=True,
                 profile_reuse=True)
        assert len(sched.events("JOB_COMPLETED")) == 2
    else:
        with pytest.raises(SimulationError, match="unknown profile 'p'") as err:
            simulate(platform_file, [wl], scripted(react), export_prefix=None,
                     dynamic_jobs=True)
        assert err.value.job == "dyn!b" and "profile-reuse" in str(err.value)


def test_config_flags_and_roles(platform_file, make_workload, scripted):
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"}])

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}

    sched = scripted(react)
    simulate(platform_file, [wl], sched, export_prefix=None, forward_profiles=True,
             sched_cfg='{"k": 1}', roles=("a3:storage",))
    begins = sched.messages[0]["events"][0]["data"]
    assert begins["config"]["sched-config"] == '{"k": 1}'
    assert begins["config"]["profiles-forwarded-on-submission"] is True
    assert [r["name"] for r in begins["compute_resources"]] == ["a0", "a1", "a2"]
    assert begins["storage_resources"][0]["id"] == 3
    assert begins["storage_resources"][0]["properties"]["role"] == "storage"
    sub = sched.events("JOB_SUBMITTED")[0]["data"]
    assert sub["profile"] == {"type": "delay", "delay": 10}


STORAGE_XML = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="root" routing="Full">
    <cluster id="compute" prefix="node_" radical="0-3" suffix="" speed="1Gf" bw="1250MBps"
             lat="0us" bb_bw="2500MBps" bb_lat="0us" router_id="compute_router"/>
    <zone id="storage" routing="Full">
      <host id="master" speed="1Gf"><prop id="role" value="master"/></host>
      <host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host>
      <link id="pfs_link" bandwidth="500MBps" latency="0us"/>
      <link id="storage_backbone" bandwidth="10GBps" latency="0us"/>
      <router id="storage_router"/>
      <route src="pfs" dst="storage_router"><link_ctn id="pfs_link"/></route>
      <route src="master" dst="storage_router"><link_ctn id="storage_backbone"/></route>
      <route src="master" dst="pfs"><link_ctn id="storage_backbone"/><link_ctn id="pfs_link"/></route>
    </zone>
    <link id="uplink" bandwidth="20GBps" latency="0us"/>
    <zoneRoute src="compute" dst="storage" gw_src="compute_router" gw_dst="storage_router">
      <link_ctn id="uplink"/></zoneRoute>
  </zone>
</platform>
"""


def test_pfs_io_kill_and_additional_io_job(tmp_path, make_workload, scripted):
    plat = tmp_path / "io.xml"
    plat.write_text(STORAGE_XML)
    profiles = {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0,
                      "bytes_to_write": 1e9, "storage": "pfs"},
                "c": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}
    wl = make_workload([{"id": "io", "subtime": 0, "res": 1, "profile": "w"},
                        {"id": "kill", "subtime": 0, "res": 1, "profile": "w"},
                        {"id": "extra", "subtime": 10, "res": 1, "profile": "c"}], profiles)

    def react(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                jid = e["data"]["job_id"]
                if jid == "w0!io":
                    yield "EXECUTE_JOB", {"job_id": jid, "alloc": "0",
                                          "storage_mapping": {"pfs": 4}}
                elif jid == "w0!kill":
                    yield "EXECUTE_JOB", {"job_id": jid, "alloc": "1"}  # one storage host
                    yield "CALL_ME_LATER", {"timestamp": 1.0}
                else:
                    yield "EXECUTE_JOB", {"job_id": jid, "alloc": "2", "additional_io_job": {
                        "alloc": "2 4", "profile_name": "x", "profile": {
                            "type": "parallel_homogeneous_pfs", "bytes_to_read": 0,
                            "bytes_to_write": 2e9, "storage": "pfs"}}}
            elif e["type"] == "REQUESTED_CALL":
                yield "KILL_JOB", {"job_ids": ["w0!kill"]}

    sched = scripted(react)
    simulate(plat, [wl], sched, export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")
    # two writers share the 500 MB/s PFS link until the kill at t=1 (0.25 GB each), then
    # the survivor has 0.75 GB left alone: 1 + 1.5 = 2.5 s
    assert float(r["io"]["finish_time"]) == pytest.approx(2.5, rel=1e-3)
    prog = sched.events("JOB_KILLED")[0]["data"]["job_progress"]["w0!kill"]
    assert prog["profile_name"] == "w" and prog["progress"] == pytest.approx(0.25, rel=1e-3)
    # compute 1 s and 2 GB through the PFS link (4 s) in one ptask: the slower part rules
    assert float(r["extra"]["execution_time"]) == pytest.approx(4.0, rel=1e-3)


def test_run_leaves_the_garbage_collector_as_it_found_it(platform_file, make_workload, fcfs,
                                                         scripted):
    """The engine tunes the collector for its run only: a library must not change the
    caller's process, neither after a run nor after a failed one."""
    import gc

    before = gc.get_threshold()
    wl = make_workload([{"id": i, "subtime": i, "res": 2, "profile": "d10"} for i in range(3)])
    simulate(platform_file, [wl], fcfs(), export_prefix=None)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0 and gc.isenabled()
    with pytest.raises(SimulationError):
        simulate(platform_file, [wl], scripted(None), export_prefix=None)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0 and gc.isenabled()
    # loading pauses the collector (parsed containers hold no cycle); a bad file must not
    # leave it off, and a caller who turned it off keeps it off
    bad = make_workload([{"id": 1, "subtime": 0, "res": 2, "profile": "nope"}])
    with pytest.raises(WorkloadError):
        simulate(platform_file, [bad], fcfs(), export_prefix=None)
    assert gc.isenabled()
    gc.disable()
    try:
        simulate(platform_file, [wl], fcfs(), export_prefix=None)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_run_leaves_no_garbage_cycle_per_job(platform_file, make_workload, fcfs):
    """What a run allocates is freed by reference counting (the collector runs rarely during a
    run): no per-job or per-reply cycle piles up for it to find."""
    import gc

    from mrsched.simulator.engine import Engine
    from mrsched.simulator.workload import load_workloads

    wl = make_workload([{"id": i, "subtime": i, "res": 1 + i % 3, "profile": "d10"}
                        for i in range(300)])
    engine = Engine(platform_file, load_workloads([wl]), fcfs(), export_prefix=None)
    gc.collect()
    gc.disable()
    try:
        engine.run()
        found = gc.collect()   # the engine is still referenced: only what the run dropped
    finally:
        gc.enable()
    assert engine.server.nb_completed == 300
    assert found < 50   # each workload submitter's few one-off cycles, not ~5 a reply


def test_far_future_job_ends_as_batsim_ends_it(platform_file, make_workload, fcfs, tmp_path):
    """#13 item 6: at 1e300 s, now + 10 == now + 30 == now. Batsim compares durations (its
    do_delay_task), so the 10 s delay beats the 30 s walltime; the clock does not move, and
    the job gets Batsim's null-time runtime of 1e-5 s (not COMPLETED_WALLTIME_REACHED)."""
    wl = make_workload([{"id": 1, "subtime": 1e300, "res": 1, "profile": "d10", "walltime": 30}])
    result = simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "out")
    [rec] = result.jobs
    assert rec.final_state == "COMPLETED_SUCCESSFULLY"
    row = (tmp_path / "out_jobs.csv").read_text().splitlines()[1].split(",")
    assert row[7] == "COMPLETED_SUCCESSFULLY" and row[9] == "0.000010"


def test_a_run_holds_no_state_of_ended_jobs(platform_file, make_workload, fcfs, tmp_path):
    """Memory does not grow with the jobs run: once a job's row is written its state is
    dropped (a shared marker stays for late events), records are kept only if asked, and a
    profile per job is not cached; the files are those of a run that keeps everything."""
    from mrsched.simulator import engine as eng
    from mrsched.simulator.jobs import ENDED
    from mrsched.simulator.workload import load_workloads

    profiles = {f"d{i}": {"type": "delay", "delay": 5 + i % 7} for i in range(40)}
    profiles["c"] = {"type": "composed", "seq": ["d1", "d2"]}
    jobs = [{"id": i, "subtime": i, "res": 1 + i % 3, "profile": f"d{i}" if i < 40 else "c",
             **({"walltime": 6} if i % 5 == 0 else {})} for i in range(60)]
    wl = make_workload(jobs, profiles)
    kept = simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "kept")
    engine = eng.Engine(platform_file, load_workloads([wl]), fcfs(),
                        export_prefix=tmp_path / "lean", keep_records=False)
    lean = engine.run()
    assert lean.jobs == [] and lean.nb_jobs == kept.nb_jobs == len(kept.jobs) == 60
    assert lean.makespan == kept.makespan
    assert all(s is ENDED for s in engine.jobs.states.values())
    assert list(engine.jobs._steps_cache) == [(id(engine.jobs.workloads["w0"].profiles), "c")]
    assert engine.machines.tracker.rows == []
    assert any(r.final_state == "COMPLETED_WALLTIME_REACHED" for r in kept.jobs)
    for suffix in ("jobs", "machine_states"):
        assert ((tmp_path / f"lean_{suffix}.csv").read_bytes()
                == (tmp_path / f"kept_{suffix}.csv").read_bytes())


def test_events_about_unsubmitted_and_ended_jobs(platform_file, make_workload, scripted, tmp_path):
    """A job has no state until submitted, none after its row is written: the checks still
    tell which case it is, metadata given early reaches the row, late metadata is ignored; a
    kill once the job's end was sent is refused (Batsim 4.2.1 has forgotten the job: it
    aborts)."""
    wl = make_workload([{"id": 1, "subtime": 0, "res": 1, "profile": "d10"},
                        {"id": 2, "subtime": 100, "res": 1, "profile": "d10"}])

    def early(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED" and e["data"]["job_id"] == "w0!1":
                yield "SET_JOB_METADATA", {"job_id": "w0!2", "metadata": "early"}
                yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}
            elif e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": "w0!2", "alloc": "0"}
            elif e["type"] == "JOB_COMPLETED" and e["data"]["job_id"] == "w0!1":
                yield "SET_JOB_METADATA", {"job_id": "w0!1", "metadata": "late"}

    simulate(platform_file, [wl], scripted(early), export_prefix=tmp_path / "out")
    r = rows(tmp_path / "out")
    assert r["2"]["metadata"] == "early" and r["1"]["metadata"] == ""
    assert r["1"]["final_state"] == r["2"]["final_state"] == "COMPLETED_SUCCESSFULLY"

    def late_kill(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED" and e["data"]["job_id"] == "w0!1":
                yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}
            elif e["type"] == "JOB_COMPLETED":
                yield "KILL_JOB", {"job_ids": ["w0!1"]}
    with pytest.raises(SimulationError, match="end was already reported") as err:
        simulate(platform_file, [wl], scripted(late_kill), export_prefix=None)
    assert err.value.job == "w0!1"

    for decision, message in (
            (("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "1"}), "not submitted yet"),
            (("REJECT_JOB", {"job_id": "w0!2"}), "not submitted yet"),
            (("KILL_JOB", {"job_ids": ["w0!2"]}), "not running nor complete")):
        def react(msg, s, decision=decision):
            if any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
                yield decision
        with pytest.raises(SimulationError, match=message) as err:
            simulate(platform_file, [wl], scripted(react), export_prefix=None)
        assert err.value.job == "w0!2"

    def twice(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "REJECT_JOB", {"job_id": e["data"]["job_id"]}
            elif e["type"] == "NOTIFY":
                yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}
    with pytest.raises(SimulationError, match="execute a job that is rejected"):
        simulate(platform_file, [wl], scripted(twice), export_prefix=None)


def test_a_failed_run_leaves_the_old_outputs(platform_file, make_workload, fcfs, scripted,
                                              tmp_path):
    """Outputs are written while the run goes, into temporaries: a run that fails midway
    leaves the previous files as they were and no temporary behind."""
    wl = make_workload([{"id": i, "subtime": 20 * i, "res": 1, "profile": "d10"}
                        for i in range(5)])
    simulate(platform_file, [wl], fcfs(), export_prefix=tmp_path / "out")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def bad(msg, s):
        if any(e["type"] == "JOB_COMPLETED" for e in msg["events"]):
            yield "EXECUTE_JOB", {"job_id": "w0!nope", "alloc": "0"}
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                yield "EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": "0"}

    with pytest.raises(SimulationError, match="unknown job"):
        simulate(platform_file, [wl], scripted(bad), export_prefix=tmp_path / "out")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_an_allocation_of_several_ranges_reads_as_its_list_of_ids():
    """The ids of an allocation kept as its ranges (no list of every id) answer length, any
    index (negative too), iteration and membership as the list would, and an index beyond
    it is an IndexError."""
    import random

    from mrsched.schedulers.batsim.intervals import RunIds, canonical_runs

    rng = random.Random(5)
    for _ in range(300):
        ids = sorted(rng.sample(range(400), rng.randint(1, 120)))
        runs = canonical_runs(format_intervals(ids))
        got = RunIds(runs)
        assert len(got) == len(ids) and list(got) == ids and got == ids
        for k in range(-len(ids), len(ids)):
            assert got[k] == ids[k]
        for rid in range(-2, 402):
            assert (rid in got) == (rid in ids)
        assert "3" not in got
        for k in (len(ids), -len(ids) - 1):
            with pytest.raises(IndexError, match=f"of an allocation of {len(ids)} resources"):
                got[k]


def test_machine_times_are_batsims_long_double_sums(platform_file, make_workload, fcfs):
    """``time_idle`` and ``time_computing``: each machine's times in long double, one state
    change after the other, then the machines summed in order (``Machine::
    update_machine_state``, ``src/export.cpp`` 1078-1099), written out here from the jobs'
    exact start and end times; fractional delays make double sums differ in their last bits."""
    import random

    import numpy as np

    from mrsched.simulator.engine import Engine
    from mrsched.simulator.workload import load_workloads

    rng = random.Random(7)
    delays = {f"d{i}": {"type": "delay", "delay": round(rng.uniform(0.1, 900), 6)}
              for i in range(40)}
    jobs = [{"id": i, "subtime": round(i * 37.1234567, 6), "res": rng.randint(1, 4),
             "profile": f"d{rng.randrange(40)}"} for i in range(300)]
    engine = Engine(platform_file, load_workloads([make_workload(jobs, delays)]), fcfs(),
                    export_prefix=None)
    result = engine.run()
    ld = np.longdouble
    changes = sorted((t, kind, r) for rec in result.jobs
                     for r in parse_ids(rec.alloc, job=rec.local_id)
                     for t, kind in ((rec.starting_time, 1), (rec.finish_time, 0)))
    idle, comp, last = [ld(0)] * 4, [ld(0)] * 4, [ld(0)] * 4
    for t, starts, r in changes:            # a machine ends one job before it starts the next
        if starts:
            idle[r] += ld(t) - last[r]
        else:
            comp[r] += ld(t) - last[r]
        last[r] = ld(t)
    want_idle, want_comp = ld(0), ld(0)
    for r in range(4):
        want_idle += idle[r]
        want_comp += comp[r]
    m = engine.machines
    assert m.state_times() == (float(want_idle), float(want_comp))


def test_storage_machines_of_an_allocation_count_as_batsims(make_workload, scripted, tmp_path):
    """A job given compute and storage machines (a text of several ranges, read as ``RunIds``):
    the storage ones compute while it runs, in the machine-state rows (counted from the
    compute machines' idle count, as Batsim's) and in ``time_computing``."""
    from pathlib import Path

    platform = Path(__file__).parent / "cases" / "contention_io" / "platform.xml"   # 8 + 4 storage
    wl = make_workload([{"id": 0, "subtime": 0, "res": 4, "profile": "d10"}], nb_res=8)

    def react(msg, sched):
        return [("EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": "0-1 8-9"})
                for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]

    res = simulate(platform, [wl], scripted(react), export_prefix=tmp_path / "out")
    states = (tmp_path / "out_machine_states.csv").read_text().splitlines()[1:]
    assert [s.split(",")[4:] for s in states] == [["4", "4"], ["8", "0"]]   # idle, computing
    assert float(res.schedule["time_computing"]) == 40.0    # 4 machines x 10 s
