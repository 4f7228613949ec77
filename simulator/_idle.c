/* The machines' times in each state, compiled (``machines._ld_stamp`` and ``_ld_totals`` are
   the twins). Part of the ``_steps`` extension module, whose init (``_steps.c``) lists them.

   Batsim keeps, per machine, the time spent in each state in long double: at each state change
   ``spent[state] += (long double)clock - last_change; last_change = clock``
   (``Machine::update_machine_state``, ``src/machines.cpp`` 694-705), and sums the machines in
   their order for ``_schedule.csv`` (``src/export.cpp`` 1078-1099), then casts to double.

   ``times`` is a writable buffer of ``MACHINE_TIMES_SIZE`` bytes a machine (zeros: 0 s), each a
   record (idle, computing, last change) of long doubles.

   ld_stamp(times, now, lo, hi, computing): machines lo..hi-1 add ``now - last`` to their idle
   (``computing`` False) or computing time, then their last change is ``now``.
   ld_totals(times) -> (idle, computing): the sums over the machines, in order, as doubles. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    long double idle, comp, last;
} MachineTimes;

const Py_ssize_t machine_times_size = (Py_ssize_t)sizeof(MachineTimes);

/* The records of ``obj`` (a writable buffer of whole records), or NULL with an error set. */
static MachineTimes *
records(PyObject *obj, Py_buffer *view, Py_ssize_t *n)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (view->len % machine_times_size != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "machine times: a buffer of whole records");
        return NULL;
    }
    *n = view->len / machine_times_size;
    return (MachineTimes *)view->buf;
}

PyObject *
ld_stamp(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "ld_stamp(times, now, lo, hi, computing)");
        return NULL;
    }
    double now = PyFloat_AsDouble(args[1]);
    Py_ssize_t lo = PyLong_AsSsize_t(args[2]), hi = PyLong_AsSsize_t(args[3]);
    int computing = PyObject_IsTrue(args[4]);
    if (PyErr_Occurred() || computing < 0)
        return NULL;
    Py_buffer view;
    Py_ssize_t n;
    MachineTimes *t = records(args[0], &view, &n);
    if (t == NULL)
        return NULL;
    if (lo < 0 || hi < lo || hi > n) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_IndexError, "ld_stamp: machines %zd..%zd outside 0..%zd", lo, hi, n);
        return NULL;
    }
    long double date = (long double)now;
    for (Py_ssize_t k = lo; k < hi; k++) {
        long double delta = date - t[k].last;
        if (computing)
            t[k].comp += delta;
        else
            t[k].idle += delta;
        t[k].last = date;
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

PyObject *
ld_totals(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "ld_totals(times)");
        return NULL;
    }
    Py_buffer view;
    Py_ssize_t n;
    MachineTimes *t = records(args[0], &view, &n);
    if (t == NULL)
        return NULL;
    long double idle = 0, comp = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        idle += t[k].idle;
        comp += t[k].comp;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(dd)", (double)idle, (double)comp);
}
