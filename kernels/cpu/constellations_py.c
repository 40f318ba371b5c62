/*
 * nqprof._cpu's functions for start constellations (constellations.c); registered by
 * nqueens_cpu.c (its NQ_CST_METHODS).
 *
 *   cst_serial(n) -> int
 *       Number of solutions (1 <= n <= 27) through the constellations on one thread.
 *   cst_tasks(n, depth) -> bytes
 *       The tasks of (n, depth), depth 0..max(0, n-3): 16 bytes per task, the layout of
 *       constellations.h (4 little-endian uint32 words) that the GPU kernel reads.
 *   cst_count(n, tasks, threads=1, nodes=False) -> (count, nodes)
 *       The weighted count of the tasks (a bytes-like object from cst_tasks): by the
 *       host's breadth-first search (nq_cst_search), or with nodes=True by the step search the GPU
 *       runs (nq_cst_solve), which also counts the queens it placed (else nodes is None);
 *       `threads` > 1 (0: every online CPU) spreads the tasks over a pthread pool, one task
 *       at a time through an atomic index.
 *   cst_split(n, depth, tasks) -> bytes
 *       Each task (a bytes-like object of whole tasks) split `depth` queens deeper, in
 *       order (nq_cst_split, what the GPU's generator runs per frame): cst_split(n, d,
 *       cst_tasks(n, 0)) == cst_tasks(n, d).
 *   cst_task_count(n, depth) -> int
 *       The number of tasks of (n, depth), none made (nq_cst_tasks with no output).
 *   cst_budget_count(n, depth, budget, generations=16) -> (count, spilled, generations)
 *       The host model of cdp-cst's and graph-cst's refinement: the tasks of (n, depth)
 *       searched by the GPU's steps (nq_cst_begin, nq_cst_step), a search that has taken
 *       `budget` steps (0: no budget) handing the rest of its subtree to the next
 *       generation's tasks (nq_cst_spill), up to `generations` generations (the last one
 *       without a budget). Returns the weighted count, the tasks spilled and the
 *       generations run: the count must not depend on the budget.
 *   cst_stack_words(n, depth) -> int
 *       Words of one task's search storage at (n, depth) (nq_cst_stack_words: the GPU
 *       kernel's per-thread shared memory, at a stride of the block size).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "constellations.h"
#include "py_tasks.h"

static int nq_cst_valid(int n, const void *task)
{
    return nq_cst_task_valid(n, (const nq_cst_task *)task);
}

static int
nq_cst_n_ok(int n)
{
    if (n < NQ_CST_MIN_N || n > NQ_CST_MAX_N) {
        PyErr_Format(PyExc_ValueError, "n must be in %d..%d, got %d", NQ_CST_MIN_N, NQ_CST_MAX_N, n);
        return 0;
    }
    return 1;
}

static int
nq_cst_depth_ok(int n, int depth)
{
    if (depth < 0 || depth > nq_cst_max_depth(n)) {
        PyErr_Format(PyExc_ValueError, "depth must be in 0..%d for n=%d, got %d", nq_cst_max_depth(n), n, depth);
        return 0;
    }
    return 1;
}

/* Reads the arguments (n, depth) of the function `format` names and checks both; 0 with a
 * Python error set where either is wrong. */
static int
nq_cst_n_depth(PyObject *args, PyObject *kwargs, const char *format, int *n, int *depth)
{
    static char *kwlist[] = {"n", "depth", NULL};

    return PyArg_ParseTupleAndKeywords(args, kwargs, format, kwlist, n, depth) && nq_cst_n_ok(*n) &&
           nq_cst_depth_ok(*n, *depth);
}

PyObject *
nq_py_cst_serial(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", NULL};
    uint64_t total;
    int n;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i:cst_serial", kwlist, &n) || !nq_cst_n_ok(n))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    total = nq_cst_serial(n, NULL);
    Py_END_ALLOW_THREADS
    if (total == NQ_CST_NO_MEMORY)
        return PyErr_NoMemory();
    return PyLong_FromUnsignedLongLong((unsigned long long)total);
}

PyObject *
nq_py_cst_stack_words(PyObject *self, PyObject *args, PyObject *kwargs)
{
    int n, depth;

    (void)self;
    if (!nq_cst_n_depth(args, kwargs, "ii:cst_stack_words", &n, &depth))
        return NULL;
    return PyLong_FromLong((long)nq_cst_stack_words(n, depth));
}

