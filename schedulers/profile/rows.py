"""The row and node-mask operations of the availability profile in plain Python: the twins,
and the specification, of the compiled kernels in ``_profile.c`` (the same answers, bit for
bit; ``tests/schedulers/test_profile_kernels.py``). A row is a tuple of free bytes per storage
node (one per profile slice); a node set is an int bitmask over compute indices."""

from __future__ import annotations

from operator import le


def _py_lowest_bits(mask: int, n: int) -> int:
    """``lowest_bits`` in Python."""
    extra = mask.bit_count() - n
    if extra > 16 and n > 16:
        # large machines: bisect on the cut below which exactly n bits are set (a few
        # big-int operations, instead of one per bit dropped or kept)
        lo, hi = n, mask.bit_length()
        while lo < hi:
            mid = (lo + hi) >> 1
            if (mask & ((1 << mid) - 1)).bit_count() >= n:
                hi = mid
            else:
                lo = mid + 1
        return mask & ((1 << lo) - 1)
    if extra < n:
        # fewer bits to drop than to keep: clear the highest ``extra`` set bits
        for _ in range(extra):
            mask ^= 1 << (mask.bit_length() - 1)
        return mask
    rest = mask
    for _ in range(n):
        rest &= rest - 1      # clears the lowest set bit
    return mask ^ rest


def _py_least(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Elementwise minimum of two rows of free bytes (``tuple(map(min, a, b))``, faster); ``a``
    itself when no entry of ``b`` is smaller, as a running minimum nearly always is."""
    if all(map(le, a, b)):
        return a
    return tuple([x if x < y else y for x, y in zip(a, b)])


def _py_shift_rows(rows: list[tuple[int, ...]], sums: list[int] | None, i: int, j: int,
                   bb: tuple[int, ...], sign: int) -> None:
    """Add ``sign * bb`` to the rows ``i..j-1`` entry by entry and ``sign * sum(bb)`` to their
    sums unless ``sums`` is None (``sign`` 1 gives a job's bytes back, -1 takes them);
    consecutive slices sharing one row object (split slices) share the new one. Nothing when
    ``bb`` is all zero."""
    nz = [(s, sign * b) for s, b in enumerate(bb) if b]
    if not nz:
        return
    total = sign * sum(bb)
    old = new = None
    for k in range(i, j):
        row = rows[k]
        if row is not old:
            old = row
            row = list(row)
            for s, b in nz:
                row[s] += b
            new = tuple(row)
        rows[k] = new
        if sums is not None:
            sums[k] += total


def _py_first_short(rows: list[tuple[int, ...]], i: int, j: int, bb: tuple[int, ...]) -> int:
    """The first slice in ``i..j-1`` whose row has fewer bytes than ``bb`` on some storage
    node (``bb`` cannot be taken there), or -1."""
    nz = [(s, b) for s, b in enumerate(bb) if b]
    old = None
    for k in range(i, j):
        row = rows[k]
        if row is not old:
            old = row
            for s, b in nz:
                if row[s] < b:
                    return k
    return -1
