"""The I/O-phased job model at the protocol level: what the scheduler sends, phase by phase."""

from __future__ import annotations

import pytest
from engine_run import begins_data

from mrsched.errors import ConfigError
from mrsched.schedulers.registry import make_scheduler

GB = 10**9
HOUR = 3600e9


def begins(nodes: int = 4, *, pfs: bool = True, dynamic: bool = True) -> dict:
    storage = [{"bb_capacity": 20 * GB}] + ([{"name": "pfs", "pfs": "true"}] if pfs else [])
    data = begins_data(nodes, storage=storage)
    data["config"]["dynamic-jobs-enabled"] = dynamic
    data["profiles"] = {"w0": {"p": {"type": "parallel_homogeneous", "cpu": 2 * HOUR, "com": 0},
                               "short": {"type": "delay", "delay": 100}}}
    return data


class Driver:
    """Sends hand-made messages; ``now`` grows by one second per message unless given."""

    def __init__(self, sched, data: dict):
        self.sched = sched
        self.now = 0.0
        self.allocs: dict[str, str] = {}
        self.reply = sched.handle_message({"now": 0.0, "events": [
            {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": data}]})

    def send(self, *events: tuple[str, dict], now: float | None = None) -> list[dict]:
        self.now = self.now + 1 if now is None else now
        msg = {"now": self.now, "events": [{"timestamp": self.now, "type": t, "data": d} for t, d in events]}
        self.reply = self.sched.handle_message(msg)
        for e in self.reply["events"]:       # Batsim completes a job on the alloc it was given
            if e["type"] == "EXECUTE_JOB":
                self.allocs[e["data"]["job_id"]] = e["data"]["alloc"]
        return self.reply["events"]

    def submit(self, jid: int, *, res: int = 2, bb: int = 4 * GB, walltime: float = 1e5, profile: str = "p"):
        return self.send(("JOB_SUBMITTED", {"job_id": f"w0!{jid}", "job": {
            "id": f"w0!{jid}", "subtime": self.now + 1, "res": res, "walltime": walltime, "profile": profile,
            "burst_buffer": bb}}))

    def complete(self, *jids: str, state: str = "COMPLETED_SUCCESSFULLY"):
        return self.send(*[("JOB_COMPLETED", {"job_id": j, "job_state": state, "return_code": 0,
                                               "alloc": self.allocs.get(j, "0")})
                           for j in jids])


def kinds(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def executed(events: list[dict]) -> list[str]:
    return [e["data"]["job_id"] for e in events if e["type"] == "EXECUTE_JOB"]


def test_start_registers_the_stage_in_then_rejects_the_parent():
    d = Driver(make_scheduler("fcfs-bb", {"job_model": "io-phased"}), begins())
    ev = d.submit(1)
    assert kinds(ev) == ["REGISTER_PROFILE", "REGISTER_JOB", "EXECUTE_JOB", "SET_JOB_METADATA", "REJECT_JOB"]
    prof, job, exe, meta, rej = (e["data"] for e in ev)
    assert prof["workload_name"] == "w0-io" and prof["profile_name"] == "1.0.stage_in"
    assert prof["profile"] == {"type": "data_staging", "nb_bytes": 4 * GB, "from": "pfs", "to": "bb"}
    assert job["job_id"] == "w0-io!1.0.stage_in" and job["job"]["res"] == 2
    assert job["job"]["walltime"] == pytest.approx(1e5)
    assert exe["alloc"] == "4-5" and exe["storage_mapping"] == {"pfs": 5, "bb": 4}
    assert meta == {"job_id": "w0!1", "metadata": "io-phased"} and rej == {"job_id": "w0!1"}


def test_phases_follow_each_other_and_drains_start_beside_the_next_phase():
    d = Driver(make_scheduler("fcfs-bb", {"job_model": "io-phased"}), begins())
    d.submit(1)
    assert executed(d.complete("w0-io!1.0.stage_in")) == ["w0-io!1.1.compute"]
    ev = d.complete("w0-io!1.1.compute")
    assert executed(ev) == ["w0-io!1.2.checkpoint"]
    ckpt = next(e for e in ev if e["type"] == "REGISTER_PROFILE")["data"]["profile"]
    assert ckpt == {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0, "bytes_to_write": 1 * GB,
                    "storage": "bb"}
    assert executed(d.complete("w0-io!1.2.checkpoint")) == ["w0-io!1.4.compute", "w0-io!1.3.drain"]
    # the drain ending starts nothing; the walltime left shrinks with time
    assert executed(d.complete("w0-io!1.3.drain")) == []
    ev = d.complete("w0-io!1.4.compute")
    assert executed(ev) == ["w0-io!1.5.checkpoint"]
    reg = next(e for e in ev if e["type"] == "REGISTER_JOB")["data"]["job"]
    assert reg["walltime"] == pytest.approx(1e5 - (d.now - 1))
    assert executed(d.complete("w0-io!1.5.checkpoint")) == ["w0-io!1.7.stage_out", "w0-io!1.6.drain"]


def test_resources_are_held_until_the_last_phase_and_registration_finishes_last():
    d = Driver(make_scheduler("fcfs-bb", {"job_model": "io-phased"}), begins())
    d.submit(1, res=4, profile="short")                     # 1 compute phase, whole machine
    d.submit(2, res=1, bb=1 * GB, profile="short")          # waits for job 1's nodes
    ev = d.send(("NOTIFY", {"type": "no_more_static_job_to_submit"}))
    assert "NOTIFY" not in kinds(ev)                        # job 2 waits: phases to come
    d.complete("w0-io!1.0.stage_in")
    d.complete("w0-io!1.1.compute")
    ev = d.complete("w0-io!1.2.checkpoint")
    assert executed(ev) == ["w0-io!1.4.stage_out", "w0-io!1.3.drain"]
    ev = d.complete("w0-io!1.4.stage_out")                  # the drain still runs: nodes held
    assert executed(ev) == []
    ev = d.complete("w0-io!1.3.drain")                      # job 1 over: job 2 starts
    assert executed(ev) == ["w0-io!2.0.stage_in"]
    assert "NOTIFY" not in kinds(ev)
    d.complete("w0-io!2.0.stage_in")
    d.complete("w0-io!2.1.compute")
    ev = d.complete("w0-io!2.2.checkpoint")                 # last registrations of the run
    assert kinds(ev)[-1] == "NOTIFY" and ev[-1]["data"] == {"type": "registration_finished"}
    assert executed(d.complete("w0-io!2.4.stage_out", "w0-io!2.3.drain")) == []


def test_a_failed_phase_kills_the_running_drain_and_ends_the_job():
    d = Driver(make_scheduler("fcfs-bb", {"job_model": "io-phased"}), begins())
    d.submit(1, res=4)
    d.submit(2, res=1, bb=1 * GB)
    d.complete("w0-io!1.0.stage_in")
    d.complete("w0-io!1.1.compute")
    d.complete("w0-io!1.2.checkpoint")                      # second compute + drain run
    ev = d.complete("w0-io!1.4.compute", state="COMPLETED_WALLTIME_REACHED")
    assert kinds(ev) == ["KILL_JOB"] and ev[0]["data"]["job_ids"] == ["w0-io!1.3.drain"]
    ev = d.complete("w0-io!1.3.drain", state="COMPLETED_KILLED")
    assert executed(ev) == ["w0-io!2.0.stage_in"]           # job 1's resources are free


def test_jobs_without_burst_buffer_are_executed_as_they_are():
    d = Driver(make_scheduler("sjf-bb", {"job_model": "io-phased"}), begins())
    ev = d.submit(1, bb=0)
    assert kinds(ev) == ["EXECUTE_JOB"] and ev[0]["data"]["job_id"] == "w0!1"


def test_clear_errors_without_dynamic_jobs_or_pfs():
    with pytest.raises(ConfigError, match="enable-dynamic-jobs"):
        Driver(make_scheduler("fcfs-bb", {"job_model": "io-phased"}), begins(dynamic=False))
    with pytest.raises(ConfigError, match="PFS"):
        Driver(make_scheduler("plan-2", {"job_model": "io-phased"}), begins(pfs=False))