/* nq_cst_tasks with the untyped buffer of nq_py_tasks_bytes. */
static size_t nq_py_cst_expand(int n, int depth, void *out, size_t cap)
{
    return nq_cst_tasks(n, depth, (nq_cst_task *)out, cap);
}

PyObject *
nq_py_cst_tasks(PyObject *self, PyObject *args, PyObject *kwargs)
{
    int n, depth;

    (void)self;
    if (!nq_cst_n_depth(args, kwargs, "ii:cst_tasks", &n, &depth))
        return NULL;
    return nq_py_tasks_bytes(n, depth, sizeof(nq_cst_task), nq_py_cst_expand);
}

PyObject *
nq_py_cst_split(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", "depth", "tasks", NULL};
    Py_buffer view;
    PyObject *result;
    nq_cst_task *tasks;
    size_t count, i;
    uint64_t total = 0;
    int n, depth;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiy*:cst_split", kwlist, &n, &depth, &view))
        return NULL;
    if (!nq_cst_n_ok(n) || !nq_cst_depth_ok(n, depth)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    tasks = (nq_cst_task *)nq_py_tasks_copy(&view, sizeof(nq_cst_task), n, nq_cst_valid, "constellation", &count);
    if (tasks == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < count; i++)
        total += nq_cst_split(tasks[i].w, n, depth, NULL, 0);
    Py_END_ALLOW_THREADS
    if (total > (uint64_t)PY_SSIZE_T_MAX / sizeof(nq_cst_task)) {
        free(tasks);
        return PyErr_NoMemory();
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * sizeof(nq_cst_task)));
    if (result != NULL) {
        nq_cst_task *out = (nq_cst_task *)PyBytes_AS_STRING(result);
        uint64_t made = 0;
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < count; i++)
            made += nq_cst_split(tasks[i].w, n, depth, out[made].w, total - made);
        Py_END_ALLOW_THREADS
    }
    free(tasks);
    return result;
}

typedef struct {
    int n;
    const nq_cst_task *tasks;
    size_t count;
    int nodes; /* count queens (the step search) */
    atomic_size_t next;
} nq_cst_job;

typedef struct {
    nq_cst_job *job;
    uint64_t total, nodes;
    int no_memory; /* its search's work space could not be had: it counted nothing */
} nq_cst_worker;

static void *
nq_cst_worker_main(void *arg)
{
    nq_cst_worker *w = (nq_cst_worker *)arg;
    nq_cst_job *job = w->job;
    nq_cst_node *work = NULL;
    size_t i;

    if (!job->nodes && (work = (nq_cst_node *)malloc(nq_cst_work_nodes(job->n) * sizeof *work)) == NULL) {
        w->no_memory = 1;
        return NULL;
    }
    while ((i = atomic_fetch_add(&job->next, 1)) < job->count)
        w->total += nq_cst_count(job->n, 0, &job->tasks[i], 1, job->nodes ? &w->nodes : NULL, work);
    free(work);
    return NULL;
}

/* Count the job's tasks on `threads` threads, or here where that is one or none can start;
 * *sum (its job set) gets the workers' totals, nodes and no_memory summed. */
static void
nq_cst_run_pool(nq_cst_job *job, int threads, nq_cst_worker *sum)
{
    nq_cst_worker *workers = NULL;
    pthread_t *ids = NULL;
    int t, started = 0;

    if (threads > 1) {
        workers = (nq_cst_worker *)calloc((size_t)threads, sizeof *workers);
        ids = (pthread_t *)calloc((size_t)threads, sizeof *ids);
        if (workers != NULL && ids != NULL) {
            for (t = 0; t < threads; t++) {
                workers[t].job = job;
                if (pthread_create(&ids[t], NULL, nq_cst_worker_main, &workers[t]) != 0)
                    break;
                started++;
            }
        }
    }
    if (started == 0) { /* one thread, or no thread could start: count here */
        nq_cst_worker_main(sum);
    } else {
        for (t = 0; t < started; t++) {
            pthread_join(ids[t], NULL);
            sum->total += workers[t].total;
            sum->nodes += workers[t].nodes;
            sum->no_memory |= workers[t].no_memory;
        }
    }
    free(workers);
    free(ids);
}

