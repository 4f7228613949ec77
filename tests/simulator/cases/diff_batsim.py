#!/usr/bin/env python3
"""Differential runs against real Batsim 4.2.1 (a developer tool: it needs the Batsim binary;
the tests only read the cases it finds, once recorded with ``record_case.py``).

    python tests/simulator/cases/diff_batsim.py [--cases 50] [--seed 0] [--keep DIR]
        [--energy] [--generated | --cpugpu] [--batsched] [--wide] [--jobs N] [--digits]

Each case is drawn from its seed: a small cluster (speeds, link bandwidths and latencies,
with ``-E`` pstates and wattages for a quarter of them, all with ``--energy``), a workload of
delay, parallel, parallel-homogeneous (per host or in total) and nested composed profiles with
tied and fractional submission times and walltimes that cut some jobs, and a registered policy
with drawn options (period, queue order; with ``-E`` sleeping idle nodes and a power cap).
``--generated`` draws from mrsched's own platform and workload generators instead, with
burst-buffer policies (a third of the burst-buffer workloads I/O-phased, with
``--enable-dynamic-jobs``; with ``--energy`` too, wattages and ``-E``); ``--cpugpu`` seed 002's
policies on per-core CPU+GPU clusters; ``--wide`` other policies and options (decision costs,
plan search, hierarchical; with ``--cpugpu``, a decision cost or a period); ``--batsched``
a third-party scheduler, batsched 1.4.0's variants with drawn options (kills, dynamic jobs;
with ``--energy`` its energy variants; with ``--generated`` or ``--cpugpu`` on those cases);
``--jobs N`` longer workloads; ``--digits`` numbers with all their digits. Real
Batsim runs the case against the scheduler through ``record_case.py`` (every message
recorded); the engine then replays the recorded replies. A case differs when a message
(events, order, data, times within 1e-5 s) or an ``out_jobs.csv`` value differs; byte-level
differences of ``out_jobs.csv`` and ``out_schedule.csv`` (times of the run excepted) are
counted apart. When Batsim aborts on the scheduler's replies, the engine must refuse them
too; when the scheduler crashes, the engine must send the messages Batsim sent until then.
Differing cases are kept under ``--keep`` with the engine's outputs (``engine/``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BATSCHED = os.environ.get("BATSCHED", "/opt/batsched-local/bin/batsched")
sys.path.insert(0, str(HERE.parent))     # tests/simulator: the comparisons and the case runner

POLICIES = [("fcfs", {}), ("fcfs-easy", {}), ("conservative-bb", {}), ("filler", {}),
            ("sjf-bb", {}), ("fcfs", {"period": 30}), ("fcfs-easy", {"order": "sjf"})]


def platform_xml(rng: random.Random, energy: bool) -> tuple[str, int]:
    """A one-switch cluster of 2 to 12 hosts (Batsim's ``cluster`` tag) and a master host."""
    n = rng.randint(2, 12)
    speed = rng.choice(["1Gf", "2Gf", "1.5Gf"])
    bw = rng.choice(["125MBps", "1GBps", "10GBps"])
    lat = rng.choice(["50us", "1us", "0us", "500us"])
    props = ""
    if energy:
        # pstates: two computing, sleep, switching off, switching on (Batsim's test platforms)
        speed = rng.choice(["100Mf, 50Mf, 1e-9f, 0.1f, 0.1f", "1Gf, 500Mf, 1e-9f, 0.2f, 0.05f"])
        props = ('<prop id="wattage_per_state" value="95:100:200, 90:95:150, 9.75:9.75:9.75, '
                 '100:100:100, 125:125:125"/><prop id="wattage_off" value="9.75"/>'
                 '<prop id="sleep_pstates" value="2:3:4"/>')
    cluster = (f'<cluster id="c" prefix="node_" suffix="" radical="0-{n - 1}" speed="{speed}" '
               f'bw="{bw}" lat="{lat}" bb_bw="{bw}" bb_lat="{lat}">{props}</cluster>')
    master = ('<cluster id="m" prefix="master_host" suffix="" radical="0-0" speed="1Gf" '
              f'bw="{bw}" lat="{lat}" bb_bw="{bw}" bb_lat="{lat}">'
              '<prop id="role" value="master"/>'
              + ('<prop id="wattage_per_state" value="100:100:200"/><prop id="wattage_off" '
                 'value="100"/>' if energy else "") + '</cluster>')
    route = ('<link id="backbone" bandwidth="1.25GBps" latency="500us"/>'
             '<zoneRoute src="c" dst="m" gw_src="node_c_router" gw_dst="master_hostm_router">'
             '<link_ctn id="backbone"/></zoneRoute>')
    text = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            f'<platform version="4.1"><zone id="AS0" routing="Full">{cluster}{master}{route}'
            "</zone></platform>\n")
    return text, n


