/* SimGrid's fair-bottleneck solver (``kernel/lmm/fair_bottleneck.cpp``, SimGrid 3.32), compiled.
   Part of the ``_steps`` extension module, whose init (``_steps.c``) lists it; its twins are
   ``maxmin.fair_bottleneck_small`` (plain floats) and ``maxmin.fair_bottleneck`` (numpy), and
   ``tests/simulator/maxmin_reference.py`` is SimGrid's loop written out. The same floats come
   from the same operations in the same order (the extension is built with -ffp-contract=off:
   no fused multiply-add).

   fair_bottleneck(ev, ec, ew, starts, cap, fat, bound, rank, max_rounds) -> list of rates, or
   None when ``max_rounds`` rounds did not end it. ``ev``/``ec``/``ew``: variable, constraint
   (an index into ``cap`` and ``fat``) and weight of each element, grouped by variable
   (``starts``: each variable's first element); ``bound``: each variable's rate bound (inf:
   none); ``rank``: larger is newer (each constraint loses its elements' consumptions newest
   variable first, SimGrid's ``double_update`` over ``enabled_element_set_``).

   Each round: every live constraint offers its remaining capacity shared equally among the
   live variables crossing it (a FATPIPE offers all of it to each); a variable grows by the
   least share / weight among its constraints, or up to its bound; a constraint loses its
   elements' consumptions (frozen variables keep their last increment: SimGrid's quirk); a
   constraint left below ``maxmin/precision`` (1e-5) freezes its variables. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>

#define MAXMIN_PRECISION 1e-5

typedef struct {
    Py_ssize_t c, r, e;     /* constraint, its variable's rank, element */
} Slot;

/* a constraint's elements together, newest variable first, then in element order (the
   Python twin's stable sort) */
static int
slot_order(const void *a, const void *b)
{
    const Slot *x = a, *y = b;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    if (x->r != y->r)
        return x->r > y->r ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* ``seq`` as C values: n items of ints (``ints``) or doubles; -1 with an error set */
static int
read_ints(PyObject *seq, Py_ssize_t n, Py_ssize_t *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_OverflowError);
        if (v == -1 && PyErr_Occurred())
            return -1;
        out[i] = v;
    }
    return 0;
}

static int
read_doubles(PyObject *seq, Py_ssize_t n, double *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred())
            return -1;
        out[i] = v;
    }
    return 0;
}

