"""JSON numbers read as Batsim 4.2.1 reads them (rapidjson 1.1.0, normal precision:
``simulator/jsonnum.py``). The fixture ``fixtures/rapidjson_numbers.txt`` holds 600 number texts
(hand-picked edge cases, then seeded random ones: short and long decimals, 17-25 digit
significands, exponents from -330 to 300) and the double the real rapidjson of this machine's
Batsim build read from each (a C++ loop over the lines: ``Document::Parse``, ``GetDouble``,
printed ``%.17g``); a fifth of them are not the nearest double.
"""

from __future__ import annotations

import json
from pathlib import Path

from mrsched.simulator.connection import parse_reply
from mrsched.simulator.jsonnum import rapidjson_float
from mrsched.simulator.workload import load_workload

FIXTURE = Path(__file__).parent / "fixtures" / "rapidjson_numbers.txt"


def _cases() -> list[tuple[str, float]]:
    rows = [line.split() for line in FIXTURE.read_text().splitlines()
            if line and not line.startswith("#")]
    return [(text, float.fromhex(value)) for text, value in rows]


def test_every_number_reads_as_rapidjson_reads_it():
    cases = _cases()
    assert len(cases) == 600
    wrong = [(text, rapidjson_float(text), want) for text, want in cases
             if rapidjson_float(text) != want]
    assert not wrong, wrong[:5]
    # the fixture is not trivial: many of rapidjson's doubles are not the nearest ones
    assert sum(float(text) != want for text, want in cases) > 100


def test_a_long_subtime_is_one_ulp_above_the_nearest_double(tmp_path):
    """``95.44886130889651`` (Batsim's paper workload, job 6): rapidjson rounds the 16-digit
    significand to an even double, then divides: Batsim's submitter sleeps to 95.44886130889653
    (its log, ``%.17d``: 95.44886130889652520), and so does the engine."""
    path = tmp_path / "w.json"
    path.write_text(json.dumps({
        "nb_res": 1, "profiles": {"d": {"type": "delay", "delay": 1.0}},
        "jobs": [{"id": 6, "subtime": 95.44886130889651, "walltime": 77, "res": 1,
                  "profile": "d"}]}))
    job = load_workload(path, "w0").jobs[0]
    assert job.subtime == 95.44886130889653 != 95.44886130889651


def test_replies_read_as_rapidjson_reads_them():
    reply = parse_reply('{"now": 100000000020.20201, "events": [{"timestamp": 1694.077, '
                        '"type": "CALL_ME_LATER", "data": {"timestamp": 95.44886130889651}}]}')
    assert reply["now"] == 100000000020.202
    assert reply["events"][0]["timestamp"] == 1694.077
    assert reply["events"][0]["data"]["timestamp"] == 95.44886130889653
