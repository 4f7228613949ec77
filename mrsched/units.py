"""Quantities with units, as SimGrid and our command lines write them.

SimGrid's units are SI unless binary (``MiB``): ``1Gf`` = 1e9 flop/s, ``1250MBps`` = 1.25e9
bytes/s, ``10Gbps`` = 1.25e9 bytes/s (bits), ``50us`` = 5e-5 s. Sizes on our command lines
accept the same suffixes (``40GB`` = 4e10 bytes). Every quantity read is finite: ``1e400f``
or ``1e300EB`` (beyond a double) is refused, never read as infinity (issue 43).
"""

from __future__ import annotations

import math
import re

from mrsched.errors import ConfigError

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]*)\s*$")

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}


def _split(text: str | float | int, what: str) -> tuple[float, str]:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            raise ConfigError(f"{what} {text!r} is not a finite number")
        return value, ""
    m = _NUMBER.match(str(text))
    if not m:
        raise ConfigError(f"cannot read {what} '{text}'", hint="a number with an optional unit")
    value = float(m.group(1))
    if not math.isfinite(value):
        raise ConfigError(f"{what} '{text}' is beyond the range of a double",
                          hint="a finite number, e.g. 1e9 or 1Gf")
    return value, m.group(2)


def _prefixed(value: float, unit: str, bases: dict[str, float], text, what: str) -> float:
    for base, factor in sorted(bases.items(), key=lambda kv: -len(kv[0])):
        if unit.endswith(base):
            prefix = unit[: len(unit) - len(base)]
            if prefix in _BIN or prefix in _SI:
                scaled = value * (_BIN[prefix] if prefix in _BIN else _SI[prefix]) * factor
                if not math.isfinite(scaled):
                    raise ConfigError(f"{what} '{text}' is beyond the range of a double")
                return scaled
    raise ConfigError(f"unknown unit in {what} '{text}'",
                      hint=f"expected one of {', '.join(sorted(bases))} with an SI or binary prefix")


def parse_speed(text) -> float:
    """Flop/s from ``1Gf``, ``100Mf``, ``1e9`` (SimGrid host speed)."""
    value, unit = _split(text, "speed")
    if unit == "":
        return value
    return _prefixed(value, unit, {"f": 1.0, "flops": 1.0}, text, "speed")


def parse_bandwidth(text) -> float:
    """Bytes/s from ``1250MBps``, ``5GBps``, ``10Gbps`` (bits), ``1e9``."""
    value, unit = _split(text, "bandwidth")
    if unit == "":
        return value
    return _prefixed(value, unit, {"Bps": 1.0, "bps": 0.125, "B/s": 1.0}, text, "bandwidth")


def parse_size(text) -> float:
    """Bytes from ``40GB``, ``100MB``, ``2TiB``, ``8Gb`` (bits), ``1e9``."""
    value, unit = _split(text, "size")
    if unit == "":
        return value
    return _prefixed(value, unit, {"B": 1.0, "b": 0.125}, text, "size")


def parse_time(text) -> float:
    """Seconds from ``50us``, ``1ms``, ``2s``, ``5min``, ``1h``, ``1d``, ``1e-3``."""
    value, unit = _split(text, "time")
    table = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12,
             "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
    if unit not in table:
        raise ConfigError(f"unknown unit in time '{text}'", hint=f"expected one of {', '.join(sorted(table))}")
    if not math.isfinite(value * table[unit]):
        raise ConfigError(f"time '{text}' is beyond the range of a double")
    return value * table[unit]
