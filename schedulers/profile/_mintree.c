/* The ordered queue's segment tree of minima (nodes, burst-buffer bytes, walltime), compiled.

   Why: the walk over subtrees (``first``) is the part of an overloaded run's scheduling that
   grows faster than the jobs (issue 18: ~0.3 us a subtree in Python; ``fcfs-bb`` on 1M jobs
   spent 425 scheduler CPU s with it in Python, 253 with it here). This is
   ``ordered_queue._PyMinTree`` method for method on C arrays (``first``, ``first_in_lanes``,
   ``live``, ``set``), and ``find_in_runs`` is ``ordered_queue._py_find_in_runs`` (the search
   over runs, lane by lane): the same slots, the same walks, the same room reads, hence the
   same answers. A profile's room's packing test (``Room._packs``), when it is the
   ``admits`` of a walk, is done here too (``packs``), and so is ``Room.__missing__`` on a
   room's miss (``room_slice``). ``ordered_queue`` uses this module when
   it was built (an optional extension: an install without a compiler keeps the pure-Python
   tree), and the tests run both.

   Values: nodes and bytes are integers (int64; an empty slot, INF in Python, is INT64_MAX);
   a room's values are clamped below that (1e300, "anything", stays above every request);
   walltimes are doubles, as in Python. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#define EMPTY INT64_MAX
#define ROOM_MAX (INT64_MAX - 1)

/* ``PyLong_AsLongLong``, without its slow path: 3.11 reads any int of two digits or more (free
   bytes) through a byte array, ~10x the digit loop of ``PyLong_AsLongLongAndOverflow``. */
static inline long long
as_int64(PyObject *o)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "int too big to convert to int64");
        return -1;
    }
    return v;
}

static PyObject *dict_get;      /* dict.get: a room whose ``get`` is this one is read directly */
static PyObject *s_times, *s_slices, *s_get;

static PyTypeObject MinTreeType;

typedef struct {
    PyObject_HEAD
    Py_ssize_t cap;
    Py_ssize_t head;
    int64_t *mn, *mb;
    double *mw;
} MinTree;

/* -- values ------------------------------------------------------------------------------- */

/* A request's nodes or bytes: an integer, or +inf for an empty slot. */
static int
job_value(PyObject *o, int64_t *out)
{
    if (PyLong_Check(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow || v >= ROOM_MAX) {
            PyErr_Format(PyExc_OverflowError, "a request of %R nodes or bytes is beyond 2**63 - 2", o);
            return -1;
        }
        *out = v;
        return 0;
    }
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    if (isinf(d) && d > 0) {
        *out = EMPTY;
        return 0;
    }
    if (d != floor(d) || fabs(d) >= 9.2e18) {
        PyErr_Format(PyExc_ValueError, "nodes and bytes must be integers, not %R", o);
        return -1;
    }
    *out = (int64_t)d;
    return 0;
}

/* What a room gives: an integer or a float, floored (exact against integer requests) and
   kept below EMPTY. */
static int
room_value(PyObject *o, int64_t *out)
{
    if (PyLong_Check(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        *out = overflow > 0 || v > ROOM_MAX ? ROOM_MAX : overflow < 0 ? INT64_MIN : v;
        return 0;
    }
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    if (isnan(d)) {
        PyErr_SetString(PyExc_ValueError, "a room holds NaN");
        return -1;
    }
    *out = d >= 9.2e18 ? ROOM_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)floor(d);
    return 0;
}

static PyObject *
value_object(int64_t v)
{
    return v == EMPTY ? PyFloat_FromDouble(INFINITY) : PyLong_FromLongLong(v);
}

static int
pair(PyObject *r, int64_t *rn, int64_t *rb)
{
    PyObject *a, *b;
    int bad;
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2)
        return room_value(PyTuple_GET_ITEM(r, 0), rn) || room_value(PyTuple_GET_ITEM(r, 1), rb) ? -1 : 0;
    a = PySequence_GetItem(r, 0);
    b = a ? PySequence_GetItem(r, 1) : NULL;
    bad = !a || !b || room_value(a, rn) || room_value(b, rb);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return bad ? -1 : 0;
}

/* -- reading a room: _mintree_room.h (this translation unit's, split off for length) ------ */

