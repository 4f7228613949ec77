/* The availability profile's kernels, compiled (``availability.py``): its per-slice rows of
   free burst-buffer bytes per storage node, read and moved a whole row at a time, the choice
   of a job's nodes among the free ones (the lowest set bits of a node mask) and the count of
   a mask's nodes.

   Why: on the 10,000-node machine a row has 100 entries and a mask 9,900 bits. The row loops
   in Python (the running minimum of ``_prefix``, taking and giving back a job's bytes in
   ``reserve`` / ``release``, the over-allocation check) were ~15 % of a ``fcfs-bb`` run of
   100k jobs, and ``lowest_bits``' bisection on big ints ~2.5 % (py-spy). Here they are the
   same operations, one C loop per row or mask.

   Row entries are added (``shifted``) and compared in int64 when both sides are non-negative
   and below 2**60 (``small_value``), as Python objects beyond (exact for any int).
   ``availability`` uses this module when it was built (an optional extension, like
   ``_mintree`` and ``_shares``), else its pure-Python twins, which give the same values. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* An int's magnitude read in place: ``PyLong_SHIFT``-bit digits, least significant first
   (CPython's layout; 3.12 moved the digit count into ``lv_tag``). Node masks are read here
   without a copy; tests/schedulers/test_profile_kernels.py compares every result with Python. */
#if PY_VERSION_HEX >= 0x030C0000
#  define LONG_DIGITS(v) (((PyLongObject *)(v))->long_value.ob_digit)
#  define LONG_NDIGITS(v) ((Py_ssize_t)(((PyLongObject *)(v))->long_value.lv_tag >> _PyLong_NON_SIZE_BITS))
#  define LONG_NEGATIVE(v) ((((PyLongObject *)(v))->long_value.lv_tag & _PyLong_SIGN_MASK) == 2)
#else
#  define LONG_DIGITS(v) (((PyLongObject *)(v))->ob_digit)
#  define LONG_NDIGITS(v) Py_ABS(Py_SIZE(v))
#  define LONG_NEGATIVE(v) (Py_SIZE(v) < 0)
#endif

/* The value of a non-negative int of at most two digits (below 2**60: any count of bytes on a
   machine), read in place; 0 when ``o`` is not one. */
static inline int
small_value(PyObject *o, long long *out)
{
    if (!PyLong_CheckExact(o) || LONG_NEGATIVE(o))
        return 0;
    Py_ssize_t nd = LONG_NDIGITS(o);
    const digit *d = LONG_DIGITS(o);
    if (nd == 0)
        *out = 0;
    else if (nd == 1)
        *out = (long long)d[0];
    else if (nd == 2)
        *out = (long long)d[0] | ((long long)d[1] << PyLong_SHIFT);
    else
        return 0;
    return 1;
}

/* Set bits of n digits. CPython's own ``int.bit_count`` is built for any x86-64 and calls a
   software count per 30-bit digit: on 9,900-node masks that was ~4 % of a 10,000-node run
   (callgrind). The CPU's instruction is used where it has one (checked once, at import).
   Two digits (at most 32 bits each) are counted as one 64-bit word: half the counts and loop
   steps (-1 % of a 10,000-node run's instructions). ``count_pairs`` is inlined into both
   counts, so that the second one's copy is compiled with the CPU's instruction. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline Py_ssize_t
count_pairs(const digit *d, Py_ssize_t n)
{
    Py_ssize_t c = 0, k = 0;
    for (; k + 1 < n; k += 2)
        c += __builtin_popcountll((unsigned long long)d[k] | (unsigned long long)d[k + 1] << 32);
    if (k < n)
        c += __builtin_popcount((unsigned int)d[k]);
    return c;
}

static Py_ssize_t
count_digits(const digit *d, Py_ssize_t n)
{
    return count_pairs(d, n);
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#  define HW_POPCOUNT 1
__attribute__((target("popcnt"))) static Py_ssize_t
count_digits_hw(const digit *d, Py_ssize_t n)
{
    return count_pairs(d, n);
}
static Py_ssize_t (*count_of)(const digit *, Py_ssize_t) = count_digits;
#else
#  define count_of count_digits
#endif

/* bit_count(x): ``x.bit_count()`` (set bits of |x|), the count read in place. */
static PyObject *
bit_count(PyObject *module, PyObject *x)
{
    if (!PyLong_Check(x)) {
        PyErr_Format(PyExc_TypeError, "bit_count needs an int, not %.100s", Py_TYPE(x)->tp_name);
        return NULL;
    }
    return PyLong_FromSsize_t(count_of(LONG_DIGITS(x), LONG_NDIGITS(x)));
}

