"""Issue 13 items 5, 6 and 8: a campaign file is checked whole before anything runs or is
written, and every mistake is one line naming the file and key (with a suggestion)."""

from __future__ import annotations

import gzip

import pytest

from mrsched.cli import main


def write(tmp_path, body: str, inputs) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(body.replace("PLATFORM", str(inputs["platform"]))
                    .replace("WORKLOAD", str(inputs["workload"])))
    return str(path)


def refused(path: str, capsys) -> str:
    code = main(["campaign", "run", path, "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert path in err
    return err


BASE = "name: chk\nplatforms: [PLATFORM]\npolicies: [fcfs]\n"


@pytest.mark.parametrize("extra,expected", [
    ("workloads: [WORKLOAD]\nseeds: 5-1\n", "field 'seeds': seeds '5-1': the range 5-1 is empty (write 1-5)"),
    ("workloads: [WORKLOAD]\nreport: maybe\n", "field 'report': report must be true or false, got 'maybe'"),
])
def test_values_that_ran_wrong_are_refused(tmp_path, inputs, capsys, extra, expected):
    assert expected in refused(write(tmp_path, BASE + extra, inputs), capsys)
    assert not (tmp_path / "results").exists()


def test_an_invalid_json_workload_is_found_before_any_run(tmp_path, inputs, capsys):
    bad = tmp_path / "broken.json"
    bad.write_text('{"jobs": [1, 2,,]}')
    err = refused(write(tmp_path, BASE + f"workloads: [WORKLOAD, {bad}]\n", inputs), capsys)
    assert "field 'workloads[1].path'" in err and "broken.json:1: malformed JSON" in err
    assert not (tmp_path / "results").exists()


def test_an_swf_given_as_workload_path_points_to_the_swf_key(tmp_path, inputs, capsys):
    swf = tmp_path / "trace.swf"
    swf.write_text("; Version: 2.2\n1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    err = refused(write(tmp_path, BASE + f"workloads: [{swf}]\n", inputs), capsys)
    assert "mrsched workload swf" in err


def test_missing_swf_and_trace_name_the_key_and_suggest(tmp_path, inputs, capsys):
    (tmp_path / "KTH-SP2.swf").write_text("; nothing\n")
    err = refused(write(tmp_path, BASE + "workloads: [{swf: KTH-SP3.swf}]\n", inputs), capsys)
    assert "field 'workloads[0].swf'" in err and f"did you mean {tmp_path / 'KTH-SP2.swf'}?" in err
    err = refused(write(tmp_path, BASE + "workloads: [{generate: bbsched, trace: KTH-SP3.swf, "
                                         "scenario: S1}]\n", inputs), capsys)
    assert "field 'workloads[0].trace'" in err and "trace file not found" in err
    assert "did you mean" in err


def test_bad_generator_value_stops_before_the_first_input(tmp_path, inputs, capsys):
    (tmp_path / "t.swf").write_text("; Version: 2.2\n1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    body = ("name: chk\nplatforms: [{generate: dragonfly, name: df}]\npolicies: [fcfs]\n"
            "workloads: [{generate: bbsched, trace: t.swf, scenario: S9}]\n")
    err = refused(write(tmp_path, body, inputs), capsys)
    assert "field 'workloads[0]'" in err and "bad generator options" in err
    assert "invalid choice: 'S9'" in err
    assert not (tmp_path / "results").exists()  # the platform was not generated first


def test_a_corrupt_swf_gz_through_a_campaign_is_one_line(tmp_path, inputs, capsys):
    (tmp_path / "t.swf.gz").write_bytes(gzip.compress(b"; Version 2.2\n1 0 0 10 4")[:20])
    body = BASE + "workloads: [{swf: t.swf.gz, jobs: 5}]\n"
    code = main(["campaign", "run", write(tmp_path, body, inputs), "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert "generating workload" in err
