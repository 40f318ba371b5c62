/*
 * nqprof._cpu's functions for the D4 search (d4.c); registered by nqueens_cpu.c
 * (its NQ_D4_METHODS).
 *
 *   serial_d4(n) -> int
 *       Number of solutions (1 <= n <= 27) through the D4 search on one thread.
 *   d4_tasks(n, depth) -> bytes
 *       The host expansion to row `depth` (2..min(n-2, 16), n >= 4): 32 bytes per task,
 *       the layout of d4.h (8 little-endian uint32 words) that the GPU kernel reads.
 *   d4_count(n, tasks) -> (count, nodes)
 *       The weighted count of the tasks (a bytes-like object from d4_tasks) and the queens
 *       the search placed, on one thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "d4.h"
#include "py_tasks.h"

static int nq_d4_valid(int n, const void *task)
{
    return nq_d4_task_valid(n, (const nq_d4_task *)task);
}

static int
nq_d4_n_ok(int n, int min_n)
{
    if (n < min_n || n > NQ_D4_MAX_N) {
        PyErr_Format(PyExc_ValueError, "n must be in %d..%d, got %d", min_n, NQ_D4_MAX_N, n);
        return 0;
    }
    return 1;
}

PyObject *
nq_py_serial_d4(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", NULL};
    uint64_t total;
    int n;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i:serial_d4", kwlist, &n) || !nq_d4_n_ok(n, 1))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    total = nq_d4_serial(n, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong((unsigned long long)total);
}

/* nq_d4_expand with the untyped buffer of nq_py_tasks_bytes. */
static size_t nq_py_d4_expand(int n, int depth, void *out, size_t cap)
{
    return nq_d4_expand(n, depth, (nq_d4_task *)out, cap);
}

PyObject *
nq_py_d4_tasks(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", "depth", NULL};
    int n, depth;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ii:d4_tasks", kwlist, &n, &depth) ||
        !nq_d4_n_ok(n, NQ_D4_MIN_N))
        return NULL;
    if (depth < NQ_D4_MIN_DEPTH || depth > nq_d4_max_depth(n)) {
        PyErr_Format(PyExc_ValueError, "depth must be in %d..%d for n=%d, got %d", NQ_D4_MIN_DEPTH,
                     nq_d4_max_depth(n), n, depth);
        return NULL;
    }
    return nq_py_tasks_bytes(n, depth, sizeof(nq_d4_task), nq_py_d4_expand);
}

PyObject *
nq_py_d4_count(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", "tasks", NULL};
    Py_buffer view;
    nq_d4_task *tasks;
    uint64_t total = 0, nodes = 0;
    size_t count, i;
    int n;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iy*:d4_count", kwlist, &n, &view))
        return NULL;
    if (!nq_d4_n_ok(n, NQ_D4_MIN_N)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    tasks = (nq_d4_task *)nq_py_tasks_copy(&view, sizeof(nq_d4_task), n, nq_d4_valid, "D4", &count);
    if (tasks == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < count; i++)
        total += nq_d4_solve(n, &tasks[i], &nodes);
    Py_END_ALLOW_THREADS
    free(tasks);
    return Py_BuildValue("(KK)", (unsigned long long)total, (unsigned long long)nodes);
}