#: ``--digits``: the drawn numbers keep all their digits (a double's 17) and every job has an
#: extra field above 1e9 with a double's digits, from a stream of its own: what Batsim reads with
#: rapidjson and forwards through its Grisu2 writer (docs/DESIGN.md, "JSON numbers")
DIGITS = False


def num(x: float) -> float:
    """Ten significant digits (all of them with ``--digits``)."""
    return x if DIGITS else float(f"{x:.10g}")


def dec(x: float, places: int) -> float:
    """``x`` rounded to ``places`` decimals (not with ``--digits``)."""
    return x if DIGITS else round(x, places)


def profile(rng: random.Random, n: int, depth: int = 0) -> dict:
    kind = rng.choice(["delay", "delay", "parallel_homogeneous", "parallel_homogeneous_total",
                       "parallel", "composed"] if depth == 0 else ["delay", "parallel_homogeneous"])
    if kind == "delay":
        return {"type": "delay", "delay": rng.choice([rng.randint(1, 300),
                                                      dec(rng.uniform(0.001, 50), 6)])}
    if kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        return {"type": kind, "cpu": rng.choice([0, 1e9, num(rng.uniform(1e8, 5e10))]),
                "com": rng.choice([0, 0, 1e6, num(rng.uniform(1e5, 1e9))])}
    if kind == "parallel":
        k = rng.randint(1, 3)
        return {"type": "parallel", "cpu": [num(rng.uniform(1e8, 1e10)) for _ in range(k)],
                "com": [rng.choice([0, num(rng.uniform(1e5, 1e8))]) for _ in range(k * k)]}
    seq = rng.choice([["p0", "p1"], ["p1", "p0", "p1"], ["p0", "c0"], ["c0", "c0"]])
    return {"type": "composed", "repeat": rng.randint(1, 3), "seq": seq}


#: ``--jobs N``: every drawn workload of ``draw`` and ``draw_generated`` has N jobs (the draw
#: of its count is kept, so the rest of a seed's stream stays the same)
JOBS: int | None = None


def workload(rng: random.Random, n: int) -> dict:
    extra = random.Random(str(rng.getstate()[1][:8]))   # (--digits: rng's stream untouched)
    profiles = {f"p{i}": profile(rng, n, depth=1) for i in range(2)}
    profiles["c0"] = {"type": "composed", "repeat": rng.randint(1, 2), "seq": ["p1", "p0"]}
    jobs = []
    t = 0.0
    count = rng.randint(3, 30)
    for j in range(JOBS or count):
        t += rng.choice([0, 0, rng.randint(1, 60), dec(rng.uniform(0, 20), 6)])
        name = f"q{j}"
        profiles[name] = profile(rng, n)
        res = rng.randint(1, n)
        if profiles[name]["type"] == "parallel":
            res = len(profiles[name]["cpu"]) if len(profiles[name]["cpu"]) <= n else 1
            if res == 1:
                profiles[name] = {"type": "delay", "delay": 10}
        job = {"id": str(j), "subtime": t, "res": res, "profile": name}
        wall = rng.choice([None, -1, rng.randint(1, 400), dec(rng.uniform(0.5, 100), 3)])
        if wall is not None:
            job["walltime"] = wall
        if DIGITS:
            job["extra"] = extra.uniform(1e9, 1e11)
        jobs.append(job)
    return {"nb_res": n, "jobs": jobs, "profiles": profiles}


