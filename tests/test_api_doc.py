"""docs/API.md runs as written: its Python blocks, in order, in one namespace, in an empty
folder (as a reader pasting them into one session)."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "API.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_the_api_guide_runs(tmp_path, monkeypatch, capsys):
    blocks = BLOCK.findall(GUIDE.read_text())
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "api_guide"}
    for i, body in enumerate(blocks):
        exec(compile(body, f"{GUIDE.name} block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Result(policy='fcfs-easy', jobs=60" in out
    assert "mean wait" in out and "the workload dict, job 1, field 'profile'" in out
    assert (tmp_path / "runs" / "easy" / "manifest.json").is_file()
    table = namespace["table"]
    assert len(table) == 3 and len(set(table.values())) > 1     # the policies differ
