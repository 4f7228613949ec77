"""A run's Batsim outputs and how its manifest vouches for them (docs/DESIGN.md "Runs and
campaigns"): each output file's rows, bytes and sha256 are recorded when the run ends, so a
reader (``campaign status``, ``mrsched report``) can tell a finished run from one whose files
were cut short, edited or lost since. Core module: ``expe`` writes manifests, ``analysis``
verifies them, neither imports the other.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

OUTPUT_SUFFIXES = ("jobs", "schedule", "machine_states")
OUTPUT_FILES = tuple(f"out_{s}.csv" for s in OUTPUT_SUFFIXES)
#: what an engine run with Batsim's -E writes besides (recorded in the manifest when present)
ENERGY_SUFFIXES = ("consumed_energy", "pstate_changes")
ENERGY_FILES = tuple(f"out_{s}.csv" for s in ENERGY_SUFFIXES)
#: a policy's own table of the run (``Policy.run_table``: ``hierarchical``'s metrics per
#: instance), written by the embedded engine's worker; recorded when present
POLICY_SUFFIXES = ("hierarchy",)
POLICY_FILES = tuple(f"out_{s}.csv" for s in POLICY_SUFFIXES)


def describe_outputs(run_dir: str | Path) -> dict[str, dict]:
    """``{file: {"rows", "bytes", "sha256"}}`` of the Batsim outputs present in ``run_dir``
    (rows: CSV lines after the header)."""
    out = {}
    for name in OUTPUT_FILES + ENERGY_FILES + POLICY_FILES:
        path = Path(run_dir) / name
        if not path.is_file():
            continue
        h, lines, size = hashlib.sha256(), 0, 0
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                lines += chunk.count(b"\n")
                size += len(chunk)
        out[name] = {"rows": max(0, lines - 1), "bytes": size, "sha256": h.hexdigest()}
    return out


def outputs_problem(run_dir: str | Path, manifest: dict) -> str | None:
    """Why the outputs of an ``ok`` run are not the ones its manifest records (rows, bytes,
    sha256 of the three Batsim files, and of the energy and policy files it records), or None."""
    recorded = manifest.get("outputs")
    if not isinstance(recorded, dict):
        return "the manifest records no outputs (written by an older mrsched or cut short)"
    names = list(OUTPUT_FILES) + [n for n in ENERGY_FILES + POLICY_FILES if n in recorded]
    for name in names:
        want = recorded.get(name)
        if not isinstance(want, dict):
            return f"the manifest does not record {name}"
        if not (Path(run_dir) / name).is_file():
            return f"{name} is missing"
    actual = describe_outputs(run_dir)
    for name in names:
        got, want = actual[name], recorded[name]
        if "rows" in want and got["rows"] != want["rows"]:
            return f"{name} has {got['rows']} rows, the manifest records {want['rows']}"
        if got["bytes"] != want.get("bytes"):
            return f"{name} has {got['bytes']} bytes, the manifest records {want.get('bytes')}"
        if got["sha256"] != want.get("sha256"):
            return f"{name} differs from what the run wrote (sha256)"
    return None
