/* The compiled kernel's sleep action (``_steps.c``; ``kernel.Timer`` is its Python twin), in a
   header of its own: included once, by ``_steps.c``. */

#ifndef MRSCHED_TIMER_H
#define MRSCHED_TIMER_H

#include <Python.h>
#include <structmember.h>

/* ---------------------------------------------------------------------------------------- */
/* Timer: one sleep action (Python's ``_Timer``): ``alive`` False cancels it. */

typedef struct {
    PyObject_HEAD
    double md;          /* 0 once ended (its time left lives in the kernel's array) */
    PyObject *cb;
    char alive;
    long long seq;      /* creation rank */
} TimerObject;

static int
Timer_traverse(TimerObject *t, visitproc visit, void *arg)
{
    Py_VISIT(t->cb);
    return 0;
}

static int
Timer_clear(TimerObject *t)
{
    Py_CLEAR(t->cb);
    return 0;
}

static void
Timer_dealloc(TimerObject *t)
{
    PyObject_GC_UnTrack(t);
    Timer_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMemberDef Timer_members[] = {
    {"md", T_DOUBLE, offsetof(TimerObject, md), 0, "0 once ended"},
    {"cb", T_OBJECT_EX, offsetof(TimerObject, cb), READONLY, "resumes the actor"},
    {"alive", T_BOOL, offsetof(TimerObject, alive), 0, "False: cancelled"},
    {"seq", T_LONGLONG, offsetof(TimerObject, seq), READONLY, "creation rank"},
    {NULL}
};

static PyTypeObject TimerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mrsched.simulator._steps.Timer",
    .tp_doc = "A SimGrid sleep action of the compiled step loop.",
    .tp_basicsize = sizeof(TimerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Timer_traverse,
    .tp_clear = (inquiry)Timer_clear,
    .tp_dealloc = (destructor)Timer_dealloc,
    .tp_members = Timer_members,
};

#endif
