"""JSON numbers as Batsim 4.2.1 reads and writes them (rapidjson 1.1.0, its default flags).

Batsim 4.2.1 parses workloads (``src/workload.cpp`` 77) and the scheduler's replies
(``src/protocol.cpp`` 712) with rapidjson's default flags, whose number reader is not correctly
rounded (``reader.h`` ``ParseNumber``; ``internal/strtod.h`` ``StrtodNormalPrecision``): the
significand is gathered in a 64-bit integer while it stays below 2^53 (then cast to double,
rounding it), further digits are added in double arithmetic (``d * 10 + digit``) up to 17
significant digits and the rest dropped, and the result is one multiplication or division by
the correctly rounded power of ten. A subtime such as ``95.44886130889651`` is then one ulp
above the double nearest to it, and Batsim's clock, which sleeps towards it, is too.

Texts of at most 16 characters without an exponent are exact either way (a significand below
2^53 and a power of ten up to 1e15, one rounding): ``float`` reads those.

The same reader applied to what a scheduler writes (``as_read``, an in-process reply), Batsim's
six-decimal writer (``written``), and its keeping of a workload's jobs and profiles as
rapidjson's ``Writer`` writes them (``forwarded``, ``grisu.py``).
"""

from __future__ import annotations

from math import floor as _floor
from math import ulp as _ulp

from mrsched.simulator.grisu import rapidjson_text

_POW10 = [float(f"1e{k}") for k in range(309)]   # internal/pow10.h: 1e0 ... 1e308, rounded
_2_53 = 0x1FFFFFFFFFFFFF
_DBL_MAX_10 = 1.7976931348623157e307
_INFS = (float("inf"), float("-inf"))


def rapidjson_float(text: str, _float=float) -> float:
    """The double rapidjson 1.1.0 (normal precision) reads from a JSON number with a fraction
    or an exponent (``json.loads(..., parse_float=rapidjson_float)``)."""
    if len(text) <= 16 and "e" not in text and "E" not in text:
        return _float(text)
    try:
        return _slow(text)
    except IndexError:   # beyond the powers of ten rapidjson tabulates: it refuses the number
        return _float(text)   # inf (or 0.0): the workload's checks refuse it by job and field


def _slow(s: str) -> float:
    n, pos = len(s), 0
    minus = s[0] == "-"
    if minus:
        pos = 1
    digits = 0          # significandDigit
    i64 = 0
    use_double = False
    d = 0.0
    # integer part: exact in 64 bits, then in double once it would overflow (reader.h 1149-1228)
    limit, last = (0x0CCCCCCCCCCCCCCC, "8") if minus else (0x1999999999999999, "5")
    if s[pos] == "0":
        pos += 1
    else:
        i64 = ord(s[pos]) - 48
        pos += 1
        while pos < n and s[pos].isdigit():
            if i64 >= limit and (i64 != limit or s[pos] > last):
                d = float(i64)
                use_double = True
                break
            i64 = i64 * 10 + ord(s[pos]) - 48
            digits += 1
            pos += 1
        if use_double:
            while pos < n and s[pos].isdigit():
                d = d * 10 + (ord(s[pos]) - 48)
                pos += 1
    exp_frac = 0
    if pos < n and s[pos] == ".":
        pos += 1
        if not use_double:
            while pos < n and s[pos].isdigit():
                if i64 > _2_53:
                    break
                i64 = i64 * 10 + ord(s[pos]) - 48
                exp_frac -= 1
                if i64 != 0:
                    digits += 1
                pos += 1
            d = float(i64)
            use_double = True
        while pos < n and s[pos].isdigit():
            if digits < 17:
                d = d * 10.0 + (ord(s[pos]) - 48)
                exp_frac -= 1
                if d > 0.0:
                    digits += 1
            pos += 1
    exp = 0
    if pos < n and s[pos] in "eE":
        pos += 1
        if not use_double:
            d = float(i64)
        sign = 1
        if s[pos] in "+-":
            sign = -1 if s[pos] == "-" else 1
            pos += 1
        exp = sign * int(s[pos:])
    p = exp + exp_frac
    if p < -308:
        d = _fast(_fast(d, -308), p + 308)
    else:
        d = _fast(d, p)
    return -d if minus else d


