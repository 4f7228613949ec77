"""Every batsched 1.4.0 variant against real Batsim 4.2.1 and against ``mrsched simulate``.

    .venv/bin/python bench/batsched_variants.py --batsim /opt/batsim-local/bin/batsim \
        --batsched /opt/batsched-local/bin/batsched [--only NAME ...] [-o DIR] [--list]

Each run (``RUNS``: a variant, its options, Batsim's own test inputs at tag v4.2.1 read from the
batsim git mirror, Batsim's flags; ``-E`` where the variant needs energy, as Batsim's
``test/test_energy.py`` runs them) is done twice with the same command line: real Batsim and
the engine, each talking to a fresh batsched through ``../shared/tools/record_transcript.py``
(every message written). It prints per run: ``identical`` (every Batsim message within
max(2e-6, 1e-12 |x|), as ``diff_transcripts.py``, and the same ``out_jobs.csv`` rows and energy
files), the first differing message, or ``Batsim did not finish`` (with batsched's or Batsim's
last line). Run folders (inputs, both transcripts, both outputs, logs) are kept under ``-o``.
A developer tool: it needs both binaries; the tests read the cases it helped record
(``tests/simulator/cases/``).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BATSIM_REPO = Path("/work/.mirror/oar-team+batsim/repo")
BATSIM_TAG = "v4.2.1"

#: batsched's energy model of Batsim's platforms (Batsim ``test/test_energy.py``
#: ``energy_model_instance``): pstate 13 is the sleep state of ``energy128*``.
ENERGY_MODEL = {"power_sleep": 9.75, "power_idle": 95, "energy_switch_on": 19030,
                "power_compute": 190.738, "energy_switch_off": 620, "time_switch_off": 6.1,
                "pstate_sleep": 13, "pstate_compute": 0, "time_switch_on": 152}

#: ``test_energy_minimal`` (Batsim ``test/test_energy.py``) options of the idle sleeper
IDLE_SLEEPER = {"monitoring_period": 30, "idle_time_to_sedate": 0,
                "sedate_idle_on_classical_events": False,
                "ensured_sleep_time_lower_bound": 0, "ensured_sleep_time_upper_bound": 0}


#: the energy variants that end, with their options beyond the energy model
_ENERGY_VARIANTS = (
    ("sleeper", {}), ("energy_watcher", {}), ("energy_bf", {}),
    ("energy_bf_dicho", {"tolerated_slowdown_loss_ratio": 0.5}),
    ("energy_bf_monitoring_inertial", {"monitoring_period": 30, "idle_time_to_sedate": 60,
                                       "sedate_idle_on_classical_events": False}),
    ("energy_bf_idle_sleeper", IDLE_SLEEPER),
    ("energy_bf_subpart_sleeper", {"monitoring_period": 30,
                                   "fraction_of_machines_to_let_awake": 0.5}))


@dataclass
class Run:
    name: str
    variant: str
    platform: str           # "batsim:platforms/X.xml" (the mirror at BATSIM_TAG) or a path
    workload: str
    flags: str = ""
    options: dict = field(default_factory=dict)
    hosts: int | None = None    # cut a <cluster> platform's compute radical to hosts 0..N-1
    timeout: float | None = None    # seconds (default: --timeout)
    #: batsched draws at random (``random``: IntervalSet::random_pick, another pick every run):
    #: the engine gets Batsim's recorded replies, in order, instead of a fresh batsched
    replay: bool = False


def _runs() -> list[Run]:
    small, delays = "batsim:platforms/small_platform.xml", "batsim:workloads/test_delays.json"
    mixed = "batsim:workloads/test_various_profile_types.json"
    seq = "batsim:workloads/test_sequence_delay.json"
    e_notopo = "batsim:platforms/energy_platform_homogeneous_no_net_128.xml"
    e_cluster = "batsim:platforms/cluster_energy_128.xml"
    runs = []
    for v in ("fcfs", "fcfs_fast", "easy_bf", "easy_bf_fast", "conservative_bf", "filler",
              "sequencer", "rejecter", "waiting_time_estimator", "random"):
        for wname, w in (("delays", delays), ("mixed", mixed)):
            runs.append(Run(f"{v}-small-{wname}", v, small, w))
    # random places jobs on machines whatever runs there: only with shared compute machines
    for wname, w in (("delays", delays), ("mixed", mixed)):
        runs.append(Run(f"random-small-{wname}-sharing", "random", small, w,
                        "--enable-compute-sharing", replay=True))
    runs.append(Run("crasher-small-delays", "crasher", small, delays, timeout=20))
    runs.append(Run("fcfs-cluster512-walltime", "fcfs", "batsim:platforms/cluster512.xml",
                    "batsim:workloads/test_walltime.json", "--mmax 64"))
    runs.append(Run("easy_bf_plot_liquid_load_horizon-small-mixed",
                    "easy_bf_plot_liquid_load_horizon", small, mixed,
                    options={"trace_output_filename": "{dir}/llh.csv"}))
    runs.append(Run("killer-small-delays", "killer", small, delays,
                    options={"nb_kills_per_job": 2, "delay_before_kill": 5}))
    runs.append(Run("killer2-small-delays", "killer2", small, delays))
    for ack in ("", " --acknowledge-dynamic-jobs"):
        tag = "-ack" if ack else ""
        runs.append(Run(f"submitter-small-mixed{tag}", "submitter", small, mixed,
                        "--enable-dynamic-jobs" + ack,
                        {"nb_jobs_to_submit": 10, "increase_jobs_duration": True,
                         "send_profiles_in_separate_event": True}))
    # energy: Batsim's test_energy (sleeper, energy_watcher on both energy platforms and the
    # small workloads; the idle sleeper on the minimal ones), then the other energy variants
    # on the same inputs with the same model
    energy = dict(ENERGY_MODEL, output_dir="{dir}", trace_output_filename="{dir}/trace.csv")
    for pname, p in (("notopo", e_notopo), ("cluster", e_cluster)):
        for wname, w in (("delays", delays), ("seq", seq), ("mixed", mixed)):
            for v in ("sleeper", "energy_watcher"):
                runs.append(Run(f"{v}-{pname}-{wname}", v, p, w, "-E", energy))
        for load in ("0", "50", "100"):
            runs.append(Run(f"energy_bf_idle_sleeper-{pname}-mini{load}",
                            "energy_bf_idle_sleeper", p,
                            f"batsim:workloads/test_energy_minimal_load{load}.json", "-E",
                            dict(energy, **IDLE_SLEEPER)))
        for wname, w in (("delays", delays), ("mixed", mixed)):
            runs.append(Run(f"energy_bf-{pname}-{wname}", "energy_bf", p, w, "-E", energy))
            runs.append(Run(f"energy_bf_dicho-{pname}-{wname}", "energy_bf_dicho", p, w, "-E",
                            dict(energy, tolerated_slowdown_loss_ratio=0.5)))
            runs.append(Run(f"energy_bf_monitoring-{pname}-{wname}", "energy_bf_monitoring",
                            p, w, "-E", dict(energy, monitoring_period=30), timeout=20))
            runs.append(Run(f"energy_bf_monitoring_inertial-{pname}-{wname}",
                            "energy_bf_monitoring_inertial", p, w, "-E",
                            dict(energy, monitoring_period=30, idle_time_to_sedate=0,
                                 sedate_idle_on_classical_events=False)))
            runs.append(Run(f"energy_bf_idle_sleeper-{pname}-{wname}",
                            "energy_bf_idle_sleeper", p, w, "-E", dict(energy, **IDLE_SLEEPER)))
            runs.append(Run(f"energy_bf_subpart_sleeper-{pname}-{wname}",
                            "energy_bf_subpart_sleeper", p, w, "-E",
                            dict(energy, monitoring_period=30,
                                 fraction_of_machines_to_let_awake=0.5)))
    # the recorded cases' inputs (tests/simulator/cases/): the 30 jobs of the shared
    # energydvfs case (cpu, com and delay profiles) on cluster_energy_128.xml cut to 16 hosts
    dvfs = SHARED / "batsim-reference" / "energydvfs"
    for v, extra in _ENERGY_VARIANTS:
        runs.append(Run(f"{v}-cluster16-dvfs30", v, str(dvfs / "platform.xml"),
                        str(dvfs / "workload.json"), "-E", dict(energy, **extra)))
    # batsched aborts here (energy_bf.cpp 710: "A time slice ended prematurely"), Batsim waits
    runs.append(Run("energy_bf_monitoring_inertial-cluster16-dvfs30-sedate0",
                    "energy_bf_monitoring_inertial", str(dvfs / "platform.xml"),
                    str(dvfs / "workload.json"), "-E",
                    dict(energy, monitoring_period=30, idle_time_to_sedate=0,
                         sedate_idle_on_classical_events=False), timeout=30))
    # longer runs: Batsim's 250-job example workload (up to 128 hosts, idle gaps of minutes)
    # and its 800-job paper workload, every energy variant that ends
    for pname, p, wname, w in (
            ("cluster", e_cluster, "hpc250",
             "batsim:workloads/example_workload_hpc_seed1_jobs250.json"),
            ("notopo", e_notopo, "paper800",
             "batsim:workloads/test_batsim_paper_workload_seed1.json")):
        for v, extra in _ENERGY_VARIANTS:
            runs.append(Run(f"{v}-{pname}-{wname}", v, p, w, "-E", dict(energy, **extra)))
    return runs


RUNS = _runs()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_input(spec: str) -> bytes:
    if spec.startswith("batsim:"):
        return subprocess.run(["git", "--git-dir", str(BATSIM_REPO), "show",
                               f"{BATSIM_TAG}:{spec[7:]}"], check=True,
                              capture_output=True).stdout
    return Path(spec).read_bytes()


def cut_cluster(xml: str, hosts: int) -> str:
    """The first ``<cluster>`` (the compute one) with hosts 0..hosts-1 only."""
    return re.sub(r'radical="0-\d+"', f'radical="0-{hosts - 1}"', xml, count=1)


def replay_server(endpoint: str, transcript: Path) -> subprocess.Popen:
    """A REP peer answering each request with the next recorded scheduler reply."""
    code = (
        "import json, sys, zmq\n"
        "replies = [json.loads(l)['msg'] for l in open(sys.argv[2])]\n"
        "replies = [json.dumps(m) for m, f in zip(replies, [json.loads(l)['from'] for l in "
        "open(sys.argv[2])]) if f == 'scheduler']\n"
        "s = zmq.Context().socket(zmq.REP); s.bind(sys.argv[1])\n"
        "for r in replies:\n"
        "    s.recv(); s.send_string(r)\n")
    return subprocess.Popen([sys.executable, "-c", code, endpoint, str(transcript)])


def run_side(run: Run, side: str, cmd0: list[str], batsched: str, folder: Path,
             timeout: float, replay: Path | None = None) -> dict:
    """One simulator (``cmd0``: Batsim or ``mrsched simulate``) against batsched (or the
    replies of ``replay``, a recorded transcript), recorded."""
    folder.mkdir(parents=True, exist_ok=True)
    platform = read_input(run.platform)
    if run.hosts:
        platform = cut_cluster(platform.decode(), run.hosts).encode()
    (folder / "platform.xml").write_bytes(platform)
    (folder / "workload.json").write_bytes(read_input(run.workload))
    options = json.loads(json.dumps(run.options).replace("{dir}", str(folder.resolve())))
    (folder / "options.json").write_text(json.dumps(options))
    back, front = free_port(), free_port()
    sched = [batsched, "-s", f"tcp://127.0.0.1:{back}", "-v", run.variant,
             "--variant_options_filepath", "options.json"]
    sim = [*cmd0, "-s", f"tcp://127.0.0.1:{front}", "-p", "platform.xml", "-w",
           "workload.json", "-e", "out", *shlex.split(run.flags)]
    procs, status = [], {"finished": False, "why": ""}
    try:
        if replay is not None:
            procs.append(replay_server(f"tcp://127.0.0.1:{back}", replay))
            (folder / "sched.log").write_text(f"replies of {replay}\n")
        else:
            procs.append(subprocess.Popen(sched, cwd=folder,
                                          stdout=open(folder / "sched.log", "w"),
                                          stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(
            [sys.executable, str(SHARED / "tools" / "record_transcript.py"),
             f"tcp://127.0.0.1:{front}", f"tcp://127.0.0.1:{back}",
             str(folder / "transcript.jsonl")],
            stdout=open(folder / "recorder.log", "w"), stderr=subprocess.STDOUT))
        time.sleep(0.3)
        proc = subprocess.Popen(sim, cwd=folder, stdout=open(folder / "sim.log", "w"),
                                stderr=subprocess.STDOUT)
        procs.append(proc)
        rc, deadline, sched_gone = None, time.monotonic() + timeout, None
        while rc is None and time.monotonic() < deadline:
            try:
                rc = proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                if sched_gone is None and procs[0].poll() is not None:
                    sched_gone = time.monotonic()   # the simulator now waits for a reply
                if sched_gone is not None and time.monotonic() > sched_gone + 3:
                    break
        ends = _ended(folder / "transcript.jsonl")
        status["finished"] = rc == 0 and ends
        if not status["finished"]:
            if sched_gone is not None and rc is None:
                status["why"] = (f"the scheduler exited ({procs[0].returncode}) and the "
                                 f"simulator waits for its reply: {_why(folder / 'sched.log')}")
            elif rc is None:
                status["why"] = f"no end after {timeout:g} s (wall clock)"
            else:
                status["why"] = (f"exit {rc}: {_why(folder / 'sim.log')}"
                                 f" | scheduler: {_last_line(folder / 'sched.log')}")
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
    status["command"] = " ".join(shlex.quote(a) for a in sim)
    return status


def _ended(path: Path) -> bool:
    if not path.is_file():
        return False
    return any(e["type"] == "SIMULATION_ENDS" for line in path.read_text().splitlines()
               for e in json.loads(line)["msg"]["events"])


def _why(path: Path) -> str:
    """A log's first assertion or critical line, else its last line."""
    for line in path.read_text(errors="replace").splitlines():
        if re.search(r"Assertion|CRITICAL|what\(\)|Error|error:", line):
            return re.sub(r"\x1b\[[0-9;]*m", "", line.strip())[:240]
    return _last_line(path)


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    text = lines[-1] if lines else "(nothing)"
    return re.sub(r"\x1b\[[0-9;]*m", "", text)[:200]


