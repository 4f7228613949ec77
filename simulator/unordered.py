"""The iteration order of GCC's ``std::unordered_map<std::string, T>`` (libstdc++ of GCC 12,
which Batsim 4.2.1 is built with here), for what Batsim decides by walking one.

Batsim keeps a workload's profiles in such a map (``Profiles``, ``src/profiles.hpp``) and drops
the ones nothing uses by walking it (``remove_unreferenced_profiles``, ``src/profiles.cpp``
125-134: a profile whose only owner is the map; dropping a composed profile releases the ones
its sequence names, which a later step of the walk then drops too). Which profiles survive
depends on that order when an unused composed profile names others (``kept_profiles``).

The order is libstdc++'s: keys hashed by ``std::_Hash_bytes`` (a 64-bit MurmurHash variant,
seed 0xc70f6907), buckets ``hash % count`` with the counts of ``_Prime_rehash_policy`` (13
buckets at the first insertion, then at least twice as many, the next prime of its table, at
most one element a bucket), each new key put first in its bucket's run of the one list, or
first in the list when its bucket is empty; a rehash walks the list and rebuilds it the same
way. ``tests/simulator/test_unordered.py`` checks the order against the SIMULATION_BEGINS of
every recorded Batsim run, and the table against the system's libstdc++ when there is one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping

_M64 = (1 << 64) - 1
_MUL = (0xc6a4a793 << 32) + 0x5bd1e995
_SEED = 0xc70f6907
#: ``__prime_list`` of libstdc++ (``src/shared/hashtable-aux.cc``), its entries below 2**32
PRIMES = (
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89,
    97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277,
    293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953,
    1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971,
    3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497,
    10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267,
    28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817,
    78779, 85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871, 172933, 187091,
    202409, 218971, 236897, 256279, 277261, 299951, 324503, 351061, 379787, 410857, 444487,
    480881, 520241, 562841, 608903, 658753, 712697, 771049, 834181, 902483, 976369, 1056323,
    1142821, 1236397, 1337629, 1447153, 1565659, 1693859, 1832561, 1982627, 2144977, 2320627,
    2510653, 2716249, 2938679, 3179303, 3439651, 3721303, 4026031, 4355707, 4712381, 5098259,
    5515729, 5967347, 6456007, 6984629, 7556579, 8175383, 8844859, 9569143, 10352717, 11200489,
    12117689, 13109983, 14183539, 15345007, 16601593, 17961079, 19431899, 21023161, 22744717,
    24607243, 26622317, 28802401, 31160981, 33712729, 36473443, 39460231, 42691603, 46187573,
    49969847, 54061849, 58488943, 63278561, 68460391, 74066549, 80131819, 86693767, 93793069,
    101473717, 109783337, 118773397, 128499677, 139022417, 150406843, 162723577, 176048909,
    190465427, 206062531, 222936881, 241193053, 260944219, 282312799, 305431229, 330442829,
    357502601, 386778277, 418451333, 452718089, 489790921, 529899637, 573292817, 620239453,
    671030513, 725980837, 785430967, 849749479, 919334987, 994618837, 1076067617, 1164186217,
    1259520799, 1362662261, 1474249943, 1594975441, 1725587117, 1866894511, 2019773507,
    2185171673, 2364114217, 2557710269, 2767159799, 2993761039, 3238918481, 3504151727,
    3791104843, 4101556399, 4294967291,
)
_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)   # ``_M_next_bkt``'s small counts


def string_hash(text: str) -> int:
    """``std::hash<std::string>`` of GCC's libstdc++ on a 64-bit machine (``_Hash_bytes``)."""
    data = text.encode()
    n = len(data)
    h = (_SEED ^ (n * _MUL)) & _M64
    aligned = n & ~7
    for i in range(0, aligned, 8):
        k = (int.from_bytes(data[i:i + 8], "little") * _MUL) & _M64
        h = ((h ^ ((k ^ (k >> 47)) * _MUL & _M64)) * _MUL) & _M64
    if n & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * _MUL) & _M64
    h = ((h ^ (h >> 47)) * _MUL) & _M64
    return h ^ (h >> 47)


def iteration_order(keys: Iterable[str]) -> list[str]:
    """The keys in the order a map that had them inserted in this order walks them."""
    count, next_resize, elements = 1, 0, 0
    nxt: dict = {None: None}   # the one list: key -> next key (None: before the first)
    buckets: dict[int, str | None] = {}   # bucket -> the node before its run's first
    code: dict[str, int] = {}
    for key in keys:
        if key in code:
            continue
        h = code[key] = string_hash(key)
        if elements + 1 > next_resize:   # _M_need_rehash
            wanted = max(elements + 1, 0 if next_resize else 11)
            if wanted >= count:
                n = max(wanted + 1, count * 2)
                if n < len(_FAST):
                    count = _FAST[n]
                else:
                    count = PRIMES[bisect.bisect_left(PRIMES, n, 6, len(PRIMES) - 1)]
                next_resize = count
                buckets = _rehash(nxt, code, count)
            else:
                next_resize = count
        b = h % count
        if b in buckets:                 # first in its bucket's run
            before = buckets[b]
            nxt[key] = nxt[before]
            nxt[before] = key
        else:                            # first in the list
            first = nxt[None]
            nxt[key] = first
            nxt[None] = key
            if first is not None:
                buckets[code[first] % count] = key
            buckets[b] = None
        elements += 1
    out, key = [], nxt[None]
    while key is not None:
        out.append(key)
        key = nxt[key]
    return out


def _rehash(nxt: dict, code: dict, count: int) -> dict:
    """``_M_rehash_aux`` for unique keys: the list walked and rebuilt for ``count`` buckets."""
    key = nxt[None]
    nxt[None] = None
    buckets: dict = {}
    first_bucket = 0
    while key is not None:
        following = nxt[key]
        b = code[key] % count
        if b not in buckets:
            nxt[key] = nxt[None]
            nxt[None] = key
            buckets[b] = None
            if nxt[key] is not None:
                buckets[first_bucket] = key
            first_bucket = b
        else:
            before = buckets[b]
            nxt[key] = nxt[before]
            nxt[before] = key
        key = following
    return buckets


def kept_profiles(profiles: Mapping[str, Mapping], used: Iterable[str]) -> set[str]:
    """The profiles Batsim keeps after loading a workload (``remove_unreferenced_profiles``):
    each is owned by the map, by every job naming it (``used``, one entry a job) and by every
    composed profile naming it; the walk drops those the map alone owns, and a dropped
    composed profile releases its sequence. The walk's order matters only when a composed
    profile is dropped, so the map's order is computed only then."""
    owners = dict.fromkeys(profiles, 1)
    for name in used:
        if name in owners:
            owners[name] += 1
    for prof in profiles.values():
        if prof.get("type") == "composed":
            for name in prof.get("seq", ()):
                if name in owners:
                    owners[name] += 1
    doomed = [n for n, prof in profiles.items() if owners[n] < 2 and prof.get("type") == "composed"]
    if not doomed:   # no sequence is released: the walk's order changes nothing
        return {n for n, k in owners.items() if k >= 2}
    kept = set(profiles)
    for name in iteration_order(profiles):
        if owners[name] < 2:
            kept.discard(name)
            prof = profiles[name]
            if prof.get("type") == "composed":
                for sub in prof.get("seq", ()):
                    if sub in owners:
                        owners[sub] -= 1
    return kept
