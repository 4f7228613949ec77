"""Doubles written as rapidjson 1.1.0's ``Writer`` writes them (``simulator/grisu.py``), and a
workload's jobs and profiles forwarded as Batsim forwards them (``jsonnum.forwarded``). The
fixture ``fixtures/rapidjson_written.txt`` holds 600 doubles and the text the real rapidjson of
this machine's Batsim build wrote for each."""

from __future__ import annotations

from pathlib import Path

from mrsched.simulator.grisu import rapidjson_text
from mrsched.simulator.jsonnum import forwarded, rapidjson_float, written

FIXTURE = Path(__file__).parent / "fixtures" / "rapidjson_written.txt"


def _rows() -> list[tuple[float, str]]:
    rows = [line.split() for line in FIXTURE.read_text().splitlines()
            if line and not line.startswith("#")]
    return [(float.fromhex(h), text) for h, text in rows]


def test_every_double_is_written_as_rapidjson_writes_it():
    rows = _rows()
    assert len(rows) == 600
    wrong = [(x, rapidjson_text(x), text) for x, text in rows if rapidjson_text(x) != text]
    assert not wrong, wrong[:5]
    # every text reads back to its double (Grisu2 is exact) ...
    assert all(float(text) == x for x, text in rows)
    # ... but the fixture holds digits other than Python's shortest ones (Grisu2 does not
    # always pick the closest), and layouts of every kind
    digits = lambda t: t.lstrip("-").split("e")[0].replace(".", "").strip("0")  # noqa: E731
    assert sum(digits(text) != digits(repr(x)) for x, text in rows) > 0
    texts = {text for _, text in rows}
    assert {"1e21", "1e22", "0.1", "1e-7", "3.0", "100.0", "5e-324"} <= texts


def test_grisu2_not_the_closest_digits():
    """9390544117.3756943: Python writes ``...375694``, rapidjson ``...375695`` (both 16 digits,
    both read back exactly), which rapidjson's own reader takes one ulp up."""
    x = 9390544117.3756943
    assert (repr(x), rapidjson_text(x)) == ("9390544117.375694", "9390544117.375695")
    assert rapidjson_float(rapidjson_text(x)) == 9390544117.3756962


def test_a_job_field_is_forwarded_as_batsim_forwards_it():
    """Batsim keeps a job's and a profile's JSON as rapidjson writes it, reads it again and
    writes six decimals (case ``forwarded_doubles``, recorded with Batsim 4.2.1)."""
    for text, sent in [("9390544117.375694", 9390544117.375696),
                       ("98259689773.766602", 98259689773.7666),
                       ("96152770576.190125", 96152770576.19012)]:
        x = rapidjson_float(text)
        assert forwarded(x) == sent != written(x)
    # the common case: a trace's times, below 2**29, kept as they are
    assert forwarded({"subtime": 12.5, "walltime": 3600.000001, "res": 4}) == {
        "subtime": 12.5, "walltime": 3600.000001, "res": 4}
    assert forwarded([0.1234567, 1e-7]) == [written(0.1234567), written(1e-7)]


def test_a_reply_is_read_from_its_schedulers_own_writing():
    """Batsim reads a batsched reply from rapidjson's text and a Python scheduler's from
    ``repr``'s: for 9390544117.3756943 the two texts differ and so does what Batsim reads. A
    replay says whose text it stands for (``ReplayScheduler(writer=...)``)."""
    import pytest

    from mrsched.errors import ConfigError
    from mrsched.simulator.jsonnum import as_read
    from mrsched.simulator.replay import ReplayScheduler
    from mrsched.simulator.server import read_as_batsim

    x = 9390544117.3756943
    assert as_read(x) == x                                       # "...375694": exact
    assert as_read(x, rapidjson_text) == 9390544117.3756962      # "...375695": one ulp up
    events = [{"timestamp": x, "type": "CALL_ME_LATER", "data": {"timestamp": x}}]
    replay = ReplayScheduler([], writer="rapidjson")
    read, now = read_as_batsim(events, x, 0.0, replay.number_text)
    assert now == read[0]["timestamp"] == read[0]["data"]["timestamp"] == 9390544117.3756962
    assert ReplayScheduler([]).number_text is repr
    with pytest.raises(ConfigError, match="number writer"):
        ReplayScheduler([], writer="grisu")


def test_forwarded_skips_the_writer_only_where_it_changes_nothing():
    """``forwarded``'s shortcut (a double far from a tie of its six decimals is not written
    and read again) gives what the full chain gives, on drawn doubles: any bit pattern, any
    magnitude, and doubles within a few ulps of a six-decimal tie, where it must not skip."""
    import math
    import random
    import struct

    from mrsched.simulator.jsonnum import as_read

    rng = random.Random(40)
    drawn = []
    for _ in range(4000):
        kind = rng.random()
        if kind < 0.4:
            x = rng.uniform(0, 10 ** rng.randint(0, 12))
        elif kind < 0.7:
            tie = (rng.randint(0, 10 ** rng.randint(1, 16)) + 0.5) / 1e6
            x = tie * (1 + rng.choice([-1, 1]) * rng.randint(0, 3) * 2.0 ** -52)
        else:
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(63)))[0]
        if math.isfinite(x) and x != 0:
            drawn.append(x)
    # rapidjson reads a Writer text at most 2 ulps away (the shortcut allows 8)
    assert max(abs(as_read(x, rapidjson_text) - x) / math.ulp(x) for x in drawn) <= 2
    wrong = [x for x in drawn if forwarded(x) != float(f"{as_read(x, rapidjson_text):.6f}")]
    assert not wrong, wrong[:5]
    # and the draw reaches the full chain: near ties, the writer changes six decimals
    assert sum(written(x) != forwarded(x) for x in drawn) > 0
