"""Batsim 4.2.1's energy model in the engine (``-E``): recorded real runs replayed and served,
message for message and file for file, in both step loops; Batsim's refusals and aborts.

Recorded cases: ``../shared/batsim-reference/energysleep`` and ``energydvfs`` (scripted_sched.py,
see its README, "Energy cases"), and this folder's ``cases/`` recorded for this module with real
Batsim 4.2.1 (command.txt in each): ``energyprobe`` (energy_probe.py: a pstate change under a
running job, a walltime reached, requests never acknowledged, two QUERYs at once, switches over
a network with latency, machines put to sleep after the last job), ``sleeper`` and
``sleeper128`` (batsched's ``sleeper`` on the energysleep platform and on the 16-host cut of
``cluster_energy_128.xml``), and one case per other energy variant of batsched 1.4.0 that ends
(``energy_watcher``, ``energy_bf``, ``energy_bf_dicho``, ``energy_bf_idle_sleeper``,
``energy_bf_monitoring_inertial``, ``energy_bf_subpart_sleeper``: the energydvfs inputs, recorded
with ``bench/batsched_variants.py``'s options; ``cases/README.md``).

Every output file must be Batsim's byte for byte, except ``epower`` in
``_consumed_energy.csv`` where it may differ by one unit of its sixth decimal: it is an energy
difference over a time difference, and at an exact decimal tie (energydvfs: 2104.9885625 W
twice) the side it rounds to depends on the last bit of the energies.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mrsched.errors import PlatformError, ProtocolError, SimulationError
from mrsched.simulator import kernel as kernel_mod
from mrsched.simulator.energy import fmt_ld, load_powers
from mrsched.simulator.engine import simulate
from mrsched.simulator.platform import load_platform
from mrsched.simulator.replay import load_transcript
from test_fidelity import (_close, _free_port, _listening, _run_engine, compare_all_messages,
                           compare_jobs_rows, replay_of)

CASES = Path(__file__).parent / "cases"
#: every -E case of ``cases/`` (they hold Batsim's energy outputs)
RECORDED = sorted(d.name for d in CASES.iterdir() if (d / "out_consumed_energy.csv").is_file())
SHARED = ["energysleep", "energydvfs"]
from test_batsim_cases import KNOWN_GAPS  # noqa: E402  (what the engine does not reproduce yet)
WALL_CLOCK = ("scheduling_time", "simulation_time")


def _case_dir(case: str, shared_dir_fixture) -> Path:
    if case in RECORDED:
        return CASES / case
    return shared_dir_fixture() / "batsim-reference" / case


@pytest.fixture
def case_dir(request):
    case = request.param

    def shared():
        return request.getfixturevalue("shared_dir")
    return _case_dir(case, shared)


def _schedule(path: Path) -> dict:
    with open(path) as fh:
        return {k: v for k, v in next(csv.DictReader(fh)).items() if k not in WALL_CLOCK}


def compare_energy_files(ref: Path, mine: Path) -> None:
    """Every output of a -E run, as Batsim wrote it (``epower``: see the module doc)."""
    compare_jobs_rows(ref / "out_jobs.csv", mine / "out_jobs.csv")
    for name in ("jobs", "machine_states", "pstate_changes"):
        assert (mine / f"out_{name}.csv").read_text() == (ref / f"out_{name}.csv").read_text(), name
    got = (mine / "out_consumed_energy.csv").read_text().splitlines()
    want = (ref / "out_consumed_energy.csv").read_text().splitlines()
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if a != b:
            *head_a, pa = a.split(",")
            *head_b, pb = b.split(",")
            assert head_a == head_b, (a, b)
            assert abs(float(pa) - float(pb)) <= 1.5e-6, (a, b)
    assert _schedule(mine / "out_schedule.csv") == _schedule(ref / "out_schedule.csv")


def _replay(case_dir: Path, out: Path):
    transcript = load_transcript(case_dir / "transcript.jsonl")
    result = _run_engine(case_dir, replay_of(case_dir, transcript), out / "out")
    return transcript, result


def _in_mode(compiled: bool, run):
    saved = kernel_mod._compiled_steps
    kernel_mod.use_compiled_steps(compiled)
    try:
        return run()
    finally:
        kernel_mod.use_compiled_steps(saved)


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
@pytest.mark.parametrize("case_dir", [
    pytest.param(c, marks=[pytest.mark.xfail(reason=KNOWN_GAPS[c], strict=True)])
    if c in KNOWN_GAPS else c for c in RECORDED + SHARED], indirect=True)
def test_recorded_energy_runs_replayed(case_dir, compiled, tmp_path, require):
    """The recorded decisions replayed: Batsim's messages (ANSWERs and RESOURCE_STATE_CHANGED
    included) and every output file, in either step loop."""
    if compiled:
        require(kernel_mod._steps is not None, "the compiled step loop was not built")
    transcript, result = _in_mode(compiled, lambda: _replay(case_dir, tmp_path))
    compare_all_messages(transcript, result.transcript)
    compare_energy_files(case_dir, tmp_path)
    assert set(result.paths) >= {"consumed_energy", "pstate_changes"}


def test_energyprobe_served_live(tmp_path, require):
    """energy_probe.py, the scheduler that answered Batsim, served over ZeroMQ: the same run."""
    require(shutil.which(sys.executable) is not None, "no Python interpreter")
    from mrsched.simulator.connection import ZmqScheduler

    case = CASES / "energyprobe"
    for _attempt in range(5):
        port = _free_port()
        proc = subprocess.Popen([sys.executable, str(case / "energy_probe.py"),
                                 f"tcp://127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        import time

        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline and not _listening(proc.pid,
                                                                                       port):
            time.sleep(0.05)
        if proc.poll() is None:
            break
    try:
        with ZmqScheduler(f"tcp://127.0.0.1:{port}", timeout=60) as conn:
            result = _run_engine(case, conn, tmp_path / "out")
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    transcript = load_transcript(case / "transcript.jsonl")
    compare_all_messages(transcript, result.transcript)
    rec = [e["msg"] for e in transcript if e["from"] == "scheduler"]
    mine = [e["msg"] for e in result.transcript if e["from"] == "scheduler"]
    assert [[(e["type"], e["data"]) for e in m["events"]] for m in mine] == \
        [[(e["type"], e["data"]) for e in m["events"]] for m in rec]
    assert all(_close(a["now"], b["now"]) for a, b in zip(mine, rec))
    compare_energy_files(case, tmp_path)


@pytest.mark.parametrize("case", ["sleeper", "sleeper128"])
def test_batsched_sleeper_served_live(case, tmp_path):
    """batsched's sleeper, when built on this machine (../shared/tools/build_refs.sh; CI does
    not build it: the recorded cases stand for it there), served live: Batsim's run again."""
    batsched = os.environ.get("MRSCHED_BATSCHED", "/opt/batsched-local/bin/batsched")
    if not os.access(batsched, os.X_OK):
        pytest.skip(f"batsched is not built here ({batsched}; set MRSCHED_BATSCHED)")
    from mrsched.simulator.connection import ZmqScheduler

    cmd = (CASES / case / "command.txt").read_text()
    options = cmd.split("--variant_options='")[1].split("'")[0]
    port = _free_port()
    proc = subprocess.Popen([batsched, "-v", "sleeper", "--variant_options", options,
                             "-s", f"tcp://127.0.0.1:{port}", "--verbosity", "quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with ZmqScheduler(f"tcp://127.0.0.1:{port}", timeout=60) as conn:
            result = _run_engine(CASES / case, conn, tmp_path / "out")
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    compare_all_messages(load_transcript(CASES / case / "transcript.jsonl"), result.transcript)
    compare_energy_files(CASES / case, tmp_path)


def test_energy_flag_changes_no_message(shared_dir, tmp_path):
    """energy128 recorded without -E, run with it: the same messages (Batsim's -E changes no
    protocol message), and now each job's consumed energy in _jobs.csv."""
    case = shared_dir / "batsim-reference" / "energy128"
    transcript = load_transcript(case / "transcript.jsonl")
    result = simulate(case / "platform.xml", [case / "workload.json"],
                      replay_of(case, transcript), export_prefix=tmp_path / "out",
                      record_transcript=True, energy=True)
    compare_all_messages(transcript, result.transcript)
    with open(tmp_path / "out_jobs.csv") as fh:
        energies = [float(row["consumed_energy"]) for row in csv.DictReader(fh)]
    assert energies and all(e > 0 for e in energies)
    assert (tmp_path / "out_consumed_energy.csv").read_text().startswith(
        "time,energy,event_type,wattmin,epower\n")


# -- refusals and aborts -----------------------------------------------------------------------
ENERGY_PLATFORM = CASES / "sleeper" / "platform.xml"   # 7 hosts; pstates 0 compute, 1 sleep


class Scripted:
    """A scheduler answering each message with the next list of events (stamped at its now)."""

    def __init__(self, *replies, on_submit=()):
        self.replies = list(replies)
        self.on_submit = list(on_submit)
        self.answers = []

    def handle_message(self, msg):
        events = []
        for ev in msg["events"]:
            if ev["type"] == "ANSWER":
                self.answers.append(ev["data"]["consumed_energy"])
            if ev["type"] == "JOB_SUBMITTED" and self.on_submit:
                events.extend(self.on_submit.pop(0))
        if not events and self.replies and not any(
                e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
            events = self.replies.pop(0)
        return {"now": msg["now"], "events": [{"timestamp": msg["now"], "type": t, "data": d}
                                              for t, d in events]}


def _workload(path: Path, jobs) -> Path:
    wl = {"nb_res": 7, "jobs": [{"id": i, "subtime": t, "walltime": 100, "res": res,
                                 "profile": prof} for i, (t, res, prof) in enumerate(jobs)],
          "profiles": {"d10": {"type": "delay", "delay": 10},
                       "c1e9": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}}
    path.write_text(json.dumps(wl))
    return path


def _run(tmp_path, scheduler, jobs=((1.0, 1, "d10"),), energy=True, platform=ENERGY_PLATFORM):
    return simulate(platform, [_workload(tmp_path / "w.json", jobs)], scheduler,
                    export_prefix=tmp_path / "out", energy=energy)


SLEEP_ALL = ("SET_RESOURCE_STATE", {"resources": "0-6", "state": "1"})
QUERY = ("QUERY", {"requests": {"consumed_energy": {}}})


def test_a_machine_without_wattage_stops_an_energy_run_as_simgrid_aborts(tmp_path):
    """Under -E Batsim reads every machine's energy at the first submission, storage hosts
    included; SimGrid aborts on a host without wattage_per_state (``host_energy.cpp`` 536;
    recorded with Batsim 4.2.1 on ``energy_storage``'s platform without its storage wattage:
    "No power range properties specified for host bb_0"). The engine stops with an error
    naming the host; with the wattage the same run goes through (the recorded case)."""
    import re

    xml = (CASES / "energy_storage" / "platform.xml").read_text()
    bare = re.sub(r'\s*<prop id="wattage_per_state" value="0:0"/>', "", xml)
    assert bare != xml and 'value="0:0"' not in bare
    (tmp_path / "p.xml").write_text(bare)
    with pytest.raises(SimulationError, match="host bb_0 has no wattage_per_state") as err:
        _run(tmp_path, Scripted([]), platform=tmp_path / "p.xml")
    assert err.value.field == "wattage_per_state"
    assert not list(tmp_path.glob("out_*.csv"))        # no half-written outputs
    from mrsched.schedulers.registry import make_scheduler

    done = _run(tmp_path, make_scheduler("fcfs", {}), platform=tmp_path / "p.xml", energy=False)
    assert [r.final_state for r in done.jobs] == ["COMPLETED_SUCCESSFULLY"]   # without -E: no read


def test_without_energy_batsim_refuses_pstates_and_energy_queries(tmp_path):
    with pytest.raises(SimulationError, match="energy model"):
        _run(tmp_path, Scripted([SLEEP_ALL]), energy=False)
    with pytest.raises(SimulationError, match="energy model"):
        _run(tmp_path, Scripted([QUERY]), energy=False)


@pytest.mark.parametrize("energy", [False, True])
@pytest.mark.parametrize("data", [{"requests": {"consumed_energy": {}}, "x": 1},
                                  {"requests": {}}, {"requests": {"waiting_time": {}}},
                                  {"requests": {"consumed_energy": {"a": 1}}}])
def test_a_malformed_query_is_refused_as_batsim_reads_it(tmp_path, energy, data):
    with pytest.raises(ProtocolError):
        _run(tmp_path, Scripted([("QUERY", data)]), energy=energy)


@pytest.mark.parametrize("data, error", [
    ({"resources": "0", "state": "1", "x": 2}, ProtocolError),
    ({"resources": "0", "state": "one"}, ProtocolError),
    ({"resources": "0", "state": 1}, ProtocolError),
    ({"resources": "9", "state": "1"}, SimulationError),
    ({"resources": "0", "state": "7"}, SimulationError),   # no pstate 7
])
def test_a_bad_pstate_request_is_refused(tmp_path, data, error):
    with pytest.raises(error):
        _run(tmp_path, Scripted([("SET_RESOURCE_STATE", data)]))


def test_sleep_to_sleep_aborts_as_batsim(tmp_path):
    """Asleep (pstate 1), host 0 is asked for pstate 1 again: Batsim's assertion."""
    sched = Scripted([SLEEP_ALL], [], [("SET_RESOURCE_STATE", {"resources": "0", "state": "1"})])
    with pytest.raises(SimulationError, match="sleeps in pstate 1"):
        _run(tmp_path, sched, jobs=((1.0, 1, "d10"), (5.0, 1, "d10")))


@pytest.mark.parametrize("when, what", [(1.0, "switching_off"), (5.0, "sleeping")])
def test_a_job_on_a_machine_that_cannot_compute_aborts(tmp_path, when, what):
    """Host 0 switches off for 2 s from time 0: a job there at 1 s (switching) or at 5 s
    (asleep) aborts Batsim (server.cpp 982-1005)."""
    sched = Scripted([SLEEP_ALL], on_submit=[[("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0"})]])
    with pytest.raises(SimulationError, match=f"cannot compute jobs now.*{what}"):
        _run(tmp_path, sched, jobs=((when, 1, "d10"),))


def test_queries_answer_the_platform_energy(tmp_path):
    """Seven idle hosts at 30 W for 1 s (Idle of pstate 0), then one more second (a delay job
    draws Idle too): two ANSWERs."""
    sched = Scripted(on_submit=[[QUERY, ("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0"})],
                                [QUERY, ("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "1"})]])
    result = _run(tmp_path, sched, jobs=((1.0, 1, "d10"), (2.0, 1, "d10")))
    assert sched.answers == [210.0, 420.0]
    assert result.paths["consumed_energy"].exists()


def test_a_pstate_change_under_a_running_job_changes_its_speed(tmp_path):
    """energydvfs's platform: a 1e9-flop job at 100 Mflop/s; at 5 s its host goes to pstate 10
    (50.088809946714036 Mflop/s): the last 5e8 flops take 9.98226... s more."""
    case = Path(__file__).parent / "cases" / "sleeper128"
    wl = {"nb_res": 16, "jobs": [{"id": 0, "subtime": 0, "walltime": -1, "res": 1, "profile": "c"},
                                 {"id": 1, "subtime": 5, "walltime": -1, "res": 1, "profile": "d"}],
          "profiles": {"c": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
                       "d": {"type": "delay", "delay": 1}}}
    (tmp_path / "w.json").write_text(json.dumps(wl))
    sched = Scripted(on_submit=[[("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0"})],
                                [("SET_RESOURCE_STATE", {"resources": "0", "state": "10"}),
                                 ("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "1"})]])
    result = simulate(case / "platform.xml", [tmp_path / "w.json"], sched,
                      export_prefix=tmp_path / "out", energy=True)
    job = next(r for r in result.jobs if r.local_id == "0")
    speed = 50.088809946714036e6
    assert job.finish_time - job.starting_time == pytest.approx(5 + 5e8 / speed, abs=1e-2)
    assert job.finish_time > 14.9


# -- the platform's energy properties ------------------------------------------------------------
def _platform(tmp_path: Path, speed: str, props: dict[str, str]) -> Path:
    text = "".join(f'<prop id="{k}" value="{v}"/>' for k, v in props.items())
    path = tmp_path / "p.xml"
    path.write_text(f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
<host id="master_host" speed="1Gf"/>
<host id="h0" speed="{speed}">{text}</host>
</zone></platform>""")
    return path


@pytest.mark.parametrize("speed, props, match", [
    ("1Gf, 1e-9Mf", {"wattage_per_state": "100:200"}, "2 pstates"),
    ("1Gf", {"wattage_per_state": "100:150:200:250"}, "Idle:AllCores"),
    ("1Gf", {"wattage_per_state": "100:abc"}, "invalid power value"),
    ("1Gf", {"wattage_per_state": "100:200 "}, "invalid power value"),
    ("1Gf, 1e-9Mf, 1f, 1f", {"sleep_pstates": "1:2"}, "three colon-separated"),
    ("1Gf, 1e-9Mf, 1f, 1f", {"sleep_pstates": "1:2:x"}, "not unsigned integers"),
    ("1Gf, 1e-9Mf, 1f, 1f", {"sleep_pstates": "1:2:4"}, "pstate 4"),
    ("1Gf, 1e-9Mf, 1f, 1f", {"sleep_pstates": "1:2:3,3:1:2"}, "virtual transition"),
    ("1Gf, 0f", {}, "non-positive speed"),
])
def test_bad_energy_properties_are_refused_in_one_line(tmp_path, speed, props, match):
    platform = load_platform(str(_platform(tmp_path, speed, props)))
    with pytest.raises(PlatformError, match=match) as err:
        load_powers(platform, ["h0"])
    assert "\n" not in str(err.value) and "p.xml" in str(err.value)


def test_energy_properties_as_simgrid_and_batsim_read_them(tmp_path):
    platform = load_platform(str(_platform(tmp_path, "100Mf, 1e-9Mf, 0.5f, 0.05f", {
        "wattage_per_state": "30.0:100.0, 9.75:9.75, 200:200, 425.5:1:425.5",
        "sleep_pstates": "1:2:3"})))
    power, = load_powers(platform, ["h0"])
    assert power.kinds == {0: "computation", 1: "sleep", 2: "virtual", 3: "virtual"}
    assert power.sleep == {1: (2, 3)}    # sleep:off:on
    assert (power.ranges[0].idle, power.ranges[0].epsilon, power.ranges[0].max) == (30, 30, 100)
    assert (power.ranges[3].idle, power.ranges[3].epsilon, power.ranges[3].max) == (425.5, 1, 425.5)
    assert power.speeds == (1e8, 1e-3, 0.5, 0.05)


def test_long_doubles_print_as_c_does():
    import numpy as np

    assert fmt_ld(np.longdouble(0)) == "0.000000"
    assert fmt_ld(np.longdouble("2.5e-7")) == "0.000000"     # below half a unit
    assert fmt_ld(np.longdouble(1) / np.longdouble(3)) == "0.333333"
    assert fmt_ld(np.longdouble(-1.5)) == "-1.500000"
    assert fmt_ld(np.longdouble(0.0000005)) == f"{0.0000005:.6f}"   # half to even, as printf
    assert fmt_ld(np.longdouble(123456789.0000015)) == f"{123456789.0000015:.6f}"


def test_simulate_cli_takes_the_energy_flag(tmp_path):
    """``mrsched simulate -E --replay``: the energy files are written beside the others."""
    from mrsched.cli import main

    case = CASES / "sleeper"
    prefix = tmp_path / "cli"
    code = main(["simulate", "-p", str(case / "platform.xml"), "-w", str(case / "workload.json"),
                 "-e", str(prefix), "-E", "--replay", str(case / "transcript.jsonl"), "-q"])
    assert code == 0
    assert (Path(f"{prefix}_pstate_changes.csv").read_text()
            == (case / "out_pstate_changes.csv").read_text())
