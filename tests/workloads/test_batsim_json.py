"""``scan_workload``: a workload read one job / profile at a time gives what ``json.loads`` gives,
and a broken file is one WorkloadError naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrsched.errors import WorkloadError
from mrsched.workloads.batsim_json import read_workload, scan_workload, write_workload

def scanned(path: Path) -> dict:
    """The workload rebuilt from what ``scan_workload`` hands out."""
    jobs, profiles = [], {}
    top = scan_workload(path, jobs.append, profiles.__setitem__)
    if top.get("jobs") is True:
        top["jobs"] = jobs
    if top.get("profiles") is True:
        top["profiles"] = profiles
    return top


def test_scan_gives_what_json_gives_on_written_and_hand_made_files(tmp_path):
    workload = {"nb_res": 4, "jobs": [{"id": "1", "subtime": 0, "res": 2, "profile": "p1", "bb": 1.5e9},
                                       {"id": "w0!2", "subtime": 10.5, "res": 1, "profile": "p2",
                                        "extra": {"nested": [1, {"a": "}]"}]}}],
                "profiles": {"p1": {"type": "delay", "delay": 10}, "p2": {"type": "parallel_homogeneous",
                                                                          "cpu": 1e9, "com": 0}},
                "description": "a ] and } inside a string"}
    written = write_workload(tmp_path / "w.json", workload)
    assert scanned(written) == json.loads(written.read_text()) == workload
    # any spacing, profiles before jobs, empty arrays and objects, unicode escapes
    odd = tmp_path / "odd.json"
    odd.write_text('\n{"profiles":{ },"jobs" :[\n],\t"x":"\\u00e9", "nb_res":1}  \n')
    assert scanned(odd) == json.loads(odd.read_text()) == {"profiles": {}, "jobs": [], "x": "é", "nb_res": 1}
    # "jobs" that is not an array is handed back as it is (the reader says what is wrong)
    other = tmp_path / "other.json"
    other.write_text('{"jobs": {"a": 1}, "profiles": []}')
    assert scan_workload(other, list.append, dict.__setitem__) == {"jobs": {"a": 1}, "profiles": []}


def test_scan_gives_what_json_gives_on_batsim_reference_workloads(shared_file):
    paths = sorted(shared_file("batsim-reference").glob("*/workload*.json"))
    assert len(paths) >= 5
    for path in paths:
        assert scanned(path) == read_workload(path), path


@pytest.mark.parametrize("text, line, what", [
    ('{"nb_res": 1,\n "jobs": [\n  {"id": "1", "res": 1},\n  {"id": "2", "res": \n', 5, "Expecting value"),
    ('{"nb_res": 1,\n "jobs": [{"id": "1"} {"id": "2"}]}', 2, "expected ',' or ']'"),
    ('{"nb_res": 1\n "jobs": []}', 2, "expected ',' or '}'"),
    ('{"jobs": [], nb_res: 1}', 1, "member name in double quotes"),
    ('{"jobs": []}\n{"jobs": []}', 2, "extra data"),
])
def test_a_broken_file_is_one_error_naming_file_and_line(tmp_path, text, line, what):
    path = tmp_path / "broken.json"
    path.write_text(text)
    with pytest.raises(WorkloadError) as err:
        scan_workload(path, lambda job: None, lambda name, profile: None)
    assert what in str(err.value) and err.value.line == line and str(path) in str(err.value)


def test_not_an_object_or_missing_file(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    with pytest.raises(WorkloadError, match="JSON object"):
        scan_workload(path, print, print)
    with pytest.raises(WorkloadError, match="cannot read workload"):
        scan_workload(tmp_path / "absent.json", print, print)
