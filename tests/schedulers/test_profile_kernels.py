"""The availability profile's kernels: the compiled operations on rows of free burst-buffer
bytes and on node masks (``_profile.c``) and their pure-Python twins give the same values,
and a profile run with either is the same."""

import bisect
import math

import numpy as np
import pytest

from mrsched.errors import SimulationError
from mrsched.schedulers.profile import availability as av
from mrsched.schedulers.model.decisions import Allocation
from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.job import Request


@pytest.fixture
def rows(require):
    require(av._profile is not None, "the compiled profile kernels (schedulers/profile/_profile.c) were not built: "
                                     "no C compiler at install")
    return av._profile


def random_rows(rng, count, width, big):
    """``count`` rows of ``width`` entries; consecutive rows often the same object (split
    slices), entries beyond int64 when ``big``."""
    out = []
    for _ in range(count):
        if out and rng.random() < 0.3:
            out.append(out[-1])
            continue
        row = [int(x) for x in rng.integers(0, 50, width)]
        if big and width:
            row[int(rng.integers(0, width))] += 2**70
        out.append(tuple(row))
    return out


def test_compiled_row_operations_are_the_python_ones(rows):
    """least, shift_rows and first_short on random rows (ints within and beyond int64, equal
    entries, all-zero bytes, shared row objects) give the same values as the twins, return
    ``a`` itself when nothing is smaller, and keep split slices sharing one row."""
    rng = np.random.default_rng(4)
    smaller = same = 0
    for trial in range(600):
        width = int(rng.choice([1, 3, 12, 100]))
        big = trial % 5 == 0
        a, b = random_rows(rng, 2, width, big)
        got = rows.least(a, b)
        assert got == av._py_least(a, b) == tuple(map(min, a, b)), trial
        assert type(got) is tuple
        if got is a:
            same += 1
        else:
            smaller += 1
        assert rows.least(a, a) is a and tuple(rows.least(list(a), b)) == got

        count = int(rng.integers(1, 8))
        table = random_rows(rng, count + 2, width, big)
        sums = [sum(r) + int(rng.integers(0, 3)) for r in table]
        i = int(rng.integers(0, count + 1))
        j = int(rng.integers(i, count + 3))
        bb = tuple(int(x) if rng.random() < 0.2 else 0 for x in rng.integers(1, 30, width))
        if big and any(bb):
            bb = tuple(x + 2**65 if x else 0 for x in bb)
        assert rows.first_short(table, i, j, bb) == av._py_first_short(table, i, j, bb), trial
        for sign in (-1, 1):
            c_rows, c_sums, p_rows, p_sums = list(table), list(sums), list(table), list(sums)
            rows.shift_rows(c_rows, c_sums, i, j, bb, sign)
            av._py_shift_rows(p_rows, p_sums, i, j, bb, sign)
            assert c_rows == p_rows and c_sums == p_sums, trial
            assert c_rows[:i] == table[:i] and c_rows[j:] == table[j:]
            for k in range(i, j):
                if any(bb):
                    assert c_rows[k] == tuple(x + sign * y for x, y in zip(table[k], bb))
                    assert c_sums[k] == sums[k] + sign * sum(bb)
                if k > i and table[k] is table[k - 1]:
                    assert c_rows[k] is c_rows[k - 1]
            if not any(bb):
                assert c_rows == table and c_sums == sums
            c_alone, p_alone = list(table), list(table)       # no sums kept
            rows.shift_rows(c_alone, None, i, j, bb, sign)
            av._py_shift_rows(p_alone, None, i, j, bb, sign)
            assert c_alone == p_alone == c_rows, trial
    assert smaller > 100 and same > 100