#: ``--wide``: replies stamped after their request (decision costs), plan search, a tree of
#: schedulers; drawn from a stream of their own, the platform and workload of a seed unchanged
WIDE_POLICIES = [("fcfs-easy", {"decision_cost": "per_event=0.5,per_job=2,per_start=1"}),
                 ("conservative-bb", {"decision_cost": "per_job=0.25"}),
                 ("fcfs", {"period": 30, "decision_cost": "per_event=1"}),
                 ("filler", {"decision_cost": "per_start=3"}),
                 ("sjf-bb", {"decision_cost": "per_event=0.001,per_start=0.002"}),
                 ("plan-2", {}), ("plan-1", {"period": 60}), ("hierarchical", {})]


def draw(seed: int, energy: bool | None = None, wide: bool = False) -> dict:
    """The case of ``seed`` (``energy``: force ``-E`` on or off; None: a quarter of them;
    ``wide``: the policy from ``WIDE_POLICIES``)."""
    rng = random.Random(seed)
    drawn = rng.random() < 0.25
    energy = drawn if energy is None else energy
    xml, n = platform_xml(rng, energy)
    policy, options = rng.choice(POLICIES)
    if wide:
        policy, options = random.Random(seed * 7919 + 3).choice(WIDE_POLICIES)
    options = dict(options)
    if energy and policy != "hierarchical":   # the runtime's energy services (whole nodes):
        # sleeping idle nodes, a power cap
        sleep = rng.choice([0, 0, 5, 60])
        cap = rng.choice([0, 0, 0.8])
        if sleep:
            options["idle_sleep"] = sleep
        if cap and policy != "filler" and "decision_cost" not in options:   # (refused together)
            options["power_cap_share"] = cap
    return {"platform": xml, "workload": workload(rng, n), "policy": policy,
            "options": options, "energy": energy}


#: ``--batsched``: batsched 1.4.0's variants that end on any input (``bench/batsched_variants.py``
#: runs each on Batsim's own test inputs), with drawn options and the Batsim flags they need;
#: with ``--wide`` a fifth of the cases, from a stream of their own, ``random`` on shared machines
BATSCHED_VARIANTS = ["fcfs", "fcfs_fast", "easy_bf", "easy_bf_fast", "conservative_bf", "filler",
                     "sequencer", "rejecter", "waiting_time_estimator", "killer", "killer2",
                     "submitter"]

#: ``--batsched --energy``: its energy variants that end (``batsched_variants._ENERGY_VARIANTS``)
BATSCHED_ENERGY = ["sleeper", "energy_watcher", "energy_bf", "energy_bf_dicho",
                   "energy_bf_monitoring_inertial", "energy_bf_idle_sleeper",
                   "energy_bf_subpart_sleeper"]


def _flops(text: str) -> float:
    number = text.strip().rstrip("f")
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(number[-1:], 1.0)
    return float(number[:-1] if scale != 1.0 else number) * scale


def energy_model(xml: str) -> dict:
    """batsched's energy model of a platform whose compute hosts are alike: pstate 0
    computes, the sleep pstates (``sleep_pstates`` "sleep:off:on") switch in one flop each,
    at their wattage (Batsim's ``test/test_energy.py`` model of its energy platforms)."""
    speeds = [_flops(x) for x in re.search(r'speed="([^"]*,[^"]*)"', xml).group(1).split(",")]
    watts = [[float(v) for v in w.split(":")] for w in
             re.search(r'"wattage_per_state" value="([^"]*,[^"]*)"', xml).group(1).split(",")]
    sleep, off, on = (int(k) for k in
                      re.search(r'"sleep_pstates" value="([^"]*)"', xml).group(1).split(":"))
    t_off, t_on = 1 / speeds[off], 1 / speeds[on]
    return {"power_sleep": watts[sleep][0], "power_idle": watts[0][0],
            "power_compute": watts[0][-1], "pstate_sleep": sleep, "pstate_compute": 0,
            "time_switch_off": t_off, "time_switch_on": t_on,
            "energy_switch_off": watts[off][0] * t_off, "energy_switch_on": watts[on][0] * t_on}


