/*
 * Start constellations: the host generator of the tasks and the serial count (see
 * constellations.h for the method and the task layout; the search is the header's).
 */
#include "constellations.h"

#include <stdlib.h>
#include <string.h>

int nq_cst_max_depth(int n)
{
    return n < 4 ? 0 : n - 3;
}

/* ------------------------------------------------------------------------------------ */
/* Frames                                                                                */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    int r[4], c[4], count; /* the distinct queens of a frame */
} nq_cst_queens;

/* The distinct queens of frame (a, b, c, d); 0 if two of them attack each other or a
 * line of the frame does not hold exactly one of them (an inconsistent tuple). */
static int nq_cst_frame_queens(int n, int a, int b, int c, int d, nq_cst_queens *q)
{
    const int rows[4] = {0, n - 1, c, d}, cols[4] = {a, b, 0, n - 1};
    int i, j;

    q->count = 0;
    for (i = 0; i < 4; i++) {
        for (j = 0; j < q->count; j++)
            if (q->r[j] == rows[i] && q->c[j] == cols[i])
                break;
        if (j == q->count) {
            q->r[q->count] = rows[i];
            q->c[q->count] = cols[i];
            q->count++;
        }
    }
    for (i = 0; i < q->count; i++) {
        for (j = i + 1; j < q->count; j++) {
            int dr = q->r[i] - q->r[j], dc = q->c[i] - q->c[j];
            if (dr == 0 || dc == 0 || dr == dc || dr == -dc)
                return 0;
        }
    }
    /* Each line holds exactly one queen: with distinct rows and columns at most one, and
     * the tuple names a queen on each, so check that it is the one named. */
    for (i = 0; i < q->count; i++) {
        if (q->r[i] == 0 && q->c[i] != a)
            return 0;
        if (q->r[i] == n - 1 && q->c[i] != b)
            return 0;
        if (q->c[i] == 0 && q->r[i] != c)
            return 0;
        if (q->c[i] == n - 1 && q->r[i] != d)
            return 0;
    }
    return 1;
}

/* The key of the frame of a set of queens (their outer-line queens). */
static long nq_cst_key_of(int n, const int *r, const int *c, int count)
{
    int a = -1, b = -1, cc = -1, d = -1, i;
    for (i = 0; i < count; i++) {
        if (r[i] == 0)
            a = c[i];
        if (r[i] == n - 1)
            b = c[i];
        if (c[i] == 0)
            cc = r[i];
        if (c[i] == n - 1)
            d = r[i];
    }
    return (long)a + n * ((long)b + n * ((long)cc + n * (long)d));
}

/* The frame (a, b, c, d) of image t (0..7) of the queens q under D4. */
static void nq_cst_image(int n, const nq_cst_queens *q, int t, int *frame)
{
    const int m = n - 1;
    int r[4], c[4], i;
    long key;

    for (i = 0; i < q->count; i++) {
        int y = q->r[i], x = q->c[i], ny, nx;
        switch (t) {
        case 0: ny = y; nx = x; break;
        case 1: ny = x; nx = m - y; break;         /* rotation by 90 degrees */
        case 2: ny = m - y; nx = m - x; break;     /* 180 */
        case 3: ny = m - x; nx = y; break;         /* 270 */
        case 4: ny = y; nx = m - x; break;         /* mirror left-right */
        case 5: ny = m - y; nx = x; break;         /* mirror top-bottom */
        case 6: ny = x; nx = y; break;             /* main diagonal */
        default: ny = m - x; nx = m - y; break;    /* anti-diagonal */
        }
        r[i] = ny;
        c[i] = nx;
    }
    key = nq_cst_key_of(n, r, c, q->count);
    frame[0] = (int)(key % n);
    frame[1] = (int)(key / n % n);
    frame[2] = (int)(key / n / n % n);
    frame[3] = (int)(key / n / n / n);
}

static long nq_cst_key(int n, const int *f)
{
    return (long)f[0] + n * ((long)f[1] + n * ((long)f[2] + n * (long)f[3]));
}