def same(x, y) -> bool:
    """Equal, numbers within max(2e-6, 1e-12 |x|) (as ``diff_transcripts.py``)."""
    if isinstance(x, bool) or isinstance(y, bool):
        return x == y
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return abs(x - y) <= max(2e-6, 1e-12 * abs(x))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    return x == y


def first_difference(ref: Path, mine: Path) -> str | None:
    """The first Batsim message that differs (index in the transcript), or None."""
    a = [json.loads(line) for line in ref.read_text().splitlines()]
    b = [json.loads(line) for line in mine.read_text().splitlines()] if mine.is_file() else []
    for rec in a + b:
        for e in rec["msg"]["events"]:
            if e.get("type") == "SIMULATION_BEGINS":
                e["data"].pop("workloads", None)
    for i, (x, y) in enumerate(zip(a, b)):
        if x["from"] != "batsim" or same(x["msg"], y["msg"]):
            continue
        ex, ey = x["msg"]["events"], y["msg"]["events"]
        for k, (p, q) in enumerate(zip(ex, ey)):
            if not same(p, q):
                return (f"message {i} event {k}: batsim {json.dumps(p)[:300]} | engine "
                        f"{json.dumps(q)[:300]}")
        return (f"message {i} (now {x['msg']['now']} / {y['msg']['now']}): "
                f"{len(ex)} events vs {len(ey)}: batsim "
                f"{[e['type'] for e in ex][:6]} engine {[e['type'] for e in ey][:6]}")
    if len(a) != len(b):
        return f"{len(a)} messages vs the engine's {len(b)}"
    return None


