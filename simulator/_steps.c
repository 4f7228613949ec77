/* The engine's kernel, compiled: ``kernel.Kernel`` (its step loop ``run`` and the primitives it
   drives: sleep actions, the server's mailbox, the message in flight) with the actors left in
   Python; ``kernel.CompiledKernel`` is this type with the kernel's Python-side calls mixed in.

   Why: a run takes ~7 SimGrid steps a job, each deciding the next delta, decrementing the
   sleeps and the transfer, and ordering the woken actors, a large share of the engine's time
   in Python (bench/bench_simulator.py runs both loops). Here it runs on C arrays of doubles.

   Same answers by construction: the same IEEE double operations in the same order as the
   Python twin (the clock is the running sum of the deltas, a sleep's max duration loses each
   delta in turn, a transfer pays its latency then its remaining bytes), the same ties (the
   first sleep of least time left, wakes sorted stably by creation rank), the same simcall
   order. ``kernel.py`` uses this module when it was built (an optional extension) and
   ``MRSCHED_PURE_PYTHON`` is not set; the tests run both on every reference. The module also
   holds ``ld_stamp`` and ``ld_totals`` (``_idle.c``, twins of ``machines._ld_stamp`` and
   ``_ld_totals``). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <string.h>

#include "_timer.h"   /* Timer: one sleep action (kernel.Timer) */

/* ---------------------------------------------------------------------------------------- */
/* Kernel: the clock, the sleeps, the mailbox and the message in flight of one run. */

typedef struct {
    PyObject_HEAD
    PyObject *master;       /* net.master: its puts cost net.loopback */
    PyObject *loopback;
    PyObject *comm_spec;    /* net.comm_spec, the others' cost */
    PyObject *receive;      /* the server, receive(type, payload): run's argument */
    PyObject *spawned;      /* list of (start, args): actors created, not started yet */
    PyObject *now_obj;      /* ``now`` as Python reads it (a float, renewed each step) */
    double now;
    long long seq;
    /* sleeps: max durations (minus the pending deltas) and their timers, in creation order */
    Py_ssize_t n, cap;
    double *md;
    TimerObject **timers;
    double *pend;           /* deltas not yet subtracted from md */
    Py_ssize_t npend, pcap;
    double least;           /* the least time left (exact: pending deltas included) */
    TimerObject *first;     /* its sleep */
    /* the message in flight: (spec, handler, payload, on_sent) and its comm action */
    PyObject *transfer;
    double tr_lat, tr_rate, tr_rem;
    long long tr_seq;
    char tr_checked;        /* _contend has seen it since its latency was paid */
    double tr_enabled;      /* when it joined SimGrid's solve: its latency paid in a step, */
    char tr_created;        /* or (1) created without latency by the actors */
    int server_waiting;     /* the server is blocked in its mailbox get() */
    PyObject **q;           /* mailbox: a ring of posted messages */
    Py_ssize_t qhead, qlen, qcap;
    PyObject *simcalls;     /* list during a step's actors (owned), else NULL */
    double p_surf, p_work;
    char stopped;           /* stop() was called: run returns after this step */
} KernelObject;

static PyObject *s_ptasks, *s_ending, *s_ptask_model, *s_time_left, *s_ptask_ends, *s_fold,
    *s_batch, *s_master, *s_loopback, *s_comm_spec, *s_contend;

static int
grow_sleeps(KernelObject *k)
{
    if (k->n < k->cap)
        return 0;
    Py_ssize_t cap = k->cap ? 2 * k->cap : 64;
    double *md = PyMem_Realloc(k->md, cap * sizeof(double));
    if (md == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    k->md = md;
    TimerObject **t = PyMem_Realloc(k->timers, cap * sizeof(TimerObject *));
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    k->timers = t;
    k->cap = cap;
    return 0;
}

static int
push_pend(KernelObject *k, double d)
{
    if (k->npend == k->pcap) {
        Py_ssize_t cap = k->pcap ? 2 * k->pcap : 16;
        double *p = PyMem_Realloc(k->pend, cap * sizeof(double));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        k->pend = p;
        k->pcap = cap;
    }
    k->pend[k->npend++] = d;
    return 0;
}

/* Every sleep's max duration now: the pending deltas subtracted one after the other. */
static void
flush(KernelObject *k)
{
    Py_ssize_t np = k->npend;
    if (!np)
        return;
    double *md = k->md, *pend = k->pend;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        double m = md[i];
        for (Py_ssize_t j = 0; j < np; j++)
            m = m - pend[j];
        md[i] = m;
    }
    k->npend = 0;
}