def test_compiled_lowest_bits_is_the_python_one(rows):
    """The n lowest set bits of masks from empty to 10,000 bits, dense and sparse, n from 0
    to beyond the bits set (then the whole mask), at word edges too."""
    rng = np.random.default_rng(6)
    for trial in range(1500):
        width = int(rng.choice([0, 1, 63, 64, 65, 128, 1000, 9900]))
        density = float(rng.choice([0.02, 0.5, 0.98]))
        mask = sum(1 << k for k in range(width) if rng.random() < density)
        count = mask.bit_count()
        n = int(rng.integers(0, count + 3))
        got = rows.lowest_bits(mask, n)
        assert got == av._py_lowest_bits(mask, n), (trial, width, n)
        assert got.bit_count() == min(n, count) and got & ~mask == 0
        if got:
            assert mask & ((1 << got.bit_length()) - 1) == got     # no set bit skipped below
    assert rows.lowest_bits((1 << 64) - 1, 64) == (1 << 64) - 1
    assert rows.lowest_bits(1 << 64 | 1 << 63, 1) == 1 << 63
    assert rows.lowest_bits(2**200 + 5, 2) == 5 and rows.lowest_bits(2**200 + 5, 3) == 2**200 + 5
    with pytest.raises(ValueError, match="non-negative"):
        rows.lowest_bits(-4, 1)
    with pytest.raises(TypeError, match="mask must be an int"):
        rows.lowest_bits(4.0, 1)