def compare_csv(ref: Path, mine: Path, skip=()) -> str | None:
    """Cell by cell, numbers within 1e-5 absolute or 1e-9 relative."""
    if not ref.is_file():
        return None if not mine.is_file() else f"{mine.name}: Batsim wrote none"
    if not mine.is_file():
        return f"{mine.name}: missing"
    with open(ref, newline="") as fa, open(mine, newline="") as fb:
        ra, rb = list(csv.reader(fa)), list(csv.reader(fb))
    if len(ra) != len(rb):
        return f"{ref.name}: {len(ra)} rows vs {len(rb)}"
    skip_cols = {i for i, h in enumerate(ra[0]) if h in skip} if ra else set()
    for n, (x, y) in enumerate(zip(ra, rb)):
        if len(x) != len(y):
            return f"{ref.name} row {n}: {len(x)} cells vs {len(y)}"
        for i, (p, q) in enumerate(zip(x, y)):
            if i in skip_cols or p == q:
                continue
            try:
                fp, fq = float(p), float(q)
            except ValueError:
                return f"{ref.name} row {n} {ra[0][i]}: {p!r} vs {q!r}"
            if abs(fp - fq) > max(1e-5, 1e-9 * abs(fp)):
                return f"{ref.name} row {n} {ra[0][i]}: {p} vs {q}"
    return None


