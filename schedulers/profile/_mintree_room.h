/* Reading a room, for ``_mintree.c`` (included there, once: it is part of that translation
   unit, its static functions using the helpers defined above the include): what a walk of
   the tree reads at a window's end, a profile's room's slices (``availability.Room``,
   ``__missing__``) and its packing test (``Room._packs``), in C. Kept apart only so that
   no source file of the package passes 1,000 lines; see ``_mintree.c`` for the whole. */

#ifndef MRSCHED_MINTREE_ROOM_H
#define MRSCHED_MINTREE_ROOM_H

/* -- reading a room ----------------------------------------------------------------------- */

#define CACHE 32
#define ROWS 8

static PyObject *packs_func;    /* ``availability.Room._packs``, done natively by ``packs`` */
static PyObject *fits_func;     /* ``placement.BurstBufferPlacer.capacity_fits``, its ``_fits`` */
static PyObject *s_prefix, *s_fits;
static PyObject *missing_func;  /* ``availability.Room.__missing__``, done natively by ``room_slice`` */
static PyObject *count_func;    /* a mask's node count (``availability._bit_count``) */
static PyObject *s_missing, *s_and, *s_least, *s_nodes, *s_bbsum;

/* One search's reads of a room, the values ``_PyMinTree.first`` reads: a profile's room
   (``Room``, whose ``__missing__`` is done here) by the slice ``w`` ends in (``slice_get``);
   another room as that method does, ``room.get(w)``, then for a room with ``times`` and
   ``slices`` the slice ``w`` ends in (stored back as ``room[w]``), then ``room[w]``. A room
   whose ``get`` is dict's is read in C and remembered for the search (its values do not
   change during one). */
typedef struct {
    PyObject *room, *times, *slices, *get;
    double t0;
    int fast, loaded;
    /* a profile's room: its running AND of the slices' free nodes and least free bytes
       (``_and``, ``_least``, extended on a miss as ``Room.__missing__`` does) */
    PyObject *ands, *least, *nodes, *bbsum;
    /* the room's own packing test, done here (``Room._packs``; see ``native_packing``) */
    PyObject *prefix;
    int native;
    Py_ssize_t nstorage;
    int64_t *rows;
    Py_ssize_t row_j[ROWS];
    /* a profile's room by slice: (nodes, bytes, read?) of each slice, read once a search */
    int64_t *sl;
    Py_ssize_t nsl;
    uint64_t key[CACHE];
    int64_t rn[CACHE], rb[CACHE];
    unsigned char used[CACHE];
} Reader;

static int
reader_init(Reader *rd, PyObject *room)
{
    memset(rd, 0, offsetof(Reader, key));
    memset(rd->used, 0, sizeof rd->used);
    rd->room = room;
    PyObject *get = PyObject_GetAttr((PyObject *)Py_TYPE(room), s_get);
    if (!get)
        PyErr_Clear();
    rd->fast = PyDict_Check(room) && get == dict_get;
    Py_XDECREF(get);
    if (!rd->fast) {
        rd->get = PyObject_GetAttr(room, s_get);
        if (!rd->get)
            return -1;
    }
    return 0;
}

/* A profile's room: its ``times`` and ``slices``, read on the first miss of a walk. */
static int
reader_load(Reader *rd)
{
    rd->loaded = 1;
    rd->times = PyObject_GetAttr(rd->room, s_times);
    if (!rd->times) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
    }
    else if (rd->times == Py_None) {
        Py_CLEAR(rd->times);
    }
    else {
        if (!PyList_Check(rd->times) || PyList_GET_SIZE(rd->times) == 0) {
            PyErr_SetString(PyExc_TypeError, "a room's times must be a non-empty list");
            return -1;
        }
        rd->t0 = PyFloat_AsDouble(PyList_GET_ITEM(rd->times, 0));
        if (rd->t0 == -1.0 && PyErr_Occurred())
            return -1;
        rd->slices = PyObject_GetAttr(rd->room, s_slices);
        if (!rd->slices)
            return -1;
        if (missing_func && PyDict_Check(rd->slices)) {
            PyObject *missing = PyObject_GetAttr((PyObject *)Py_TYPE(rd->room), s_missing);
            if (!missing)
                PyErr_Clear();
            int same = missing == missing_func;
            Py_XDECREF(missing);
            if (same) {
                rd->ands = PyObject_GetAttr(rd->room, s_and);
                rd->least = rd->ands ? PyObject_GetAttr(rd->room, s_least) : NULL;
                rd->nodes = rd->least ? PyObject_GetAttr(rd->room, s_nodes) : NULL;
                rd->bbsum = rd->nodes ? PyObject_GetAttr(rd->room, s_bbsum) : NULL;
                if (!rd->bbsum)
                    return -1;
                if (!PyList_Check(rd->ands) || !PyList_Check(rd->least) || !PyList_Check(rd->nodes)
                        || !PyList_Check(rd->bbsum) || PyList_GET_SIZE(rd->ands) == 0
                        || PyList_GET_SIZE(rd->least) != PyList_GET_SIZE(rd->ands)) {
                    Py_CLEAR(rd->ands);   /* not the shape ``Room`` keeps: its own __missing__ */
                    Py_CLEAR(rd->least);
                    Py_CLEAR(rd->nodes);
                    Py_CLEAR(rd->bbsum);
                }
            }
        }
    }
    return 0;
}