#include "_mintree_room.h"


/* -- the tree ----------------------------------------------------------------------------- */

static int
bit_length(Py_ssize_t v)
{
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

static void
MinTree_dealloc(MinTree *self)
{
    PyMem_Free(self->mn);
    PyMem_Free(self->mb);
    PyMem_Free(self->mw);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
MinTree_init(MinTree *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"leaves", "cap", NULL};
    PyObject *leaves;
    Py_ssize_t least = 0, cap = 8, n;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|n:MinTree", kwlist, &leaves, &least))
        return -1;
    PyObject *seq = PySequence_Fast(leaves, "leaves must be a sequence of (nodes, bytes, walltime)");
    if (!seq)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    while (cap < 2 * n || cap < least)
        cap *= 2;
    PyMem_Free(self->mn);
    PyMem_Free(self->mb);
    PyMem_Free(self->mw);
    self->mn = PyMem_New(int64_t, 2 * cap);
    self->mb = PyMem_New(int64_t, 2 * cap);
    self->mw = PyMem_New(double, 2 * cap);
    self->cap = cap;
    self->head = 0;
    if (!self->mn || !self->mb || !self->mw) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    int64_t *mn = self->mn, *mb = self->mb;
    double *mw = self->mw;
    for (Py_ssize_t i = 0; i < 2 * cap; i++) {
        mn[i] = mb[i] = EMPTY;
        mw[i] = INFINITY;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *leaf = PySequence_Fast_GET_ITEM(seq, s);
        PyObject *v[3];
        if (!PyTuple_Check(leaf) || PyTuple_GET_SIZE(leaf) != 3) {
            PyErr_SetString(PyExc_TypeError, "a leaf is a tuple (nodes, bytes, walltime)");
            Py_DECREF(seq);
            return -1;
        }
        for (int k = 0; k < 3; k++)
            v[k] = PyTuple_GET_ITEM(leaf, k);
        double w = PyFloat_AsDouble(v[2]);
        if ((w == -1.0 && PyErr_Occurred()) || job_value(v[0], &mn[cap + s]) || job_value(v[1], &mb[cap + s])) {
            Py_DECREF(seq);
            return -1;
        }
        mw[cap + s] = w;
    }
    Py_DECREF(seq);
    for (Py_ssize_t i = cap - 1; i > 0; i--) {
        Py_ssize_t a = 2 * i, b = a + 1;
        mn[i] = mn[a] < mn[b] ? mn[a] : mn[b];
        mb[i] = mb[a] < mb[b] ? mb[a] : mb[b];
        mw[i] = mw[a] < mw[b] ? mw[a] : mw[b];
    }
    return 0;
}

static PyObject *
triple(MinTree *self, Py_ssize_t i)
{
    PyObject *n = value_object(self->mn[i]), *b = value_object(self->mb[i]), *w = PyFloat_FromDouble(self->mw[i]);
    if (!n || !b || !w) {
        Py_XDECREF(n);
        Py_XDECREF(b);
        Py_XDECREF(w);
        return NULL;
    }
    return Py_BuildValue("(NNN)", n, b, w);
}

static PyObject *
MinTree_root(MinTree *self, PyObject *unused)
{
    return triple(self, 1);
}

static int
slot_arg(MinTree *self, PyObject *o, Py_ssize_t *s)
{
    *s = PyLong_AsSsize_t(o);
    if (*s == -1 && PyErr_Occurred())
        return -1;
    if (*s < 0 || *s >= self->cap) {
        PyErr_Format(PyExc_IndexError, "slot %zd outside 0..%zd", *s, self->cap - 1);
        return -1;
    }
    return 0;
}

static PyObject *
MinTree_leaf(MinTree *self, PyObject *o)
{
    Py_ssize_t s;
    if (slot_arg(self, o, &s))
        return NULL;
    return triple(self, self->cap + s);
}

/* set(s, nodes, bytes, walltime) -> whether the root's minima changed */
static PyObject *
MinTree_set(MinTree *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t s;
    int64_t n, b;
    double w;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "set(slot, nodes, bytes, walltime)");
        return NULL;
    }
    if (slot_arg(self, args[0], &s) || job_value(args[1], &n) || job_value(args[2], &b))
        return NULL;
    w = PyFloat_AsDouble(args[3]);
    if (w == -1.0 && PyErr_Occurred())
        return NULL;
    int64_t *mn = self->mn, *mb = self->mb;
    double *mw = self->mw;
    if (s < self->head && n != EMPTY)
        self->head = s;
    Py_ssize_t i = s + self->cap;
    mn[i] = n;
    mb[i] = b;
    mw[i] = w;
    i >>= 1;
    while (i) {
        Py_ssize_t l = 2 * i, r = l + 1;
        n = mn[l] < mn[r] ? mn[l] : mn[r];
        b = mb[l] < mb[r] ? mb[l] : mb[r];
        w = mw[l] < mw[r] ? mw[l] : mw[r];
        if (n == mn[i] && b == mb[i] && w == mw[i])
            Py_RETURN_FALSE;        /* the minima above are unchanged too */
        mn[i] = n;
        mb[i] = b;
        mw[i] = w;
        i >>= 1;
    }
    Py_RETURN_TRUE;
}

