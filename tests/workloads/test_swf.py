"""SWF reading: fields, header, errors with file and line; cleaning rules counted by reason."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from mrsched.errors import WorkloadError
from mrsched.workloads.swf import COL, SWF_FIELDS, clean_swf, read_swf
from workload_fixtures import small_swf, kth_swf  # noqa: F401 (fixtures)



def test_reads_all_18_fields_and_header(small_swf):
    trace = read_swf(small_swf)
    assert len(SWF_FIELDS) == 18 and trace.data.shape == (8, 18)
    assert trace.header["MaxNodes"] == "8" and trace.header_int("MaxProcs") == 8
    assert trace.header["Computer"] == "test machine"
    assert trace.column("job_number").tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert trace.data[1, COL["requested_time"]] == 900 and trace.data[7, COL["user_id"]] == 4
    assert trace.lines[0] == 6  # 5 header lines first


def test_reads_gzip(tmp_path, small_swf):
    path = tmp_path / "t.swf.gz"
    with gzip.open(path, "wt") as f:
        f.write(small_swf.read_text())
    assert len(read_swf(path)) == 8
    named_plain = tmp_path / "t.swf"  # a compressed trace saved without .gz: read by content
    named_plain.write_bytes(path.read_bytes())
    assert np.array_equal(read_swf(named_plain).data, read_swf(small_swf).data)


@pytest.mark.parametrize("line,message,field", [
    (" 9 100 0 50 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1", "has 17 fields", None),
    (" 9 100 0 50 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1 7", "has 19 fields", None),
    (" 9 100 0 abc 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1", "'abc' is not a number", "run_time"),
    (" 9 100 0 50 2 -1 -1 -4 60 -1 1 1 1 -1 -1 -1 -1 -1", "negative value -4", "requested_processors"),
    (" 9 100 0 50 2 -1 -1 2 -60 -1 1 1 1 -1 -1 -1 -1 -1", "negative value -60", "requested_time"),
])
def test_malformed_records_name_file_line_and_field(tmp_path, small_swf, line, message, field):
    path = tmp_path / "bad.swf"
    path.write_text(small_swf.read_text() + line + "\n")
    with pytest.raises(WorkloadError, match=message) as info:
        read_swf(path)
    err = info.value
    assert err.file == str(path) and err.line == 14
    assert err.field == field
    assert f"{path}:14" in str(err)


def test_missing_file_is_a_workload_error(tmp_path):
    with pytest.raises(WorkloadError, match="cannot read"):
        read_swf(tmp_path / "nope.swf")


def test_cleaning_counts_each_reason(small_swf):
    trace = read_swf(small_swf)
    kept, report = clean_swf(trace, max_nodes=8)
    assert trace.column("job_number")[kept].tolist() == [1, 2, 7, 8]
    assert report.total == 8 and report.kept == 4
    assert report.dropped == {
        "submit time unknown": 0,
        "requested processors unknown or zero": 1,   # job 4
        "requested time unknown or zero": 1,          # job 6
        "run time unknown or zero": 1,                # job 3
        "status excluded": 0,
        "requested processors above the platform": 1,  # job 5
    }
    assert "dropped 1: run time unknown or zero" in report.lines()


def test_cleaning_cap_and_status(small_swf):
    trace = read_swf(small_swf)
    kept, report = clean_swf(trace, max_nodes=8, oversize="cap")
    assert trace.column("job_number")[kept].tolist() == [1, 2, 5, 7, 8] and report.capped == 1
    kept, report = clean_swf(trace, max_nodes=8, exclude_status=(0,))
    assert trace.column("job_number")[kept].tolist() == [1, 2, 8]
    assert report.dropped["status excluded"] == 1  # job 7 (job 3, status 0 too, was dropped earlier)
    with pytest.raises(WorkloadError, match="oversize"):
        clean_swf(trace, oversize="shrink")


def test_kth_trace_cleaning_matches_seed_001(kth_swf):
    trace = read_swf(kth_swf)
    assert len(trace) == 28476 and trace.header_int("MaxNodes") == 100
    kept, report = clean_swf(trace)
    assert report.kept == 28467  # the artifact's rules: non-positive run time (8), processors (1)
    kept, report = clean_swf(trace, max_nodes=96)
    assert report.kept == 28453  # the paper's count: 14 more jobs wider than 96 compute nodes
    assert report.dropped["requested processors above the platform"] == 14
    assert np.all(trace.column("requested_processors")[kept] <= 96)


# --- damaged .swf.gz: one WorkloadError naming the file, never a traceback ------------------

def _gz(tmp_path, small_swf, copies=400):
    """A gzip trace big enough that damage in its middle hits the deflate stream."""
    lines = small_swf.read_text().splitlines(keepends=True)
    header = [l for l in lines if l.startswith(";")]
    body = [l for l in lines if not l.startswith(";")]
    path = tmp_path / "big.swf.gz"
    with gzip.open(path, "wt") as f:
        f.write("".join(header) + "".join(body) * copies)
    return path


def _damaged(tmp_path, small_swf, how):
    data = bytearray(_gz(tmp_path, small_swf).read_bytes())
    path = tmp_path / f"{how}.swf.gz"
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "corrupt":
        for k in range(len(data) // 2, len(data) // 2 + 64):
            data[k] ^= 0x55
    elif how == "crc":
        data[-6] ^= 0xFF  # the CRC-32 of the trailer
    elif how == "not-gzip":
        data = bytearray(small_swf.read_bytes())
    elif how == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how,message", [
    ("truncated", "corrupt or truncated gzip data after line \\d+: the compressed stream ends early"),
    ("corrupt", "corrupt or truncated gzip data after line \\d+: "),
    ("crc", "corrupt or truncated gzip data after line \\d+: CRC check failed"),
    ("not-gzip", "named .gz but not gzip-compressed"),
    ("empty", "empty file"),
])
def test_damaged_gzip_is_one_workload_error(tmp_path, small_swf, how, message):
    path = _damaged(tmp_path, small_swf, how)
    with pytest.raises(WorkloadError, match=message) as info:
        read_swf(path)
    assert info.value.file == str(path) and str(info.value).startswith(f"{path}")
    assert "\n" not in str(info.value)


def test_records_are_stored_as_one_float_array(tmp_path, small_swf):
    trace = read_swf(_gz(tmp_path, small_swf, copies=3))
    assert trace.data.dtype == np.float64 and trace.data.shape == (24, 18) and trace.data.flags.c_contiguous
    assert trace.lines.dtype == np.int64 and trace.lines[-1] == 5 + 24


@pytest.mark.parametrize("how", ["truncated", "not-gzip"])
def test_damaged_gzip_through_the_command_line_and_a_campaign(tmp_path, small_swf, capsys, how):
    from mrsched.cli import main
    from mrsched.errors import MrschedError
    from mrsched.expe.campaign import load_campaign, plan_runs, prepare_inputs

    path = _damaged(tmp_path, small_swf, how)
    assert main(["workload", "swf", str(path), "-o", str(tmp_path / "w.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "Traceback" not in err
    spec = tmp_path / "c.yaml"
    spec.write_text(f"platforms: [{{generate: cluster, nodes: 8}}]\n"
                    f"workloads: [{{swf: {path}, jobs: 5, model: delay}}]\npolicies: [fcfs]\n")
    campaign = load_campaign(spec)
    with pytest.raises(MrschedError) as info:
        prepare_inputs(campaign, plan_runs(campaign))
    expected = "corrupt or truncated gzip data" if how == "truncated" else "named .gz but not gzip-compressed"
    assert f"{path}: {expected}" in str(info.value)