/* A cheap estimate of the search of a frame: the sum over the first free rows of the
 * product of their squares left free by the frame, less one per row above. The images of
 * a frame have the same solutions but not the same search tree (the rows the frame
 * restricts most should come first). */
static double nq_cst_estimate(int n, const int *f)
{
    const uint32_t mask = (1u << n) - 1u, col = (1u << f[0]) | (1u << f[1]) | 1u | (1u << (n - 1));
    double sum = 0.0, prod = 1.0;
    int r, j = 0;

    for (r = 1; r <= n - 2 && j < 6; r++) {
        double x;
        if (r == f[2] || r == f[3])
            continue;
        x = (double)nq_cst_popc(~(nq_cst_frame_row(n, r, f[0], f[1], f[2], f[3]) | col) & mask) - j;
        prod *= x < 0.5 ? 0.5 : x;
        sum += prod;
        j++;
    }
    return sum;
}

/* For a valid frame: the class's smallest key (its name), the orbit size, and the image
 * the search starts from (the lowest estimate; the smallest key among equal ones). */
static long nq_cst_class(int n, const nq_cst_queens *q, int *orbit, int *chosen)
{
    long keys[8], best = -1, chosen_key = -1;
    double chosen_est = 0.0;
    int t, j, distinct = 0, f[4];

    for (t = 0; t < 8; t++) {
        double e;
        nq_cst_image(n, q, t, f);
        keys[t] = nq_cst_key(n, f);
        if (best < 0 || keys[t] < best)
            best = keys[t];
        for (j = 0; j < t; j++)
            if (keys[j] == keys[t])
                break;
        if (j == t)
            distinct++;
        e = nq_cst_estimate(n, f);
        if (chosen_key < 0 || e < chosen_est || (e == chosen_est && keys[t] < chosen_key)) {
            chosen_key = keys[t];
            chosen_est = e;
            memcpy(chosen, f, sizeof f);
        }
    }
    *orbit = distinct;
    return best;
}

/* ------------------------------------------------------------------------------------ */
/* Tasks                                                                                 */
/* ------------------------------------------------------------------------------------ */

/* Whether the frame of key `key` is the smallest of its class (the class's name): the
 * keys of the images alone, before nq_cst_class weighs the images' searches. */
static int nq_cst_smallest(int n, const nq_cst_queens *q, long key)
{
    int t, f[4];

    for (t = 1; t < 8; t++) {
        nq_cst_image(n, q, t, f);
        if (nq_cst_key(n, f) < key)
            return 0;
    }
    return 1;
}

size_t nq_cst_tasks(int n, int depth, nq_cst_task *out, size_t cap)
{
    nq_cst_queens q;
    size_t count = 0;
    int a, b, c, d;

    if (n < NQ_CST_MIN_N || n > NQ_CST_MAX_N || depth < 0 || depth > nq_cst_max_depth(n))
        return 0;
    for (d = 0; d < n; d++)
        for (c = 0; c < n; c++)
            for (b = 0; b < n; b++)
                for (a = 0; a < n; a++) {
                    const int frame[4] = {a, b, c, d};
                    int orbit, r, f[4];
                    uint32_t task[NQ_CST_WORDS], start = (uint32_t)n - 1;
                    if (!nq_cst_frame_queens(n, a, b, c, d, &q) || !nq_cst_smallest(n, &q, nq_cst_key(n, frame)))
                        continue;
                    nq_cst_class(n, &q, &orbit, f); /* one class, searched from its chosen image f */
                    for (r = n - 2; r >= 1; r--) /* the first free row (none: n - 1) */
                        if (r != f[2] && r != f[3])
                            start = (uint32_t)r;
                    task[0] = 0;
                    task[1] = 0;
                    task[2] = (1u << f[0]) | (1u << f[1]) | 1u | (1u << (n - 1));
                    task[3] = nq_cst_info(start, (unsigned)f[0], (unsigned)f[1], (unsigned)f[2], (unsigned)f[3],
                                          (unsigned)orbit);
                    count += nq_cst_split(task, n, depth, count < cap ? out[count].w : NULL,
                                          count < cap ? cap - count : 0);
                }
    return count;
}