def draw_batsched(seed: int, energy: bool = False, generated: bool = False,
                  wide: bool = False, cpugpu: bool = False) -> dict:
    """A case of ``draw`` (the same platform and workload for a seed; ``generated``: of
    ``draw_generated``, with sleep pstates when ``energy``) served by a batsched variant drawn
    from a stream of its own, with its options; with ``energy`` one of its energy variants,
    given the platform's energy model (``energy_model``); ``wide``: ``random`` on machines
    shared by several jobs for a fifth of them, with ``energy`` kills for a third;
    ``cpugpu``: a case of ``draw_cpugpu`` (one Batsim resource per core), no energy."""
    if cpugpu and energy:
        raise SystemExit("--batsched --cpugpu: its platforms have no sleep pstates, leave out --energy")
    if cpugpu:
        case = draw_cpugpu(seed)
    else:
        case = draw_generated(seed, energy, sleep=energy) if generated else draw(seed, energy)
    rng = random.Random(seed * 7919 + 4)
    variant = rng.choice(BATSCHED_ENERGY if energy else BATSCHED_VARIANTS)
    options: dict = {}
    flags = ""
    more = random.Random(seed * 7919 + 5)
    if wide and not energy and more.random() < 0.2:
        # random places jobs whatever runs there: machines shared by several jobs' tasks
        # (each run draws other machines: the engine replays Batsim's recorded replies)
        return {**case, "policy": "random", "options": {}, "batsched": True,
                "flags": "--enable-compute-sharing"}
    if wide and energy and more.random() < 0.3:
        # kills under -E: the energy of tasks cut in their middle
        variant = more.choice(["killer", "killer2"])
        options = ({"nb_kills_per_job": more.randint(1, 2),
                    "delay_before_kill": more.choice([0, 1, 5, round(more.uniform(0.01, 30), 3)])}
                   if variant == "killer" else {})
        return {**case, "policy": variant, "options": options, "batsched": True, "flags": ""}
    if variant == "killer":
        options = {"nb_kills_per_job": rng.randint(1, 2),
                   "delay_before_kill": rng.choice([0, 1, 5, round(rng.uniform(0.01, 30), 3)])}
    elif variant == "submitter":
        options = {"nb_jobs_to_submit": rng.randint(1, 10),
                   "increase_jobs_duration": rng.random() < 0.5,
                   "send_profiles_in_separate_event": rng.random() < 0.5}
        flags = "--enable-dynamic-jobs" + rng.choice(["", " --acknowledge-dynamic-jobs"])
        if rng.random() < 0.5:    # (else Batsim refuses a finished job's profile used again)
            flags += " --enable-profile-reuse"
    elif energy:
        # batsched's energy variants assert that every job has a walltime (energy_bf.cpp)
        for job in case["workload"]["jobs"]:
            if job.get("walltime", -1) == -1:
                job["walltime"] = rng.choice([rng.randint(1, 400), round(rng.uniform(0.5, 100), 3)])
        options = energy_model(case["platform"])
        if variant == "energy_bf_dicho":
            options["tolerated_slowdown_loss_ratio"] = rng.choice([0.1, 0.5, 2])
        elif variant == "energy_bf_monitoring_inertial":
            options.update(monitoring_period=rng.choice([10, 30]), idle_time_to_sedate=60,
                           sedate_idle_on_classical_events=False)
        elif variant == "energy_bf_idle_sleeper":
            options.update(monitoring_period=rng.choice([10, 30]), idle_time_to_sedate=0,
                           sedate_idle_on_classical_events=False,
                           ensured_sleep_time_lower_bound=0, ensured_sleep_time_upper_bound=0)
        elif variant == "energy_bf_subpart_sleeper":
            options.update(monitoring_period=rng.choice([10, 30]),
                           fraction_of_machines_to_let_awake=rng.choice([0.25, 0.5]))
    # (the case's own flags are for mrsched's I/O-phased job model, not batsched)
    return {**case, "policy": variant, "options": options, "batsched": True, "flags": flags}


GENERATED_POLICIES = [("fcfs-bb", {}), ("sjf-bb", {}), ("conservative-bb", {}), ("filler", {}),
                      ("naive", {}), ("bbsched", {}), ("bin-packing", {}), ("multisched", {}),
                      ("easy-bf", {"reserve": "all", "depth": 2}), ("fcfs-easy", {"period": 60})]


