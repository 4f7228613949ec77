"""The README's trace commands as a new user runs them: after ``mrsched workload fetch`` the
next commands take the path it prints, and the paper campaigns are pointed at it by the
key each one uses (``swf:`` / ``trace:``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from mrsched.expe.campaign import load_campaign, plan_runs

TRACE = "KTH-SP2-1996-2.1-cln"


def _bash_blocks(readme: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", readme, flags=re.S)


def _fetch_blocks(repo_dir: Path) -> list[str]:
    blocks = [b for b in _bash_blocks((repo_dir / "README.md").read_text()) if "workload fetch" in b]
    assert blocks, "the README shows how to fetch a trace"
    return blocks


def test_commands_after_fetch_use_the_path_it_prints(repo_dir):
    """The README fetched into the cache, then converted ``KTH-SP2-1996-2.1-cln.swf`` from
    the working directory, where it is not."""
    for block in _fetch_blocks(repo_dir):
        lines = [line.split("#")[0] for line in block.splitlines()]
        fetch = next(i for i, line in enumerate(lines) if "workload fetch" in line)
        m = re.match(r"\s*(\w+)=\$\(mrsched workload fetch \S+\)", lines[fetch])
        assert m, f"the fetched path is not kept: {lines[fetch]!r}"
        later = "\n".join(lines[fetch + 1:]).replace("\\\n", " ")
        assert f"${m.group(1)}" in later
        commands = [c for c in later.splitlines() if c.strip().startswith("mrsched")]
        for command in commands:   # no bare trace file as an argument
            assert not re.search(rf"(^|\s)\S*{re.escape(TRACE)}\.swf(\s|$)", command), command


def test_paper_campaigns_are_pointed_at_the_fetched_trace(repo_dir, shared_dir, tmp_path):
    """Run the README's block for the paper campaigns on copies of them, with the trace
    already in the cache (no network): every workload then reads the fetched file, through
    ``swf:`` in europar2021.yaml and ``trace:`` in bbsched.yaml."""
    block = next(b for b in _fetch_blocks(repo_dir) if "europar2021.yaml" in b)
    assert "swf:" in block and "trace:" in block
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(shared_dir / "data" / f"{TRACE}.swf", cache / f"{TRACE}.swf")
    work = tmp_path / "elsewhere"
    (work / "expe").mkdir(parents=True)
    for name in ("europar2021.yaml", "bbsched.yaml"):
        shutil.copy(repo_dir / "expe" / name, work / "expe" / name)
    env = {**os.environ, "MRSCHED_CACHE": str(cache),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "144 pending" in done.stdout.replace("runs: ", "")
    fetched = cache / f"{TRACE}.swf"
    for name, flag in (("europar2021.yaml", "swf"), ("bbsched.yaml", "--trace")):
        campaign = load_campaign(work / "expe" / name)
        for workload in campaign.workloads:
            cmd = list(workload.command)
            assert cmd[cmd.index(flag) + 1] == str(fetched), (name, workload.name, cmd)
        assert len(plan_runs(campaign)) > 0