def test_compiled_bit_count_is_int_bit_count(rows):
    """Set bits counted in place (the CPU's count where it has one): every width from none to
    beyond 10,000 bits, negative ints (their magnitude, as ``int.bit_count``), bools."""
    rng = np.random.default_rng(7)
    for trial in range(2000):
        width = int(rng.choice([0, 1, 29, 30, 31, 60, 64, 65, 1000, 9900, 20000]))
        x = int.from_bytes(rng.bytes((width + 7) // 8), "little") >> (-width % 8) if width else 0
        if rng.random() < 0.2:
            x = (1 << width) - 1
        assert rows.bit_count(x) == x.bit_count(), (trial, width)
        assert rows.bit_count(-x) == x.bit_count(), (trial, width)
    assert rows.bit_count(True) == 1 and rows.bit_count(False) == 0
    with pytest.raises(TypeError, match="needs an int"):
        rows.bit_count(3.0)


def test_compiled_least_at_the_edges_of_an_ints_digits(rows):
    """The running minimum compares entries read in place up to two digits (below 2**60) and
    as Python ints beyond, negative ones and bools too: the same minimum either way."""
    edges = [0, 1, -1, 2**30 - 1, 2**30, 2**59, 2**60 - 1, 2**60, 2**63, 2**70, -2**61, True, False]
    rng = np.random.default_rng(8)
    for trial in range(3000):
        width = int(rng.integers(0, 6))
        a = tuple(edges[int(k)] for k in rng.integers(0, len(edges), width))
        b = tuple(edges[int(k)] for k in rng.integers(0, len(edges), width))
        assert rows.least(a, b) == av._py_least(a, b) == tuple(map(min, a, b)), (a, b)


def test_compiled_shift_rows_at_the_edges_of_an_ints_digits(rows):
    """Entries and bytes are added in int64 below 2**60 and as Python ints beyond (negative
    ones and bools too): the same rows and sums either way, ``sign`` -1 going below zero."""
    edges = [0, 1, 2**30 - 1, 2**30, 2**59, 2**60 - 1, 2**60, 2**63, 2**70, -1, -2**61, True]
    rng = np.random.default_rng(12)
    for trial in range(2000):
        width = int(rng.integers(1, 6))
        table = [tuple(edges[int(k)] for k in rng.integers(0, len(edges), width)) for _ in range(3)]
        sums = [edges[int(k)] for k in rng.integers(0, len(edges), 3)]
        bb = tuple(edges[int(k)] for k in rng.integers(0, len(edges), width))
        for sign in (-1, 1):
            c_rows, c_sums, p_rows, p_sums = list(table), list(sums), list(table), list(sums)
            rows.shift_rows(c_rows, c_sums, 0, 3, bb, sign)
            av._py_shift_rows(p_rows, p_sums, 0, 3, bb, sign)
            assert c_rows == p_rows and c_sums == p_sums, (table, sums, bb, sign)


def test_compiled_row_operations_refuse_bad_input(rows):
    """Bad input is a Python error naming what is wrong, never a crash."""
    with pytest.raises(ValueError, match="rows of 2 and 3 entries"):
        rows.least((1, 2), (1, 2, 3))
    with pytest.raises(TypeError, match="a row of free bytes"):
        rows.least(5, (1,))
    with pytest.raises(ValueError, match="row 1 has 2 entries, the bytes 3"):
        rows.shift_rows([(1, 1, 1), (1, 1)], [3, 2], 0, 2, (1, 0, 0), -1)
    with pytest.raises(IndexError, match="slices 1..4 of 2 rows"):
        rows.first_short([(1,), (1,)], 1, 4, (1,))
    with pytest.raises(ValueError, match="sign must be 1 or -1"):
        rows.shift_rows([(1,)], [1], 0, 1, (1,), 2)
    with pytest.raises(TypeError, match="rows must be a list"):
        rows.first_short(((1,),), 0, 1, (1,))
    with pytest.raises(TypeError):
        rows.least(("a", 1), (2, 1))            # str < int: Python's own error


def random_run(seed):
    """Reservations and releases at random on a 100-storage machine: the answers of
    ``earliest_start`` and the final slices, each slice's sum of bytes checked on the way."""
    rng = np.random.default_rng(seed)
    cluster = Cluster.simple(64, bb_capacity=[int(c) for c in rng.integers(50, 200, 100)])
    profile = AvailabilityProfile(cluster, 0.0)
    held, now, answers = [], 0.0, []
    for step in range(400):
        now += float(rng.integers(0, 3))
        profile.advance(now)
        held = [r for r in held if r.end > now]
        req = Request(nodes=int(rng.integers(1, 9)), walltime=float(rng.integers(1, 30)),
                      bb_total=int(rng.integers(0, 400)), bb_per_node=0)
        found = profile.earliest_start(req, None, now + float(rng.integers(0, 10)))
        answers.append(None if found is None else (found[0], found[1].nodes, found[1].bb))
        if found is not None:
            held.append(profile.reserve(found[0], found[0] + req.walltime, found[1], tag=f"j{step}"))
        if held and rng.random() < 0.4:
            r = held.pop(int(rng.integers(0, len(held))))
            profile.release(r, max(now, r.start + float(rng.integers(0, 5))))
        for k in range(len(profile)):
            assert profile.bbsum[k] == sum(profile.bb[k])
    assert sum(a is not None for a in answers) > 200
    return profile, answers


def test_profiles_are_the_same_with_either_row_operations(rows):
    """A random run of reservations and releases leaves identical slices (times, nodes, bytes
    per storage node, their sums) and gives the same ``earliest_start`` answers with C or
    Python rows."""
    was = av._least is not av._py_least
    try:
        runs = []
        for compiled in (True, False):
            assert av.use(compiled) == compiled
            profile, answers = random_run(8)
            runs.append((answers, profile.times, profile.nodes, profile.bb, profile.bbsum))
    finally:
        av.use(was)
    assert runs[0] == runs[1]


def test_a_reservation_short_of_bytes_is_refused_and_leaves_no_trace(profile_kernels):
    """A reservation taking more bytes than a storage node has is refused with the time, and
    the profile is left as it was; nodes that are not free are named first."""
    profile, _ = random_run(3)
    now = profile.times[0]
    before = (list(profile.times), list(profile.nodes), list(profile.bb), list(profile.bbsum))
    row = profile.bb[0]
    greedy = Allocation(nodes=0, bb=tuple(x + 1 if s == 7 else 0 for s, x in enumerate(row)))
    with pytest.raises(SimulationError, match=f"burst buffer over-allocated at t={now}"):
        profile.reserve(now, now + 5.0, greedy, tag="greedy")
    assert (list(profile.times), list(profile.nodes), list(profile.bb), list(profile.bbsum)) == before
    busy = Allocation(nodes=~profile.nodes[0] & profile.cluster.all_nodes, bb=greedy.bb)
    if busy.nodes:
        with pytest.raises(SimulationError, match="are not free"):
            profile.reserve(now, now + 5.0, busy, tag="busy")
        assert (list(profile.times), list(profile.nodes), list(profile.bb), list(profile.bbsum)) == before


def random_slices(rng, count, width):
    """``count`` slices of a profile over ``width`` nodes: increasing start times (floats, ints
    now and then), free node masks (often the same as the slice before, dense or sparse) and
    byte totals."""
    times, nodes, sums = [], [], []
    t = float(rng.integers(0, 50))
    full = (1 << width) - 1
    for k in range(count):
        times.append(int(t) if rng.random() < 0.15 and t == int(t) else t)
        t += float(rng.choice([0.5, 1.0, 3.0, 7.25, 20.0]))
        if nodes and rng.random() < 0.3:
            nodes.append(nodes[-1])
        else:
            def bits():
                return int.from_bytes(rng.bytes(width // 8 + 1), "little") & full
            kind = int(rng.integers(0, 4))     # about 1/8, 1/2, 7/8 of the nodes free, or all
            nodes.append(bits() & bits() & bits() if kind == 0 else bits() if kind == 1 else
                         bits() | bits() | bits() if kind == 2 else full)
        sums.append(int(rng.integers(0, 400)) + (2**70 if rng.random() < 0.05 else 0))
    return times, nodes, sums


def test_compiled_fit_window_is_the_python_one(rows):
    """The earliest-fit scan's window search (``fit_window``) on random slices (machines of 1
    to 9,900 nodes, eligible subsets, byte totals within and beyond int64, endless and zero
    durations, starts before, at and past the breakpoints, int times, a reservation's nodes
    counted free over a range of slices) gives the same answer as its twin, the start being
    the very object the twin returns."""
    rng = np.random.default_rng(21)
    found = none = 0
    for trial in range(1500):
        width = int(rng.choice([1, 5, 64, 128, 200, 9900])) if trial % 10 else 9900
        count = int(rng.integers(1, 40)) if width < 9900 else int(rng.integers(1, 8))
        times, nodes, sums = random_slices(rng, count, width)
        full = (1 << width) - 1
        elig = full if rng.random() < 0.6 else full & int(rng.integers(1, 2**62)) * (1 | 1 << (width // 2))
        n = int(rng.integers(0, width + 2)) if rng.random() < 0.2 else int(rng.integers(1, max(2, width // 3)))
        total = 0 if rng.random() < 0.5 else int(rng.integers(1, 500)) + (2**70 if rng.random() < 0.05 else 0)
        duration = float(rng.choice([0.0, 0.5, 2.0, 10.0, 55.5, 1e9, math.inf]))
        if rng.random() < 0.1:
            duration = int(duration) if duration != math.inf else 10
        t0 = times[0] + float(rng.choice([0.0, 0.25, 1.0, 13.0, 1e4]))
        i = bisect.bisect_right(times, t0) - 1 + int(rng.integers(-1, 3))
        own = (0, 0, 0)
        if rng.random() < 0.4:      # a reservation's nodes counted free over some slices
            oi = int(rng.integers(-1, count + 1))
            own = (int(rng.integers(0, 2**62)) & full, oi, oi + int(rng.integers(0, count + 1)))
        args = (times, nodes, sums, n, elig, total, duration, t0, i, *own)
        want = av._py_fit_window(*args)
        got = rows.fit_window(*args)
        assert got == want, (trial, got, want)
        if want is None:
            none += 1
        else:
            found += 1
            assert got[2] is want[2] and type(got[3]) is int
    assert found > 400 and none > 200, (found, none)


def test_compiled_fit_window_leaves_unusual_input_to_python(rows):
    """Times beyond 2**52 or not numbers, negative masks: ``NotImplemented`` (the caller asks
    the twin, whose answer is Python's own); wrong shapes are errors naming the input."""
    times, nodes, sums = [0.0, 5.0, 9.0], [0b1111, 0b0011, 0b1111], [10, 10, 10]
    no = (0, 0, 0)
    assert rows.fit_window(times, nodes, sums, 3, 0b1111, 0, 6.0, 0.0, 0, *no) == av._py_fit_window(
        times, nodes, sums, 3, 0b1111, 0, 6.0, 0.0, 0) == (2, 3, 9.0, 0b1111)
    assert rows.fit_window(times, nodes, sums, 3, 0b1111, 0, 6.0, 0.0, 0, 0b0100, 1, 2) == (0, 2, 0.0, 0b0111)
    assert rows.fit_window([0, 2**60], nodes[:2], sums, 2, 3, 0, 1.0, 0, 0, *no) is NotImplemented
    assert rows.fit_window(times, nodes, sums, 2, 3, 0, 2**60, 0.0, 0, *no) is NotImplemented
    assert rows.fit_window(times, [-1, 3, 3], sums, 2, 3, 0, 1.0, 0.0, 0, *no) is NotImplemented
    assert rows.fit_window(times, nodes, sums, 2, -3, 0, 1.0, 0.0, 0, *no) is NotImplemented
    assert rows.fit_window(times, nodes, sums, 2, 3, 0, 1.0, 0.0, 0, -1, 0, 3) is NotImplemented
    assert rows.fit_window([0.0, True, 9.0], nodes, sums, 2, 3, 0, 9.0, 0.0, 0, *no) is NotImplemented
    with pytest.raises(ValueError, match="2 node masks for 3 slices"):
        rows.fit_window(times, nodes[:2], sums, 2, 3, 0, 1.0, 0.0, 0, *no)
    with pytest.raises(ValueError, match="1 byte sums for 3 slices"):
        rows.fit_window(times, nodes, sums[:1], 2, 3, 7, 1.0, 0.0, 0, *no)
    with pytest.raises(TypeError, match="must be lists"):
        rows.fit_window(tuple(times), nodes, sums, 2, 3, 0, 1.0, 0.0, 0, *no)
    with pytest.raises(TypeError, match="takes 12 arguments"):
        rows.fit_window(times, nodes, sums, 2, 3, 0, 1.0, 0.0, 0)


def test_compiled_shift_nodes_is_the_python_one(rows):
    """Taking and giving back a job's nodes over a range of slices (masks of 1 to 9,900 nodes,
    checked or not, clashing or not) changes the same slices to the same masks as the twin,
    or reports the same first clash and changes nothing."""
    rng = np.random.default_rng(23)
    clashes = done = 0
    for trial in range(1500):
        width = int(rng.choice([1, 30, 31, 64, 128, 9900]))
        count = int(rng.integers(1, 12))
        _, nodes, _ = random_slices(rng, count, width)
        i = int(rng.integers(0, count + 1))
        j = int(rng.integers(i, count + 1))
        sign = int(rng.choice([-1, 1]))
        full = (1 << width) - 1
        if rng.random() < 0.5 and j > i:      # a mask that passes the check
            common = full
            for k in range(i, j):
                common &= nodes[k] if sign < 0 else ~nodes[k]
            mask = common & int.from_bytes(rng.bytes(width // 8 + 1), "little")
        else:
            mask = int.from_bytes(rng.bytes(width // 8 + 1), "little") & full
        check = bool(rng.random() < 0.8)
        c_nodes, p_nodes = list(nodes), list(nodes)
        got = rows.shift_nodes(c_nodes, i, j, mask, sign, check)
        assert got == av._py_shift_nodes(p_nodes, i, j, mask, sign, check), trial
        assert c_nodes == p_nodes and all(type(x) is int for x in c_nodes), trial
        if got >= 0:
            clashes += 1
            assert c_nodes == nodes
        else:
            done += 1
            for k in range(i + 1, j):
                if nodes[k] is nodes[k - 1]:
                    assert c_nodes[k] is c_nodes[k - 1]
    assert clashes > 200 and done > 600, (clashes, done)
    with pytest.raises(ValueError, match="sign must be 1 or -1"):
        rows.shift_nodes([1], 0, 1, 1, 0, True)
    with pytest.raises(ValueError, match="node mask 1 is not a non-negative int"):
        rows.shift_nodes([1, -1], 0, 2, 2, 1, True)
    with pytest.raises(IndexError, match="slices 0..3 of 2 rows"):
        rows.shift_nodes([1, 2], 0, 3, 1, 1, True)