#: the policies of seed 001's I/O-phased runs (Euro-Par 2021), drawn for ``io-phased`` cases
IO_PHASED_POLICIES = ["fcfs-bb", "sjf-bb", "fcfs-easy", "filler"]


#: the policies of ``--generated --energy`` cases that sleep idle nodes
SLEEPING_POLICIES = ["fcfs-bb", "sjf-bb", "conservative-bb", "filler"]


#: ``--generated --wide``: the burst-buffer policies with decision costs, plan search and a
#: tree of schedulers (not on I/O-phased workloads), from a stream of their own
GENERATED_WIDE = [("plan-1", {}), ("plan-2", {"period": 60}),
                  ("conservative-bb", {"decision_cost": "per_event=0.5,per_job=1"}),
                  ("sjf-bb", {"decision_cost": "per_start=2"}),
                  ("fcfs-bb", {"decision_cost": "per_event=0.01,per_job=0.02,per_start=0.5"}),
                  ("bbsched", {"decision_cost": "per_job=0.3"}), ("hierarchical", {})]


def draw_generated(seed: int, energy: bool = False, wide: bool = False,
                   sleep: bool = False) -> dict:
    """A case of mrsched's own generators: a small Dragonfly or flat cluster with burst-buffer
    storage nodes and a PFS, an overloaded synthetic burst-buffer workload and a burst-buffer
    policy. A third of the burst-buffer workloads are I/O-phased (``--variant io-phased``,
    ``job_model=io-phased``, ``--enable-dynamic-jobs``: sub-jobs whose transfers share the
    platform's links with Batsim's messages), drawn from a stream of their own so that the
    other cases of a seed stay what they were. With ``energy`` the platform has wattages
    (storage hosts their 0:0), half the time sleep pstates, and the run ``-E``; a case without
    I/O phases on sleep pstates sleeps idle nodes (``idle_sleep``), from a third stream."""
    rng = random.Random(seed)
    io_phased = random.Random(seed * 7919 + 1).random() < 1 / 3
    watts = random.Random(seed * 7919 + 2)
    power = []
    if energy:
        power = ["--wattage", f"{watts.choice([95, 100])}:{watts.choice([190, 200])}"]
        if watts.random() < 0.5 or sleep:     # (``sleep``: always sleep pstates)
            power += ["--sleep-wattage", "9.75"]
    with tempfile.TemporaryDirectory() as tmp:
        plat, wl = Path(tmp) / "p.xml", Path(tmp) / "w.json"
        if rng.random() < 0.5:
            gen = ["dragonfly", "--groups", str(rng.randint(1, 2)), "--chassis",
                   str(rng.randint(1, 2)), "--routers", "2", "--nodes-per-router",
                   str(rng.randint(2, 3))]
        else:
            gen = ["cluster", "--nodes", str(rng.randint(4, 16)), "--storage",
                   str(rng.randint(1, 3))]
        cli = [sys.executable, "-m", "mrsched.cli"]
        subprocess.run([*cli, "platform", *gen, "--bb-capacity", rng.choice(["1GB", "40GB"]),
                        *power, "-o", str(plat)], check=True, capture_output=True)
        njobs, gap = str(rng.randint(10, 40)), str(rng.choice([5, 30, 120]))
        njobs = str(JOBS) if JOBS else njobs      # (--jobs: the drawn count kept in the stream)
        model = rng.choice(["burst-buffer", "compute"])
        io_phased = io_phased and model == "burst-buffer"
        subprocess.run([*cli, "workload", "synthetic", "--platform", str(plat), "--jobs",
                        njobs, "--mean-interarrival", gap, "--min-runtime", "5",
                        "--max-runtime", "600", "--model", model,
                        *(["--variant", "io-phased"] if io_phased else []),
                        "--seed", str(seed), "-o", str(wl)], check=True, capture_output=True)
        policy, options = rng.choice(GENERATED_POLICIES)
        if wide:
            policy, options = random.Random(seed * 7919 + 3).choice(GENERATED_WIDE)
        flags = ""
        if io_phased:
            policy = IO_PHASED_POLICIES[seed % len(IO_PHASED_POLICIES)]
            options, flags = {"job_model": "io-phased"}, "--enable-dynamic-jobs"
        elif "--sleep-wattage" in power:
            sleeper = watts.choice(SLEEPING_POLICIES)
            nap = {"idle_sleep": watts.choice([5, 60])}
            if not wide:
                policy, options = sleeper, nap
            elif policy != "hierarchical":   # (it refuses them: not whole nodes)
                options = {**options, **nap}
        return {"platform": plat.read_text(), "workload": json.loads(wl.read_text()),
                "policy": policy, "options": dict(options), "energy": energy, "flags": flags}


