"""JSON numbers read as Batsim 4.2.1 reads them (rapidjson 1.1.0, normal precision:
``simulator/jsonnum.py``). The fixture ``fixtures/rapidjson_numbers.txt`` holds 600 number texts
(hand-picked edge cases, then seeded random ones: short and long decimals, 17-25 digit
significands, exponents from -330 to 300) and the double the real rapidjson of this machine's
Batsim build read from each (a C++ loop over the lines: ``Document::Parse``, ``GetDouble``,
printed ``%.17g``); a fifth of them are not the nearest double.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from mrsched.simulator.connection import parse_reply
from mrsched.simulator.jsonnum import as_read, numbers_read, rapidjson_float
from mrsched.simulator.server import check_reply, read_as_batsim
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


def test_a_double_is_read_as_batsim_reads_its_shortest_text():
    """``as_read``: what Batsim reads from the text a scheduler writes for a double (its
    shortest round-trip text, Python's and rapidjson's writers alike)."""
    assert as_read(982.0414259999999) == 982.041426          # rapidjson: one ulp on
    assert as_read(982.0434259999998) == 982.0434259999998   # read exactly
    for x in (0.0, -1.5, 982.041426, 1e300, 5e-324, math.inf, -math.inf):
        assert as_read(x) == x
    assert math.isnan(as_read(math.nan))
    # every fixture text that is its own double's shortest text: as rapidjson read it
    shortest = [(text, want) for text, want in _cases() if repr(float(text)) == text]
    assert len(shortest) > 50
    assert [as_read(float(text)) for text, _ in shortest] == [want for _, want in shortest]


def test_numbers_in_a_reply_are_read_and_copied_only_where_they_change():
    plain = {"now": 5.0, "events": [{"timestamp": 5.0, "type": "EXECUTE_JOB",
                                     "data": {"job_id": "w0!1", "alloc": "0-3"}}]}
    assert numbers_read(plain) is plain
    costed = {"now": 982.0414259999999, "events": [
        {"timestamp": 982.0414259999999, "type": "CALL_ME_LATER",
         "data": {"timestamp": 95.44886130889651}}, plain["events"][0]]}
    read = numbers_read(costed)
    assert read["now"] == 982.041426 and costed["now"] == 982.0414259999999   # not in place
    assert read["events"][0] == {"timestamp": 982.041426, "type": "CALL_ME_LATER",
                                 "data": {"timestamp": 95.44886130889653}}
    assert read["events"][1] is plain["events"][0]


def test_an_in_process_reply_is_read_as_a_connections_is():
    """The server reads an in-process scheduler's checked reply as ``parse_reply`` reads the
    same reply sent as text over ZeroMQ."""
    reply = {"now": 982.0434259999998, "events": [
        {"timestamp": 982.0414259999999, "type": "EXECUTE_JOB",
         "data": {"job_id": "w0!9", "alloc": "0-5"}},
        {"timestamp": 982.0434259999998, "type": "CALL_ME_LATER",
         "data": {"timestamp": 1000.0000000000001}}]}
    events, now = read_as_batsim(*check_reply(reply, 982.038426), 982.038426)
    sent = parse_reply(json.dumps(reply))
    assert (events, now) == (sent["events"], sent["now"])
    assert events[0]["timestamp"] == 982.041426 != reply["events"][0]["timestamp"]
