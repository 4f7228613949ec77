"""Interval-set strings: the canonical text Batsim reads and writes for resource sets."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from procset import ProcSet

from mrsched.errors import ProtocolError
from mrsched.schedulers.batsim.intervals import format_intervals, parse_intervals

ids = st.sets(st.integers(min_value=0, max_value=300), max_size=60)
CANONICAL = re.compile(r"^(\d+(-\d+)?( \d+(-\d+)?)*)?$")


def ranges_of(text: str) -> list[tuple[int, int]]:
    out = []
    for tok in text.split():
        lo, _, hi = tok.partition("-")
        out.append((int(lo), int(hi or lo)))
    return out


@given(ids)
def test_round_trip_against_a_set_model(values):
    text = format_intervals(values)
    assert CANONICAL.match(text)
    ps = parse_intervals(text)
    assert set(ps) == values
    assert len(ps) == len(values)
    assert format_intervals(ps) == text  # ProcSet and iterable forms agree


@given(ids)
def test_format_is_sorted_and_maximal(values):
    rngs = ranges_of(format_intervals(values))
    for (lo, hi), (lo2, _) in zip(rngs, rngs[1:]):
        assert lo <= hi
        assert lo2 > hi + 1, "adjacent or overlapping ranges must be merged"
    for tok in format_intervals(values).split():
        lo, _, hi = tok.partition("-")
        assert hi == "" or int(hi) > int(lo), "a single id is written alone, never 'k-k'"


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 20)), max_size=20))
def test_non_canonical_input_is_merged(pairs):
    tokens = [f"{lo}-{lo + n}" if n else str(lo) for lo, n in pairs]
    model = {i for lo, n in pairs for i in range(lo, lo + n + 1)}
    ps = parse_intervals(" ".join(tokens))
    assert set(ps) == model
    assert ps == ProcSet(*model)          # a proper ProcSet: set algebra works on it
    assert format_intervals(ps) == format_intervals(model)


def test_examples():
    assert format_intervals(ProcSet((0, 3), 7, (9, 10))) == "0-3 7 9-10"
    assert format_intervals([7, 3, 2, 1, 0, 3]) == "0-3 7"
    assert format_intervals([]) == "" and parse_intervals("") == ProcSet()
    assert parse_intervals("0-3 7") == ProcSet((0, 3), 7)
    assert parse_intervals("5 0-2") == ProcSet((0, 2), 5)
    # fast-built sets behave like any ProcSet
    ps = parse_intervals("0-3 7")
    ps |= ProcSet(4)
    assert format_intervals(ps) == "0-4 7"


@pytest.mark.parametrize("bad", ["a", "3-1", "-1", "1 ", " 1", "1  2", "+3", "1--3", "1-2-3",
                                 "1,2", "1_0", "\u0663", "0-"])
def test_bad_text_is_a_protocol_error(bad):
    with pytest.raises(ProtocolError, match="invalid interval set"):
        parse_intervals(bad, field="alloc")


def test_errors_name_the_field_and_type():
    with pytest.raises(ProtocolError) as err:
        parse_intervals("x", field="alloc")
    assert err.value.field == "alloc"
    with pytest.raises(ProtocolError, match="must be a string"):
        parse_intervals(3)
    with pytest.raises(ProtocolError, match="negative"):
        format_intervals([1, -2])
    with pytest.raises(ProtocolError, match="not an integer"):
        format_intervals([1, 2.5])
    with pytest.raises(ProtocolError, match="not an integer"):
        format_intervals([True])
    with pytest.raises(ProtocolError, match="parse_intervals"):
        format_intervals("0-3")


def test_a_repeated_text_gives_an_independent_equal_set():
    """Parsed sets of a repeated text come from a cache: mutating one must not change the next."""
    first = parse_intervals("2-5 9")
    first |= ProcSet(7)
    first.discard(2)
    again = parse_intervals("2-5 9")
    assert again == ProcSet((2, 5), 9) and again is not first
    assert format_intervals(again) == "2-5 9"
    assert parse_intervals("2-5 9") == ProcSet((2, 5), 9)


# -- the engine side: EXECUTE_JOB's resource sets --------------------------------------------

@given(ids.filter(bool))
def test_read_alloc_gives_the_ids_their_ranges_and_the_canonical_text(values):
    from mrsched.schedulers.batsim.intervals import read_alloc, runs_of_ids

    want = sorted(values)
    canonical = format_intervals(values)
    for text in (canonical, " ".join(map(str, want)), " ".join(map(str, reversed(want)))):
        got, text_out, runs = read_alloc(text, job="w0!1")
        assert list(got) == want and len(got) == len(want)
        assert text_out == canonical
        assert runs == runs_of_ids(want) == ranges_of(canonical)


def test_read_alloc_reads_a_canonical_text_by_its_ranges():
    from mrsched.schedulers.batsim.intervals import RunIds, read_alloc

    ids, text, runs = read_alloc("0-3", job=None)
    assert ids == range(0, 4) and text == "0-3" and runs == [(0, 3)]
    ids, text, runs = read_alloc("0-3 7 9-10", job=None)
    assert type(ids) is RunIds and list(ids) == [0, 1, 2, 3, 7, 9, 10] and runs == [(0, 3), (7, 7), (9, 10)]
    # as Batsim's reader: any run of spaces, unsorted, overlapping or adjacent parts
    for loose in ("0-1  2-3", "2-3 0-1", "0-2 1-3", "0 1 2 3", "00-3"):
        assert read_alloc(loose, job=None)[1:] == ("0-3", [(0, 3)]), loose


@pytest.mark.parametrize("bad", ["", "  ", None, 3, "a", "3-1", "-1", "1-", "0-x"])
def test_read_alloc_errors_name_the_event_job_and_field(bad):
    from mrsched.schedulers.batsim.intervals import parse_ids, read_alloc

    with pytest.raises(ProtocolError) as err:
        read_alloc(bad, job="w0!7")
    assert (err.value.event, err.value.job, err.value.field) == ("EXECUTE_JOB", "w0!7", "alloc")
    with pytest.raises(ProtocolError) as err:
        parse_ids(bad, job="w0!7", field="additional_io_job.alloc")
    assert err.value.field == "additional_io_job.alloc"
    assert str(err.value.message).startswith(("invalid interval set", "'additional_io_job.alloc' must"))


@given(ids.filter(bool))
def test_read_alloc_of_a_written_text_is_its_fresh_read(values):
    """A text ``text_of_runs`` wrote is read back from its remembered ranges: the same ids,
    text and ranges as a read of a text never seen."""
    from mrsched.schedulers.batsim import intervals
    from mrsched.schedulers.batsim.intervals import read_alloc, runs_of_ids, text_of_runs

    runs = runs_of_ids(sorted(values))
    text = text_of_runs(list(runs))
    assert intervals._SENT.get(text) == runs
    got, text_out, runs_out = read_alloc(text, job="w0!1")
    intervals._SENT.pop(text)
    fresh, fresh_text, fresh_runs = read_alloc(text, job="w0!1")
    assert (list(got), len(got), text_out, runs_out) == (list(fresh), len(fresh), fresh_text, fresh_runs)
    assert (got[0], got[-1]) == (fresh[0], fresh[-1]) == (min(values), max(values))


def test_ranges_that_are_not_canonical_are_written_but_not_remembered():
    from mrsched.schedulers.batsim import intervals
    from mrsched.schedulers.batsim.intervals import read_alloc, text_of_runs

    for runs, merged in (([(4, 5), (0, 1)], "0-1 4-5"), ([(0, 1), (2, 3)], "0-3"),
                         ([(3, 2)], None), ([(0, 2), (1, 4)], "0-4")):
        text = text_of_runs(runs)
        assert text not in intervals._SENT
        if merged is not None:   # the engine reads it as Batsim would: merged, sorted
            assert read_alloc(text, job=None)[1] == merged