PyObject *
nq_py_cst_count(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", "tasks", "threads", "nodes", NULL};
    Py_buffer view;
    nq_cst_task *tasks;
    uint64_t total = 0, nodes = 0;
    size_t count;
    int n, threads = 1, want_nodes = 0, no_memory = 0;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iy*|ip:cst_count", kwlist, &n, &view, &threads, &want_nodes))
        return NULL;
    if (!nq_cst_n_ok(n) || threads < 0) {
        if (threads < 0)
            PyErr_Format(PyExc_ValueError, "threads must be >= 0, got %d", threads);
        PyBuffer_Release(&view);
        return NULL;
    }
    tasks = (nq_cst_task *)nq_py_tasks_copy(&view, sizeof(nq_cst_task), n, nq_cst_valid, "constellation", &count);
    if (tasks == NULL)
        return NULL;
    if (threads == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        threads = online > 0 ? (int)online : 1;
    }
    if ((size_t)threads > count)
        threads = count > 0 ? (int)count : 1;
    {
        nq_cst_job job = {n, tasks, count, want_nodes, 0};
        nq_cst_worker sum = {&job, 0, 0, 0};
        Py_BEGIN_ALLOW_THREADS
        nq_cst_run_pool(&job, threads, &sum);
        Py_END_ALLOW_THREADS
        total = sum.total;
        nodes = sum.nodes;
        no_memory = sum.no_memory;
    }
    free(tasks);
    if (no_memory) /* a worker could not have its search's work space */
        return PyErr_NoMemory();
    if (!want_nodes)
        return Py_BuildValue("(KO)", (unsigned long long)total, Py_None);
    return Py_BuildValue("(KK)", (unsigned long long)total, (unsigned long long)nodes);
}

PyObject *
nq_py_cst_budget_count(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", "depth", "budget", "generations", NULL};
    int n, depth, generations = 16, gen = 0, no_memory = 0;
    unsigned long long budget;
    nq_cst_task *cur = NULL, *next = NULL;
    uint32_t *stack = NULL;
    size_t count, cur_cap, next_count = 0, next_cap = 0, i, spilled = 0;
    uint64_t total = 0;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiK|i:cst_budget_count", kwlist, &n, &depth, &budget,
                                     &generations) ||
        !nq_cst_n_ok(n) || !nq_cst_depth_ok(n, depth))
        return NULL;
    if (generations < 1) {
        PyErr_SetString(PyExc_ValueError, "generations must be at least 1");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    count = nq_cst_tasks(n, depth, NULL, 0);
    cur_cap = count ? count : 1;
    cur = (nq_cst_task *)malloc(cur_cap * sizeof *cur);
    stack = (uint32_t *)malloc((size_t)nq_cst_stack_words(n, depth) * sizeof *stack);
    if (cur == NULL || stack == NULL)
        no_memory = 1;
    else
        nq_cst_tasks(n, depth, cur, count);
    while (!no_memory && count > 0) {
        const int last = gen + 1 >= generations || budget == 0;
        next_count = 0;
        for (i = 0; i < count && !no_memory; i++) {
            nq_cst_state st;
            unsigned long long steps = 0;
            if (nq_cst_begin(&st, cur[i].w, n, stack, 1)) {
                while (nq_cst_busy(&st)) {
                    if (!last && steps >= budget) {
                        const size_t k = (size_t)nq_cst_spill_size(&st, stack, 1);
                        if (next_count + k > next_cap) {
                            size_t cap = 2 * (next_count + k) + 64;
                            nq_cst_task *grown = (nq_cst_task *)realloc(next, cap * sizeof *next);
                            if (grown == NULL) {
                                no_memory = 1;
                                break;
                            }
                            next = grown;
                            next_cap = cap;
                        }
                        next_count += (size_t)nq_cst_spill(&st, stack, 1, n, cur[i].w[3], next[next_count].w, k);
                        break;
                    }
                    nq_cst_step(&st, stack, 1, 0);
                    steps++;
                }
            }
            total += (uint64_t)st.weight * st.cnt;
        }
        gen++;
        spilled += next_count;
        { /* the next generation's tasks become current, the current list the spare */
            nq_cst_task *t = cur;
            const size_t tc = cur_cap;
            cur = next;
            cur_cap = next_cap;
            next = t;
            next_cap = tc;
            count = next_count;
        }
        if (cur == NULL)
            break;
    }
    free(cur);
    free(next);
    free(stack);
    Py_END_ALLOW_THREADS
    if (no_memory)
        return PyErr_NoMemory();
    return Py_BuildValue("(KKi)", (unsigned long long)total, (unsigned long long)spilled, gen);
}

PyObject *
nq_py_cst_task_count(PyObject *self, PyObject *args, PyObject *kwargs)
{
    size_t count;
    int n, depth;

    (void)self;
    if (!nq_cst_n_depth(args, kwargs, "ii:cst_task_count", &n, &depth))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    count = nq_cst_tasks(n, depth, NULL, 0);
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(count);
}
