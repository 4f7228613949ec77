"""`mrsched platform ... --wattage IDLE:ALLCORES`: every compute host (and every <cluster>)
gets SimGrid's wattage_per_state; storage and PFS hosts `--storage-wattage` (0:0 unless told:
under -E Batsim reads every machine's energy, and SimGrid aborts on a host without one); the
master none."""

from __future__ import annotations

import pytest

from mrsched.cli import main
from mrsched.simulator.energy import load_powers
from mrsched.simulator.platform import load_platform


@pytest.mark.parametrize("kind, args", [("dragonfly", []), ("iotree", ["--units", "2", "--nodes-per-unit", "3"]),
                                        ("cluster", ["--nodes", "4", "--storage", "1"])])
@pytest.mark.parametrize("storage", [None, "12:12"])
def test_compute_hosts_get_the_wattage(tmp_path, kind, args, storage):
    out = tmp_path / f"{kind}.xml"
    flags = ["--storage-wattage", storage] if storage else []
    assert main(["platform", kind, *args, "--wattage", "95:190", *flags, "-o", str(out)]) == 0
    platform = load_platform(str(out))
    hosts = platform.resources(None)
    powers = load_powers(platform, [h.name for h in hosts])
    for host, power in zip(hosts, powers):
        if host.role == "compute":
            assert (power.ranges[0].idle, power.ranges[0].max) == (95.0, 190.0), host.name
        else:
            watts = 12.0 if storage else 0.0
            assert host.role == "storage" and len(power.ranges) == 1, host.name
            assert (power.ranges[0].idle, power.ranges[0].max) == (watts, watts), host.name
    assert any(h.role != "compute" for h in hosts)
    assert "wattage_per_state" not in platform.master_host().properties


def test_without_the_flag_nothing_changes_and_a_bad_value_is_refused(tmp_path, capsys):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    assert main(["platform", "cluster", "--nodes", "2", "-o", str(a)]) == 0
    assert "wattage" not in a.read_text()
    assert main(["platform", "cluster", "--nodes", "2", "--wattage", "95", "-o", str(b)]) != 0
    assert "--wattage must be IDLE:ALLCORES" in capsys.readouterr().err


@pytest.mark.parametrize("kind, args", [("dragonfly", []), ("iotree", ["--units", "2", "--nodes-per-unit", "3"]),
                                        ("cluster", ["--nodes", "4", "--storage", "1"])])
def test_sleep_pstates_as_batsim_reads_them(tmp_path, kind, args):
    """--sleep-wattage: pstate 1 sleeps at its watts, 2 and 3 are the virtual switch-off / -on
    pstates at 1 / duration flop/s drawing their watts; the engine's energy model (Batsim's
    reading of sleep_pstates) finds them on every compute host, and on no other."""
    out = tmp_path / f"{kind}.xml"
    assert main(["platform", kind, *args, "--wattage", "95:190", "--sleep-wattage", "9.75",
                 "--switch-on", "20:150", "-o", str(out)]) == 0
    platform = load_platform(str(out))
    hosts = platform.resources(None)
    powers = load_powers(platform, [h.name for h in hosts])
    for host, power in zip(hosts, powers):
        if host.role != "compute":
            assert [(r.idle, r.max) for r in power.ranges] == [(0.0, 0.0)] and not power.sleep, host.name
            continue
        assert power.sleep == {1: (2, 3)}, host.name
        assert [(r.idle, r.max) for r in power.ranges] == [(95.0, 190.0), (9.75, 9.75),
                                                          (100.997, 100.997), (150.0, 150.0)]
        assert host.speeds[0] == 1e9 and host.speeds[2] == pytest.approx(1 / 6.1)
        assert host.speeds[3] == pytest.approx(1 / 20.0)


@pytest.mark.parametrize("args, message", [
    (["--sleep-wattage", "9"], "--sleep-wattage needs --wattage"),
    (["--wattage", "1:2", "--sleep-wattage", "-1"], "--sleep-wattage: watts must be a number >= 0, got '-1'"),
    (["--wattage", "1:2", "--sleep-wattage", "nan"], "--sleep-wattage: watts must be a number >= 0"),
    (["--wattage", "1:2", "--sleep-wattage", "5", "--switch-on", "0:3"], "--switch-on: seconds must be a number > 0"),
    (["--wattage", "1:2", "--sleep-wattage", "5", "--switch-off", "2"], "--switch-off must be SECONDS:WATTS"),
    (["--wattage", "1:2", "--sleep-wattage", "5", "--switch-off", "2:x"], "--switch-off: watts must be a number"),
    (["--wattage", "1:2", "--switch-on", "2:3"], "--switch-on needs --sleep-wattage"),
])
def test_bad_sleep_values_are_one_line_naming_the_option(tmp_path, capsys, args, message):
    out = tmp_path / "c.xml"
    assert main(["platform", "cluster", "--nodes", "2", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_idle_sleep_runs_on_a_generated_dragonfly(tmp_path):
    """The generated Dragonfly with sleep pstates: idle nodes sleep and wake under -E (the
    engine acknowledges each request after the switch's 1 flop), every job completes."""
    import csv
    import json

    from mrsched.analysis import load_run

    pf, wl = tmp_path / "df.xml", tmp_path / "w.json"
    assert main(["platform", "dragonfly", "--wattage", "95:190", "--sleep-wattage", "9.75",
                 "--switch-off", "2:100", "--switch-on", "10:125", "-o", str(pf)]) == 0
    jobs = [{"id": i, "subtime": 400.0 * i, "res": 4, "walltime": 100, "profile": "d"} for i in range(4)]
    wl.write_text(json.dumps({"nb_res": 96, "jobs": jobs,
                              "profiles": {"d": {"type": "delay", "delay": 50}}}))
    out = tmp_path / "run"
    assert main(["run", "-p", str(pf), "-w", str(wl), "--policy", "fcfs", "--energy",
                 "-O", "idle_sleep=60", "-o", str(out)]) == 0
    run = load_run(out)
    assert (run.jobs["final_state"] == "COMPLETED_SUCCESSFULLY").all()
    changes = list(csv.DictReader(open(out / "out_pstate_changes.csv")))
    assert {"1", "0"} <= {r["new_pstate"] for r in changes}
    assert float(run.jobs["waiting_time"].max()) == pytest.approx(10.0, abs=0.01)   # a switch-on