/* ``Room.__missing__`` for slice ``j`` (>= 0) whose room is not in ``slices`` yet: the running
   AND and least bytes extended to ``j`` (the same operations on the same objects), then
   ``slices[j] = (node count of the AND, least bytes)``. A new reference; NULL with an error;
   NULL without one when ``j`` is past the profile's slices (the Python method then decides). */
static PyObject *
room_slice(Reader *rd, Py_ssize_t j, PyObject *jo)
{
    PyObject *ands = rd->ands, *least = rd->least;
    Py_ssize_t k = PyList_GET_SIZE(ands);
    if (k <= j) {
        if (j >= PyList_GET_SIZE(rd->nodes) || j >= PyList_GET_SIZE(rd->bbsum))
            return NULL;
        PyObject *m = Py_NewRef(PyList_GET_ITEM(ands, k - 1));
        PyObject *b = Py_NewRef(PyList_GET_ITEM(least, k - 1));
        for (; k <= j; k++) {
            Py_SETREF(m, PyNumber_And(m, PyList_GET_ITEM(rd->nodes, k)));
            if (!m)
                goto fail;
            PyObject *bk = PyList_GET_ITEM(rd->bbsum, k);
            int lt = PyObject_RichCompareBool(bk, b, Py_LT);
            if (lt < 0)
                goto fail;
            if (lt)
                Py_SETREF(b, Py_NewRef(bk));
            if (PyList_Append(ands, m) < 0 || PyList_Append(least, b) < 0)
                goto fail;
        }
        Py_DECREF(m);
        Py_DECREF(b);
        goto done;
    fail:
        Py_XDECREF(m);
        Py_DECREF(b);
        return NULL;
    }
done:;
    PyObject *count = PyObject_CallOneArg(count_func, PyList_GET_ITEM(ands, j));
    if (!count)
        return NULL;
    PyObject *r = PyTuple_Pack(2, count, PyList_GET_ITEM(least, j));
    Py_DECREF(count);
    if (!r || PyDict_SetItem(rd->slices, jo, r) < 0) {
        Py_XDECREF(r);
        return NULL;
    }
    return r;
}

static void
reader_done(Reader *rd)
{
    Py_CLEAR(rd->times);
    Py_CLEAR(rd->slices);
    Py_CLEAR(rd->get);
    Py_CLEAR(rd->prefix);
    Py_CLEAR(rd->ands);
    Py_CLEAR(rd->least);
    Py_CLEAR(rd->nodes);
    Py_CLEAR(rd->bbsum);
    PyMem_Free(rd->rows);
    rd->rows = NULL;
    PyMem_Free(rd->sl);
    rd->sl = NULL;
}