def _fast(significand: float, exp: int) -> float:
    """``internal::FastPath``: one rounding by a correctly rounded power of ten."""
    if exp < -308:
        return 0.0
    if exp >= 0:
        return significand * _POW10[exp]
    return significand / _POW10[-exp]


def as_read(x: float, write=repr) -> float:
    """The double Batsim reads from the text a scheduler writes for the double ``x``: the text
    ``write`` makes of it (``repr``: Python's ``json``, the shortest round-trip text;
    ``grisu.rapidjson_text``: rapidjson's ``Writer``, a C++ scheduler's such as batsched's, as
    many digits but not always the same last one) read by ``rapidjson_float``. ``x`` itself for
    the short texts, which rapidjson reads exactly, and for infinities and NaN (no JSON text:
    the reply's check refuses them)."""
    if x != x or x in _INFS:
        return x
    text = write(x)
    if len(text) <= 16 and "e" not in text:
        return x
    read = rapidjson_float(text)
    return x if read == x else read


def numbers_read(value, write=repr):
    """``value`` with every double ``as_read`` (``write``: the scheduler's writer): an in-process
    scheduler's reply as Batsim reads the text the scheduler would send (``src/protocol.cpp``
    712 parses the whole reply with rapidjson's default flags). Containers are copied only
    where a number changes."""
    t = type(value)
    if t is float:
        return as_read(value, write)
    if t is dict:
        items = value.items()
    elif t is list:
        items = enumerate(value)
    else:
        return value
    out = None
    for k, v in items:
        new = numbers_read(v, write)
        if new is not v:
            if out is None:
                out = t(value)
            out[k] = new
    return value if out is None else out


def written(value, read=float):
    """``value`` as it is after Batsim's protocol writer and a JSON reader ``read``: the writer
    prints every double with ``"%6f"`` (six decimals; ``src/protocol.hpp`` 39-56, ``Writer::
    Double``) and integers as they are. Batsim's messages reach a scheduler so (``read``:
    ``float``, Python's reader); a job, profile or I/O profile the scheduler registers is
    written so and read back by rapidjson before Batsim simulates it (``src/protocol.cpp``
    1070, 1413, 1510; ``read``: ``rapidjson_float``). Containers are copied."""
    t = type(value)
    if t is float:
        return read(f"{value:.6f}")
    if t is dict:
        return {k: written(v, read) for k, v in value.items()}
    if t is list:
        return [written(v, read) for v in value]
    return value


def forwarded(value):
    """``value``, a workload's job or profile, as a scheduler reads it from Batsim: kept as the
    text rapidjson's ``Writer`` writes (``grisu.rapidjson_text``, not always the shortest) and
    parsed again by its reader (``src/jobs.cpp`` 466, ``src/profiles.cpp`` 704), then written
    with six decimals (``written``) and read by ``float``. 9390544117.3756943 is written
    ``9390544117.375695``, read 9390544117.3756962 and forwarded ``9390544117.375696``. A
    double far from a tie of its six decimals cannot change and is taken as it is (the common
    case: a trace's times)."""
    t = type(value)
    if t is float:
        six = float(f"{value:.6f}")
        if value != value or six in _INFS:
            return six
        # rapidjson moves the double by a few ulps at most (eight allowed here): its six
        # decimals change only within that many ulps of a rounding tie, x * 1e6 = n + 0.5
        # (below 4e9, x * 1e6 is below 2**52: its fraction is exact)
        y = value * 1e6
        if -4e9 < value < 4e9 and abs(y - _floor(y) - 0.5) > 8e6 * _ulp(value):
            return six
        return float(f"{as_read(value, rapidjson_text):.6f}")
    if t is dict:
        return {k: forwarded(v) for k, v in value.items()}
    if t is list:
        return [forwarded(v) for v in value]
    return value
