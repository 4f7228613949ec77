"""Hand-made Batsim 4.2.1 ``_jobs.csv`` files for the analysis tests."""

from __future__ import annotations

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
