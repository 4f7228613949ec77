"""Fuzz (issue 43 item 6): the workload validator, the engine's loader and ``workload check``
over generated Batsim JSON workloads (near-valid ones, mutated, and raw bytes), and the SWF
reader and converter over generated traces. Invariant (tests/fuzzing.py): a clean error naming
the file, job, element or field, or a correct result -- and the three workload doors agree."""

from __future__ import annotations

import json
import math

from hypothesis import given, strategies as st

from fuzzing import assert_clean, budget, clean
from mrsched.limits import MAX_TIME
from mrsched.simulator.workload import load_workload, validate_workload
from mrsched.workloads.check import check_file
from mrsched.workloads.convert import convert_swf
from mrsched.workloads.swf import read_swf

# any JSON value, a little deep at times
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                 max_size=3),
                    max_leaves=12)
NUMBER = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0, -1, 1e308, 1e-300, MAX_TIME, MAX_TIME * 1.0001, 2**63, 0.5]))
ID = st.one_of(st.integers(-3, 50), st.text(max_size=6), st.sampled_from(["w0!1", "w5!1", "!", "a!b!c"]),
               JSON)
PROFILE_TYPES = ["delay", "parallel_homogeneous", "parallel", "composed", "parallel_homogeneous_total",
                 "parallel_homogeneous_pfs", "data_staging", "smpi", "usage_trace", "sleep"]


@st.composite
def profile(draw):
    kind = draw(st.sampled_from(PROFILE_TYPES))
    prof = {"type": kind}
    for key in draw(st.lists(st.sampled_from(["delay", "cpu", "com", "seq", "repeat", "bytes_to_read",
                                              "nb_bytes", "from", "to", "trace"]), max_size=4)):
        prof[key] = draw(st.one_of(NUMBER, st.lists(NUMBER, max_size=4), st.just(["p0"]), JSON))
    if draw(st.booleans()):
        prof.update({"delay": draw(NUMBER), "cpu": draw(NUMBER), "com": draw(NUMBER)})
    return prof


@st.composite
def workload(draw):
    profiles = draw(st.dictionaries(st.sampled_from(["p0", "p1", "p2"]), profile(), max_size=3))
    if draw(st.booleans()):
        profiles["p0"] = {"type": "delay", "delay": draw(st.floats(0.001, 1e5))}
    jobs = []
    for _ in range(draw(st.integers(0, 5))):
        job = {"id": draw(ID), "subtime": draw(NUMBER), "res": draw(NUMBER),
               "profile": draw(st.sampled_from(["p0", "p1", "nope"]) | JSON)}
        if draw(st.booleans()):
            job["walltime"] = draw(NUMBER)
        for key in draw(st.lists(st.sampled_from(["burst_buffer", "bb_per_node", "gpus_per_node",
                                                  "io_bandwidth_per_node", "extra"]), max_size=2)):
            job[key] = draw(NUMBER | JSON)
        if draw(st.integers(0, 9)) == 0:
            del job[draw(st.sampled_from(sorted(job)))]
        jobs.append(job)
    data = {"nb_res": draw(st.one_of(st.integers(-1, 8), NUMBER, JSON)), "jobs": jobs, "profiles": profiles}
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["jobs", "profiles", "nb_res"]))] = draw(JSON)
    return data


def _doors_agree(path):
    """validate_workload, the engine's loader and check: the same verdict, clean errors."""
    data = clean(validate_workload, path)
    problems = check_file(path)
    for problem in problems:
        assert_clean(problem)
    assert (data is None) == bool(problems), [str(p) for p in problems]
    if data is not None:   # what the validator takes, the engine loads
        wl = load_workload(path, "w0")
        assert all(0 <= j.subtime <= MAX_TIME and j.res >= 1 for j in wl.jobs)
        assert all(math.isfinite(j.walltime) for j in wl.jobs)


@budget(120)
@given(workload())
def test_fuzz_workload_json(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("w") / "w.json"
    path.write_text(json.dumps(data, allow_nan=True))   # NaN / Infinity tokens too
    _doors_agree(path)


@budget(60)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzz_workload_bytes(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("w") / "w.json"
    path.write_bytes(raw)
    _doors_agree(path)


@budget(30)
@given(st.integers(1, 5000), st.sampled_from(["[", "{\"a\":", "[{\"x\": "]))
def test_fuzz_workload_nesting(tmp_path_factory, depth, opener):
    path = tmp_path_factory.mktemp("w") / "w.json"
    close = {"[": "]", "{\"a\":": "}", "[{\"x\": ": "}]"}[opener]
    path.write_text(opener * depth + "0" + close * depth)
    _doors_agree(path)


TOKEN = st.one_of(st.integers(-3, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                  st.sampled_from(["-1", "0", "2.5", "1e999", "abc", "", "1e308"]))
HEADER = st.tuples(st.sampled_from(["MaxNodes", "MaxProcs", "UnixStartTime", "Note", "maxnodes"]),
                   TOKEN | st.text(max_size=6)).map(lambda kv: f"; {kv[0]}: {kv[1]}")


@budget(80)
@given(st.lists(HEADER, max_size=3), st.lists(st.lists(TOKEN, min_size=16, max_size=19), max_size=4))
def test_fuzz_swf(tmp_path_factory, header, records):
    path = tmp_path_factory.mktemp("s") / "t.swf"
    path.write_text("\n".join(header + [" ".join(r) for r in records]) + "\n")
    trace = clean(read_swf, path)
    if trace is None:
        return
    conv = clean(convert_swf, trace, nodes=16, model="delay")
    if conv is None:
        return
    out = path.with_suffix(".json")
    conv.write(out)
    assert validate_workload(out)["jobs"] is not None   # what the converter writes, run takes
    assert all(type(j["res"]) is int and 1 <= j["res"] <= 16 for j in conv.workload["jobs"])