int nq_cst_task_valid(int n, const nq_cst_task *t)
{
    const uint32_t info = t->w[3];
    const int start = (int)(info & 31u), a = (int)((info >> 5) & 31u), b = (int)((info >> 10) & 31u);
    const int c = (int)((info >> 15) & 31u), d = (int)((info >> 20) & 31u), w = (int)((info >> 25) & 15u);
    const int frame[4] = {a, b, c, d};
    nq_cst_queens q;
    int orbit, f[4];

    if (n < NQ_CST_MIN_N || n > NQ_CST_MAX_N || (info >> 29) != 0)
        return 0;
    if (a >= n || b >= n || c >= n || d >= n || !nq_cst_frame_queens(n, a, b, c, d, &q))
        return 0;
    nq_cst_class(n, &q, &orbit, f);
    if (nq_cst_key(n, f) != nq_cst_key(n, frame) || orbit != w) /* not the image the class is searched from */
        return 0;
    {
        int r, free_rows = 0;
        for (r = 1; r <= n - 2; r++)
            free_rows += r != c && r != d;
        if (free_rows == 0 ? start != n - 1 : (start < 1 || start > n - 2 || start == c || start == d))
            return 0;
    }
    /* the frame's columns are occupied; nothing outside the board */
    {
        const uint32_t mask = (1u << n) - 1u, fc = (1u << a) | (1u << b) | 1u | (1u << (n - 1));
        return (t->w[2] & fc) == fc && (t->w[2] & ~mask) == 0;
    }
}

/* ------------------------------------------------------------------------------------ */
/* The host's search                                                                     */
/* ------------------------------------------------------------------------------------ */

size_t nq_cst_work_nodes(int n)
{
    return (size_t)(n < 2 ? 2 : n) * NQ_CST_LEVEL_NODES;
}

/* The completions of two free rows, the first with candidates `free` (at most two: two
 * columns are left), without a branch: each candidate leaves one column for the last row.
 * The masks and pn (the last row's P word) are in the layout of nq_cst_begin (column j at
 * bit j + NQ_CST_OFF, bits 0-4 taken in col, so that pn's row distance there is no square). */
static inline uint64_t nq_cst_last2(uint32_t col, uint32_t ld, uint32_t rd, uint32_t free, uint32_t sh, uint32_t pn)
{
    const uint32_t b1 = nq_cst_lowbit(free), b2 = free ^ b1;
    const uint32_t r1 = ~(((ld | b1) << sh) | ((rd | b1) >> sh) | col | b1 | pn);
    const uint32_t r2 = ~(((ld | b2) << sh) | ((rd | b2) >> sh) | col | b2 | pn);
    return (uint64_t)((b1 != 0) & (r1 != 0)) + (uint64_t)((b2 != 0) & (r2 != 0));
}

/* The completions of the nodes a[0..m) at level j, each with candidates; p: the levels' P
 * words as nq_cst_begin makes them (the row distance in bits 0-4: nq_cst_dist), the nodes'
 * masks in its layout too; `last` the last level (counted, never entered); work +
 * k NQ_CST_LEVEL_NODES holds the nodes of level k. The nodes are taken in chunks whose
 * children fit one level's buffer (a node at level j has at most last - j + 1
 * candidates: the free columns); a chunk's candidates are peeled in passes, each taking
 * the lowest candidate of every node left, writing the child and keeping the node by an
 * index that moves only if something is left: no branch depends on a candidate. a is
 * used up. */