/* Whether ``b < a``: -1 on error. */
static int
less(PyObject *b, PyObject *a)
{
    if (a == b)
        return 0;       /* rows share the entries a change did not touch */
    long long va, vb;
    if (small_value(a, &va) && small_value(b, &vb))
        return vb < va;
    return PyObject_RichCompareBool(b, a, Py_LT);
}

/* least(a, b): the elementwise minimum of two rows (sequences of one length), as a tuple;
   ``a`` itself when no entry of ``b`` is smaller (a running minimum nearly always is already). */
static PyObject *
least(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "least(a, b) takes 2 arguments");
        return NULL;
    }
    PyObject *a = args[0], *out = NULL;
    PyObject *fa = PySequence_Fast(a, "a: a row of free bytes");
    if (fa == NULL)
        return NULL;
    PyObject *fb = PySequence_Fast(args[1], "b: a row of free bytes");
    if (fb == NULL) {
        Py_DECREF(fa);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fa);
    PyObject **xa = PySequence_Fast_ITEMS(fa), **xb = PySequence_Fast_ITEMS(fb);
    if (PySequence_Fast_GET_SIZE(fb) != n) {
        PyErr_Format(PyExc_ValueError, "rows of %zd and %zd entries", n, PySequence_Fast_GET_SIZE(fb));
        goto done;
    }
    Py_ssize_t first = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int lt = less(xb[i], xa[i]);
        if (lt < 0)
            goto done;
        if (lt) {
            first = i;
            break;
        }
    }
    if (first < 0) {
        out = Py_NewRef(a);
        goto done;
    }
    out = PyTuple_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        int lt = i < first ? 0 : (i == first ? 1 : less(xb[i], xa[i]));
        if (lt < 0) {
            Py_CLEAR(out);
            goto done;
        }
        PyTuple_SET_ITEM(out, i, Py_NewRef(lt ? xb[i] : xa[i]));
    }
done:
    Py_DECREF(fa);
    Py_DECREF(fb);
    return out;
}

/* A job's bytes per storage node: ``*fast``, the sequence ``obj`` as a fast one (a new
   reference), and ``*idx``, the indices of its ``*count`` non-zero entries (a new array; NULL
   when there are none). 0, or -1 with an exception set and nothing to free. */