/* The first index of the least max duration (n > 0). */
static Py_ssize_t
least_index(KernelObject *k)
{
    Py_ssize_t best = 0;
    double *md = k->md;
    for (Py_ssize_t i = 1; i < k->n; i++)
        if (md[i] < md[best])
            best = i;
    return best;
}

static void
set_first(KernelObject *k, TimerObject *t)
{
    Py_XINCREF(t);
    Py_XSETREF(k->first, t);
}

/* The least time left and its sleep, after the ended or cancelled ones were dropped. */
static void
refresh_least(KernelObject *k)
{
    if (k->n) {
        Py_ssize_t i = least_index(k);
        k->least = k->md[i];
        set_first(k, k->timers[i]);
    } else {
        k->least = Py_HUGE_VAL;
    }
}

/* The sleep with the least time left was cancelled: drop the cancelled ones. */
static void
forget_cancelled(KernelObject *k)
{
    flush(k);
    Py_ssize_t w = 0;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        TimerObject *t = k->timers[i];
        if (t->alive) {
            k->timers[w] = t;
            k->md[w] = k->md[i];
            w++;
        } else {
            Py_DECREF(t);
        }
    }
    k->n = w;
    refresh_least(k);
}

static int
start_transfer(KernelObject *k, PyObject *msg)
{
    if (!PyTuple_CheckExact(msg) || PyTuple_GET_SIZE(msg) != 4
            || !PyTuple_CheckExact(PyTuple_GET_ITEM(msg, 0))
            || PyTuple_GET_SIZE(PyTuple_GET_ITEM(msg, 0)) < 3) {
        PyErr_SetString(PyExc_TypeError, "a message is (spec, handler, payload, on_sent), its "
                        "spec (latency, rate, bytes[, source host])");
        return -1;
    }
    PyObject *spec = PyTuple_GET_ITEM(msg, 0);
    double lat = PyFloat_AsDouble(PyTuple_GET_ITEM(spec, 0));
    double rate = PyFloat_AsDouble(PyTuple_GET_ITEM(spec, 1));
    double rem = PyFloat_AsDouble(PyTuple_GET_ITEM(spec, 2));
    if (PyErr_Occurred())
        return -1;
    k->server_waiting = 0;
    Py_INCREF(msg);
    Py_XSETREF(k->transfer, msg);
    k->tr_lat = lat;
    k->tr_rate = rate;
    k->tr_rem = rem;
    k->tr_checked = 0;
    k->tr_enabled = k->now;
    k->tr_created = 1;
    k->tr_seq = ++k->seq;
    return 0;
}

static int
queue_push(KernelObject *k, PyObject *msg)
{
    if (k->qlen == k->qcap) {
        Py_ssize_t cap = k->qcap ? 2 * k->qcap : 64;
        PyObject **q = PyMem_Malloc(cap * sizeof(PyObject *));
        if (q == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < k->qlen; i++)
            q[i] = k->q[(k->qhead + i) % k->qcap];
        PyMem_Free(k->q);
        k->q = q;
        k->qhead = 0;
        k->qcap = cap;
    }
    Py_INCREF(msg);
    k->q[(k->qhead + k->qlen) % k->qcap] = msg;
    k->qlen++;
    return 0;
}

/* An actor's put: into this step's simcalls, or straight to the server (Kernel.put). */
static int
post(KernelObject *k, PyObject *msg)
{
    if (k->simcalls != NULL)
        return PyList_Append(k->simcalls, msg);
    if (k->server_waiting)
        return start_transfer(k, msg);
    return queue_push(k, msg);
}

/* The server's next get(): the oldest queued message, or wait for the next put. */
static int
server_get(KernelObject *k)
{
    if (k->qlen) {
        PyObject *msg = k->q[k->qhead];
        k->q[k->qhead] = NULL;
        k->qhead = (k->qhead + 1) % k->qcap;
        k->qlen--;
        int r = start_transfer(k, msg);
        Py_DECREF(msg);
        return r;
    }
    k->server_waiting = 1;
    return 0;
}