/* live(lo) -> the first occupied slot >= lo, or -1 */
static PyObject *
MinTree_live(MinTree *self, PyObject *o)
{
    Py_ssize_t lo = PyLong_AsSsize_t(o), cap = self->cap, i;
    int64_t *mn = self->mn;
    if (lo == -1 && PyErr_Occurred())
        return NULL;
    int from_head = lo <= self->head;
    if (from_head)
        lo = self->head;
    if (lo >= cap || mn[1] == EMPTY)
        return PyLong_FromLong(-1);
    if (mn[lo + cap] != EMPTY)      /* the next job in line (fcfs: nearly always) */
        return PyLong_FromSsize_t(lo);
    i = lo ? lo + cap : 1;
    for (;;) {
        if (mn[i] != EMPTY) {
            if (i >= cap) {
                if (from_head)
                    self->head = i - cap;
                return PyLong_FromSsize_t(i - cap);
            }
            i *= 2;
            continue;
        }
        while (i & 1)
            i >>= 1;
        if (!i)
            return PyLong_FromLong(-1);
        i += 1;
    }
}

/* The walk of ``_PyMinTree.first`` over slots lo..hi-1 with ``rd``'s reads of ``room``: the
   first slot found, -1 when none, -2 on an error. */
static Py_ssize_t
walk(MinTree *self, Py_ssize_t lo, Py_ssize_t hi, Reader *rd, PyObject *admits)
{
    Py_ssize_t cap = self->cap;
    int64_t *mn = self->mn, *mb = self->mb, rn, rb;
    double *mw = self->mw;
    if (lo < 0) {
        PyErr_SetString(PyExc_ValueError, "first: lo must be >= 0");
        return -2;
    }
    if (hi < 0 || hi > cap)
        hi = cap;
    if (reader_get(rd, mw[1], &rn, &rb))
        return -2;
    if (lo >= hi || mn[1] > rn || mb[1] > rb)
        return -1;              /* nothing in the whole tree passes */
    Py_ssize_t end = hi + cap, i = lo ? lo + cap : 1;
    int depth = bit_length(cap);
    for (;;) {
        double w = mw[i];
        if (reader_get(rd, w, &rn, &rb))
            return -2;
        if (mn[i] <= rn && mb[i] <= rb) {
            if (i < cap) {
                i *= 2;         /* descend: left child first (same leftmost leaf) */
                continue;
            }
            if (admits == Py_None)
                return i - cap;
            if (rd->native) {
                int yes = packs(rd, mn[i], mb[i], w);
                if (yes < 0)
                    return -2;
                if (yes)
                    return i - cap;
                goto next;
            }
            PyObject *r = PyObject_CallFunction(admits, "NNd", PyLong_FromLongLong(mn[i]),
                                                PyLong_FromLongLong(mb[i]), w);
            if (!r)
                return -2;
            int yes = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (yes < 0)
                return -2;
            if (yes)
                return i - cap;
        }
    next:
        while (i & 1)           /* the next subtree in order: up while a right child */
            i >>= 1;
        if (!i)
            return -1;
        i += 1;
        if (hi < cap && (i << (depth - bit_length(i))) >= end)
            return -1;          /* the next subtree starts past the range */
    }
}