static int
bytes_of(PyObject *obj, PyObject **fast, Py_ssize_t **idx, Py_ssize_t *count)
{
    *idx = NULL;
    *count = 0;
    *fast = PySequence_Fast(obj, "bb: bytes per storage node");
    if (*fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(*fast), c = 0;
    PyObject **bb = PySequence_Fast_ITEMS(*fast);
    Py_ssize_t *at = PyMem_New(Py_ssize_t, n ? n : 1);
    if (at == NULL) {
        Py_CLEAR(*fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        int t = PyObject_IsTrue(bb[s]);
        if (t < 0) {
            PyMem_Free(at);
            Py_CLEAR(*fast);
            return -1;
        }
        if (t)
            at[c++] = s;
    }
    if (c) {
        *idx = at;
        *count = c;
    } else {
        PyMem_Free(at);
    }
    return 0;
}

/* Slices ``i``..``j``-1 of the list ``rows``: 0, or -1 with an exception set. */
static int
check_slices(PyObject *rows, Py_ssize_t i, Py_ssize_t j)
{
    if (!PyList_Check(rows)) {
        PyErr_Format(PyExc_TypeError, "rows must be a list, not %.100s", Py_TYPE(rows)->tp_name);
        return -1;
    }
    if (i < 0 || i > j || j > PyList_GET_SIZE(rows)) {
        PyErr_Format(PyExc_IndexError, "slices %zd..%zd of %zd rows", i, j, PyList_GET_SIZE(rows));
        return -1;
    }
    return 0;
}

/* A row (a sequence of ``width`` entries) as a fast sequence; NULL with an exception set. */
static PyObject *
row_of(PyObject *row, Py_ssize_t k, Py_ssize_t width)
{
    PyObject *f = PySequence_Fast(row, "a row of free bytes");
    if (f != NULL && PySequence_Fast_GET_SIZE(f) != width) {
        PyErr_Format(PyExc_ValueError, "row %zd has %zd entries, the bytes %zd", k,
                     PySequence_Fast_GET_SIZE(f), width);
        Py_CLEAR(f);
    }
    return f;
}

/* ``a + b`` (``op`` PyNumber_Add) or ``a - b`` (PyNumber_Subtract): in int64 when both are
   non-negative and below 2**60 (``small_value``: cannot overflow), else as Python adds. A
   10,000-node job's bytes touch ~100 storage entries a slice: the generic add was ~1.7 % of
   such a run's instructions. */
static PyObject *
shifted(PyObject *a, PyObject *b, binaryfunc op)
{
    long long va, vb;
    if (small_value(a, &va) && small_value(b, &vb))
        return PyLong_FromLongLong(op == PyNumber_Add ? va + vb : va - vb);
    return op(a, b);
}

/* shift_rows(rows, sums, i, j, bb, sign): rows[k] += sign * bb entry by entry (a new tuple)
   and, unless sums is None, sums[k] += sign * sum(bb), for k in i..j-1 (sign 1 gives bytes back, -1 takes them);
   consecutive slices sharing one row object share the new one. Nothing when bb is all zero. */
static PyObject *
shift_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "shift_rows(rows, sums, i, j, bb, sign) takes 6 arguments");
        return NULL;
    }
    PyObject *rows = args[0], *sums = args[1];
    Py_ssize_t i = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    Py_ssize_t j = PyNumber_AsSsize_t(args[3], PyExc_OverflowError);
    long sign = PyLong_AsLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (sign != 1 && sign != -1) {
        PyErr_SetString(PyExc_ValueError, "sign must be 1 or -1");
        return NULL;
    }
    if (check_slices(rows, i, j) < 0)
        return NULL;
    if (sums == Py_None)
        sums = NULL;
    else if (!PyList_Check(sums) || PyList_GET_SIZE(sums) < j) {
        PyErr_SetString(PyExc_ValueError, "sums must be None or a list as long as rows");
        return NULL;
    }
    PyObject *fb;
    Py_ssize_t *idx, count;
    if (bytes_of(args[4], &fb, &idx, &count) < 0)
        return NULL;
    if (!count) {
        Py_DECREF(fb);
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fb);
    PyObject **bb = PySequence_Fast_ITEMS(fb);
    binaryfunc op = sign > 0 ? PyNumber_Add : PyNumber_Subtract;
    PyObject *total = PyLong_FromLong(0), *old = NULL, *new = NULL, *result = NULL;
    if (total == NULL)
        goto done;
    for (Py_ssize_t c = 0; c < count; c++) {
        PyObject *t = shifted(total, bb[idx[c]], PyNumber_Add);
        if (t == NULL)
            goto done;
        Py_SETREF(total, t);
    }
    for (Py_ssize_t k = i; k < j; k++) {
        PyObject *row = PyList_GET_ITEM(rows, k);
        if (row != old) {
            Py_XSETREF(old, Py_NewRef(row));    /* held: its address stays its own */
            Py_CLEAR(new);
            PyObject *f = row_of(row, k, n);
            if (f == NULL)
                goto done;
            PyObject **x = PySequence_Fast_ITEMS(f);
            new = PyTuple_New(n);
            if (new == NULL) {
                Py_DECREF(f);
                goto done;
            }
            Py_ssize_t c = 0;
            for (Py_ssize_t s = 0; s < n; s++) {
                PyObject *v = x[s];
                if (c < count && idx[c] == s) {     /* idx is increasing */
                    c++;
                    v = shifted(v, bb[s], op);
                    if (v == NULL) {
                        Py_DECREF(f);
                        goto done;  /* new's unset entries are NULL: freed safely */
                    }
                } else {
                    Py_INCREF(v);
                }
                PyTuple_SET_ITEM(new, s, v);
            }
            Py_DECREF(f);
        }
        if (sums != NULL) {
            PyObject *sum = shifted(PyList_GET_ITEM(sums, k), total, op);
            if (sum == NULL)
                goto done;
            PyList_SetItem(sums, k, sum);
        }
        PyList_SetItem(rows, k, Py_NewRef(new));
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(old);
    Py_XDECREF(new);
    Py_XDECREF(total);
    Py_DECREF(fb);
    PyMem_Free(idx);
    return result;
}