#: ``--cpugpu``: seed 002's policies on a per-core CPU+GPU machine
CPUGPU_POLICIES = ["slurm-bf", "ipsched", "aucsched"]


def draw_cpugpu(seed: int, energy: bool = False, wide: bool = False) -> dict:
    """A case of seed 002's family: a per-core CPU+GPU cluster (one Batsim resource per core,
    2-6 nodes of 2-8 cores and 0-2 GPUs), a Table 12 mix of 10-40 jobs and one of
    ``slurm-bf``, ``ipsched``, ``aucsched``; with ``energy`` wattages and ``-E``; ``wide``: a
    decision cost or a period too (a stream of their own)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        plat, wl = Path(tmp) / "p.xml", Path(tmp) / "w.json"
        cli = [sys.executable, "-m", "mrsched.cli"]
        power = ["--wattage", f"{rng.choice([95, 100])}:{rng.choice([190, 200])}"] if energy else []
        mix = rng.choice(["I", "II", "III", "IV", "V"])     # IV asks 1 GPU a node, V 2
        low = {"IV": 1, "V": 2}.get(mix, 0)
        subprocess.run([*cli, "platform", "cluster", "--nodes", str(rng.randint(2, 6)),
                        "--cores", str(rng.choice([2, 4, 8])), "--gpus", str(rng.randint(low, 2)),
                        *power, "-o", str(plat)], check=True, capture_output=True)
        subprocess.run([*cli, "workload", "cpugpu", "--platform", str(plat), "--mix", mix,
                        "--jobs", str(rng.randint(10, 40)), "--seed", str(seed), "-o", str(wl)],
                       check=True, capture_output=True)
        options = {}
        if wide:
            more = random.Random(seed * 7919 + 3)
            options = more.choice([{"decision_cost": "per_event=0.5,per_job=2,per_start=1"},
                                   {"decision_cost": "per_job=0.05"}, {"period": 30}])
        return {"platform": plat.read_text(), "workload": json.loads(wl.read_text()),
                "policy": rng.choice(CPUGPU_POLICIES), "options": options, "energy": energy}


def record(case: dict, name: str, root: Path) -> Path | None:
    tmp = root / f"{name}.in"
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "platform.xml").write_text(case["platform"])
    (tmp / "workload.json").write_text(json.dumps(case["workload"]))
    if case.get("batsched"):
        # energy variants write their traces into output_dir: the case's input folder
        options = dict(case["options"], output_dir=str(tmp.resolve()),
                       trace_output_filename=str((tmp / "trace.csv").resolve()))
        (tmp / "options.json").write_text(json.dumps(options))
        serve = [BATSCHED, "-v", case["policy"], "--variant_options_filepath",
                 str((tmp / "options.json").resolve()), "-s", "{socket}"]
    else:
        serve = [sys.executable, "-m", "mrsched.cli", "serve", case["policy"], "-s", "{socket}"]
        for k, v in case["options"].items():
            serve += ["-O", f"{k}={v}"]
    flags = " ".join(f for f in ("-E" if case["energy"] else "", case.get("flags", "")) if f)
    done = subprocess.run([sys.executable, str(HERE / "record_case.py"), name, "-p",
                           str(tmp / "platform.xml"), "-w", str(tmp / "workload.json"),
                           f"--batsim-flags={flags}", "--timeout", "120", "--", *serve],
                          env={**os.environ, "CASES_DIR": str(root)}, capture_output=True,
                          text=True)
    shutil.rmtree(tmp)
    case_dir = root / name
    if done.returncode != 0 or not (case_dir / "transcript.jsonl").is_file():
        return None
    return case_dir


def refused(root: Path, name: str) -> str | None:
    """Batsim's own abort of a case that did not record (its log's CRITICAL line), or None
    when it did not abort (a scheduler that crashed or hung, a timeout)."""
    log = root / name / "logs" / "batsim.log"
    if not log.is_file() or not (root / name / "transcript.jsonl").is_file():
        return None
    return next((line.split("] ", 1)[-1] for line in log.read_text(errors="replace").splitlines()
                 if "CRITICAL" in line), None)


class _Recording:
    """A scheduler that writes down every message and reply (kept when the engine stops)."""

    def __init__(self, inner):
        self.inner, self.transcript = inner, []
        self.number_text = inner.number_text   # (the server reads the replies as written so)

    def handle_message(self, msg: dict) -> dict:
        self.transcript.append({"from": "batsim", "msg": json.loads(json.dumps(msg))})
        reply = self.inner.handle_message(msg)
        self.transcript.append({"from": "scheduler", "msg": reply})
        return reply


def _replayed(case_dir: Path) -> tuple[list[dict], list[dict], Exception | None]:
    """The engine given a case's recorded replies: (Batsim's transcript, the engine's, written
    down as it goes, and the engine's error or None)."""
    from test_batsim_cases import run_case
    from test_fidelity import replay_of

    from mrsched.simulator.replay import load_transcript

    transcript = load_transcript(case_dir / "transcript.jsonl")
    rec = _Recording(replay_of(case_dir, transcript))
    try:
        run_case(case_dir, rec, case_dir / "engine_out")
    except Exception as exc:
        return transcript, rec.transcript, exc
    return transcript, rec.transcript, None


