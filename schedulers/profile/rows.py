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


def _py_fit_window(times: list[float], nodes_l: list[int], bbsum: list[int], n: int, elig: int,
                   total: int, duration: float, t0: float, i: int, own: int = 0, oi: int = 0, oj: int = 0):
    """The first window of the earliest-fit scan from slice ``i`` whose eligible free nodes
    (``nodes_l[k] & elig``, AND over its slices) number at least ``n`` and whose every slice
    holds ``total`` bytes in all (``bbsum``; no test when ``total`` is 0): ``(i, j, t,
    mask)``: the candidate's slice, the slice past its window, its start (``t0`` or
    ``times[i]``) and the window's free eligible nodes; None when no candidate passes.
    ``own``: nodes counted free in slices ``oi..oj-1`` too (a reservation being moved, seen
    as released without releasing it).

    A failing slice is skipped past when it fails every later candidate too: alone too small,
    or the last ``k`` such that slices ``k..j`` together are too small (every candidate up to
    ``k`` holds them all), so only candidates that cannot pass are skipped."""
    last = len(times)
    if not own:
        oi = oj = 0
    if i < 0:
        i = 0
    while i < last:
        mask = (nodes_l[i] | own if oi <= i < oj else nodes_l[i]) & elig
        if mask.bit_count() < n or (total and bbsum[i] < total):
            i += 1       # too small on its own: no window through this slice fits
            continue
        ti = times[i]
        t = t0 if ti < t0 else ti
        end = t + duration
        j = i + 1
        fail = -1
        while j < last and times[j] < end:
            nj = nodes_l[j] | own if oi <= j < oj else nodes_l[j]
            mask &= nj
            if mask.bit_count() < n:
                nj &= elig
                if nj.bit_count() < n:
                    fail = j
                else:
                    # slices k..j together are too small, for the last such k counting
                    # down from j: every candidate up to k has them all in its window
                    fail = j - 1
                    while fail > i:
                        nj &= nodes_l[fail] | own if oi <= fail < oj else nodes_l[fail]
                        if nj.bit_count() < n:
                            break
                        fail -= 1
                break
            if total and bbsum[j] < total:
                fail = j
                break
            j += 1
        if fail >= 0:
            i = fail + 1
            continue
        return i, j, t, mask
    return None


def _py_shift_nodes(nodes_l: list[int], i: int, j: int, mask: int, sign: int, check: bool) -> int:
    """Take the nodes of ``mask`` out of the free node masks ``nodes_l[i:j]`` (``sign`` -1) or
    give them back (``sign`` 1). With ``check``, first: the first slice where that cannot be
    done (-1: some of them are not free there; 1: some are free already), nothing changed;
    -1 when done."""
    if check:
        for k in range(i, j):
            have = nodes_l[k] & mask
            if (have != mask) if sign < 0 else have:
                return k
    if sign < 0:
        keep = ~mask
        for k in range(i, j):
            nodes_l[k] &= keep
    else:
        for k in range(i, j):
            nodes_l[k] |= mask
    return -1