/* first_short(rows, i, j, bb): the first k in i..j-1 where some entry of rows[k] is below
   bb's (the bytes cannot be taken there), or -1. */
static PyObject *
first_short(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "first_short(rows, i, j, bb) takes 4 arguments");
        return NULL;
    }
    PyObject *rows = args[0];
    Py_ssize_t i = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    Py_ssize_t j = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    if (PyErr_Occurred() || check_slices(rows, i, j) < 0)
        return NULL;
    PyObject *fb;
    Py_ssize_t *idx, count;
    if (bytes_of(args[3], &fb, &idx, &count) < 0)
        return NULL;
    if (!count) {
        Py_DECREF(fb);
        return PyLong_FromLong(-1);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fb);
    PyObject **bb = PySequence_Fast_ITEMS(fb);
    PyObject *old = NULL, *result = NULL;
    Py_ssize_t found = -1;
    for (Py_ssize_t k = i; k < j && found < 0; k++) {
        PyObject *row = PyList_GET_ITEM(rows, k);
        if (row == old)
            continue;       /* the same row object as the slice before: it passed */
        old = row;          /* held by the list, which this loop does not change */
        PyObject *f = row_of(row, k, n);
        if (f == NULL)
            goto done;
        PyObject **x = PySequence_Fast_ITEMS(f);
        for (Py_ssize_t c = 0; c < count; c++) {
            int lt = less(x[idx[c]], bb[idx[c]]);
            if (lt < 0) {
                Py_DECREF(f);
                goto done;
            }
            if (lt) {
                found = k;
                break;
            }
        }
        Py_DECREF(f);
    }
    result = PyLong_FromSsize_t(found);
done:
    Py_DECREF(fb);
    PyMem_Free(idx);
    return result;
}

/* lowest_bits(mask, n): the ``n`` lowest set bits of the non-negative int ``mask`` (all of
   them when it has fewer): batsched's 'basic' selector, the first free ids. The mask's digits
   are counted in place until the one holding the n-th set bit, and only those are copied. */
static PyObject *
lowest_bits(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "lowest_bits(mask, n) takes 2 arguments");
        return NULL;
    }
    PyObject *mask = args[0];
    if (!PyLong_Check(mask)) {
        PyErr_Format(PyExc_TypeError, "mask must be an int, not %.100s", Py_TYPE(mask)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (_PyLong_Sign(mask) < 0 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "lowest_bits needs a non-negative mask and count");
        return NULL;
    }
    if (!n)
        return PyLong_FromLong(0);
    const digit *d = LONG_DIGITS(mask);
    Py_ssize_t nd = LONG_NDIGITS(mask), left = n, k = 0;
    for (; k + 16 <= nd; k += 16) {             /* whole blocks before the n-th set bit */
        Py_ssize_t c = count_of(d + k, 16);
        if (c >= left)
            break;
        left -= c;
    }
    for (; k < nd; k++) {
        int c = __builtin_popcount((unsigned int)d[k]);
        if (c < left) {
            left -= c;
            continue;
        }
        if (c == left && k == nd - 1)
            break;                              /* exactly n set bits: the mask itself */
        digit v = d[k];
        while (c > left) {                      /* drop this digit's highest set bits */
            v &= ~((digit)1 << (31 - __builtin_clz((unsigned int)v)));
            c--;
        }
        PyLongObject *out = _PyLong_New(k + 1);
        if (out == NULL)
            return NULL;
        memcpy(LONG_DIGITS(out), d, (size_t)k * sizeof(digit));
        LONG_DIGITS(out)[k] = v;                /* not 0: it holds the n-th set bit */
        return (PyObject *)out;
    }
    Py_INCREF(mask);                            /* n set bits or fewer: all of them */
    return mask;
}

