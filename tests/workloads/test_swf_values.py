"""Issue 43, SWF traces: a fractional request rounds up as docs/WORKLOADS.md says, and a
header value mrsched reads that is not a whole number is refused by name, never ignored."""

from __future__ import annotations

import json

import pytest

from mrsched.cli import main
from mrsched.errors import WorkloadError
from mrsched.workloads.convert import convert_swf
from mrsched.workloads.swf import read_swf

RECORD = "1 0 0 10 {procs} -1 -1 {procs} 20 -1 1 1 1 -1 1 -1 -1 -1\n"


def _trace(tmp_path, procs="4", header="; MaxNodes: 8\n; MaxProcs: 8\n"):
    path = tmp_path / "t.swf"
    path.write_text(header + RECORD.format(procs=procs))
    return path


@pytest.mark.parametrize("procs, header, res", [
    ("2.5", "; MaxNodes: 8\n; MaxProcs: 8\n", 3),    # one processor a node: 2.5 -> 3
    ("2.01", "; MaxNodes: 8\n; MaxProcs: 8\n", 3),
    ("4", "; MaxNodes: 8\n; MaxProcs: 8\n", 4),
    ("9.5", "; MaxNodes: 4\n; MaxProcs: 16\n", 3),   # 4 cores a node: 9.5 -> 10 processors -> 3 nodes
    ("8", "; MaxNodes: 4\n; MaxProcs: 16\n", 2),
])
def test_requests_round_up(tmp_path, procs, header, res):
    conv = convert_swf(_trace(tmp_path, procs, header), model="delay")
    assert [job["res"] for job in conv.workload["jobs"]] == [res]


def test_rounding_is_reported(tmp_path, capsys):
    assert main(["workload", "swf", str(_trace(tmp_path, "2.5")), "-o", str(tmp_path / "w.json")]) == 0
    assert "rounded up 1: a fractional number of processors" in capsys.readouterr().out
    assert json.loads((tmp_path / "w.json").read_text())["jobs"][0]["res"] == 3


@pytest.mark.parametrize("header", ["; MaxNodes: abc\n", "; MaxProcs: 8.5\n", "; UnixStartTime: inf\n",
                                    "; MaxNodes: nan\n"])
def test_bad_header_numbers_are_refused_by_name(tmp_path, header, capsys):
    path = _trace(tmp_path, header=header)
    key, _, value = header[1:].strip().partition(":")
    with pytest.raises(WorkloadError) as err:
        read_swf(path)
    assert err.value.field == key and f"header '{key}: {value.strip()}' is not a whole number" in str(err.value)
    assert main(["workload", "swf", str(path), "-o", str(tmp_path / "w.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and key in err


def test_other_headers_stay_free_text(tmp_path):
    trace = read_swf(_trace(tmp_path, header="; MaxNodes: 8\n; Note: anything, 1.5 or abc\n"))
    assert trace.header["Note"] == "anything, 1.5 or abc" and trace.header_int("MaxNodes") == 8