def compare_run(folder: Path) -> str | None:
    ref, mine = folder / "batsim", folder / "engine"
    diff = first_difference(ref / "transcript.jsonl", mine / "transcript.jsonl")
    if diff:
        return diff
    for name in ("jobs", "machine_states", "pstate_changes", "consumed_energy"):
        diff = compare_csv(ref / f"out_{name}.csv", mine / f"out_{name}.csv")
        if diff:
            return diff
    return compare_csv(ref / "out_schedule.csv", mine / "out_schedule.csv",
                       skip=("simulation_time", "scheduling_time"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batsim", default="/opt/batsim-local/bin/batsim")
    ap.add_argument("--batsched", default="/opt/batsched-local/bin/batsched")
    ap.add_argument("--mrsched", default=str(Path(sys.executable).parent / "mrsched"),
                    help="the engine's command (default: mrsched beside this python)")
    ap.add_argument("-o", "--out", default="bench/results/batsched_variants")
    ap.add_argument("--only", nargs="*", default=None,
                    help="run names or variants (default: every run)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--list", action="store_true", help="list the runs and exit")
    ap.add_argument("--batsim-twice", action="store_true",
                    help="run real Batsim in place of the engine too: is the run repeatable?")
    args = ap.parse_args(argv)
    runs = [r for r in RUNS if args.only is None or r.name in args.only
            or r.variant in args.only]
    if args.list:
        for r in runs:
            print(f"{r.name}: {r.variant} on {r.platform} {r.workload} {r.flags}")
        return 0
    if not runs:
        ap.error("no run matches --only")
    for tool in (args.batsim, args.batsched, args.mrsched):
        if not shutil.which(tool):
            ap.error(f"cannot run {tool}")
    out = Path(args.out)
    results = {}
    width = max(len(r.name) for r in runs)
    for run in runs:
        folder = out / run.name
        shutil.rmtree(folder, ignore_errors=True)
        timeout = run.timeout or args.timeout
        bat = run_side(run, "batsim", [args.batsim], args.batsched, folder / "batsim", timeout)
        if not bat["finished"]:
            verdict = f"Batsim did not finish ({bat['why']})"
        else:
            second = [args.batsim] if args.batsim_twice else [args.mrsched, "simulate"]
            eng = run_side(run, "engine", second, args.batsched, folder / "engine", timeout,
                           folder / "batsim" / "transcript.jsonl" if run.replay else None)
            diff = compare_run(folder)
            if eng["finished"] and diff is None:
                verdict = "identical"
            elif not eng["finished"]:
                verdict = f"engine did not finish ({eng['why']}); first difference: {diff}"
            else:
                verdict = f"differs: {diff}"
        n = sum(1 for _ in open(folder / "batsim" / "transcript.jsonl")) \
            if (folder / "batsim" / "transcript.jsonl").is_file() else 0
        results[run.name] = {"variant": run.variant, "platform": run.platform,
                             "workload": run.workload, "flags": run.flags,
                             "messages": n, "verdict": verdict}
        print(f"{run.name:<{width}}  {n:>4} msgs  {verdict}", flush=True)
    (out / "summary.json").write_text(json.dumps(results, indent=1))
    bad = sum(1 for r in results.values() if r["verdict"] != "identical"
              and not r["verdict"].startswith("Batsim did not finish"))
    print(f"{len(results)} runs: {sum(r['verdict'] == 'identical' for r in results.values())} "
          f"identical, {bad} differ, "
          f"{sum(r['verdict'].startswith('Batsim') for r in results.values())} "
          "not finished by Batsim")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