/* A new non-negative int of the ``nd`` digits ``d`` (leading zero digits dropped). */
static PyObject *
long_of_digits(const digit *d, Py_ssize_t nd)
{
    while (nd > 0 && d[nd - 1] == 0)
        nd--;
    if (nd == 0)
        return PyLong_FromLong(0);
    PyLongObject *out = _PyLong_New(nd);
    if (out != NULL)
        memcpy(LONG_DIGITS(out), d, (size_t)nd * sizeof(digit));
    return (PyObject *)out;
}

/* shift_nodes(nodes, i, j, mask, sign, check): take the nodes of ``mask`` out of the free node
   masks ``nodes[i:j]`` (sign -1: ``nodes[k] &= ~mask``) or give them back (sign 1: ``|=``).
   With ``check``, first the first slice where that cannot be done (sign -1: some of them not
   free; sign 1: some already free) is returned and nothing is changed; -1 when done.
   Consecutive slices sharing one mask object share the new one. ``rows._py_shift_nodes`` is
   the twin. */
static PyObject *
shift_nodes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "shift_nodes(nodes, i, j, mask, sign, check) takes 6 arguments");
        return NULL;
    }
    PyObject *nodes = args[0], *mask = args[3];
    Py_ssize_t i = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    Py_ssize_t j = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    long sign = PyLong_AsLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    int check = PyObject_IsTrue(args[5]);
    if (check < 0)
        return NULL;
    if (sign != 1 && sign != -1) {
        PyErr_SetString(PyExc_ValueError, "sign must be 1 or -1");
        return NULL;
    }
    if (check_slices(nodes, i, j) < 0)
        return NULL;
    if (!PyLong_Check(mask) || LONG_NEGATIVE(mask)) {
        PyErr_SetString(PyExc_ValueError, "mask must be a non-negative int");
        return NULL;
    }
    const digit *m = LONG_DIGITS(mask);
    Py_ssize_t nm = LONG_NDIGITS(mask);
    for (Py_ssize_t k = i; k < j; k++) {
        PyObject *x = PyList_GET_ITEM(nodes, k);
        if (!PyLong_Check(x) || LONG_NEGATIVE(x)) {
            PyErr_Format(PyExc_ValueError, "node mask %zd is not a non-negative int", k);
            return NULL;
        }
        if (!check)
            continue;
        const digit *d = LONG_DIGITS(x);
        Py_ssize_t nd = LONG_NDIGITS(x);
        int clash = 0;
        for (Py_ssize_t c = 0; c < nm && !clash; c++) {
            digit have = c < nd ? d[c] : 0;
            clash = sign < 0 ? (have & m[c]) != m[c] : (have & m[c]) != 0;
        }
        if (clash)
            return PyLong_FromSsize_t(k);
    }
    digit small[64];
    digit *buf = small;
    Py_ssize_t cap = 64;
    PyObject *old = NULL, *new = NULL;
    for (Py_ssize_t k = i; k < j; k++) {
        PyObject *x = PyList_GET_ITEM(nodes, k);
        if (x != old) {
            const digit *d = LONG_DIGITS(x);
            Py_ssize_t nd = LONG_NDIGITS(x), nr = sign < 0 ? nd : (nd > nm ? nd : nm);
            if (nr > cap) {
                digit *grown = PyMem_New(digit, nr);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                if (buf != small)
                    PyMem_Free(buf);
                buf = grown;
                cap = nr;
            }
            for (Py_ssize_t c = 0; c < nr; c++) {
                digit have = c < nd ? d[c] : 0, want = c < nm ? m[c] : 0;
                buf[c] = sign < 0 ? (have & ~want) : (have | want);
            }
            Py_XSETREF(old, Py_NewRef(x));      /* held: its address stays its own */
            Py_XSETREF(new, long_of_digits(buf, nr));
            if (new == NULL)
                goto fail;
        }
        PyList_SetItem(nodes, k, Py_NewRef(new));
    }
    Py_XDECREF(old);
    Py_XDECREF(new);
    if (buf != small)
        PyMem_Free(buf);
    return PyLong_FromLong(-1);