/* first(lo, room, hi=-1, admits=None) -> the first slot in lo..hi-1 holding a job that
   passes ``room`` (and ``admits``), or -1: ``_PyMinTree.first`` */
static PyObject *
MinTree_first(MinTree *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t lo, hi = -1, found;
    PyObject *admits = Py_None;
    Reader rd;
    if (nargs < 2 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "first(lo, room, hi=-1, admits=None)");
        return NULL;
    }
    lo = PyLong_AsSsize_t(args[0]);
    if (lo == -1 && PyErr_Occurred())
        return NULL;
    if (nargs > 2) {
        hi = PyLong_AsSsize_t(args[2]);
        if (hi == -1 && PyErr_Occurred())
            return NULL;
    }
    if (nargs > 3)
        admits = args[3];
    found = reader_init(&rd, args[1]) ? -2 : (reader_admits(&rd, admits), walk(self, lo, hi, &rd, admits));
    reader_done(&rd);
    return found == -2 ? NULL : PyLong_FromSsize_t(found);
}

/* bisect_right (right != 0) or bisect_left of x in a list of ints from lo: -1 on an error */
static Py_ssize_t
bisect_int(PyObject *list, Py_ssize_t x, Py_ssize_t lo, int right)
{
    Py_ssize_t hi = PyList_GET_SIZE(list);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        Py_ssize_t v = PyLong_AsSsize_t(PyList_GET_ITEM(list, mid));
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (right ? v <= x : v < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static PyObject *s_tree, *s_pos, *s_admits, *s_lanes;

/* A search's reads of ``room`` and its test of single jobs (``room.admits``, or None):
   ``*admits`` is a new reference. 0, or -1 with an error set (``reader_done`` in any case). */
static int
reader_start(Reader *rd, PyObject *room, PyObject **admits)
{
    *admits = NULL;
    if (reader_init(rd, room))
        return -1;
    *admits = PyObject_GetAttr(room, s_admits);
    if (!*admits) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        *admits = Py_NewRef(Py_None);
    }
    reader_admits(rd, *admits);
    return 0;
}

/* A lane's tree (a compiled MinTree) and its ``pos`` list: new references, or -1 with an
   error set and both NULL. */
static int
lane_parts(PyObject *lane, PyObject **tree, PyObject **pos)
{
    *tree = PyObject_GetAttr(lane, s_tree);
    *pos = *tree ? PyObject_GetAttr(lane, s_pos) : NULL;
    if (!*pos)
        goto error;
    if (!PyObject_TypeCheck(*tree, &MinTreeType)) {
        PyErr_SetString(PyExc_TypeError, "a lane's tree is not a compiled MinTree");
        goto error;
    }
    if (!PyList_Check(*pos)) {
        PyErr_SetString(PyExc_TypeError, "a lane's pos must be a list");
        goto error;
    }
    return 0;
error:
    Py_CLEAR(*tree);
    Py_CLEAR(*pos);
    return -1;
}

/* ``_PyMinTree.first_in_lanes`` on ``roots`` (leaf k: the minima of ``lanes[k]``, whose
   ``tree`` and ``pos`` are its jobs and their run slots): the run slot, -1, or -2 on an error. */
static Py_ssize_t
lanes_search(MinTree *roots, PyObject *ks, PyObject *lanes, Py_ssize_t after, Reader *rd,
             PyObject *admits, int earliest)
{
    PyObject *tree = NULL, *pos = NULL;
    Py_ssize_t best = -1;
    int64_t most, rn, rb;
    if (!PyList_Check(ks) || !PyDict_Check(lanes)) {
        PyErr_SetString(PyExc_TypeError, "a run's lanes: ks a list, lanes a dict");
        return -2;
    }
    if (reader_get(rd, 0.0, &most, &rb))   /* the most nodes any walltime gets */
        return -2;
    for (Py_ssize_t x = 0; x < PyList_GET_SIZE(ks); x++) {
        PyObject *ko = PyList_GET_ITEM(ks, x);
        Py_ssize_t k = PyLong_AsSsize_t(ko), i;
        if (k == -1 && PyErr_Occurred())
            goto error;
        if (k < 0 || k >= roots->cap || k > 63) {
            PyErr_Format(PyExc_IndexError, "lane %zd outside the tree", k);
            goto error;
        }
        if (k && ((int64_t)1 << (k - 1)) > most)
            break;              /* this lane and the next ones ask more */
        i = roots->cap + k;
        if (reader_get(rd, roots->mw[i], &rn, &rb))
            goto error;
        if (roots->mn[i] > rn || roots->mb[i] > rb)
            continue;           /* no job of this lane passes */
        PyObject *lane = PyDict_GetItemWithError(lanes, ko);
        if (!lane) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_KeyError, "lane %zd", k);
            goto error;
        }
        if (lane_parts(lane, &tree, &pos))
            goto error;
        Py_ssize_t lo = after >= 0 ? bisect_int(pos, after, 0, 1) : 0, hi = -1, s;
        if (lo < 0)
            goto error;
        if (best >= 0 && (hi = bisect_int(pos, best, lo, 0)) < 0)
            goto error;
        s = walk((MinTree *)tree, lo, hi, rd, admits);
        if (s == -2)
            goto error;
        if (s >= 0) {
            best = PyLong_AsSsize_t(PyList_GET_ITEM(pos, s));
            if (best == -1 && PyErr_Occurred())
                goto error;
        }
        Py_CLEAR(tree);
        Py_CLEAR(pos);
        if (s >= 0 && !earliest)
            break;
    }
    return best;
