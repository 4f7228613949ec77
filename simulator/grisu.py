"""Doubles written as rapidjson 1.1.0's ``Writer`` writes them: Grisu2 and its layout.

Batsim keeps a static job's and a profile's JSON as the text rapidjson's ``Writer`` makes of the
parsed workload (``src/jobs.cpp`` 466, ``src/profiles.cpp`` 704) and parses that text again to
forward it. The writer's digits come from Grisu2 (Loitsch, "Printing floating-point numbers
quickly and accurately with integers", PLDI 2010; ``internal/dtoa.h``): they always read back to
the same double when correctly rounded, but they are not always the shortest nor the closest
ones: 9390544117.3756943 is written ``9390544117.375695`` where Python's ``repr`` gives
``...375694``, and rapidjson's own reader then lands one ulp up (``jsonnum.rapidjson_float``).

The arithmetic is that of the C++: 64-bit "do it yourself" floats (significand ``f``, binary
exponent ``e``) whose products keep the high 64 bits rounded half up, a cached power of ten
``10**(8 i - 348)`` bringing the value's exponent into Grisu's range, and the digits generated
from the upper boundary then moved down towards the value (``GrisuRound``) while they stay in
the boundaries' interval. Python's integers stand for ``uint64_t``; the one product that can
wrap in the C++ is masked.
"""

from __future__ import annotations

import struct

_M64 = (1 << 64) - 1
_HIDDEN = 1 << 52
_FRACTION = _HIDDEN - 1
_BIAS = 0x3FF + 52


def _power(q: int) -> tuple[int, int]:
    """``10**q`` as a normalised 64-bit significand (rounded to nearest) and binary exponent."""
    if q >= 0:
        n = 10 ** q
        e = n.bit_length() - 64
        f = n if e <= 0 else (n + (1 << (e - 1))) >> e
        if e < 0:
            f <<= -e
    else:
        d = 10 ** -q
        s = 63 + d.bit_length()           # 2**s / d in [2**63, 2**65)
        f, rest = divmod(1 << s, d)
        while f >> 64:
            s -= 1
            f, rest = divmod(1 << s, d)
        if 2 * rest >= d:
            f += 1
        e = -s
    if f >> 64:                            # a rounding carried into bit 64
        f, e = f >> 1, e + 1
    return f, e


#: the cached powers of ten, 10**-348, 10**-340, ..., 10**340
_CACHED = [_power(q) for q in range(-348, 341, 8)]


def _mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The high 64 bits of the 128-bit product, rounded half up (``DiyFp::operator*``)."""
    p = a[0] * b[0]
    return (p >> 64) + ((p >> 63) & 1), a[1] + b[1] + 64


def _boundaries(f: int, e: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The midpoints to the neighbouring doubles, on the upper one's normalised exponent
    (``NormalizedBoundaries``)."""
    pf, pe = (f << 1) + 1, e - 1
    while not pf & (_HIDDEN << 1):
        pf, pe = pf << 1, pe - 1
    pf, pe = pf << 10, pe - 10
    if f == _HIDDEN:
        mf, me = (f << 2) - 1, e - 2
    else:
        mf, me = (f << 1) - 1, e - 1
    return (mf << (me - pe), pe), (pf, pe)


def _round(digits: list[int], delta: int, rest: int, ten_kappa: int, wp_w: int) -> None:
    """``GrisuRound``: the last digit moved down while the number stays in the interval and
    gets closer to the value."""
    while (rest < wp_w and delta - rest >= ten_kappa
           and (rest + ten_kappa < wp_w or wp_w - rest > rest + ten_kappa - wp_w)):
        digits[-1] -= 1
        rest += ten_kappa


def _digits(w: tuple[int, int], mp: tuple[int, int], delta: int) -> tuple[list[int], int]:
    """``DigitGen``: the digits of the upper boundary ``mp`` until they are within ``delta`` of
    it, and the decimal exponent they lack."""
    shift = -mp[1]
    one = 1 << shift
    wp_w = mp[0] - w[0]
    p1, p2 = mp[0] >> shift, mp[0] & (one - 1)
    kappa = len(str(p1)) if p1 >= 10 else 1
    out: list[int] = []
    while kappa > 0:
        d, p1 = divmod(p1, 10 ** (kappa - 1))
        if d or out:
            out.append(d)
        kappa -= 1
        rest = (p1 << shift) + p2
        if rest <= delta:
            _round(out, delta, rest, (10 ** kappa) << shift, wp_w)
            return out, kappa
    while True:
        p2 *= 10
        delta *= 10
        d = p2 >> shift
        if d or out:
            out.append(d)
        p2 &= one - 1
        kappa -= 1
        if p2 < delta:
            scale = 10 ** -kappa if -kappa < 9 else 0
            _round(out, delta, p2, one, (wp_w * scale) & _M64)
            return out, kappa


def _grisu2(value: float) -> tuple[str, int]:
    """The digits rapidjson writes for a positive finite double, and their decimal exponent."""
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    biased, fraction = bits >> 52, bits & _FRACTION
    if biased:
        f, e = fraction + _HIDDEN, biased - _BIAS
    else:
        f, e = fraction, 1 - _BIAS
    minus, plus = _boundaries(f, e)
    dk = (-61 - plus[1]) * 0.30102999566398114 + 347   # GetCachedPower, in double as the C++
    k = int(dk)
    if dk - k > 0.0:
        k += 1
    index = (k >> 3) + 1
    K = -(-348 + (index << 3))
    c = _CACHED[index]
    s = f.bit_length()
    w = _mul((f << (64 - s), e - (64 - s)), c)
    wp = _mul(plus, c)
    wm = _mul(minus, c)
    wp = (wp[0] - 1, wp[1])
    delta = wp[0] - (wm[0] + 1)
    digits, kappa = _digits(w, wp, delta)
    return "".join(map(str, digits)), K + kappa


def rapidjson_text(value: float) -> str:
    """The text rapidjson's ``Writer`` writes for a finite double (``internal::dtoa`` with its
    default 324 decimal places: ``Prettify``'s layouts, never truncated)."""
    if value == 0.0:
        return "-0.0" if struct.pack("<d", value)[7] & 0x80 else "0.0"
    sign = "-" if value < 0 else ""
    digits, k = _grisu2(-value if value < 0 else value)
    n = len(digits)
    kk = n + k                          # 10**(kk-1) <= value < 10**kk
    if 0 <= k and kk <= 21:
        return f"{sign}{digits}{'0' * k}.0"
    if 0 < kk <= 21:
        return f"{sign}{digits[:kk]}.{digits[kk:]}"
    if -6 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{digits}"
    if n == 1:
        return f"{sign}{digits}e{kk - 1}"
    return f"{sign}{digits[0]}.{digits[1:]}e{kk - 1}"