def compare_prefix(case_dir: Path) -> str | None:
    """A run whose scheduler crashed or hung (Batsim waits for its reply): the engine, given
    the recorded replies, sends the messages Batsim sent; None, else the first difference."""
    from test_fidelity import compare_all_messages

    # (no replies left, the engine may stall where Batsim waited: its error is no difference)
    transcript, recorded, _ = _replayed(case_dir)
    sent = sum(e["from"] == "batsim" for e in transcript)
    mine, count = [], 0
    for e in recorded:
        count += e["from"] == "batsim"
        if count > sent:
            break
        mine.append(e)
    try:
        compare_all_messages(transcript, mine)
    except AssertionError as exc:
        return str(exc)[:400] or "assertion"
    return None


def engine_refuses(case_dir: Path) -> str | None:
    """The engine's error on the replies Batsim aborted on, or None when it ran them."""
    exc = _replayed(case_dir)[2]
    return None if exc is None else f"{type(exc).__name__}: {exc}"


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def compare(case_dir: Path) -> tuple[str | None, list[str]]:
    """(the first tolerated-level difference or None, byte-level differences)."""
    from test_batsim_cases import run_case
    from test_fidelity import compare_all_messages, compare_jobs_rows, replay_of

    from mrsched.simulator.replay import load_transcript

    transcript = load_transcript(case_dir / "transcript.jsonl")
    out = case_dir / "engine"
    out.mkdir(exist_ok=True)
    try:
        result = run_case(case_dir, replay_of(case_dir, transcript), out / "out")
    except Exception as exc:   # the engine refused what Batsim ran: a difference too
        return f"engine failed: {type(exc).__name__}: {exc}", []
    first = None
    try:
        compare_all_messages(transcript, result.transcript)
        compare_jobs_rows(case_dir / "out_jobs.csv", out / "out_jobs.csv")
    except AssertionError as exc:
        first = str(exc)[:400] or "assertion"
    exact = []
    for ref, mine in zip(_rows(case_dir / "out_jobs.csv"), _rows(out / "out_jobs.csv")):
        for col, value in ref.items():
            if mine.get(col) != value:
                exact.append(f"job {ref['job_id']} {col}: {mine.get(col)} vs Batsim {value}")
    skip = {"scheduling_time", "simulation_time"}
    for ref, mine in zip(_rows(case_dir / "out_schedule.csv"), _rows(out / "out_schedule.csv")):
        for col, value in ref.items():
            if col not in skip and mine.get(col) != value:
                exact.append(f"schedule {col}: {mine.get(col)} vs Batsim {value}")
    return first, exact