error:
    Py_XDECREF(tree);
    Py_XDECREF(pos);
    return -2;
}

/* first_in_lanes(ks, lanes, after, room, earliest) -> ``_PyMinTree.first_in_lanes`` */
static PyObject *
MinTree_first_in_lanes(MinTree *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *admits;
    Py_ssize_t after, best;
    int earliest;
    Reader rd;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "first_in_lanes(ks, lanes, after, room, earliest)");
        return NULL;
    }
    after = PyLong_AsSsize_t(args[2]);
    if (after == -1 && PyErr_Occurred())
        return NULL;
    earliest = PyObject_IsTrue(args[4]);
    if (earliest < 0)
        return NULL;
    best = reader_start(&rd, args[3], &admits) ? -2
         : lanes_search(self, args[0], args[1], after, &rd, admits, earliest);
    Py_XDECREF(admits);
    reader_done(&rd);
    return best == -2 ? NULL : PyLong_FromSsize_t(best);
}

/* A run's lane ``k`` (``runs[key].lanes[k]``): its tree and its ``pos`` list, new
   references, or -1 with an error set. */
static int
run_lane(PyObject *runs, PyObject *key, PyObject *ko, PyObject **tree, PyObject **pos)
{
    PyObject *run, *lanes, *lane;
    int bad;
    *tree = *pos = NULL;
    run = PyDict_GetItemWithError(runs, key);
    if (!run) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        return -1;
    }
    lanes = PyObject_GetAttr(run, s_lanes);
    if (!lanes)
        return -1;
    lane = PyDict_Check(lanes) ? PyDict_GetItemWithError(lanes, ko) : NULL;
    if (!lane) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_KeyError, "run %R has no lane %R", key, ko);
        Py_DECREF(lanes);
        return -1;
    }
    Py_INCREF(lane);    /* held while ``lanes`` goes */
    Py_DECREF(lanes);
    bad = lane_parts(lane, tree, pos);
    Py_DECREF(lane);
    return bad;
}

/* find_in_runs(r, tops, ks, keys, runs, room, earliest) -> ``ordered_queue._py_find_in_runs``:
   lane by lane (``tops[k]``: a tree whose leaf q holds the minima of lane k of run
   ``runs[keys[q]]``), the first run from rank r whose lane holds a job passing ``room``, each
   lane searching up to the best run so far; one read of the room serves them all. */
