"""Issue 13, "Done when": faults at random moments. `mrsched campaign run` and `mrsched run`
are killed (SIGKILL, SIGTERM, SIGINT, or one of their engines SIGKILLed) at random times,
then resumed; every time no process may be left, and the final results must be identical to
those of an uninterrupted run. Seeded (``MRSCHED_FAULT_SEED`` picks another schedule)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import marked, tiny_workload
from mrsched.expe.launch import run_campaign
from mrsched.expe.manifest import OUTPUT_FILES, is_complete, read_manifest

pytestmark = pytest.mark.slow

SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, "engine")


def interrupt(argv: list[str], cwd: Path, rng: random.Random, log: list[str]) -> None:
    """Start ``mrsched ARGV``, hit it (or one of its engines) after a random delay, and
    check that nothing it started is alive 2 s after it is gone."""
    mark = uuid.uuid4().hex
    env = dict(os.environ, MRSCHED_TEST_MARK=mark)
    proc = subprocess.Popen([sys.executable, "-m", "mrsched.cli", *argv], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    delay = rng.uniform(0.3, 4.0)
    fault = rng.choice(SIGNALS)
    time.sleep(delay)
    if fault == "engine":
        workers = [p for p in marked(mark) if "mrsched.expe.worker" in " ".join(p.cmdline())]
        if workers:
            rng.choice(workers).kill()
        fault_text = f"engine SIGKILL ({len(workers)} running)"
    else:
        proc.send_signal(fault)
        fault_text = signal.Signals(fault).name
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"{argv[0]} did not end after {fault_text}")
    log.append(f"{argv[0]}: {fault_text} after {delay:.2f} s -> exit {proc.returncode}")
    assert "Traceback" not in err, err
    time.sleep(2.0)
    left = marked(mark)
    for p in left:
        p.kill()
    assert left == [], (log, [" ".join(p.cmdline()) for p in left])


def outputs(run_dir: Path) -> dict[str, bytes]:
    return {n: (run_dir / n).read_bytes() for n in ("out_jobs.csv",)}


def test_random_kills_then_resume_give_the_uninterrupted_results(tmp_path, inputs, engine_env):
    rng = random.Random(int(os.environ.get("MRSCHED_FAULT_SEED", "13")))
    wls = [inputs["workload"]] + [tiny_workload(tmp_path / f"wl{i}.json", jobs=40, seed=i)
                                  for i in range(1, 3)]
    path = tmp_path / "faults.yaml"
    path.write_text(f"name: faults\ntimeout: 120\nparallelism: 2\nplatforms: [{inputs['platform']}]\n"
                    f"workloads: [{', '.join(map(str, wls))}]\n"
                    "policies: [fcfs, fcfs-easy, {policy: sjf-bb}, filler]\n")
    reference = run_campaign(path, output=tmp_path / "reference", progress=False, report=False)
    assert reference.ok == 12
    log: list[str] = []
    faulty = tmp_path / "faulty"
    for _ in range(6):
        interrupt(["campaign", "run", str(path), "--out", str(faulty), "--no-progress",
                   "--no-report"], tmp_path, rng, log)
    # one standalone run, killed, then redone with the same command
    run_argv = ["run", "-p", str(inputs["platform"]), "-w", str(wls[1]), "--policy", "fcfs-easy",
                "--out", str(tmp_path / "single"), "--timeout", "60"]
    interrupt(run_argv, tmp_path, rng, log)
    resumed = run_campaign(path, output=faulty, progress=False, report=False)
    assert resumed.all_ok, (log, resumed.failed)
    runs = sorted(p.name for p in (faulty / "runs").iterdir())
    assert runs == sorted(p.name for p in (tmp_path / "reference" / "runs").iterdir())
    for name in runs:
        mine, ref = faulty / "runs" / name, tmp_path / "reference" / "runs" / name
        assert is_complete(mine), name
        assert not list(mine.glob(".partial-*")) and not list(mine.glob(".*.tmp"))
        assert outputs(mine) == outputs(ref), (name, log)
        assert read_manifest(mine)["outputs"]["out_jobs.csv"]["sha256"] == \
            read_manifest(ref)["outputs"]["out_jobs.csv"]["sha256"]
    from mrsched.cli import main

    # the same command again: an unfinished attempt is redone (a finished one needs --force)
    finished = is_complete(tmp_path / "single")
    assert main(run_argv + (["--force"] if finished else [])) == 0, log
    single = read_manifest(tmp_path / "single")
    ref = tmp_path / "reference" / "runs" / "fcfs-easy-platform-wl1"
    assert single["outputs"]["out_jobs.csv"]["sha256"] == read_manifest(ref)["outputs"]["out_jobs.csv"]["sha256"]
    from mrsched.analysis import campaign_metrics

    drop = lambda df: df.drop(columns=[c for c in df.columns if "wall" in c or "time_s" in c
                                       or c in ("dir", "path", "run_dir", "cpu_time", "peak_memory_mb")],
                           errors="ignore")
    a = drop(campaign_metrics(faulty)).sort_values("run_id").reset_index(drop=True)
    b = drop(campaign_metrics(tmp_path / "reference")).sort_values("run_id").reset_index(drop=True)
    num = a.select_dtypes("number").columns
    assert list(num) and a[num].equals(b[num]), log
