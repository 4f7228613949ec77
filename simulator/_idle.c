/* The machines' state-change times, compiled: a job's start adds each machine's idle time since
   its last change, then stamps it (``machines._idle_stamp`` is the twin). Part of the ``_steps``
   extension module, whose init (``_steps.c``) lists ``idle_stamp``.

   idle_stamp(idle, now, last, lo, hi) -> idle + (now - last[k]) for k = lo..hi-1, added one by
   one in that order (the same IEEE additions as the twin's loop and numpy's accumulate), then
   last[lo:hi] = now; ``idle`` None: the stamp only (a job's end), returns None. ``last`` is a
   writable contiguous 1-D float64 array. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

PyObject *
idle_stamp(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "idle_stamp(idle, now, last, lo, hi)");
        return NULL;
    }
    int sum = args[0] != Py_None;
    double idle = sum ? PyFloat_AsDouble(args[0]) : 0.0;
    double now = PyFloat_AsDouble(args[1]);
    Py_ssize_t lo = PyLong_AsSsize_t(args[3]), hi = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (view.ndim != 1 || view.itemsize != (Py_ssize_t)sizeof(double) || !view.format
            || strcmp(view.format, "d") != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "idle_stamp: last must be a 1-D float64 array");
        return NULL;
    }
    Py_ssize_t n = view.len / (Py_ssize_t)sizeof(double);
    if (lo < 0 || hi < lo || hi > n) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_IndexError, "idle_stamp: machines %zd..%zd outside 0..%zd", lo, hi, n);
        return NULL;
    }
    double *x = (double *)view.buf;
    if (sum)
        for (Py_ssize_t k = lo; k < hi; k++) {
            idle += now - x[k];
            x[k] = now;
        }
    else
        for (Py_ssize_t k = lo; k < hi; k++)
            x[k] = now;
    PyBuffer_Release(&view);
    if (!sum)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(idle);
}

