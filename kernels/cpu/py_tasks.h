/*
 * The task buffers the extension's *_count functions take from Python, read once: a
 * private aligned copy of a bytes-like object of whole tasks, each checked by the task
 * kind's validator; and the bytes object the *_tasks functions hand back, made once.
 * Included by d4_py.c and constellations_py.c (needs Python.h first).
 */
#ifndef NQ_PY_TASKS_H
#define NQ_PY_TASKS_H

#include <stdlib.h>
#include <string.h>

/* Copies `view` (released here, whatever happens) into a malloc'ed array of tasks of
 * `size` bytes, each accepted by valid(n, task); sets *count. Returns NULL with a Python
 * error set when the length is not whole tasks ("tasks must be a whole number of ..."),
 * a task is not valid ("task I is not a KIND task of N=n") or memory runs out. */
static void *nq_py_tasks_copy(Py_buffer *view, size_t size, int n, int (*valid)(int, const void *),
                              const char *kind, size_t *count)
{
    char *tasks;
    size_t i;

    if (view->len % (Py_ssize_t)size != 0) {
        PyErr_Format(PyExc_ValueError, "tasks must be a whole number of %zu-byte tasks, got %zd bytes", size,
                     view->len);
        PyBuffer_Release(view);
        return NULL;
    }
    *count = (size_t)view->len / size;
    /* A private aligned copy: the buffer may be any bytes-like object. */
    tasks = (char *)malloc(*count ? *count * size : 1);
    if (tasks == NULL) {
        PyBuffer_Release(view);
        return PyErr_NoMemory();
    }
    memcpy(tasks, view->buf, *count * size);
    PyBuffer_Release(view);
    for (i = 0; i < *count; i++) {
        if (!valid(n, tasks + i * size)) {
            PyErr_Format(PyExc_ValueError, "task %zu is not a %s task of N=%d", i, kind, n);
            free(tasks);
            return NULL;
        }
    }
    return tasks;
}

/* The tasks (n, depth) expands into, as a bytes object of whole tasks of `size` bytes:
 * expand(n, depth, NULL, 0) counts them and expand(n, depth, out, count) writes them, both
 * without the GIL. Returns NULL with a Python error set when memory runs out. */
static PyObject *nq_py_tasks_bytes(int n, int depth, size_t size, size_t (*expand)(int, int, void *, size_t))
{
    PyObject *result;
    size_t count;

    Py_BEGIN_ALLOW_THREADS
    count = expand(n, depth, NULL, 0);
    Py_END_ALLOW_THREADS
    if (count > (size_t)PY_SSIZE_T_MAX / size)
        return PyErr_NoMemory();
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(count * size));
    if (result == NULL)
        return NULL;
    {
        void *out = PyBytes_AS_STRING(result);
        Py_BEGIN_ALLOW_THREADS
        expand(n, depth, out, count);
        Py_END_ALLOW_THREADS
    }
    return result;
}

#endif