static uint64_t nq_cst_expand(const uint32_t *p, int last, nq_cst_node *work, int j, nq_cst_node *a, int m)
{
    const uint32_t sh = nq_cst_dist(p[j]), pn = p[j + 1];
    uint64_t count = 0;
    int i;

    if (j == last - 1) { /* two free rows: counted */
        for (i = 0; i < m; i++)
            count += nq_cst_last2(a[i].col, a[i].ld, a[i].rd, a[i].free, sh, pn);
        return count;
    }
    if (j == last - 2) { /* three free rows: each placement's last two counted at once */
        const uint32_t sh1 = nq_cst_dist(pn), pn2 = p[j + 2];
        while (m > 0) {
            int kept = 0;
            for (i = 0; i < m; i++) {
                nq_cst_node v = a[i];
                const uint32_t b = nq_cst_lowbit(v.free), nl = (v.ld | b) << sh, nr = (v.rd | b) >> sh, nc = v.col | b;
                count += nq_cst_last2(nc, nl, nr, ~(nl | nr | nc | pn), sh1, pn2);
                v.free ^= b;
                a[kept] = v;
                kept += v.free != 0;
            }
            m = kept;
        }
        return count;
    }
    {
        nq_cst_node *out = work + (size_t)(j + 1) * NQ_CST_LEVEL_NODES;
        const int chunk = NQ_CST_CHUNK / (last - j + 1);
        int done = 0;
        while (done < m) {
            nq_cst_node *c = a + done;
            int left = m - done < chunk ? m - done : chunk, made = 0;
            done += left;
            while (left > 0) {
                int kept = 0;
                for (i = 0; i < left; i++) {
                    nq_cst_node v = c[i];
                    const uint32_t b = nq_cst_lowbit(v.free), nl = (v.ld | b) << sh, nr = (v.rd | b) >> sh;
                    const uint32_t nc = v.col | b, nf = ~(nl | nr | nc | pn);
                    out[made].ld = nl;
                    out[made].rd = nr;
                    out[made].col = nc;
                    out[made].free = nf;
                    made += nf != 0;
                    v.free ^= b;
                    c[kept] = v;
                    kept += v.free != 0;
                }
                left = kept;
            }
            if (made > 0)
                count += nq_cst_expand(p, last, work, j + 1, out, made);
        }
    }
    return count;
}

uint64_t nq_cst_search(const uint32_t *task, int n, nq_cst_node *work)
{
    /* stack: what nq_cst_begin fills (P of level k at NQ_CST_LEVEL_WORDS k); p: those
     * words in a row. The search runs in begin's layout: its state is the start node. */
    uint32_t stack[NQ_CST_LEVEL_WORDS * 32 + 1], p[32];
    nq_cst_state s;
    int last, i;

    if (!nq_cst_begin(&s, task, n, stack, 1))
        return s.cnt;
    last = s.last / NQ_CST_LEVEL_WORDS; /* an offset at stride 1 */
    for (i = 0; i <= last; i++)
        p[i] = stack[NQ_CST_LEVEL_WORDS * i];
    work[0].ld = s.ld;
    work[0].rd = s.rd;
    work[0].col = s.col;
    work[0].free = s.bm;
    return nq_cst_expand(p, last, work, 0, work, 1);
}

uint64_t nq_cst_count(int n, int depth, const nq_cst_task *tasks, size_t count, uint64_t *nodes, nq_cst_node *work)
{
    uint32_t stack[NQ_CST_LEVEL_WORDS * 32 + 1];
    uint64_t total = 0;
    size_t i;

    (void)depth;
    for (i = 0; i < count; i++)
        total += (uint64_t)((tasks[i].w[3] >> 25) & 15u) *
                 (nodes != NULL ? nq_cst_solve(tasks[i].w, n, stack, nodes) : nq_cst_search(tasks[i].w, n, work));
    return total;
}

uint64_t nq_cst_serial(int n, uint64_t *nodes)
{
    nq_cst_task *tasks;
    nq_cst_node *work;
    size_t count;
    uint64_t total = NQ_CST_NO_MEMORY;

    if (n < NQ_CST_MIN_N || n > NQ_CST_MAX_N)
        return 0;
    count = nq_cst_tasks(n, 0, NULL, 0);
    tasks = (nq_cst_task *)malloc((count ? count : 1) * sizeof *tasks);
    work = (nq_cst_node *)malloc(nq_cst_work_nodes(n) * sizeof *work);
    if (tasks != NULL && work != NULL) {
        nq_cst_tasks(n, 0, tasks, count);
        total = nq_cst_count(n, 0, tasks, count, nodes, work);
    }
    free(tasks);
    free(work);
    return total;
}
