/*
 * nqprof._cpu: the CPU references of nqprof (count all N-Queens solutions).
 *
 *   serial(n) -> int
 *       Full count for 1 <= n <= 27 on one core, mirror symmetry applied.
 *   count_boards(n, cols, ld, rd, row, threads=0) -> int
 *       Sum over partial boards (the structure-of-arrays boards of
 *       nqprof.subproblems.expand) of the number of completions of each board, no
 *       symmetry multiplier applied. A pthread pool of `threads` workers (0: one per
 *       online CPU) takes boards one at a time through an atomic counter.
 *   cpu_count() -> int
 *       Online CPUs.
 *
 * Board convention (the same as nqprof.subproblems): placing the queen bit b does
 *   cols |= b;  ld = ((ld | b) << 1) & full;  rd = (rd | b) >> 1;
 * and the squares free in the next row are ~(cols | ld | rd) & full.
 *
 * The search (nq_subtree) is written once and used by both entry points. It is an
 * iterative depth-first search with an explicit stack holding cols/ld/rd/free per level.
 * (Keeping the masks in registers and undoing a placement from the stored free mask is
 * not exact with 32-bit masks: the bit that rd loses at the right edge is needed again
 * after an undo of two or more levels. Exact variants with 64-bit masks measured slower
 * than storing the masks.) Two cheap refinements over the plain bitmask search:
 *   - a child is entered only if both its row and the row after it still have a free
 *     square (the row after it can only lose squares);
 *   - the last four rows are nested loops, the last two rows without branches.
 * Counters are 64-bit: the count for N = 27 is below 2^58.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* serial_d4, d4_tasks, d4_count: the D4 search (d4.c, d4_py.c). */
