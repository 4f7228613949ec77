"""Every flag of Batsim 4.2.1's command line (``batsim --help`` of the real binary, kept in
``fixtures/batsim-4.2.1-help.txt``) is either done by ``mrsched simulate`` as Batsim does it or
refused by name in one line (issue 46); and what the handled ones do."""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path

import pytest

from mrsched.cli import main
from mrsched.simulator import cli
from test_engine_support import make_workload, platform_file, scripted  # noqa: F401 (fixtures)

USAGE = Path(__file__).resolve().parent / "fixtures" / "batsim-4.2.1-help.txt"


def batsim_options() -> dict[str, int]:
    """Each flag of the usage text's option lines -> how many values it takes."""
    options: dict[str, int] = {}
    for line in USAGE.read_text().splitlines():
        m = re.match(r"\s+(-[^ ].*?)(?:\s{2,}|$)", line)
        if not m:
            continue
        spec = m.group(1)
        nvalues = len(re.findall(r"<[^>]+>", spec))
        for flag in re.findall(r"(?<![\w<-])(--?[A-Za-z][\w-]*)", spec):
            options[flag] = nvalues
    # flags of the usage lines only ("batsim --version"), taking no value
    usage = USAGE.read_text().partition("Input options:")[0]
    for flag in re.findall(r"(?<![\w<-])(--?[A-Za-z][\w-]*)", usage):
        options.setdefault(flag, 0)
    return options


OPTIONS = batsim_options()
REFUSED = {flag: why for flags, _n, why in cli.REFUSED for flag in flags}


def test_the_usage_text_is_read_whole():
    """The parse finds Batsim's flags, short and long (a broken parse would check nothing)."""
    assert len(OPTIONS) == 50
    assert {"-p", "--platform", "-E", "--energy", "--WS", "--sched-cfg-file",
            "--acknowledge-dynamic-jobs", "--simgrid-version"} <= set(OPTIONS)
    assert OPTIONS["--WS"] == 2 and OPTIONS["-w"] == 1 and OPTIONS["-E"] == 0
    assert OPTIONS["--version"] == OPTIONS["--simgrid-version"] == 0


def test_every_flag_is_handled_or_refused_and_no_other():
    handled, refused = set(cli.HANDLED), set(REFUSED)
    assert not handled & refused
    assert set(OPTIONS) == handled | refused, sorted(set(OPTIONS) ^ (handled | refused))


def _values(flag: str, n: int, tmp_path: Path) -> list[str]:
    samples = {"--verbosity": "quiet", "-v": "quiet", "--mmax": "1", "--redis-port": "6380",
               "--workflow-jobs-limit": "2", "--sched-cfg-file": str(tmp_path / "cfg")}
    return [samples.get(flag, f"value{i}") for i in range(n)]


@pytest.mark.parametrize("flag", sorted(set(OPTIONS) - set(REFUSED) - {"-h", "--help",
                                                                        "--version"}))