/* the solve on C arrays; 0 when it ended, 1 when max_rounds were not enough, -1 on no memory */
static int
solve(Py_ssize_t n_var, Py_ssize_t n_el, const Py_ssize_t *ev, const Py_ssize_t *ec,
      const double *ew, const Py_ssize_t *starts, PyObject *cap, PyObject *fat,
      const double *bound, const Py_ssize_t *rank, long long max_rounds, double *value)
{
    int status = -1;
    Slot *slots = PyMem_Malloc((size_t)(n_el ? n_el : 1) * sizeof(Slot));
    Py_ssize_t *loc = PyMem_Malloc((size_t)(n_el ? n_el : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *cel = PyMem_Malloc((size_t)(n_el ? n_el : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *first = PyMem_Malloc((size_t)(n_el + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *nb = PyMem_Malloc((size_t)(n_el ? n_el : 1) * sizeof(Py_ssize_t));
    double *remaining = PyMem_Malloc((size_t)(n_el ? n_el : 1) * sizeof(double));
    double *usage = PyMem_Malloc((size_t)(n_el ? n_el : 1) * sizeof(double));
    char *flags = PyMem_Malloc((size_t)(3 * n_el + n_var + 1));
    double *mu = PyMem_Malloc((size_t)(n_var ? n_var : 1) * sizeof(double));
    if (!slots || !loc || !cel || !first || !nb || !remaining || !usage || !flags || !mu) {
        PyErr_NoMemory();
        goto done;
    }
    char *is_fat = flags, *cnst_live = flags + n_el, *saturated = flags + 2 * n_el;
    char *var_live = flags + 3 * n_el;

    /* the constraints used, numbered by their order; each one's elements in SimGrid's order */
    for (Py_ssize_t e = 0; e < n_el; e++) {
        slots[e].c = ec[e];
        slots[e].r = rank[ev[e]];
        slots[e].e = e;
    }
    qsort(slots, (size_t)n_el, sizeof(Slot), slot_order);
    Py_ssize_t n_c = 0;
    for (Py_ssize_t i = 0; i < n_el; i++) {
        if (i == 0 || slots[i].c != slots[i - 1].c) {
            Py_ssize_t c = slots[i].c;
            first[n_c] = i;
            remaining[n_c] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(cap, c));
            int f = PyObject_IsTrue(PySequence_Fast_GET_ITEM(fat, c));
            if ((remaining[n_c] == -1.0 && PyErr_Occurred()) || f < 0)
                goto done;
            is_fat[n_c] = (char)f;
            cnst_live[n_c] = 1;
            saturated[n_c] = 0;
            usage[n_c] = 0.0;
            n_c++;
        }
        cel[i] = slots[i].e;
        loc[slots[i].e] = n_c - 1;
    }
    first[n_c] = n_el;

    Py_ssize_t n_live = n_var;
    for (Py_ssize_t v = 0; v < n_var; v++) {
        value[v] = 0.0;
        mu[v] = 0.0;
        var_live[v] = 1;
    }
    long long rounds = 0;
    while (n_live) {
        if (++rounds > max_rounds) {
            status = 1;
            goto done;
        }
        for (Py_ssize_t k = 0; k < n_c; k++)
            nb[k] = 0;
        for (Py_ssize_t e = 0; e < n_el; e++)
            if (var_live[ev[e]])
                nb[loc[e]]++;
        for (Py_ssize_t k = 0; k < n_c; k++) {
            if (!cnst_live[k])
                continue;
            if (nb[k] == 0) {
                remaining[k] = 0.0;
                usage[k] = 0.0;
                cnst_live[k] = 0;
            }
            else
                usage[k] = remaining[k] / (is_fat[k] ? 1.0 : (double)nb[k]);
        }
        for (Py_ssize_t v = 0; v < n_var; v++) {
            if (!var_live[v])
                continue;
            Py_ssize_t s = starts[v], t = v + 1 < n_var ? starts[v + 1] : n_el;
            double m = INFINITY;
            for (Py_ssize_t e = s; e < t; e++) {
                double x = usage[loc[e]] / ew[e];
                if (e == s || x < m)
                    m = x;
            }
            double room = bound[v] - value[v];
            double inc = m <= room ? m : room;
            mu[v] = inc;
            value[v] += inc;
            if (value[v] == bound[v]) {
                var_live[v] = 0;
                n_live--;
            }
        }
        int any = 0;
        for (Py_ssize_t k = 0; k < n_c; k++) {
            if (!cnst_live[k])
                continue;
            double r = remaining[k];
            if (is_fat[k]) {    /* one update by the least of usage and its elements' consumption */
                double u = usage[k];
                for (Py_ssize_t i = first[k]; i < first[k + 1]; i++) {
                    double x = ew[cel[i]] * mu[ev[cel[i]]];
                    if (x < u)
                        u = x;
                }
                r -= u;
            }
            else {              /* one update per element, in the constraint's order */
                for (Py_ssize_t i = first[k]; i < first[k + 1]; i++) {
                    double x = ew[cel[i]] * mu[ev[cel[i]]];
                    r -= x;
                }
            }
            if (r < MAXMIN_PRECISION)
                r = 0.0;
            remaining[k] = r;
            if (r <= 0) {
                cnst_live[k] = 0;
                saturated[k] = 1;
                any = 1;
            }
        }
        if (any) {
            for (Py_ssize_t e = 0; e < n_el; e++) {
                if (saturated[loc[e]] && var_live[ev[e]]) {
                    var_live[ev[e]] = 0;
                    n_live--;
                }
            }
            for (Py_ssize_t k = 0; k < n_c; k++)
                saturated[k] = 0;
        }
    }
    status = 0;
done:
    PyMem_Free(slots);
    PyMem_Free(loc);
    PyMem_Free(cel);
    PyMem_Free(first);
    PyMem_Free(nb);
    PyMem_Free(remaining);
    PyMem_Free(usage);
    PyMem_Free(flags);
    PyMem_Free(mu);
    return status;
}

PyObject *
fair_bottleneck(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "fair_bottleneck(ev, ec, ew, starts, cap, fat, bound, rank, max_rounds)");
        return NULL;
    }
    long long max_rounds = PyLong_AsLongLong(args[8]);
    if (max_rounds == -1 && PyErr_Occurred())
        return NULL;
    PyObject *seq[8] = {NULL};
    PyObject *result = NULL;
    Py_ssize_t *ints = NULL;
    double *reals = NULL;
    static const char *names[8] = {"ev", "ec", "ew", "starts", "cap", "fat", "bound", "rank"};
    for (int i = 0; i < 8; i++) {
        if ((seq[i] = PySequence_Fast(args[i], names[i])) == NULL)
            goto done;
    }
    Py_ssize_t n_el = PySequence_Fast_GET_SIZE(seq[0]);
    Py_ssize_t n_var = PySequence_Fast_GET_SIZE(seq[6]);
    Py_ssize_t n_cap = PySequence_Fast_GET_SIZE(seq[4]);
    if (PySequence_Fast_GET_SIZE(seq[1]) != n_el || PySequence_Fast_GET_SIZE(seq[2]) != n_el
            || PySequence_Fast_GET_SIZE(seq[3]) != n_var || PySequence_Fast_GET_SIZE(seq[7]) != n_var
            || PySequence_Fast_GET_SIZE(seq[5]) != n_cap) {
        PyErr_SetString(PyExc_ValueError, "fair_bottleneck: inconsistent lengths");
        goto done;
    }
    ints = PyMem_Malloc((size_t)(2 * n_el + 2 * n_var + 1) * sizeof(Py_ssize_t));
    reals = PyMem_Malloc((size_t)(n_el + 2 * n_var + 1) * sizeof(double));
    if (ints == NULL || reals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t *ev = ints, *ec = ints + n_el, *starts = ints + 2 * n_el, *rank = starts + n_var;
    double *ew = reals, *bound = reals + n_el, *value = bound + n_var;
    if (read_ints(seq[0], n_el, ev) < 0 || read_ints(seq[1], n_el, ec) < 0
            || read_doubles(seq[2], n_el, ew) < 0 || read_ints(seq[3], n_var, starts) < 0
            || read_doubles(seq[6], n_var, bound) < 0 || read_ints(seq[7], n_var, rank) < 0)
        goto done;
    for (Py_ssize_t e = 0; e < n_el; e++) {
        if (ev[e] < 0 || ev[e] >= n_var || ec[e] < 0 || ec[e] >= n_cap) {
            PyErr_SetString(PyExc_IndexError, "fair_bottleneck: an element's variable or constraint "
                                              "is out of range");
            goto done;
        }
    }
    for (Py_ssize_t v = 0; v < n_var; v++) {
        if (starts[v] < 0 || starts[v] > n_el || (v && starts[v] < starts[v - 1])) {
            PyErr_SetString(PyExc_ValueError, "fair_bottleneck: starts must be increasing positions");
            goto done;
        }
    }
    int status = solve(n_var, n_el, ev, ec, ew, starts, seq[4], seq[5], bound, rank, max_rounds,
                       value);
    if (status < 0)
        goto done;
    if (status > 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyList_New(n_var);
    if (result == NULL)
        goto done;
    for (Py_ssize_t v = 0; v < n_var; v++) {
        PyObject *x = PyFloat_FromDouble(value[v]);
        if (x == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, v, x);
    }
done:
    for (int i = 0; i < 8; i++)
        Py_XDECREF(seq[i]);
    PyMem_Free(ints);
    PyMem_Free(reals);
    return result;
}