PyObject *nq_py_serial_d4(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_d4_tasks(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_d4_count(PyObject *self, PyObject *args, PyObject *kwargs);

#define NQ_D4_METHODS                                                                        \
    {"serial_d4", (PyCFunction)(void (*)(void))nq_py_serial_d4, METH_VARARGS | METH_KEYWORDS, \
     "serial_d4(n) -> int\n\nNumber of solutions through the D4 symmetry search, one thread."}, \
    {"d4_tasks", (PyCFunction)(void (*)(void))nq_py_d4_tasks, METH_VARARGS | METH_KEYWORDS,   \
     "d4_tasks(n, depth) -> bytes\n\nThe D4 host expansion, 32 bytes per task (d4.h)."},      \
    {"d4_count", (PyCFunction)(void (*)(void))nq_py_d4_count, METH_VARARGS | METH_KEYWORDS,   \
     "d4_count(n, tasks) -> (count, nodes)\n\nWeighted count of D4 tasks and queens placed."},

/* cst_serial, cst_tasks, cst_split, cst_count: start constellations (constellations.c,
 * constellations_py.c). */
PyObject *nq_py_cst_serial(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_cst_tasks(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_cst_split(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_cst_count(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_cst_stack_words(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_cst_budget_count(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *nq_py_cst_task_count(PyObject *self, PyObject *args, PyObject *kwargs);

#define NQ_CST_METHODS                                                                        \
    {"cst_serial", (PyCFunction)(void (*)(void))nq_py_cst_serial, METH_VARARGS | METH_KEYWORDS, \
     "cst_serial(n) -> int\n\nNumber of solutions through start constellations, one thread."}, \
    {"cst_tasks", (PyCFunction)(void (*)(void))nq_py_cst_tasks, METH_VARARGS | METH_KEYWORDS,   \
     "cst_tasks(n, depth) -> bytes\n\nThe constellation tasks, 16 bytes per task."},           \
    {"cst_split", (PyCFunction)(void (*)(void))nq_py_cst_split, METH_VARARGS | METH_KEYWORDS,   \
     "cst_split(n, depth, tasks) -> bytes\n\nEach task split depth queens deeper, in order."},  \
    {"cst_count", (PyCFunction)(void (*)(void))nq_py_cst_count, METH_VARARGS | METH_KEYWORDS,   \
     "cst_count(n, tasks, threads=1, nodes=False) -> (count, nodes)\n\nWeighted count of constellation tasks (nodes: None unless nodes=True)."}, \
    {"cst_stack_words", (PyCFunction)(void (*)(void))nq_py_cst_stack_words, METH_VARARGS | METH_KEYWORDS, \
     "cst_stack_words(n, depth) -> int\n\nWords of one task's search storage (nq_cst_stack_words)."}, \
    {"cst_budget_count", (PyCFunction)(void (*)(void))nq_py_cst_budget_count, METH_VARARGS | METH_KEYWORDS, \
     "cst_budget_count(n, depth, budget, generations=16) -> (count, spilled, generations)\n\nThe refinement's host model."}, \
    {"cst_task_count", (PyCFunction)(void (*)(void))nq_py_cst_task_count, METH_VARARGS | METH_KEYWORDS, \
     "cst_task_count(n, depth) -> int\n\nThe number of tasks of (n, depth), none made."},

#define NQ_MIN_N 1
#define NQ_MAX_N 27
#define NQ_STACK 32

/* ------------------------------------------------------------------------------------ */
/* The search                                                                            */
/* ------------------------------------------------------------------------------------ */

static inline uint32_t
nq_lowbit(uint32_t x)
{
    return x & (0u - x);
}

/* Completions of a board with two rows left; `free` is the free set of the first of
 * them. The last row has at most one column left, so each candidate of the first row
 * adds one solution if that column is not attacked. No branches. */
static inline uint64_t
nq_last2(uint32_t full, uint32_t cols, uint32_t ld, uint32_t rd, uint32_t free)
{
    uint32_t b1 = nq_lowbit(free), b2 = free ^ b1;
    uint32_t r1 = ~(cols | b1 | ((ld | b1) << 1) | ((rd | b1) >> 1)) & full;
    uint32_t r2 = ~(cols | b2 | ((ld | b2) << 1) | ((rd | b2) >> 1)) & full;
    return (uint64_t)((b1 != 0) & (r1 != 0)) + (uint64_t)((b2 != 0) & (r2 != 0));
}

/* Adds to `count` the completions NEXT(full, ...) finds of each child of the board (cols,
 * ld, rd): the board with one queen of `free` placed, for each queen; uses `free` up. */
#define NQ_SUM_CHILDREN(count, NEXT, full, cols, ld, rd, free)                        \
    while (free) {                                                                  \
        uint32_t b = nq_lowbit(free);                                               \
        uint32_t nc = (cols) | b, nl = ((ld) | b) << 1, nr = ((rd) | b) >> 1;       \
        free ^= b;                                                                  \
        count += NEXT(full, nc, nl, nr, ~(nc | nl | nr) & (full));                  \
    }

/* Completions of a board with three rows left. */
static inline uint64_t
nq_last3(uint32_t full, uint32_t cols, uint32_t ld, uint32_t rd, uint32_t free)
{
    uint64_t count = 0;
    NQ_SUM_CHILDREN(count, nq_last2, full, cols, ld, rd, free);
    return count;
}

/* Completions of a board with four rows left. */
static inline uint64_t
nq_last4(uint32_t full, uint32_t cols, uint32_t ld, uint32_t rd, uint32_t free)
{
    uint64_t count = 0;
    NQ_SUM_CHILDREN(count, nq_last3, full, cols, ld, rd, free);
    return count;
}

/* Number of ways to fill the `rows_left` remaining rows of the board (cols, ld, rd).
 * rows_left <= 0 is a complete board: one solution. The masks need not be reduced to
 * `full` beyond what the convention does: ld may carry bits above the board (they only
 * move further up), and nothing is ever undone, so no bit has to be recovered. One
 * function: serial's and multicore's hot loop, whose speed the CPU references measure. */
static inline uint64_t
nq_subtree(uint32_t full, uint32_t cols, uint32_t ld, uint32_t rd, int rows_left)
{
    uint32_t s_cols[NQ_STACK], s_ld[NQ_STACK], s_rd[NQ_STACK], s_free[NQ_STACK];
    uint32_t free = ~(cols | ld | rd) & full;
    uint64_t count = 0;
    int d = 0, last;

    switch (rows_left) {
    case 1:
        return free != 0;
    case 2:
        return nq_last2(full, cols, ld, rd, free);
    case 3:
        return nq_last3(full, cols, ld, rd, free);
    case 4:
        return nq_last4(full, cols, ld, rd, free);
    default:
        if (rows_left <= 0)
            return 1;
    }

    /* Level d is the row rows_left - d rows from the bottom; at level `last` five rows
     * are left and every child is finished by nq_last4. */
    last = rows_left - 5;
    for (;;) {
        if (d == last) {
            NQ_SUM_CHILDREN(count, nq_last4, full, cols, ld, rd, free);
        }
        else {
            while (free) {
                uint32_t b = nq_lowbit(free);
                uint32_t nc = cols | b, nl = (ld | b) << 1, nr = (rd | b) >> 1;
                uint32_t nf = ~(nc | nl | nr) & full;
                free ^= b;
                /* Enter the child only if its row and the next one have free squares. */
                if (nf && (~(nc | (nl << 1) | (nr >> 1)) & full)) {
                    s_cols[d] = cols;
                    s_ld[d] = ld;
                    s_rd[d] = rd;
                    s_free[d] = free;
                    d++;
                    cols = nc;
                    ld = nl;
                    rd = nr;
                    free = nf;
                    goto next_level;
                }
            }
        }
        if (d == 0)
            break;
        d--;
        cols = s_cols[d];
        ld = s_ld[d];
        rd = s_rd[d];
        free = s_free[d];
    next_level:;
    }
    return count;
}

/* Full count with mirror symmetry: first queen in the left half; for odd n, first queen
 * in the middle column with the second queen in the left half; the sum is doubled. */
static uint64_t
nq_serial(int n)
{
    uint32_t full = (1u << n) - 1u, half = (uint32_t)n / 2u, c;
    uint64_t total = 0;

    if (n == 1)
        return 1;
    for (c = 0; c < half; c++) {
        uint32_t b = 1u << c;
        total += nq_subtree(full, b, (b << 1) & full, b >> 1, n - 1);
    }
    if (n % 2 == 1) {
        uint32_t b = 1u << half;
        uint32_t cols = b, ld = (b << 1) & full, rd = b >> 1;
        uint32_t second = ~(cols | ld | rd) & full & ((1u << half) - 1u);
        while (second) {
            uint32_t b2 = nq_lowbit(second);
            second ^= b2;
            total += nq_subtree(full, cols | b2, ((ld | b2) << 1) & full, (rd | b2) >> 1, n - 2);
        }
    }
    return 2 * total;
}

/* ------------------------------------------------------------------------------------ */
/* The pool                                                                              */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    const uint32_t *cols, *ld, *rd;
    const uint8_t *row;
    size_t count;
    int n;
    uint32_t full;
    atomic_size_t next; /* next board index to take */
} nq_job;

typedef struct {
    nq_job *job;
    uint64_t sum;
    pthread_t tid;
    int started;
    char pad[64]; /* keep the partial sums of neighbours on separate cache lines */
} nq_worker;

static void *
nq_worker_main(void *arg)
{
    nq_worker *w = (nq_worker *)arg;
    nq_job *job = w->job;
    uint64_t sum = 0;

    for (;;) {
        size_t i = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (i >= job->count)
            break;
        sum += nq_subtree(job->full, job->cols[i], job->ld[i], job->rd[i],
                          job->n - (int)job->row[i]);
    }
    w->sum = sum;
    return NULL;
}

static long
nq_online_cpus(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus;
}

/* Runs the job on `nthreads` workers, the calling thread being one of them. A worker
 * that cannot be started leaves its share to the others: boards are taken dynamically,
 * so the count stays right. Returns the sum. */
static uint64_t
nq_run_pool(nq_job *job, size_t nthreads, nq_worker *workers)
{
    uint64_t total = 0;
    size_t t;

    for (t = 0; t < nthreads; t++) {
        workers[t].job = job;
        workers[t].sum = 0;
        workers[t].started = 0;
    }
    for (t = 1; t < nthreads; t++)
        workers[t].started = pthread_create(&workers[t].tid, NULL, nq_worker_main, &workers[t]) == 0;
    nq_worker_main(&workers[0]);
    for (t = 1; t < nthreads; t++)
        if (workers[t].started)
            pthread_join(workers[t].tid, NULL);
    for (t = 0; t < nthreads; t++)
        total += workers[t].sum;
    return total;
}

/* ------------------------------------------------------------------------------------ */
/* Argument handling                                                                     */
/* ------------------------------------------------------------------------------------ */

/* An integer argument as long long; values beyond its range saturate. -1 with an
 * exception set on failure (TypeError for non-integers). */
static int
nq_int_arg(PyObject *obj, const char *name, long long *out)
{
    PyObject *index = PyNumber_Index(obj);
    int overflow = 0;
    long long value;

    if (index == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must be an integer, got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    value = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (overflow)
        value = overflow > 0 ? LLONG_MAX : LLONG_MIN;
    *out = value;
    return 0;
}

static int
nq_n_arg(PyObject *obj, int *out)
{
    long long value;

    if (nq_int_arg(obj, "n", &value) < 0)
        return -1;
    if (value < NQ_MIN_N || value > NQ_MAX_N) {
        PyErr_Format(PyExc_ValueError, "n must be in %d..%d, got %S", NQ_MIN_N, NQ_MAX_N, obj);
        return -1;
    }
    *out = (int)value;
    return 0;
}

static int
nq_little_endian(void)
{
    const uint16_t probe = 1;
    return *(const unsigned char *)&probe == 1;
}

/* Gets a C-contiguous one-dimensional buffer of unsigned integers of `itemsize` bytes in
 * native byte order. -1 with ValueError (TypeError for a non-buffer) on failure; the
 * buffer is released on failure. */
static int
nq_get_buffer(PyObject *obj, const char *name, Py_ssize_t itemsize, const char *dtype,
              Py_buffer *view)
{
    const char *fmt;
    char order, code;

    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s must be a contiguous buffer of %s", name, dtype);
        }
        return -1;
    }
    fmt = view->format != NULL ? view->format : "B";
    order = '@';
    if (*fmt == '@' || *fmt == '=' || *fmt == '<' || *fmt == '>' || *fmt == '!')
        order = *fmt++;
    code = fmt[0];
    if (fmt[0] == '\0' || fmt[1] != '\0' || strchr("BHILQN", code) == NULL ||
        view->itemsize != itemsize ||
        (itemsize > 1 && (order == '>' || order == '!') && nq_little_endian()) ||
        (itemsize > 1 && order == '<' && !nq_little_endian())) {
        PyErr_Format(PyExc_ValueError, "%s must be a buffer of %s, got format '%s' with itemsize %zd",
                     name, dtype, view->format != NULL ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    if (view->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s must be one-dimensional, got %d dimensions", name,
                     view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static unsigned
nq_popcount(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    return (x * 0x01010101u) >> 24;
}

/* ------------------------------------------------------------------------------------ */
/* Module functions                                                                      */
/* ------------------------------------------------------------------------------------ */

PyDoc_STRVAR(serial_doc,
"serial(n) -> int\n\n"
"Number of solutions of the n-queens problem (1 <= n <= 27) on one core: iterative\n"
"bitmask depth-first search with mirror symmetry. Releases the GIL while it runs.");

static PyObject *
nq_py_serial(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", NULL};
    PyObject *n_obj;
    uint64_t total;
    int n;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:serial", kwlist, &n_obj))
        return NULL;
    if (nq_n_arg(n_obj, &n) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    total = nq_serial(n);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong((unsigned long long)total);
}

PyDoc_STRVAR(count_boards_doc,
"count_boards(n, cols, ld, rd, row, threads=0) -> int\n\n"
"Sum over the partial boards of the number of completions of each board (no symmetry\n"
"multiplier applied; a board with row == n counts 1). cols, ld and rd are buffers of\n"
"uint32 and row a buffer of uint8, all of the same length, as made by\n"
"nqprof.subproblems.expand. Each board's cols must hold exactly row[i] queens inside the\n"
"n columns. Runs on `threads` workers (0: one per online CPU) that take boards one at a\n"
"time; the GIL is released while they run. Bad arguments raise ValueError.");

/* 0 where every board of the job is a partial board of its n (row <= n, queens only in the
 * n columns, one queen per filled row); -1 with a ValueError naming the first that is not. */
static int
nq_check_boards(const nq_job *job)
{
    size_t k;

    for (k = 0; k < job->count; k++) {
        uint32_t c = job->cols[k];
        unsigned r = job->row[k];
        if (r > (unsigned)job->n || (c & ~job->full) != 0 || nq_popcount(c) != r) {
            PyErr_Format(PyExc_ValueError,
                         "board %zu is not a partial board of N=%d (row=%u, cols=0x%x)",
                         k, job->n, r, (unsigned)c);
            return -1;
        }
    }
    return 0;
}

/* The pool's size: `threads` (0: one per online CPU), and no more workers than boards. */
static size_t
nq_pool_size(long long threads, size_t count)
{
    size_t nthreads;

    if (threads == 0)
        nthreads = (size_t)nq_online_cpus();
    else if ((unsigned long long)threads > (unsigned long long)count)
        nthreads = count;
    else
        nthreads = (size_t)threads;
    return nthreads > count ? count : nthreads;
}

static PyObject *
nq_py_count_boards(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n", "cols", "ld", "rd", "row", "threads", NULL};
    static const char *names[4] = {"cols", "ld", "rd", "row"};
    PyObject *n_obj, *bufs[4], *threads_obj = NULL;
    Py_buffer views[4];
    int n, got = 0, i;
    long long threads = 0;
    PyObject *result = NULL;
    nq_worker *workers = NULL;
    nq_job job;
    size_t count, nthreads;
    uint64_t total;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|O:count_boards", kwlist, &n_obj,
                                     &bufs[0], &bufs[1], &bufs[2], &bufs[3], &threads_obj))
        return NULL;
    if (nq_n_arg(n_obj, &n) < 0)
        return NULL;
    if (threads_obj != NULL) {
        if (nq_int_arg(threads_obj, "threads", &threads) < 0)
            return NULL;
        if (threads < 0) {
            PyErr_Format(PyExc_ValueError, "threads must be >= 0 (0: one per online CPU), got %S",
                         threads_obj);
            return NULL;
        }
    }
    for (i = 0; i < 4; i++) {
        if (nq_get_buffer(bufs[i], names[i], i < 3 ? 4 : 1, i < 3 ? "uint32" : "uint8",
                          &views[i]) < 0)
            goto done;
        got++;
    }
    for (i = 1; i < 4; i++) {
        if (views[i].shape[0] != views[0].shape[0]) {
            PyErr_Format(PyExc_ValueError,
                         "cols, ld, rd and row must have the same length, got %zd, %zd, %zd, %zd",
                         views[0].shape[0], views[1].shape[0], views[2].shape[0], views[3].shape[0]);
            goto done;
        }
    }

    count = (size_t)views[0].shape[0];
    job.cols = (const uint32_t *)views[0].buf;
    job.ld = (const uint32_t *)views[1].buf;
    job.rd = (const uint32_t *)views[2].buf;
    job.row = (const uint8_t *)views[3].buf;
    job.count = count;
    job.n = n;
    job.full = (1u << n) - 1u;
    atomic_init(&job.next, 0);

    if (nq_check_boards(&job) < 0)
        goto done;
    if (count == 0) {
        result = PyLong_FromLong(0);
        goto done;
    }
    nthreads = nq_pool_size(threads, count);
    workers = (nq_worker *)calloc(nthreads, sizeof(nq_worker));
    if (workers == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    total = nq_run_pool(&job, nthreads, workers);
    Py_END_ALLOW_THREADS
    result = PyLong_FromUnsignedLongLong((unsigned long long)total);

done:
    free(workers);
    for (i = 0; i < got; i++)
        PyBuffer_Release(&views[i]);
    return result;
}

PyDoc_STRVAR(cpu_count_doc, "cpu_count() -> int\n\nNumber of online CPUs (the default pool size).");

static PyObject *
nq_py_cpu_count(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(nq_online_cpus());
}

static PyMethodDef nq_methods[] = {
    {"serial", (PyCFunction)(void (*)(void))nq_py_serial, METH_VARARGS | METH_KEYWORDS, serial_doc},
    {"count_boards", (PyCFunction)(void (*)(void))nq_py_count_boards, METH_VARARGS | METH_KEYWORDS,
     count_boards_doc},
    {"cpu_count", nq_py_cpu_count, METH_NOARGS, cpu_count_doc},
    NQ_D4_METHODS
    NQ_CST_METHODS
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef nq_module = {
    PyModuleDef_HEAD_INIT,
    "nqprof._cpu",
    "C CPU references of nqprof: serial and multicore N-Queens counts.",
    -1,
    nq_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__cpu(void)
{
    return PyModule_Create(&nq_module);
}