def test_handled_flags_are_taken(flag, tmp_path):
    """A handled flag parses (with its values) and gives engine options."""
    (tmp_path / "cfg").write_text("from a file")
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    base = [] if flag in ("-p", "--platform", "-w", "--workload") else ["-p", "p.xml", "-w", "w.json"]
    if flag in ("-p", "--platform"):
        base = ["-w", "w.json"]
    elif flag in ("-w", "--workload"):
        base = ["-p", "p.xml"]
    args = parser.parse_args([*base, flag, *_values(flag, OPTIONS[flag], tmp_path)])
    if flag in ("--enable-profile-reuse",):
        with pytest.raises(Exception, match="needs --enable-dynamic-jobs"):
            cli.engine_options(args)
        args.enable_dynamic_jobs = True
    options = cli.engine_options(args)
    assert options["sched_cfg"] == ("from a file" if flag == "--sched-cfg-file" else
                                    "value0" if flag == "--sched-cfg" else "")


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_refused_flags_say_so_by_name(flag, capsys, platform_file, tmp_path):
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 1, "jobs": [], "profiles": {}}))
    code = main(["simulate", "-p", str(platform_file), "-w", str(wl), "-e", str(tmp_path / "o"),
                 flag, *_values(flag, OPTIONS[flag], tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0
    assert f"Batsim's {flag} is not supported: {REFUSED[flag]}" in err
    assert not (tmp_path / "o_jobs.csv").exists()


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--version"])
    assert exit_.value.code == 0 and "Batsim 4.2.1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "-h"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "--acknowledge-dynamic-jobs" in out
    assert "--energy" in out and "--no-sched" not in out   # refused flags are not offered


# -- what the handled flags do -----------------------------------------------------------------

def _replay_run(tmp_path: Path, platform: Path, *flags: str, nb_res: int = 4,
                reply: list | None = None):
    """One job executed on machine 0 by a replayed transcript; returns (code, prefix)."""
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": nb_res, "profiles": {"d": {"type": "delay", "delay": 1}},
                              "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}]}))
    events = reply if reply is not None else [
        {"timestamp": 0.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}}]
    lines = [{"from": "batsim", "msg": {"now": 0.0, "events": []}},
             {"from": "scheduler", "msg": {"now": 0.0, "events": []}},
             {"from": "batsim", "msg": {"now": 0.0, "events": []}},
             {"from": "scheduler", "msg": {"now": 0.0, "events": events}}]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(x) for x in lines))
    prefix = tmp_path / "o"
    code = main(["simulate", "-p", str(platform), "-w", str(wl), "-e", str(prefix), "-q",
                 "--replay", str(transcript), *flags])
    return code, prefix


def test_machine_state_tracing_can_be_disabled(platform_file, tmp_path):
    code, prefix = _replay_run(tmp_path, platform_file, "--disable-machine-state-tracing",
                               "--disable-schedule-tracing")
    assert code == 0 and Path(f"{prefix}_jobs.csv").exists()
    assert Path(f"{prefix}_schedule.csv").exists()
    assert not Path(f"{prefix}_machine_states.csv").exists()


def test_mmax_workload_limits_the_machines(platform_file, tmp_path, capsys):
    """--mmax-workload: as many compute machines as the largest nb_res (2 of 4 here): machine 3
    is no compute resource then, and --mmax 1 narrows it further."""
    code, _ = _replay_run(tmp_path, platform_file, "--mmax-workload", nb_res=2, reply=[
        {"timestamp": 0.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "3"}}])
    assert code == 2 and "names resource 3, the platform has ids 0-1" in capsys.readouterr().err
    code, prefix = _replay_run(tmp_path, platform_file, "--mmax-workload", "--mmax", "1",
                               nb_res=2)
    assert code == 0
    with open(f"{prefix}_schedule.csv") as fh:
        assert next(csv.DictReader(fh))["nb_computing_machines"] == "1"


def test_mmax_zero_is_no_limit(platform_file, tmp_path):
    code, prefix = _replay_run(tmp_path, platform_file, "--mmax", "0")
    with open(f"{prefix}_schedule.csv") as fh:
        assert code == 0 and next(csv.DictReader(fh))["nb_computing_machines"] == "4"


def test_config_flags_reach_simulation_begins(platform_file, tmp_path):
    from mrsched.simulator.engine import simulate

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    (tmp_path / "cfg").write_text('{"a": 1}\n')
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 1, "jobs": [], "profiles": {}}))
    args = parser.parse_args(["-p", str(platform_file), "-w", str(wl), "--redis-hostname", "h",
                              "--redis-port", "7000", "--redis-prefix", "pre", "--sched-cfg-file",
                              str(tmp_path / "cfg"), "--disable-storage-sharing",
                              "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
                              "--forward-unknown-events"])

    class Begins:
        def handle_message(self, msg):
            self.data = msg["events"][0]["data"] if not hasattr(self, "data") else self.data
            return {"now": msg["now"], "events": [
                {"timestamp": msg["now"], "type": "NOTIFY",
                 "data": {"type": "registration_finished"}}]}

    sched = Begins()
    simulate(platform_file, [wl], sched, export_prefix=None, **cli.engine_options(args))
    config = sched.data["config"]
    assert (config["redis-hostname"], config["redis-port"], config["redis-prefix"]) == (
        "h", 7000, "pre")
    assert config["sched-config"] == '{"a": 1}\n'
    assert config["dynamic-jobs-acknowledged"] is True
    assert config["forward-unknown-events"] is False   # no --events: Batsim leaves it false
    assert sched.data["allow_storage_sharing"] is False