static PyObject *
find_in_runs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *admits = NULL, *tops, *ks, *keys, *runs, *found = NULL;
    PyObject *top = NULL, *key = NULL, *tree = NULL, *pos = NULL;
    Py_ssize_t r, best_r = -1, best = -1;
    int64_t most, rb;
    int earliest;
    Reader rd;
    if (nargs != 7 || !PyDict_Check(args[1]) || !PyList_Check(args[2]) || !PyList_Check(args[3])
            || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "find_in_runs(r, tops: dict, ks: list, keys: list, runs: dict, room, earliest)");
        return NULL;
    }
    r = PyLong_AsSsize_t(args[0]);
    if (r == -1 && PyErr_Occurred())
        return NULL;
    if (r < 0) {
        PyErr_SetString(PyExc_ValueError, "find_in_runs: r must be >= 0");
        return NULL;
    }
    tops = args[1];
    ks = args[2];
    keys = args[3];
    runs = args[4];
    earliest = PyObject_IsTrue(args[6]);
    if (earliest < 0)
        return NULL;
    if (reader_start(&rd, args[5], &admits) || reader_get(&rd, 0.0, &most, &rb))
        goto done;      /* most: the most nodes any walltime gets */
    for (Py_ssize_t x = 0; x < PyList_GET_SIZE(ks); x++) {
        PyObject *ko = PyList_GET_ITEM(ks, x);
        Py_ssize_t k = PyLong_AsSsize_t(ko), lo = r;
        if (k == -1 && PyErr_Occurred())
            goto done;
        if (k < 0 || k > 63) {
            PyErr_Format(PyExc_IndexError, "lane %zd outside 0..63", k);
            goto done;
        }
        if (k && ((int64_t)1 << (k - 1)) > most)
            break;              /* this lane and the next ones ask more */
        top = PyDict_GetItemWithError(tops, ko);
        if (!top) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_KeyError, "lane %zd", k);
            goto done;
        }
        if (!PyObject_TypeCheck(top, &MinTreeType)) {
            top = NULL;
            PyErr_SetString(PyExc_TypeError, "a lane's tree over the runs is not a compiled MinTree");
            goto done;
        }
        Py_INCREF(top);
        for (;;) {
            /* the next run whose lane-k minima pass, before the best (or at it: an earlier slot) */
            Py_ssize_t q = walk((MinTree *)top, lo, best_r < 0 ? -1 : best_r + earliest, &rd, Py_None);
            if (q == -2)
                goto done;
            if (q < 0)
                break;
            if (q >= PyList_GET_SIZE(keys)) {
                PyErr_SetString(PyExc_IndexError, "a run's rank past its keys");
                goto done;
            }
            Py_XSETREF(key, Py_NewRef(PyList_GET_ITEM(keys, q)));
            if (run_lane(runs, key, ko, &tree, &pos))
                goto done;
            Py_ssize_t hi = -1, s;
            if (q == best_r && (hi = bisect_int(pos, best, 0, 0)) < 0)
                goto done;
            s = walk((MinTree *)tree, 0, hi, &rd, admits);
            if (s == -2)
                goto done;
            if (s >= 0) {
                if (s >= PyList_GET_SIZE(pos)) {
                    PyErr_SetString(PyExc_IndexError, "a lane's slot past its pos");
                    goto done;
                }
                best = PyLong_AsSsize_t(PyList_GET_ITEM(pos, s));
                if (best == -1 && PyErr_Occurred())
                    goto done;
                best_r = q;
            }
            Py_CLEAR(tree);
            Py_CLEAR(pos);
            if (s >= 0)
                break;          /* this lane's later runs come after it */
            lo = q + 1;
        }
        Py_CLEAR(top);
    }
    if (best_r < 0)
        found = Py_NewRef(Py_None);
    else if (best_r >= PyList_GET_SIZE(keys))
        PyErr_SetString(PyExc_IndexError, "a run's rank past its keys");
    else
        found = Py_BuildValue("(On)", PyList_GET_ITEM(keys, best_r), best);
done:
    Py_XDECREF(top);
    Py_XDECREF(key);
    Py_XDECREF(tree);
    Py_XDECREF(pos);
    Py_XDECREF(admits);
    reader_done(&rd);
    return found;
}

static PyObject *
MinTree_get_cap(MinTree *self, void *closure)
{
    return PyLong_FromSsize_t(self->cap);
}

static PyObject *
MinTree_get_head(MinTree *self, void *closure)
{
    return PyLong_FromSsize_t(self->head);
}