/* bisect_left(times, x) */
static Py_ssize_t
bisect_left(PyObject *times, double x)
{
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(times);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        PyObject *t = PyList_GET_ITEM(times, mid);
        double v = PyFloat_Check(t) ? PyFloat_AS_DOUBLE(t) : PyFloat_AsDouble(t);
        if (v == -1.0 && PyErr_Occurred())
            return -1;
        if (v < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The slice a walltime ``w`` from the room's present ends in, as ``Room.__missing__`` finds
   it: ``bisect_left(times, t0 + w) - 1`` (-1: before the second slice start; each reader
   clamps as it needs), or -2 with an error set. */
static Py_ssize_t
slice_of(Reader *rd, double w)
{
    Py_ssize_t j = bisect_left(rd->times, rd->t0 + w);
    if (j < 0 && PyErr_Occurred())
        return -2;
    return j - 1;
}

/* room.get(w), then the slice, then room[w]: a new reference, or NULL with an error set. */
static PyObject *
reader_lookup(Reader *rd, PyObject *key, double w)
{
    PyObject *r;
    if (rd->fast) {
        r = PyDict_GetItemWithError(rd->room, key);
        if (r)
            return Py_NewRef(r);
        if (PyErr_Occurred())
            return NULL;
    }
    else {
        r = PyObject_CallOneArg(rd->get, key);
        if (!r || r != Py_None)
            return r;
        Py_DECREF(r);
    }
    if (!rd->loaded && reader_load(rd))
        return NULL;
    if (rd->times) {
        Py_ssize_t j = slice_of(rd, w);
        if (j == -2)
            return NULL;
        if (j < 0 && rd->ands)
            j = 0;      /* as ``Room.__missing__``: a walltime ending before the second slice */
        PyObject *jo = PyLong_FromSsize_t(j);
        if (!jo)
            return NULL;
        if (PyDict_Check(rd->slices)) {
            r = PyDict_GetItemWithError(rd->slices, jo);
            Py_XINCREF(r);
        }
        else {
            r = PyObject_CallMethodOneArg(rd->slices, s_get, jo);
            if (r == Py_None)
                Py_CLEAR(r);
        }
        if (!r && rd->ands && !PyErr_Occurred())
            r = room_slice(rd, j, jo);
        Py_DECREF(jo);
        if (r) {
            if (PyObject_SetItem(rd->room, key, r) < 0) {
                Py_DECREF(r);
                return NULL;
            }
            return r;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetItem(rd->room, key);
}

/* A profile's room read by the slice ``w`` ends in, as ``Room.__missing__`` finds it, without
   a float key nor the room's dict (whose entries are these slices' values): each slice is
   read from Python once a search. 1 with the values; 0 for any other room (read as a dict);
   -1 on an error. */
static int
slice_get(Reader *rd, double w, int64_t *rn, int64_t *rb)
{
    if (!rd->loaded && reader_load(rd))
        return -1;
    if (!rd->ands || !PyDict_Check(rd->slices))
        return 0;
    Py_ssize_t j = slice_of(rd, w);
    if (j == -2)
        return -1;
    if (j < 0)
        j = 0;
    if (!rd->sl) {
        Py_ssize_t n = PyList_GET_SIZE(rd->times);
        rd->sl = PyMem_New(int64_t, 3 * n);
        if (!rd->sl) {
            PyErr_NoMemory();
            return -1;
        }
        rd->nsl = n;
        for (Py_ssize_t i = 0; i < n; i++)
            rd->sl[3 * i + 2] = 0;
    }
    if (j >= rd->nsl)
        return 0;
    int64_t *e = rd->sl + 3 * j;
    if (!e[2]) {
        PyObject *jo = PyLong_FromSsize_t(j);
        if (!jo)
            return -1;
        PyObject *r = PyDict_GetItemWithError(rd->slices, jo);
        Py_XINCREF(r);
        if (!r && !PyErr_Occurred())
            r = room_slice(rd, j, jo);
        Py_DECREF(jo);
        if (!r)
            return PyErr_Occurred() ? -1 : 0;
        int bad = pair(r, &e[0], &e[1]);
        Py_DECREF(r);
        if (bad)
            return -1;
        e[2] = 1;
    }
    *rn = e[0];
    *rb = e[1];
    return 1;
}

static int
reader_get(Reader *rd, double w, int64_t *rn, int64_t *rb)
{
    uint64_t bits;
    unsigned h = 0;
    memcpy(&bits, &w, sizeof bits);
    if (rd->fast) {
        h = (unsigned)((bits * 0x9E3779B97F4A7C15ULL) >> 59);
        if (rd->used[h] && rd->key[h] == bits) {
            *rn = rd->rn[h];
            *rb = rd->rb[h];
            return 0;
        }
    }
    int got = rd->fast ? slice_get(rd, w, rn, rb) : 0;
    if (got < 0)
        return -1;
    if (got) {
        rd->used[h] = 1;
        rd->key[h] = bits;
        rd->rn[h] = *rn;
        rd->rb[h] = *rb;
        return 0;
    }
    PyObject *key = PyFloat_FromDouble(w);
    if (!key)
        return -1;
    PyObject *r = reader_lookup(rd, key, w);
    Py_DECREF(key);
    if (!r)
        return -1;
    int bad = pair(r, rn, rb);
    Py_DECREF(r);
    if (bad)
        return -1;
    if (rd->fast) {
        rd->used[h] = 1;
        rd->key[h] = bits;
        rd->rn[h] = *rn;
        rd->rb[h] = *rb;
    }
    return 0;
}

/* -- the room's packing test ------------------------------------------------------------ */

/* Whether ``admits`` is ``room``'s own ``Room._packs`` over ``capacity_fits``, then done by
   ``packs``: 1 yes, 0 no. */
static int
reader_admits(Reader *rd, PyObject *admits)
{
    if (!packs_func || !PyMethod_Check(admits) || PyMethod_GET_FUNCTION(admits) != packs_func
            || PyMethod_GET_SELF(admits) != rd->room)
        return 0;
    PyObject *fits = PyObject_GetAttr(rd->room, s_fits);
    int same = fits && PyMethod_Check(fits) && PyMethod_GET_FUNCTION(fits) == fits_func;
    Py_XDECREF(fits);
    rd->prefix = same ? PyObject_GetAttr(rd->room, s_prefix) : NULL;
    if (!rd->prefix) {
        PyErr_Clear();
        return 0;
    }
    for (int k = 0; k < ROWS; k++)
        rd->row_j[k] = -1;
    rd->native = 1;
    return 1;
}

static int64_t
floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The per-storage free bytes of ``room._prefix(j)[1]`` (the fewest over slices 0..j), kept
   for the walk: a row of ``nstorage`` values, or NULL with an error set. */
static int64_t *
packing_row(Reader *rd, Py_ssize_t j)
{
    int k = (int)(j % ROWS);
    if (rd->rows && rd->row_j[k] == j)
        return rd->rows + k * rd->nstorage;
    PyObject *jo = PyLong_FromSsize_t(j);
    PyObject *pre = jo ? PyObject_CallOneArg(rd->prefix, jo) : NULL;
    Py_XDECREF(jo);
    if (!pre)
        return NULL;
    PyObject *row = PySequence_GetItem(pre, 1);
    Py_DECREF(pre);
    if (!row)
        return NULL;
    PyObject *seq = PySequence_Fast(row, "a prefix's free bytes must be a sequence");
    Py_DECREF(row);
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (!rd->rows) {
        rd->nstorage = n;
        rd->rows = PyMem_New(int64_t, ROWS * (n ? n : 1));
        if (!rd->rows) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return NULL;
        }
    }
    else if (n != rd->nstorage) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "a room's rows of free bytes differ in length");
        return NULL;
    }
    int64_t *out = rd->rows + k * n;
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = as_int64(PySequence_Fast_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            rd->row_j[k] = -1;
            return NULL;
        }
    }
    Py_DECREF(seq);
    rd->row_j[k] = j;
    return out;
}

