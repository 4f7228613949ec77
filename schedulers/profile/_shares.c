/* Burst-buffer shares taken from storage nodes, compiled: the bytes each storage node gives
   when a job's per-node shares are placed by seed 001's greedy (``placement.py``: each node,
   in index order, on the first storage node of its distance order with room for its share).

   Why: ``BurstBufferPlacer.place_mask`` asks this of every job a round tries to start, and
   a profile needs only these bytes (the per-node placement is built when read). In Python it
   goes run by run (``_take``); on the 10,000-node machine, whose name order interleaves
   chassis, a wide job's ~1,000 nodes form hundreds of runs and the count was ~12 % of a run.
   Here it goes node by node on C arrays, which is the same greedy (tests compare the two).

   Values are int64: free bytes or shares beyond it raise OverflowError, and the caller falls
   back to the Python path, which has no bound. ``placement`` uses this module when it was
   built (an optional extension, like ``_mintree``). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    Py_ssize_t nodes;       /* compute nodes */
    Py_ssize_t groups;      /* storage orders (order groups) */
    Py_ssize_t storage;     /* storage nodes */
    int32_t *group;         /* per compute node: its order group */
    int32_t *order;         /* per group, its order: ``storage`` slots, ``length[g]`` used */
    int32_t *length;        /* per group: its order's length */
} ShareTaker;

static void
taker_free_arrays(ShareTaker *self)
{
    PyMem_Free(self->group);
    PyMem_Free(self->order);
    PyMem_Free(self->length);
    self->group = self->order = self->length = NULL;
}

static void
ShareTaker_dealloc(ShareTaker *self)
{
    taker_free_arrays(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* An index in [0, bound): a Python int. */
static int
index_in(PyObject *o, Py_ssize_t bound, const char *what, int32_t *out)
{
    Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_OverflowError);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v >= bound) {
        PyErr_Format(PyExc_ValueError, "%s %zd is outside 0..%zd", what, v, bound - 1);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* ShareTaker(group, orders, storage): ``group[k]`` the order group of compute node ``k``,
   ``orders[g]`` that group's storage indices nearest first, ``storage`` the storage nodes. */
static int
ShareTaker_init(ShareTaker *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"group", "orders", "storage", NULL};
    PyObject *group, *orders;
    Py_ssize_t storage;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOn", kwlist, &group, &orders, &storage))
        return -1;
    if (storage < 0 || storage > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "storage: a count of storage nodes");
        return -1;
    }
    PyObject *gs = PySequence_Fast(group, "group: a sequence of order groups");
    if (!gs)
        return -1;
    PyObject *os = PySequence_Fast(orders, "orders: a sequence of storage orders");
    if (!os) {
        Py_DECREF(gs);
        return -1;
    }
    taker_free_arrays(self);
    Py_ssize_t nodes = PySequence_Fast_GET_SIZE(gs), groups = PySequence_Fast_GET_SIZE(os);
    self->nodes = nodes;
    self->groups = groups;
    self->storage = storage;
    self->group = PyMem_Malloc(sizeof(int32_t) * (nodes ? nodes : 1));
    self->order = PyMem_Malloc(sizeof(int32_t) * (groups > 0 && storage > 0 ? groups * storage : 1));
    self->length = PyMem_Malloc(sizeof(int32_t) * (groups ? groups : 1));
    int ok = self->group && self->order && self->length;
    if (!ok)
        PyErr_NoMemory();
    for (Py_ssize_t k = 0; ok && k < nodes; k++)
        ok = index_in(PySequence_Fast_GET_ITEM(gs, k), groups, "order group", &self->group[k]) == 0;
    for (Py_ssize_t g = 0; ok && g < groups; g++) {
        PyObject *o = PySequence_Fast(PySequence_Fast_GET_ITEM(os, g), "an order: a sequence of storage indices");
        if (!o) {
            ok = 0;
            break;
        }
        Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
        if (len > storage) {
            PyErr_Format(PyExc_ValueError, "order %zd lists %zd storage nodes, the machine has %zd",
                         g, len, storage);
            ok = 0;
        }
        for (Py_ssize_t i = 0; ok && i < len; i++)
            ok = index_in(PySequence_Fast_GET_ITEM(o, i), storage, "storage index",
                          &self->order[g * storage + i]) == 0;
        self->length[g] = (int32_t)len;
        Py_DECREF(o);
    }
    Py_DECREF(gs);
    Py_DECREF(os);
    if (!ok) {
        taker_free_arrays(self);
        self->nodes = self->groups = self->storage = 0;
        return -1;
    }
    return 0;
}

