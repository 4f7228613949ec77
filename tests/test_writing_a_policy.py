"""docs/WRITING_A_POLICY.md runs as written: its files are written where a reader would save
them, its commands run in that folder in order, and each must succeed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "WRITING_A_POLICY.md"
BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)


def blocks() -> list[tuple[str | None, str, str]]:
    return [(m["file"], m["lang"], m["body"]) for m in BLOCK.finditer(GUIDE.read_text())]


def run_commands(body: str, cwd: Path) -> None:
    mrsched = Path(sys.executable).with_name("mrsched")
    env = {**os.environ, "PYTHONPATH": ""}          # the module is found in the current folder
    for line in body.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        argv = shlex.split(line)
        assert argv[0] == "mrsched", line
        done = subprocess.run([str(mrsched), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"


def test_the_guide_has_its_files_and_commands():
    found = blocks()
    assert [f for f, _, _ in found if f] == ["bbfirst.py", "bbfirst.yaml"]
    assert sum(lang == "bash" for _, lang, _ in found) == 2
    policy = next(body for f, _, body in found if f == "bbfirst.py")
    assert len(policy.strip().splitlines()) <= 40


def test_the_policy_and_the_runs_of_the_guide(tmp_path):
    """The guide's class and its first bash block (three runs and a report)."""
    found = blocks()
    for name, _, body in found:
        if name:
            (tmp_path / name).write_text(body)
    run_commands(next(body for f, lang, body in found if lang == "bash"), tmp_path)
    for run in ("bb-first", "bb-last", "fcfs-bb"):
        assert (tmp_path / "study" / "runs" / run / "out_jobs.csv").is_file()
    assert (tmp_path / "study" / "report" / "index.html").is_file()
    first = (tmp_path / "study/runs/bb-first/out_jobs.csv").read_text()
    last = (tmp_path / "study/runs/bb-last/out_jobs.csv").read_text()
    assert first != last                      # the knob changes the schedule


@pytest.mark.slow
def test_the_campaign_of_the_guide(tmp_path):
    found = blocks()
    for name, _, body in found:
        if name:
            (tmp_path / name).write_text(body)
    run_commands([body for _, lang, body in found if lang == "bash"][1], tmp_path)
    assert (tmp_path / "results" / "bbfirst" / "report" / "index.html").is_file()
    runs = list((tmp_path / "results" / "bbfirst" / "runs").glob("*/manifest.json"))
    assert len(runs) == 12