static int
MinTree_set_head(MinTree *self, PyObject *v, void *closure)
{
    Py_ssize_t h = v ? PyLong_AsSsize_t(v) : -1;
    if (h == -1 && PyErr_Occurred())
        return -1;
    if (h < 0 || h > self->cap) {
        PyErr_SetString(PyExc_ValueError, "head outside 0..cap");
        return -1;
    }
    self->head = h;
    return 0;
}

static PyGetSetDef MinTree_getset[] = {
    {"cap", (getter)MinTree_get_cap, NULL, "slots 0..cap-1", NULL},
    {"head", (getter)MinTree_get_head, (setter)MinTree_set_head, "every slot below it is empty", NULL},
    {NULL},
};

static PyMethodDef MinTree_methods[] = {
    {"root", (PyCFunction)MinTree_root, METH_NOARGS, "the minima over every slot"},
    {"leaf", (PyCFunction)MinTree_leaf, METH_O, "leaf(s): slot s's (nodes, bytes, walltime)"},
    {"set", (PyCFunction)(void (*)(void))MinTree_set, METH_FASTCALL,
     "set(s, nodes, bytes, walltime): whether the root's minima changed"},
    {"live", (PyCFunction)MinTree_live, METH_O, "live(lo): the first occupied slot >= lo, or -1"},
    {"first", (PyCFunction)(void (*)(void))MinTree_first, METH_FASTCALL,
     "first(lo, room, hi=-1, admits=None): the first slot in lo..hi-1 that passes room, or -1"},
    {"first_in_lanes", (PyCFunction)(void (*)(void))MinTree_first_in_lanes, METH_FASTCALL,
     "first_in_lanes(ks, lanes, after, room, earliest): the first run slot > after passing room"},
    {NULL},
};

static PyTypeObject MinTreeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mrsched.schedulers.profile._mintree.MinTree",
    .tp_basicsize = sizeof(MinTree),
    .tp_dealloc = (destructor)MinTree_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A segment tree of minima (nodes, bytes, walltime) over slots 0..cap-1.",
    .tp_methods = MinTree_methods,
    .tp_getset = MinTree_getset,
    .tp_init = (initproc)MinTree_init,
    .tp_new = PyType_GenericNew,
};

static PyMethodDef module_methods[] = {
    {"find_in_runs", (PyCFunction)(void (*)(void))find_in_runs, METH_FASTCALL,
     "find_in_runs(r, tops, ks, keys, runs, room, earliest): (key, slot) of a job passing room "
     "in the first run from rank r that holds one"},
    {"native_packing", (PyCFunction)(void (*)(void))native_packing, METH_FASTCALL,
     "native_packing(packs, capacity_fits): a room's own bound packs as admits is done in C"},
    {"native_room", (PyCFunction)(void (*)(void))native_room, METH_FASTCALL,
     "native_room(missing, count): a profile's room's slices are computed in C on a walk's miss"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mintree", "The ordered queue's tree of minima, compiled.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__mintree(void)
{
    s_times = PyUnicode_InternFromString("times");
    s_slices = PyUnicode_InternFromString("slices");
    s_get = PyUnicode_InternFromString("get");
    s_prefix = PyUnicode_InternFromString("_prefix");
    s_fits = PyUnicode_InternFromString("_fits");
    s_tree = PyUnicode_InternFromString("tree");
    s_pos = PyUnicode_InternFromString("pos");
    s_admits = PyUnicode_InternFromString("admits");
    s_lanes = PyUnicode_InternFromString("lanes");
    s_missing = PyUnicode_InternFromString("__missing__");
    s_and = PyUnicode_InternFromString("_and");
    s_least = PyUnicode_InternFromString("_least");
    s_nodes = PyUnicode_InternFromString("nodes");
    s_bbsum = PyUnicode_InternFromString("bbsum");
    if (!s_missing || !s_and || !s_least || !s_nodes || !s_bbsum)
        return NULL;
    if (!s_times || !s_slices || !s_get || !s_prefix || !s_fits || !s_tree || !s_pos || !s_admits
            || !s_lanes)
        return NULL;
    dict_get = PyObject_GetAttr((PyObject *)&PyDict_Type, s_get);
    if (!dict_get || PyType_Ready(&MinTreeType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "MinTree", (PyObject *)&MinTreeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