fail:
    Py_XDECREF(old);
    Py_XDECREF(new);
    if (buf != small)
        PyMem_Free(buf);
    return NULL;
}

/* A profile time read as a double, for ``fit_window``: floats as they are, ints of magnitude
   at most 2**52 (exact, and so is the sum of two of them, as Python's int sum is); 0 for
   anything else (the caller then answers in Python). */
static inline int
time_of(PyObject *o, double *out)
{
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 1;
    }
    if (PyLong_CheckExact(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || v > (1LL << 52) || v < -(1LL << 52)) {
            PyErr_Clear();
            return 0;
        }
        *out = (double)v;
        return 1;
    }
    return 0;
}

#if defined(__GNUC__) || defined(__clang__)
#  define ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#  define ALWAYS_INLINE inline
#endif

/* Set bits of the ``n`` digits ``m``, two digits a 64-bit count (``count_pairs`` inline: the
   scan below is compiled twice, once with the CPU's instruction). */
static ALWAYS_INLINE Py_ssize_t
count_inline(const digit *m, Py_ssize_t n)
{
    Py_ssize_t c = 0, k = 0;
    for (; k + 1 < n; k += 2)
        c += __builtin_popcountll((unsigned long long)m[k] | (unsigned long long)m[k + 1] << 32);
    if (k < n)
        c += __builtin_popcount((unsigned int)m[k]);
    return c;
}

/* ``m = (x | own) & e`` over the ``ne`` digits of ``e`` (``own`` NULL: ``x & e``), and its set
   bits: a slice's eligible free nodes. */
static ALWAYS_INLINE Py_ssize_t
and_into(digit *m, const digit *e, Py_ssize_t ne, PyObject *x, const digit *own, Py_ssize_t no)
{
    const digit *d = LONG_DIGITS(x);
    Py_ssize_t nd = LONG_NDIGITS(x), k = 0;
    if (own == NULL) {
        for (; k < ne && k < nd; k++)
            m[k] = d[k] & e[k];
        for (; k < ne; k++)
            m[k] = 0;
    } else {
        for (; k < ne; k++)
            m[k] = ((k < nd ? d[k] : 0) | (k < no ? own[k] : 0)) & e[k];
    }
    return count_inline(m, ne);
}

/* ``m &= x | own`` over the ``nm`` digits of ``m`` (``own`` NULL: ``m &= x``), and the set
   bits left. */
static ALWAYS_INLINE Py_ssize_t
and_count(digit *m, Py_ssize_t nm, PyObject *x, const digit *own, Py_ssize_t no)
{
    const digit *d = LONG_DIGITS(x);
    Py_ssize_t nd = LONG_NDIGITS(x), k = 0;
    if (own == NULL) {
        for (; k < nm && k < nd; k++)
            m[k] &= d[k];
        for (; k < nm; k++)
            m[k] = 0;
    } else {
        for (; k < nm; k++)
            m[k] &= (k < nd ? d[k] : 0) | (k < no ? own[k] : 0);
    }
    return count_inline(m, nm);
}

/* fit_window(times, nodes, bbsum, n, elig, total, duration, t0, i, own, oi, oj): the first
   window of the earliest-fit scan from slice ``i`` (``availability.fit_in_slices``) whose
   eligible nodes (``nodes[k] & elig``, AND over the window's slices; ``nodes[k] | own`` for
   ``oi <= k < oj``: a reservation's nodes counted free) number at least ``n`` and whose every
   slice holds ``total`` bytes in all (``bbsum[k]``; no test when ``total`` is 0): ``(i, j, t,
   mask)``, the candidate's slice, the slice past its window (``times[j] >= t + duration``),
   its start ``t`` (``t0`` or ``times[i]``, the object itself) and the window's free eligible
   nodes; None when no candidate passes. Skips past the slices that fail every later
   candidate as ``rows._py_fit_window``, its twin and specification, does.
   NotImplemented for inputs it does not read (negative masks, times that are neither floats
   nor ints within 2**52): the caller asks the twin. */