static int
int64_of(PyObject *o, const char *what, int64_t *out)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v >= INT64_MAX) {
        PyErr_Format(PyExc_OverflowError, "%s %R is beyond 2**63 - 2", what, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* take(bits, base, extra, free): the bytes each storage node gives (a tuple) when the nodes
   whose bits are set in ``bits`` (little-endian bytes of a node mask) get ``base + 1`` bytes
   each for the first ``extra`` of them and ``base`` for the rest, from the free bytes
   ``free``; None when some share finds no room. As ``placement._take``: a node takes the
   first storage node of its order with room; a storage node passed over stays too full for
   that share, so each order resumes where it stopped, and starts over when the share drops. */
static PyObject *
ShareTaker_take(ShareTaker *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "take(bits, base, extra, free): four arguments");
        return NULL;
    }
    Py_buffer bits;
    if (PyObject_GetBuffer(args[0], &bits, PyBUF_SIMPLE) < 0)
        return NULL;
    int64_t base, extra;
    PyObject *result = NULL, *fs = NULL;
    int64_t *free_b = NULL, *left = NULL;
    int32_t *at = NULL;
    if (int64_of(args[1], "share", &base) < 0 || int64_of(args[2], "extra", &extra) < 0)
        goto done;
    if (base < 0 || extra < 0) {
        PyErr_SetString(PyExc_ValueError, "take: base and extra are not negative");
        goto done;
    }
    fs = PySequence_Fast(args[3], "free: a sequence of free bytes");
    if (!fs)
        goto done;
    Py_ssize_t storage = self->storage;
    if (PySequence_Fast_GET_SIZE(fs) != storage) {
        PyErr_Format(PyExc_ValueError, "free has %zd storage nodes, the machine %zd",
                     PySequence_Fast_GET_SIZE(fs), storage);
        goto done;
    }
    free_b = PyMem_Malloc(sizeof(int64_t) * (storage ? storage : 1));
    left = PyMem_Malloc(sizeof(int64_t) * (storage ? storage : 1));
    at = PyMem_Calloc(self->groups ? self->groups : 1, sizeof(int32_t));
    if (!free_b || !left || !at) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < storage; s++) {
        if (int64_of(PySequence_Fast_GET_ITEM(fs, s), "free bytes", &free_b[s]) < 0)
            goto done;
        left[s] = free_b[s];
    }
    const unsigned char *b = bits.buf;
    Py_ssize_t nb = bits.len;
    if (nb * 8 > self->nodes) {     /* a bit beyond the last compute node? */
        for (Py_ssize_t k = self->nodes; k < nb * 8; k++)
            if (b[k >> 3] >> (k & 7) & 1) {
                PyErr_Format(PyExc_ValueError, "node %zd is beyond the machine's %zd compute nodes",
                             k, self->nodes);
                goto done;
            }
    }
    int64_t share = base + (extra > 0 ? 1 : 0);   /* base + 1 <= INT64_MAX: base < INT64_MAX */
    int64_t pos = 0;
    int fits = 1;
    for (Py_ssize_t byte = 0; byte < nb && fits; byte++) {
        unsigned int v = b[byte];
        while (v) {
            int j = __builtin_ctz(v);
            v &= v - 1;
            if (pos == extra && extra > 0) {        /* the share drops by one byte: start over */
                share = base;
                memset(at, 0, sizeof(int32_t) * self->groups);
            }
            pos++;
            if (share <= 0)
                continue;
            Py_ssize_t k = byte * 8 + j;
            int32_t g = self->group[k];
            const int32_t *o = self->order + (Py_ssize_t)g * storage;
            int32_t i = at[g], len = self->length[g];
            while (i < len && left[o[i]] < share)
                i++;
            if (i == len) {
                fits = 0;
                break;
            }
            left[o[i]] -= share;
            at[g] = i;
        }
    }
    if (!fits) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyTuple_New(storage);
    if (!result)
        goto done;
    for (Py_ssize_t s = 0; s < storage; s++) {
        PyObject *given = PyLong_FromLongLong(free_b[s] - left[s]);
        if (!given) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, s, given);
    }
