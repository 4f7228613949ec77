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
    if (__builtin_cpu_supports("popcnt"))
        count_of = count_digits_hw;
#endif
    return PyModule_Create(&rows_module);
}