static ALWAYS_INLINE PyObject *
fit_window_body(PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "fit_window(times, nodes, bbsum, n, elig, total, duration, t0, i, "
                                         "own, oi, oj) takes 12 arguments");
        return NULL;
    }
    PyObject *ownobj = args[9];
    Py_ssize_t oi = PyNumber_AsSsize_t(args[10], PyExc_OverflowError);
    if (oi == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t oj = PyNumber_AsSsize_t(args[11], PyExc_OverflowError);
    if (oj == -1 && PyErr_Occurred())
        return NULL;
    if (!PyLong_Check(ownobj) || LONG_NEGATIVE(ownobj))
        Py_RETURN_NOTIMPLEMENTED;
    const digit *own = LONG_DIGITS(ownobj);
    Py_ssize_t no = LONG_NDIGITS(ownobj);
    if (no == 0)
        oi = oj = 0;            /* nothing counted free */
#define OWN(k) ((k) >= oi && (k) < oj ? own : NULL), no
    PyObject *times = args[0], *nodes = args[1], *bbsum = args[2], *elig = args[4];
    PyObject *total = args[5], *t0 = args[7];
    Py_ssize_t n = PyNumber_AsSsize_t(args[3], PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t i = PyNumber_AsSsize_t(args[8], PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_Check(times) || !PyList_Check(nodes) || !PyList_Check(bbsum)) {
        PyErr_SetString(PyExc_TypeError, "times, nodes and bbsum must be lists");
        return NULL;
    }
    Py_ssize_t last = PyList_GET_SIZE(times);
    if (PyList_GET_SIZE(nodes) < last) {
        PyErr_Format(PyExc_ValueError, "%zd node masks for %zd slices", PyList_GET_SIZE(nodes), last);
        return NULL;
    }
    int has_total = PyObject_IsTrue(total);
    if (has_total < 0)
        return NULL;
    if (has_total && PyList_GET_SIZE(bbsum) < last) {
        PyErr_Format(PyExc_ValueError, "%zd byte sums for %zd slices", PyList_GET_SIZE(bbsum), last);
        return NULL;
    }
    if (i < 0)
        i = 0;
    double dt0, ddur;
    if (!PyLong_Check(elig) || LONG_NEGATIVE(elig) || !time_of(t0, &dt0) || !time_of(args[6], &ddur))
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t ne = LONG_NDIGITS(elig);
    const digit *e = LONG_DIGITS(elig);
    digit small[2][64];
    digit *m = small[0], *s = small[1];
    if (ne > 64) {
        m = PyMem_New(digit, 2 * ne);
        if (m == NULL)
            return PyErr_NoMemory();
        s = m + ne;
    }
    PyObject *result = NULL;
    while (i < last) {
        PyObject *ni = PyList_GET_ITEM(nodes, i);
        if (!PyLong_Check(ni) || LONG_NEGATIVE(ni))
            goto python;
        if (and_into(m, e, ne, ni, OWN(i)) < n) {
            i++;            /* too small on its own: no window through this slice fits */
            continue;
        }
        if (has_total) {
            int lt = less(PyList_GET_ITEM(bbsum, i), total);
            if (lt < 0)
                goto done;
            if (lt) {
                i++;
                continue;
            }
        }
        PyObject *ti = PyList_GET_ITEM(times, i), *t;
        double dti, dt;
        if (!time_of(ti, &dti))
            goto python;
        if (dti < dt0) {
            t = t0;
            dt = dt0;
        } else {
            t = ti;
            dt = dti;
        }
        double end = dt + ddur;
        Py_ssize_t j = i + 1, fail = -1;
        while (j < last) {
            double tj;
            if (!time_of(PyList_GET_ITEM(times, j), &tj))
                goto python;
            if (!(tj < end))
                break;
            PyObject *nj = PyList_GET_ITEM(nodes, j);
            if (!PyLong_Check(nj) || LONG_NEGATIVE(nj))
                goto python;
            if (and_count(m, ne, nj, OWN(j)) < n) {
                if (and_into(s, e, ne, nj, OWN(j)) < n) {
                    fail = j;
                } else {
                    /* slices k..j together are too small, for the last such k counting
                       down from j: every candidate up to k has them all in its window */
                    fail = j - 1;
                    while (fail > i) {
                        PyObject *nf = PyList_GET_ITEM(nodes, fail);
                        if (!PyLong_Check(nf) || LONG_NEGATIVE(nf))
                            goto python;
                        if (and_count(s, ne, nf, OWN(fail)) < n)
                            break;
                        fail--;
                    }
                }
                break;
            }
            if (has_total) {
                int lt = less(PyList_GET_ITEM(bbsum, j), total);
                if (lt < 0)
                    goto done;
                if (lt) {
                    fail = j;
                    break;
                }
            }
            j++;
        }
        if (fail >= 0) {
            i = fail + 1;
            continue;
        }
        PyObject *mask = long_of_digits(m, ne);
        if (mask == NULL)
            goto done;
        result = Py_BuildValue("(nnON)", i, j, t, mask);
        goto done;
    }
    result = Py_NewRef(Py_None);
    goto done;
python:
    result = Py_NewRef(Py_NotImplemented);
done:
    if (m != small[0])
        PyMem_Free(m);
    return result;
#undef OWN
}

static PyObject *
fit_window_generic(PyObject *const *args, Py_ssize_t nargs)
{
    return fit_window_body(args, nargs);
}

#ifdef HW_POPCOUNT
__attribute__((target("popcnt"))) static PyObject *
fit_window_hw(PyObject *const *args, Py_ssize_t nargs)
{
    return fit_window_body(args, nargs);
}
#endif

/* the scan compiled with the CPU's popcount where it has one (chosen at import) */
static PyObject *(*fit_window_of)(PyObject *const *, Py_ssize_t) = fit_window_generic;

static PyObject *
fit_window(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return fit_window_of(args, nargs);
}

static PyMethodDef module_methods[] = {
    {"bit_count", (PyCFunction)bit_count, METH_O, "bit_count(x): x.bit_count()"},
    {"least", (PyCFunction)(void (*)(void))least, METH_FASTCALL,
     "least(a, b): the elementwise minimum of two rows (a itself when no entry of b is smaller)"},
    {"shift_rows", (PyCFunction)(void (*)(void))shift_rows, METH_FASTCALL,
     "shift_rows(rows, sums, i, j, bb, sign): add sign * bb to rows[i:j] and sign * sum(bb) to sums[i:j] (unless None)"},
    {"first_short", (PyCFunction)(void (*)(void))first_short, METH_FASTCALL,
     "first_short(rows, i, j, bb): the first k in i..j-1 whose row has less than bb somewhere, or -1"},
    {"lowest_bits", (PyCFunction)(void (*)(void))lowest_bits, METH_FASTCALL,
     "lowest_bits(mask, n): the n lowest set bits of mask"},
    {"shift_nodes", (PyCFunction)(void (*)(void))shift_nodes, METH_FASTCALL,
     "shift_nodes(nodes, i, j, mask, sign, check): take (sign -1) or give back (1) mask's nodes "
     "in nodes[i:j]; with check, the first slice where that cannot be done, unchanged; else -1"},
    {"fit_window", (PyCFunction)(void (*)(void))fit_window, METH_FASTCALL,
     "fit_window(times, nodes, bbsum, n, elig, total, duration, t0, i, own, oi, oj): the earliest-fit "
     "scan's next window passing the node and byte-total tests, (i, j, t, mask), or None"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef rows_module = {
    PyModuleDef_HEAD_INIT, "_profile",
    "The availability profile's kernels (rows of free bytes, node masks), compiled (see availability.py).",
    -1, module_methods
};

PyMODINIT_FUNC
PyInit__profile(void)
{
#ifdef HW_POPCOUNT
    __builtin_cpu_init();
    if (__builtin_cpu_supports("popcnt")) {
        count_of = count_digits_hw;
        fit_window_of = fit_window_hw;
    }
#endif
    return PyModule_Create(&rows_module);
}