static int
apply_simcalls(KernelObject *k, PyObject *calls)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(calls); i++) {
        PyObject *call = PyList_GET_ITEM(calls, i);
        int r;
        if (call == Py_None)
            r = server_get(k);
        else if (k->server_waiting)
            r = start_transfer(k, call);
        else
            r = queue_push(k, call);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* An attribute of the kernel (the step shortcuts' switches), as a truth value (-1 on error). */
static int
kernel_flag(KernelObject *k, PyObject *name)
{
    PyObject *v = PyObject_GetAttr((PyObject *)k, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* The server got a message (Kernel._deliver): it handles it (and may call the scheduler), then
   asks for the next message (a simcall). */
static int
receive(KernelObject *k, PyObject *msg)
{
    PyObject *args[2] = {PyTuple_GET_ITEM(msg, 1), PyTuple_GET_ITEM(msg, 2)};
    PyObject *r = PyObject_Vectorcall(k->receive, args, 2, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return PyList_Append(k->simcalls, Py_None);
}

/* ---------------------------------------------------------------------------------------- */
/* Woken actors of one step. */

enum { W_TIMER, W_CALL, W_RECEIVE };

typedef struct {
    long long seq;
    PyObject *obj;      /* strong: a Timer, a callable, or (W_RECEIVE) the message */
    int kind;
} Wake;

typedef struct {
    Wake *w;
    Py_ssize_t n, cap;
    Wake small[8];
} Wakes;

static int
wakes_add(Wakes *ws, long long seq, PyObject *obj, int kind)
{
    if (ws->n == ws->cap) {
        Py_ssize_t cap = 2 * ws->cap;
        Wake *w = PyMem_Malloc(cap * sizeof(Wake));
        if (w == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(w, ws->w, ws->n * sizeof(Wake));
        if (ws->w != ws->small)
            PyMem_Free(ws->w);
        ws->w = w;
        ws->cap = cap;
    }
    Py_INCREF(obj);
    ws->w[ws->n].seq = seq;
    ws->w[ws->n].obj = obj;
    ws->w[ws->n].kind = kind;
    ws->n++;
    return 0;
}

static void
wakes_release(Wakes *ws)
{
    for (Py_ssize_t i = 0; i < ws->n; i++)
        Py_DECREF(ws->w[i].obj);
    ws->n = 0;
}

static int
call0(PyObject *fn)
{
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Several actors woken in one step run in the order their actions were created (a stable
   sort: the server of a received message, added first, before its sender). */
static int
wake_all(KernelObject *k, Wakes *ws)
{
    Wake *w = ws->w;
    for (Py_ssize_t i = 1; i < ws->n; i++) {
        Wake x = w[i];
        Py_ssize_t j = i;
        while (j > 0 && w[j - 1].seq > x.seq) {
            w[j] = w[j - 1];
            j--;
        }
        w[j] = x;
    }
    for (Py_ssize_t i = 0; i < ws->n; i++) {
        int r = 0;
        if (w[i].kind == W_RECEIVE)
            r = receive(k, w[i].obj);
        else if (w[i].kind == W_TIMER) {
            TimerObject *t = (TimerObject *)w[i].obj;
            if (t->alive)     /* not cancelled by an actor woken before it */
                r = call0(t->cb);
        } else
            r = call0(w[i].obj);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Python methods */

static PyObject *
Kernel_sleep(KernelObject *k, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "sleep(duration, cb)");
        return NULL;
    }
    double d = PyFloat_AsDouble(args[0]);
    if (d == -1.0 && PyErr_Occurred())
        return NULL;
    if (grow_sleeps(k) < 0)
        return NULL;
    TimerObject *t = PyObject_GC_New(TimerObject, &TimerType);
    if (t == NULL)
        return NULL;
    t->md = d;
    Py_INCREF(args[1]);
    t->cb = args[1];
    t->alive = 1;
    t->seq = ++k->seq;
    PyObject_GC_Track((PyObject *)t);
    flush(k);
    Py_INCREF(t);
    k->md[k->n] = d;
    k->timers[k->n] = t;
    k->n++;
    if (d < k->least) {
        k->least = d;
        set_first(k, t);
    }
    return (PyObject *)t;
}

static PyObject *
Kernel_put(KernelObject *k, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "put(src, handler, payload, on_sent=None)");
        return NULL;
    }
    PyObject *spec;
    int local = args[0] == k->master ? 1 : PyObject_RichCompareBool(args[0], k->master, Py_EQ);
    if (local < 0)
        return NULL;
    if (local) {
        spec = k->loopback;
        Py_INCREF(spec);
    } else {
        spec = PyObject_CallOneArg(k->comm_spec, args[0]);
        if (spec == NULL)
            return NULL;
    }
    PyObject *msg = PyTuple_Pack(4, spec, args[1], args[2], nargs == 4 ? args[3] : Py_None);
    Py_DECREF(spec);
    if (msg == NULL)
        return NULL;
    int r = post(k, msg);
    Py_DECREF(msg);
    if (r < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Kernel_next_seq(KernelObject *k, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLongLong(++k->seq);
}

static PyObject *
Kernel_mailbox_empty(KernelObject *k, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(k->qlen == 0);
}

static PyObject *
Kernel_stop(KernelObject *k, PyObject *Py_UNUSED(ignored))
{
    k->stopped = 1;
    Py_RETURN_NONE;
}

static int
set_now(KernelObject *k)
{
    PyObject *v = PyFloat_FromDouble(k->now);
    if (v == NULL)
        return -1;
    Py_XSETREF(k->now_obj, v);
    return 0;
}

/* Starts the actors spawned so far (KernelBase.spawn), in order: their puts are simcalls,
   applied once all of them started, and again while they spawn others; ``direct`` (before the
   first step): one pass, their puts at once. */
static int
start_spawned(KernelObject *k, int direct)
{
    while (PyList_GET_SIZE(k->spawned)) {
        PyObject *spawned = k->spawned, *calls = direct ? NULL : PyList_New(0);
        k->spawned = PyList_New(0);
        int r = k->spawned == NULL || (!direct && calls == NULL) ? -1 : 0;
        if (k->spawned == NULL)
            k->spawned = Py_NewRef(spawned);
        if (calls != NULL)
            k->simcalls = Py_NewRef(calls);
        for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(spawned); i++) {
            PyObject *entry = PyList_GET_ITEM(spawned, i), *res = NULL;
            if (PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2
                    && PyTuple_CheckExact(PyTuple_GET_ITEM(entry, 1)))
                res = PyObject_Call(PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(entry, 1), NULL);
            else
                PyErr_SetString(PyExc_TypeError, "Kernel._spawned holds (start, args) pairs");
            r = res == NULL ? -1 : 0;
            Py_XDECREF(res);
        }
        Py_DECREF(spawned);
        if (calls != NULL) {
            Py_CLEAR(k->simcalls);
            if (r == 0)
                r = apply_simcalls(k, calls);
            Py_DECREF(calls);
        }
        if (r < 0 || direct)
            return r;
    }
    return 0;
}

/* The loop of Kernel.run, step for step (see it for SimGrid's references). */
static PyObject *
Kernel_run(KernelObject *k, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "run(receive, stalled)");
        return NULL;
    }
    PyObject *stalled = args[1];
    const double inf = Py_HUGE_VAL, P_SURF = k->p_surf, P_WORK = k->p_work;
    int fold = kernel_flag(k, s_fold), batch = kernel_flag(k, s_batch);
    if (fold < 0 || batch < 0)
        return NULL;
    PyObject *ptasks = PyObject_GetAttr((PyObject *)k, s_ptasks);
    PyObject *ending = PyObject_GetAttr((PyObject *)k, s_ending);
    if (ptasks == NULL || ending == NULL || !PyDict_CheckExact(ptasks)
            || !PyDict_CheckExact(ending)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Kernel._ptasks and _ending must be dicts");
        Py_XDECREF(ptasks);
        Py_XDECREF(ending);
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_XSETREF(k->receive, args[0]);
    Wakes ws;
    ws.w = ws.small;
    ws.n = 0;
    ws.cap = 8;
    PyObject *calls = NULL, *received = NULL;
    if (start_spawned(k, 1) < 0)   /* actors created before the run: their puts at once */
        goto error;
    while (!k->stopped) {
        double delta = k->least;
        if (delta < inf && !k->first->alive) {   /* cancelled since: look again */
            forget_cancelled(k);
            delta = k->least;
        }
        int have_sleeps = k->n > 0;
        int transfer = k->transfer != NULL;
        int has_ptasks = PyDict_GET_SIZE(ptasks) > 0;
        if (transfer) {
            double left = k->tr_lat;
            if (left <= 0) {
                if (has_ptasks && !k->tr_checked) {   /* it may share a link: Kernel._contend */
                    PyObject *r = PyObject_CallMethodNoArgs((PyObject *)k, s_contend);
                    if (r == NULL)
                        goto error;
                    Py_DECREF(r);
                }
                left = k->tr_rem > 0 ? k->tr_rem / k->tr_rate : 0.0;
            }
            if (left < delta)
                delta = left;
        }
        if (has_ptasks) {
            PyObject *model = PyObject_GetAttr((PyObject *)k, s_ptask_model);
            if (model == NULL)
                goto error;
            PyObject *v = PyObject_CallMethodNoArgs(model, s_time_left);
            Py_DECREF(model);
            if (v == NULL)
                goto error;
            double left = PyFloat_AsDouble(v);
            Py_DECREF(v);
            if (left == -1.0 && PyErr_Occurred())
                goto error;
            if (left < delta)
                delta = left;
        }
        if (delta == inf) {
            PyObject *r = PyObject_CallNoArgs(stalled);
            if (r == NULL)
                goto error;
            Py_DECREF(r);
        }
        double pre = 0.0;
        if (transfer && delta == k->tr_lat && k->tr_lat > 0 && !has_ptasks && fold
                && k->least - delta >= P_SURF) {
            /* a step where only a message's latency ends, done with the next one */
            pre = delta;
            k->now = k->now + delta;
            k->tr_lat = 0.0;
            k->tr_enabled = k->now;
            k->tr_created = 0;
            delta = k->tr_rem > 0 ? k->tr_rem / k->tr_rate : 0.0;
            double least = k->least - pre;
            if (least < delta)
                delta = least;
        }
        double now = k->now = k->now + delta;
        if (set_now(k) < 0)
            goto error;
        if (have_sleeps) {
            double least;
            if (pre) {
                if (push_pend(k, pre) < 0)
                    goto error;
                least = k->least - pre - delta;
            } else {
                least = k->least - delta;
            }
            if (push_pend(k, delta) < 0)
                goto error;
            if (!batch)
                flush(k);
            if (least < P_SURF) {
                flush(k);
                int all_alive = 1;
                for (Py_ssize_t i = 0; i < k->n; i++)
                    if (!k->timers[i]->alive) {
                        all_alive = 0;
                        break;
                    }
                if (all_alive) {
                    /* the ended sleeps, the least ones, taken out in place */
                    least = k->md[least_index(k)];
                    while (least < P_SURF) {
                        Py_ssize_t i = least_index(k);
                        TimerObject *t = k->timers[i];
                        memmove(k->md + i, k->md + i + 1, (k->n - i - 1) * sizeof(double));
                        memmove(k->timers + i, k->timers + i + 1,
                                (k->n - i - 1) * sizeof(TimerObject *));
                        k->n--;
                        t->md = 0.0;
                        int r = wakes_add(&ws, t->seq, (PyObject *)t, W_TIMER);
                        Py_DECREF(t);
                        if (r < 0)
                            goto error;
                        least = k->n ? k->md[least_index(k)] : inf;
                    }
                } else {
                    /* the ended ones woken (if alive), then the ended and the cancelled ones
                       dropped (two passes: a failed wake leaves the arrays whole) */
                    for (Py_ssize_t i = 0; i < k->n; i++) {
                        TimerObject *t = k->timers[i];
                        if (k->md[i] < P_SURF && t->alive
                                && wakes_add(&ws, t->seq, (PyObject *)t, W_TIMER) < 0)
                            goto error;
                    }
                    Py_ssize_t w = 0;
                    for (Py_ssize_t i = 0; i < k->n; i++) {
                        TimerObject *t = k->timers[i];
                        double m = k->md[i];
                        if (m < P_SURF)
                            t->md = 0.0;
                        if (m >= P_SURF && t->alive) {
                            k->timers[w] = t;
                            k->md[w] = m;
                            w++;
                        } else {
                            Py_DECREF(t);
                        }
                    }
                    k->n = w;
                    least = w ? k->md[least_index(k)] : inf;
                }
                if (least < inf)
                    set_first(k, k->timers[least_index(k)]);
            }
            k->least = least;
        }
        if (has_ptasks) {
            PyObject *now_v = PyFloat_FromDouble(now), *delta_v = PyFloat_FromDouble(delta);
            PyObject *ends = NULL;
            if (now_v != NULL && delta_v != NULL)
                ends = PyObject_CallMethodObjArgs((PyObject *)k, s_ptask_ends, now_v, delta_v,
                                                  NULL);
            Py_XDECREF(now_v);
            Py_XDECREF(delta_v);
            if (ends == NULL)
                goto error;
            if (!PyList_CheckExact(ends)) {
                Py_DECREF(ends);
                PyErr_SetString(PyExc_TypeError, "Kernel._ptask_ends returns a list");
                goto error;
            }
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ends); i++) {
                PyObject *e = PyList_GET_ITEM(ends, i);
                if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 2) {
                    Py_DECREF(ends);
                    PyErr_SetString(PyExc_TypeError, "a ptask end is (rank, actor)");
                    goto error;
                }
                long long seq = PyLong_AsLongLong(PyTuple_GET_ITEM(e, 0));
                if ((seq == -1 && PyErr_Occurred())
                        || wakes_add(&ws, seq, PyTuple_GET_ITEM(e, 1), W_CALL) < 0) {
                    Py_DECREF(ends);
                    goto error;
                }
            }
            Py_DECREF(ends);
        }
        int arrived = 0;
        if (transfer) {
            double lat = k->tr_lat;
            if (lat > 0) {   /* paying its latency: no progress in this step */
                if (lat > delta) {
                    lat -= delta;
                    if (lat < P_SURF)
                        lat = 0.0;
                } else {
                    lat = 0.0;
                }
                k->tr_lat = lat;
                if (lat == 0.0) {
                    k->tr_enabled = now;
                    k->tr_created = 0;
                }
            } else {
                double rem = k->tr_rem;
                if (rem > 0) {
                    rem -= k->tr_rate * delta;
                    if (rem < P_WORK)
                        rem = k->tr_rem = 0.0;
                    else
                        k->tr_rem = rem;
                }
                arrived = rem <= 0;
            }
        }
        if (!arrived && ws.n == 0)   /* e.g. a message's latency paid: no actor runs */
            continue;
        calls = PyList_New(0);
        if (calls == NULL)
            goto error;
        Py_INCREF(calls);
        k->simcalls = calls;
        if (arrived) {
            received = k->transfer;   /* its reference moves here */
            k->transfer = NULL;
            PyObject *on_sent = PyTuple_GET_ITEM(received, 3);
            if (ws.n == 0) {   /* the common step: one message, nothing else ends */
                if (receive(k, received) < 0 || (on_sent != Py_None && call0(on_sent) < 0))
                    goto error;
            } else {
                if (wakes_add(&ws, k->tr_seq, received, W_RECEIVE) < 0
                        || (on_sent != Py_None && wakes_add(&ws, k->tr_seq, on_sent,
                                                            W_CALL) < 0)
                        || wake_all(k, &ws) < 0)
                    goto error;
            }
            Py_CLEAR(received);
        } else if (ws.n == 1) {   /* one sleep or execution ends */
            Wake *w = &ws.w[0];
            if (call0(w->kind == W_TIMER ? ((TimerObject *)w->obj)->cb : w->obj) < 0)
                goto error;
        } else if (wake_all(k, &ws) < 0) {
            goto error;
        }
        wakes_release(&ws);
        Py_CLEAR(k->simcalls);
        int r = apply_simcalls(k, calls);
        Py_CLEAR(calls);
        if (r < 0)
            goto error;
        if (PyDict_GET_SIZE(ending))
            PyDict_Clear(ending);
        if (start_spawned(k, 0) < 0)
            goto error;
    }
    Py_CLEAR(k->receive);
    Py_DECREF(ptasks);
    Py_DECREF(ending);
    if (ws.w != ws.small)
        PyMem_Free(ws.w);
    Py_RETURN_NONE;
error:
    Py_CLEAR(k->receive);
    Py_CLEAR(k->simcalls);
    Py_XDECREF(calls);
    Py_XDECREF(received);
    wakes_release(&ws);
    if (ws.w != ws.small)
        PyMem_Free(ws.w);
    Py_DECREF(ptasks);
    Py_DECREF(ending);
    return NULL;
}

static int
Kernel_init(KernelObject *k, PyObject *args, PyObject *kwds)
{
    PyObject *net;
    double p_surf, p_work;
    if (!PyArg_ParseTuple(args, "Odd:Kernel", &net, &p_surf, &p_work))
        return -1;
    PyObject *master = PyObject_GetAttr(net, s_master);
    PyObject *loopback = master ? PyObject_GetAttr(net, s_loopback) : NULL;
    PyObject *comm_spec = loopback ? PyObject_GetAttr(net, s_comm_spec) : NULL;
    PyObject *spawned = comm_spec ? PyList_New(0) : NULL;
    PyObject *now = spawned ? PyFloat_FromDouble(0.0) : NULL;
    if (now == NULL) {
        Py_XDECREF(master);
        Py_XDECREF(loopback);
        Py_XDECREF(comm_spec);
        Py_XDECREF(spawned);
        return -1;
    }
    Py_XSETREF(k->master, master);
    Py_XSETREF(k->loopback, loopback);
    Py_XSETREF(k->comm_spec, comm_spec);
    Py_XSETREF(k->spawned, spawned);
    Py_XSETREF(k->now_obj, now);
    k->now = 0.0;
    k->least = Py_HUGE_VAL;
    k->server_waiting = 1;
    k->stopped = 0;
    k->p_surf = p_surf;
    k->p_work = p_work;
    return 0;
}

static int
Kernel_traverse(KernelObject *k, visitproc visit, void *arg)
{
    Py_VISIT(k->master);
    Py_VISIT(k->loopback);
    Py_VISIT(k->comm_spec);
    Py_VISIT(k->receive);
    Py_VISIT(k->spawned);
    Py_VISIT(k->now_obj);
    Py_VISIT(k->first);
    Py_VISIT(k->transfer);
    Py_VISIT(k->simcalls);
    for (Py_ssize_t i = 0; i < k->n; i++)
        Py_VISIT(k->timers[i]);
    for (Py_ssize_t i = 0; i < k->qlen; i++)
        Py_VISIT(k->q[(k->qhead + i) % k->qcap]);
    return 0;
}

static int
Kernel_clear(KernelObject *k)
{
    Py_CLEAR(k->master);
    Py_CLEAR(k->loopback);
    Py_CLEAR(k->comm_spec);
    Py_CLEAR(k->receive);
    Py_CLEAR(k->spawned);
    Py_CLEAR(k->now_obj);
    Py_CLEAR(k->first);
    Py_CLEAR(k->transfer);
    Py_CLEAR(k->simcalls);
    Py_ssize_t n = k->n;
    k->n = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(k->timers[i]);
    Py_ssize_t qlen = k->qlen;
    k->qlen = 0;
    for (Py_ssize_t i = 0; i < qlen; i++)
        Py_DECREF(k->q[(k->qhead + i) % k->qcap]);
    k->qhead = 0;
    return 0;
}

static void
Kernel_dealloc(KernelObject *k)
{
    PyObject_GC_UnTrack(k);
    Kernel_clear(k);
    PyMem_Free(k->md);
    PyMem_Free(k->timers);
    PyMem_Free(k->pend);
    PyMem_Free(k->q);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyMethodDef Kernel_methods[] = {
    {"sleep", (PyCFunction)(void (*)(void))Kernel_sleep, METH_FASTCALL,
     "sleep(duration, cb) -> Timer: an actor sleeps (Kernel.sleep)."},
    {"put", (PyCFunction)(void (*)(void))Kernel_put, METH_FASTCALL,
     "put(src, type, payload, on_sent=None): an actor's message to the server (Kernel.put)."},
    {"next_seq", (PyCFunction)Kernel_next_seq, METH_NOARGS,
     "The creation rank of a new action."},
    {"mailbox_empty", (PyCFunction)Kernel_mailbox_empty, METH_NOARGS,
     "Whether the server's mailbox holds no message (Kernel.mailbox_empty)."},
    {"stop", (PyCFunction)Kernel_stop, METH_NOARGS,
     "The simulation is over: run returns after this step (Kernel.stop)."},
    {"run", (PyCFunction)(void (*)(void))Kernel_run, METH_FASTCALL,
     "run(receive, stalled): steps until stop() (Kernel.run)."},
    {NULL}
};

static PyMemberDef Kernel_members[] = {
    {"now", T_OBJECT_EX, offsetof(KernelObject, now_obj), READONLY,
     "SimGrid's clock: the running sum of the steps' deltas"},
    {"_spawned", T_OBJECT_EX, offsetof(KernelObject, spawned), READONLY,
     "actors created, not started yet: (start, args) pairs (KernelBase.spawn appends)"},
    {"_transfer", T_OBJECT, offsetof(KernelObject, transfer), READONLY, "the message in flight"},
    {"_tr_lat", T_DOUBLE, offsetof(KernelObject, tr_lat), READONLY, "its latency left"},
    {"_tr_rem", T_DOUBLE, offsetof(KernelObject, tr_rem), 0,
     "its work left (inf while the ptask model carries it, 0 when that ends it)"},
    {"_transfer_seq", T_LONGLONG, offsetof(KernelObject, tr_seq), READONLY,
     "the creation rank of its comm action"},
    {"_tr_checked", T_BOOL, offsetof(KernelObject, tr_checked), 0,
     "Kernel._contend has seen it since its latency was paid"},
    {"_tr_enabled", T_DOUBLE, offsetof(KernelObject, tr_enabled), READONLY,
     "when it joined SimGrid's solve (its latency paid, or its start)"},
    {"_tr_created", T_BOOL, offsetof(KernelObject, tr_created), READONLY,
     "it joined at its start (no latency), not in a step"},
    {NULL}
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mrsched.simulator._steps.Kernel",
    .tp_doc = "Kernel(net, surf_precision, remains_precision): the compiled kernel "
              "(kernel.CompiledKernel adds its Python-side calls).",
    .tp_basicsize = sizeof(KernelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Kernel_init,
    .tp_traverse = (traverseproc)Kernel_traverse,
    .tp_clear = (inquiry)Kernel_clear,
    .tp_dealloc = (destructor)Kernel_dealloc,
    .tp_methods = Kernel_methods,
    .tp_members = Kernel_members,
};

/* _idle.c: the machines' times in each state */
PyObject *ld_stamp(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *ld_totals(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
extern const Py_ssize_t machine_times_size;
/* _maxmin.c: the fair-bottleneck solver */
PyObject *fair_bottleneck(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

static PyMethodDef steps_functions[] = {
    {"ld_stamp", (PyCFunction)(void (*)(void))ld_stamp, METH_FASTCALL,
     "ld_stamp(times, now, lo, hi, computing): machines lo..hi-1 add their time since their "
     "last change to their idle or computing time (long double), then change now."},
    {"ld_totals", (PyCFunction)(void (*)(void))ld_totals, METH_FASTCALL,
     "ld_totals(times) -> (idle, computing): the machines' sums, in order, as doubles."},
    {"fair_bottleneck", (PyCFunction)(void (*)(void))fair_bottleneck, METH_FASTCALL,
     "fair_bottleneck(ev, ec, ew, starts, cap, fat, bound, rank, max_rounds): the rates "
     "(maxmin.fair_bottleneck_small's), or None after max_rounds rounds."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef steps_module = {
    PyModuleDef_HEAD_INIT, "_steps",
    "The engine's kernel, compiled (see kernel.Kernel, its Python twin), and the "
    "machines' times in each state (machines._ld_stamp, _ld_totals) and the fair-bottleneck "
    "solver (maxmin.fair_bottleneck_small).", -1, steps_functions,
};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC
PyInit__steps(void)
{
    INTERN(s_ptasks, "_ptasks");
    INTERN(s_ending, "_ending");
    INTERN(s_ptask_model, "_ptask_model");
    INTERN(s_time_left, "time_left");
    INTERN(s_ptask_ends, "_ptask_ends");
    INTERN(s_contend, "_contend");
    INTERN(s_fold, "_fold_latency");
    INTERN(s_batch, "_batch_sleeps");
    INTERN(s_master, "master");
    INTERN(s_loopback, "loopback");
    INTERN(s_comm_spec, "comm_spec");
    if (PyType_Ready(&TimerType) < 0 || PyType_Ready(&KernelType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&steps_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TimerType);
    Py_INCREF(&KernelType);
    if (PyModule_AddObject(m, "Timer", (PyObject *)&TimerType) < 0
            || PyModule_AddObject(m, "Kernel", (PyObject *)&KernelType) < 0
            || PyModule_AddIntConstant(m, "MACHINE_TIMES_SIZE", (long)machine_times_size) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
