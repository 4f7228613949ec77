"""Workload loading: Batsim's job id rules, forwarded fields, clear errors."""

from __future__ import annotations

import json

import pytest

from mrsched.errors import WorkloadError
from mrsched.simulator.profiles import flatten, ptask_of
from mrsched.simulator.workload import load_workload, load_workloads, submission_order


def write(tmp_path, data, name="w.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


PROFILES = {"d": {"type": "delay", "delay": 1.5}}


def test_ids_and_forwarded_json(tmp_path):
    path = write(tmp_path, {"nb_res": 4, "profiles": PROFILES, "jobs": [
        {"id": 3, "subtime": 1.1234567891, "res": 2, "profile": "d", "gpus_per_node": 2},
        {"id": "x", "subtime": 0, "res": 1, "profile": "d", "walltime": 5.0}]})
    (wl,) = load_workloads([path])
    a, b = wl.jobs
    assert (a.id, a.local_id, a.workload) == ("w0!3", "3", "w0")
    assert a.walltime == -1 and a.subtime == pytest.approx(1.1234567891)
    assert a.json == {"id": "w0!3", "subtime": 1.123457, "res": 2, "profile": "d",
                      "gpus_per_node": 2}
    assert list(a.json) == ["id", "subtime", "res", "profile", "gpus_per_node"]
    assert isinstance(b.json["subtime"], int) and isinstance(b.json["walltime"], float)
    assert [j.id for j in submission_order(wl.jobs)] == ["w0!x", "w0!3"]


def test_second_file_is_w1(tmp_path):
    p = write(tmp_path, {"profiles": PROFILES, "jobs": [{"id": 1, "subtime": 0, "res": 1,
                                                         "profile": "d"}]})
    names = [w.jobs[0].id for w in load_workloads([p, p])]
    assert names == ["w0!1", "w1!1"]


def test_same_subtime_order_is_textual(tmp_path):
    jobs = [{"id": i, "subtime": 0, "res": 1, "profile": "d"} for i in (2, 10, 1)]
    wl = load_workload(write(tmp_path, {"profiles": PROFILES, "jobs": jobs}), "w0")
    assert [j.local_id for j in submission_order(wl.jobs)] == ["1", "10", "2"]


@pytest.mark.parametrize("data, match, field", [
    ("{not json", "malformed JSON", None),
    ({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "nope"}], "profiles": PROFILES},
     "unknown profile 'nope'", "profile"),
    ({"jobs": [{"id": 1, "subtime": 0, "profile": "d"}], "profiles": PROFILES},
     "no 'res'", "res"),
    ({"jobs": [{"id": 1, "subtime": -2, "res": 1, "profile": "d"}], "profiles": PROFILES},
     "negative", "subtime"),
    ({"jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"},
               {"id": 1, "subtime": 0, "res": 1, "profile": "d"}], "profiles": PROFILES},
     "duplicate job id", "id"),
    ({"jobs": [], "profiles": {"p": {"type": "parallel_homogeneuos", "cpu": 1, "com": 1}}},
     "did you mean 'parallel_homogeneous'", "type"),
    ({"jobs": [], "profiles": {"s": {"type": "composed", "seq": ["missing"]}}},
     "unknown profile 'missing'", "seq"),
    ({"jobs": [], "profiles": {"p": {"type": "parallel", "cpu": [1, 2], "com": [0]}}},
     "2x2", "com"),
    ({"jobs": [], "profiles": {"p": {"type": "delay"}}}, "has no 'delay'", "delay"),
])
def test_errors_name_file_and_element(tmp_path, data, match, field):
    path = write(tmp_path, data)
    with pytest.raises(WorkloadError, match=match) as err:
        load_workload(path, "w0")
    assert err.value.file == str(path)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(WorkloadError, match="no such file"):
        load_workload(tmp_path / "absent.json", "w0")


def test_profile_expansion():
    profiles = {"a": {"type": "delay", "delay": 1}, "b": {"type": "delay", "delay": 2},
                "s": {"type": "composed", "seq": ["a", "b"], "repeat": 2},
                "ss": {"type": "composed", "seq": ["s", "a"]}}
    assert [n for n, _ in flatten("ss", profiles)] == ["a", "b", "a", "b", "a"]
    spec = ptask_of({"type": "parallel_homogeneous_total", "cpu": 8.0, "com": 4.0}, ["h0", "h1"],
                    storage_mapping=None, storage_names={}, job="w0!1")
    assert spec.flops == {"h0": 4.0, "h1": 4.0}
    assert spec.bytes == {("h0", "h1"): 2.0, ("h1", "h0"): 2.0}
    pfs = ptask_of({"type": "parallel_homogeneous_pfs", "bytes_to_read": 3, "bytes_to_write": 5,
                    "storage": "bb"}, ["h0", "h1"], storage_mapping={"bb": 7},
                   storage_names={7: "bb_1", 8: "pfs"}, job="w0!1")
    assert pfs.bytes == {("h0", "bb_1"): 5.0, ("bb_1", "h0"): 3.0, ("h1", "bb_1"): 5.0,
                         ("bb_1", "h1"): 3.0}
    stage = ptask_of({"type": "data_staging", "nb_bytes": 9, "from": "pfs", "to": "bb"}, ["h0"],
                     storage_mapping={"pfs": 8, "bb": 7}, storage_names={7: "bb_1", 8: "pfs"},
                     job="w0!1")
    assert stage.bytes == {("pfs", "bb_1"): 9.0} and stage.hosts == ("pfs", "bb_1")


def test_forwarded_object_keeps_key_order_and_the_callers_dict(tmp_path):
    """Loading reuses each parsed job object as the forwarded one (id and subtime replaced in
    place, keys in file order); a caller's own object is copied, never changed."""
    from mrsched.simulator.workload import parse_job

    path = write(tmp_path, {"profiles": PROFILES, "jobs": [
        {"res": 1, "id": 7, "extra": [1], "subtime": 2.00000049, "profile": "d"}]})
    (job,) = load_workload(path, "w3").jobs
    assert list(job.json.items()) == [("res", 1), ("id", "w3!7"), ("extra", [1]),
                                      ("subtime", 2.0), ("profile", "d")]
    mine = {"id": 1, "subtime": 0.1234567, "res": 1, "profile": "d"}
    copy = dict(mine)
    forwarded = parse_job(mine, "w0", PROFILES, file="f").json
    assert mine == copy and forwarded == {**copy, "id": "w0!1", "subtime": 0.123457}
    assert parse_job(mine, "w0", PROFILES, file="f", owned=True).json is mine