@pytest.mark.parametrize("flags, message", [
    (["--redis-port", "x"], "Redis port"),
    (["--workflow-jobs-limit", "-1"], "must be positive"),
    (["--enable-profile-reuse"], "needs --enable-dynamic-jobs"),
    (["--sched-cfg-file", "/nonexistent/cfg"], "cannot read the scheduler configuration"),
])
def test_bad_values_are_one_line(flags, message, capsys, platform_file, tmp_path):
    code, _ = _replay_run(tmp_path, platform_file, *flags)
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and message in err


def test_dump_execution_context(capsys):
    code = main(["simulate", "-p", "p.xml", "-w", "w.json", "-s", "tcp://127.0.0.1:3000",
                 "-e", "x/out", "--redis-port", "1234", "--dump-execution-context"])
    out = capsys.readouterr().out.strip()
    assert code == 0 and json.loads(out) == {
        "socket_endpoint": "tcp://127.0.0.1:3000", "redis_enabled": False,
        "redis_hostname": "127.0.0.1", "redis_port": 1234, "redis_prefix": "default",
        "export_prefix": "x/out", "external_scheduler": True}
    assert ": " not in out   # compact, as rapidjson's writer


def test_storage_sharing_can_be_disabled(platform_file, make_workload, scripted, tmp_path):
    """--disable-storage-sharing: a storage machine runs one job at a time (Batsim's
    server_on_execute_job refuses a second one); once its job ended it takes another, and by
    default two jobs share it."""
    from mrsched.errors import SimulationError
    from mrsched.simulator.engine import simulate

    wl = make_workload([{"id": i, "subtime": 0, "res": 2, "profile": "d10"} for i in (1, 2)])

    def together(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                k = e["data"]["job_id"][-1]
                yield "EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": f"{k} 3"}

    def in_turn(msg, s):
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED" and e["data"]["job_id"] == "w0!1":
                yield "EXECUTE_JOB", {"job_id": "w0!1", "alloc": "1 3"}
            elif e["type"] == "JOB_COMPLETED" and e["data"]["job_id"] == "w0!1":
                yield "EXECUTE_JOB", {"job_id": "w0!2", "alloc": "2 3"}

    roles = ("a3:storage",)
    with pytest.raises(SimulationError, match=r"storage resource 3 \(a3\) is busy with job "
                                              r"w0!1") as err:
        simulate(platform_file, [wl], scripted(together), export_prefix=None, roles=roles,
                 storage_sharing=False)
    assert (err.value.job, err.value.field) == ("w0!2", "alloc")
    for react, sharing in ((in_turn, False), (together, True)):
        result = simulate(platform_file, [wl], scripted(react), export_prefix=None, roles=roles,
                          storage_sharing=sharing)
        assert [r.final_state for r in result.jobs] == ["COMPLETED_SUCCESSFULLY"] * 2


def test_a_replay_reads_numbers_as_their_writer_wrote_them(platform_file, tmp_path):
    """``--replay-writer``: Batsim read the recorded reply's stamp 9390544117.3756943 from the
    scheduler's text, ``9390544117.375694`` from Python's writer (exact), ``...375695`` from
    rapidjson's (read one ulp up): the job starts at one or the other."""
    x = 9390544117.3756943
    reply = [{"timestamp": x, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}}]
    starts = {}
    for writer in ("python", "rapidjson"):
        folder = tmp_path / writer
        folder.mkdir()
        code, prefix = _replay_run(folder, platform_file, "--replay-writer", writer, reply=reply)
        assert code == 0
        with open(f"{prefix}_jobs.csv") as fh:
            starts[writer] = next(csv.DictReader(fh))["starting_time"]
    assert starts == {"python": "9390544117.375694", "rapidjson": "9390544117.375696"}