/* ``Room._packs(n, total, w)`` with ``placement._holds`` as its ``_fits``: whether ``n`` shares
   of ``total // n`` bytes fit in the storage nodes' fewest free bytes over the job's window
   (``sum(free // share) >= n``). 1 yes, 0 no, -1 on an error. */
static int
packs(Reader *rd, int64_t n, int64_t total, double w)
{
    if (!total || !n)
        return 1;
    if (!rd->loaded && reader_load(rd))
        return -1;
    if (!rd->times) {
        PyErr_SetString(PyExc_TypeError, "a room with a packing test has no times");
        return -1;
    }
    Py_ssize_t j = slice_of(rd, w);
    if (j == -2)
        return -1;
    int64_t *row = packing_row(rd, j > 0 ? j : 0);
    if (!row)
        return -1;
    int64_t share = floordiv(total, n), held = 0;
    if (share <= 0)
        return 1;
    for (Py_ssize_t i = 0; i < rd->nstorage; i++) {
        held += floordiv(row[i], share);
        if (held >= n)
            return 1;
    }
    return 0;
}

/* native_packing(packs, capacity_fits): ``packs`` (``availability.Room._packs``) is the test
   above when the room's ``_fits`` is ``capacity_fits`` (``placement._holds``): a walk given a
   room's own bound ``packs`` as ``admits`` then does it in C. */
static PyObject *
native_packing(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyFunction_Check(args[0]) || !PyFunction_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "native_packing(packs, capacity_fits): two functions");
        return NULL;
    }
    Py_XSETREF(packs_func, Py_NewRef(args[0]));
    Py_XSETREF(fits_func, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* native_room(missing, count): a room whose type's ``__missing__`` is ``missing``
   (``availability.Room.__missing__``) has its slices' rooms computed here on a walk's miss,
   the same way, ``count`` counting a mask's nodes; ``native_room(None, None)``: never. */
static PyObject *
native_room(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || (args[0] == Py_None) != (args[1] == Py_None)
            || (args[0] != Py_None && (!PyFunction_Check(args[0]) || !PyCallable_Check(args[1])))) {
        PyErr_SetString(PyExc_TypeError, "native_room(missing, count): a function and a callable, or two Nones");
        return NULL;
    }
    Py_XSETREF(missing_func, args[0] == Py_None ? NULL : Py_NewRef(args[0]));
    Py_XSETREF(count_func, args[1] == Py_None ? NULL : Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

#endif /* MRSCHED_MINTREE_ROOM_H */