def unrecorded(case_dir: Path) -> tuple[str, str, bool]:
    """A case Batsim did not finish: (its count, a line, whether it differs). When Batsim
    aborted on the scheduler's replies the engine must refuse them too; when the scheduler
    crashed or hung, the engine must send the messages Batsim sent until then."""
    abort = refused(case_dir.parent, case_dir.name)
    if abort is not None:
        mine = engine_refuses(case_dir)
        line = f"Batsim aborts: {abort[:160]}\n    engine: {(mine or 'ran it to the end')[:200]}"
        return ("both refuse" if mine else "differ"), line, mine is None
    if not (case_dir / "transcript.jsonl").is_file():
        return "batsim failed", "Batsim or the scheduler failed (no transcript)", False
    first = compare_prefix(case_dir)
    line = f"Batsim or the scheduler failed; {first or 'the messages until then identical'}"
    return ("differ" if first else "batsim failed"), line, first is not None


def keep(folder: Path | None, case_dir: Path) -> None:
    """Move a differing case to ``--keep`` (nothing without it)."""
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(folder / case_dir.name, ignore_errors=True)
    shutil.move(str(case_dir), folder / case_dir.name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0, help="first case's seed")
    ap.add_argument("--keep", type=Path, help="folder for the differing cases")
    ap.add_argument("--energy", action="store_true",
                    help="every case with -E (with --generated: platforms with wattages)")
    ap.add_argument("--generated", action="store_true",
                    help="cases of mrsched's generators: Dragonfly or cluster with burst buffers, "
                         "synthetic burst-buffer workloads, burst-buffer policies")
    ap.add_argument("--wide", action="store_true",
                    help="policies of WIDE_POLICIES (with --generated: GENERATED_WIDE): decision "
                         "costs (replies stamped later), plan search, hierarchical")
    ap.add_argument("--batsched", action="store_true",
                    help="batsched 1.4.0's variants (with --energy, its energy variants) on the "
                         "cases' platforms and workloads ($BATSCHED, else "
                         "/opt/batsched-local/bin/batsched)")
    ap.add_argument("--cpugpu", action="store_true",
                    help="seed 002's policies (slurm-bf, ipsched, aucsched) on per-core CPU+GPU "
                         "clusters with Table 12 mixes")
    ap.add_argument("--digits", action="store_true",
                    help="drawn numbers with all their digits, and an extra field of a double's "
                         "digits above 1e9 per job (not with --generated or --cpugpu)")
    ap.add_argument("--jobs", type=int, help="jobs of each drawn workload (not with --cpugpu; "
                    "default: 3 to 30, with --generated 10 to 40)")
    args = ap.parse_args()
    if args.jobs is not None and args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.digits and (args.generated or args.cpugpu):
        ap.error("--digits draws the plain cases' numbers: not with --generated or --cpugpu")
    global JOBS, DIGITS
    JOBS, DIGITS = args.jobs, args.digits
    root = Path(tempfile.mkdtemp(prefix="diff_batsim_"))
    counts = {"same": 0, "bytes": 0, "differ": 0, "both refuse": 0, "batsim failed": 0}
    try:
        for seed in range(args.seed, args.seed + args.cases):
            if args.batsched:
                case = draw_batsched(seed, args.energy, args.generated, args.wide, args.cpugpu)
            elif args.cpugpu:
                case = draw_cpugpu(seed, args.energy, args.wide)
            elif args.generated:
                case = draw_generated(seed, args.energy, args.wide)
            else:
                case = draw(seed, True if args.energy else None, args.wide)
            name = f"s{seed}"
            case_dir = record(case, name, root)
            if case_dir is None:
                kind, line, differs = unrecorded(root / name)
                counts[kind] += 1
                print(f"{name} {case['policy']}: {line}")
                if differs:
                    keep(args.keep, root / name)
                continue
            first, exact = compare(case_dir)
            label = f"{name} {case['policy']} {case['options']}{' -E' if case['energy'] else ''}"
            if first is None and not exact:
                counts["same"] += 1
                shutil.rmtree(case_dir)
                continue
            counts["differ" if first else "bytes"] += 1
            print(f"{label}: {first or 'bytes'}")
            for line in exact[:6]:
                print(f"    {line}")
            keep(args.keep, case_dir)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
