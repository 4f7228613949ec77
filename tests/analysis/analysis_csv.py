"""Hand-made Batsim 4.2.1 ``_jobs.csv`` files for the analysis tests."""

from __future__ import annotations

import json
from pathlib import Path

HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
          "requested_time,success,final_state,starting_time,execution_time,finish_time,"
          "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata")


def row(job_id, submit, res, start=None, finish=None, alloc="", state="COMPLETED_SUCCESSFULLY",
        workload="w0", walltime=-1, metadata=""):
    """One CSV line as Batsim writes it (rejected: empty times)."""
    if state == "REJECTED":
        return (f"{job_id},{workload},p,{submit:.6f},{res},{walltime:.6f},0,REJECTED,,,,,,,,"
                f'-1.000000,"{metadata}"')
    run = finish - start
    return (f"{job_id},{workload},p,{submit:.6f},{res},{walltime:.6f},"
            f"{int(state == 'COMPLETED_SUCCESSFULLY')},{state},{start:.6f},{run:.6f},"
            f"{finish:.6f},{start - submit:.6f},{finish - submit:.6f},"
            f"{(finish - submit) / run if run else 0:.6f},{alloc},-1.000000,\"{metadata}\"")


def write_jobs(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


PLATFORM = ("<platform version='4.1'><zone id='r' routing='Full'>"
            "<cluster id='c' prefix='n' radical='0-7' suffix='' speed='1Gf' bw='1GBps' lat='0'/>"
            "<host id='m'><prop id='role' value='master'/></host></zone></platform>")


def make_campaign(root: Path, policies, seeds=(1, 2), n_jobs: int = 12) -> Path:
    """A campaign directory as ``mrsched campaign run`` leaves it: ``runs/<policy>-s<seed>/``
    with a manifest and an ``out_jobs.csv`` on an 8-node platform, jobs one after another;
    waits grow with the policy's index and the seed (thousands of seconds, so that
    separators show)."""
    (root / "p.xml").write_text(PLATFORM)
    (root / "inputs").mkdir(exist_ok=True)
    for seed in seeds:
        jobs = [{"id": str(j), "subtime": 100.0 * j, "res": 1, "profile": "p"} for j in range(n_jobs)]
        (root / "inputs" / f"workload-s{seed}-0123456789ab.json").write_text(json.dumps(
            {"nb_res": 8, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 1}}}))
    for k, policy in enumerate(policies):
        for seed in seeds:
            run_id = f"{policy}-cluster8-synth{n_jobs}-s{seed}"
            d = root / "runs" / run_id
            d.mkdir(parents=True)
            rows, t = [], 0.0
            for j in range(n_jobs):
                submit = 100.0 * j
                start = max(t, submit + 1000.0 * (k + 1) * seed + 37.5 * j)
                res = 1 + (j + k) % 8
                finish = start + 500.0 + 10 * j
                rows.append(row(str(j), submit, res, start, finish,
                                f"0-{res - 1}" if res > 1 else "0"))
                t = finish     # one job at a time: a schedule the machine can hold
            write_jobs(d / "out_jobs.csv", rows)
            (d / "manifest.json").write_text(json.dumps({
                "run_id": run_id, "policy": policy, "options": {}, "status": "ok",
                "platform": "p.xml", "workload": f"inputs/workload-s{seed}-0123456789ab.json",
                "workload_name": f"synth{n_jobs}", "platform_name": "cluster8", "seed": seed}))
    return root