done:
    PyBuffer_Release(&bits);
    Py_XDECREF(fs);
    PyMem_Free(free_b);
    PyMem_Free(left);
    PyMem_Free(at);
    return result;
}

static PyMethodDef ShareTaker_methods[] = {
    {"take", (PyCFunction)(void (*)(void))ShareTaker_take, METH_FASTCALL,
     "take(bits, base, extra, free): bytes given by each storage node, or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ShareTakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mrsched.schedulers.profile._shares.ShareTaker",
    .tp_basicsize = sizeof(ShareTaker),
    .tp_dealloc = (destructor)ShareTaker_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ShareTaker(group, orders, storage): seed 001's greedy count of burst-buffer bytes per storage node",
    .tp_methods = ShareTaker_methods,
    .tp_init = (initproc)ShareTaker_init,
    .tp_new = PyType_GenericNew,
};

/* holds(share, nodes, free): whether ``sum(f // share for f in free) >= nodes`` (``share`` > 0):
   whether the free bytes of the storage nodes hold ``nodes`` shares at all. OverflowError
   beyond 2**63 - 2 (the caller counts in Python). */
static PyObject *
holds(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "holds(share, nodes, free) takes 3 arguments");
        return NULL;
    }
    /* int64_of, not PyLong_AsLongLong: 3.11 reads an int of two digits or more (free bytes)
       through a byte array there, ~10x the digit loop of PyLong_AsLongLongAndOverflow */
    int64_t share, nodes;
    if (int64_of(args[0], "share", &share) < 0 || int64_of(args[1], "nodes", &nodes) < 0)
        return NULL;
    if (share <= 0) {
        PyErr_SetString(PyExc_ValueError, "share must be positive");
        return NULL;
    }
    PyObject *fs = PySequence_Fast(args[2], "free: a sequence of free bytes");
    if (fs == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fs);
    PyObject **items = PySequence_Fast_ITEMS(fs);
    long long count = 0;
    int ok = nodes <= 0;
    for (Py_ssize_t s = 0; s < n && !ok; s++) {
        int64_t f;
        if (int64_of(items[s], "free bytes", &f) < 0) {
            Py_DECREF(fs);
            return NULL;
        }
        if (f >= share) {
            long long q = f / share;
            if (q >= nodes - count)     /* count < nodes: no overflow */
                ok = 1;
            else
                count += q;
        }
    }
    Py_DECREF(fs);
    return PyBool_FromLong(ok);
}

static PyMethodDef module_methods[] = {
    {"holds", (PyCFunction)(void (*)(void))holds, METH_FASTCALL,
     "holds(share, nodes, free): whether sum(f // share for f in free) >= nodes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef shares_module = {
    PyModuleDef_HEAD_INIT, "mrsched.schedulers.profile._shares",
    "Burst-buffer shares taken from storage nodes by seed 001's greedy, compiled.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__shares(void)
{
    if (PyType_Ready(&ShareTakerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&shares_module);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "ShareTaker", (PyObject *)&ShareTakerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
