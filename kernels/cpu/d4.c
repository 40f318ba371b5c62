/*
 * Full D4 symmetry for N-Queens: the host expansion and the search of one expanded board
 * (see d4.h). The search is the one the GPU kernel kernels/fast.cu runs, written the same
 * way: an iterative loop that places one queen per step, an explicit stack of (candidates,
 * left, right) per row, the row rules of the two kinds, a child entered only if the row
 * after it still has a free square, and the last two rows finished without a push. Its
 * node count (queens placed) is the kernel's.
 */
#include "d4.h"

#include <string.h>

static inline uint32_t nq_d4_lowbit(uint32_t x) { return x & (0u - x); }

/* Columns (bits 0..b1-1 and n-b1..n-1) the last row of a non-corner board may not use. */
static uint32_t nq_d4_lastmask(int n, int b1)
{
    uint32_t low = (1u << b1) - 1u;
    return low | (low << (n - b1));
}

/* Allowed squares of row y given the masks at that row and the kind's rules. */
static inline uint32_t nq_d4_row(int y, uint32_t left, uint32_t down, uint32_t right, uint32_t mask,
                                 int b1, int b2, uint32_t excl, uint32_t side)
{
    uint32_t free = ~(left | down | right) & mask;
    if (y < b1) {
        free &= ~excl;
    }
    else if (y == b2) {
        uint32_t s = down & side;
        if (s == 0)
            free = 0;
        else if (s != side)
            free &= side;
    }
    return free;
}

/* One rotation's part of nq_d4_check (its `last`, `board`, `bit`, `ptn`, `own` and `you`):
 * compares the board with the rotation row by row from row 1. Row own of the rotation is
 * the bit 1 << k, k the steps the walk takes (from WALK_INIT by WALK_STEP) until the square
 * (row you, column ptn) holds a queen, the walk given up once the bit passes board[own];
 * the next row's walk starts from INIT moved on by STEP. Returns 0 from nq_d4_check if the
 * rotation is smaller; leaves own > last if the two are equal. */
#define NQ_D4_COMPARE(INIT, STEP, WALK_INIT, WALK_STEP)                                     \
    for (INIT, own = 1; own <= last; own++, STEP) {                                        \
        bit = 1u;                                                                          \
        for (WALK_INIT; board[you] != ptn && board[own] >= bit; WALK_STEP)                 \
            bit <<= 1;                                                                     \
        if (board[own] > bit)                                                              \
            return 0;                                                                      \
        if (board[own] < bit)                                                              \
            break;                                                                         \
    }

/* Takaken's comparison of a complete non-corner board (board[i]: the bit of row i's queen)
 * with its rotations by 90, 180 and 270 degrees: 0 if a rotation is smaller (the board is
 * counted through that image), else the size of its class: 2 (equal to its 90-degree
 * rotation), 4 (equal to its 180-degree rotation) or 8. */
static int nq_d4_check(int n, const uint32_t *board, int b1, int b2)
{
    const int last = n - 1;
    const uint32_t top = 1u << last, endbit = top >> b1;
    uint32_t bit, ptn;
    int own, you;

    if (board[b2] == 1u) { /* 90 degrees: column 1 << own, rows from the last up */
        NQ_D4_COMPARE(ptn = 2u, ptn <<= 1, you = last, you--)
        if (own > last)
            return 2;
    }
    if (board[last] == endbit) { /* 180 degrees: row last - own, columns from the top down */
        NQ_D4_COMPARE(you = last - 1, you--, ptn = top, ptn >>= 1)
        if (own > last)
            return 4;
    }
    if (board[b1] == top) { /* 270 degrees: column top >> own, rows from row 0 down */
        NQ_D4_COMPARE(ptn = top >> 1, ptn >>= 1, you = 0, you++)
    }
    return 8;
}

int nq_d4_max_depth(int n)
{
    int d = n - 2;
    return d > NQ_D4_MAX_DEPTH ? NQ_D4_MAX_DEPTH : d;
}

/* ------------------------------------------------------------------------------------ */
/* Expansion                                                                             */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    int n, depth, b1, b2, corner;
    uint32_t mask, excl, side;
    uint8_t cols[32];
    nq_d4_task *out;
    size_t cap, count;
} nq_d4_expansion;

static int nq_d4_column(uint32_t bit)
{
    int c = 0;
    while (bit >>= 1)
        c++;
    return c;
}

static void nq_d4_emit(nq_d4_expansion *e, uint32_t left, uint32_t down, uint32_t right)
{
    if (e->count < e->cap) {
        nq_d4_task *t = &e->out[e->count];
        int i;
        memset(t, 0, sizeof *t);
        t->w[0] = left;
        t->w[1] = down;
        t->w[2] = right;
        t->w[3] = nq_d4_info((unsigned)e->depth, (unsigned)e->b1,
                             e->corner ? NQ_D4_NO_BOUND2 : (unsigned)e->b2, e->corner);
        for (i = 0; i < e->depth; i++)
            t->w[4 + i / 4] |= (uint32_t)e->cols[i] << (8 * (i % 4));
    }
    e->count++;
}

static void nq_d4_expand_rows(nq_d4_expansion *e, int y, uint32_t left, uint32_t down, uint32_t right)
{
    uint32_t free = nq_d4_row(y, left, down, right, e->mask, e->b1, e->b2, e->excl, e->side);

    if (free == 0)
        return;
    if (y == e->depth) {
        nq_d4_emit(e, left, down, right);
        return;
    }
    while (free) {
        uint32_t bit = nq_d4_lowbit(free);
        free ^= bit;
        e->cols[y] = (uint8_t)nq_d4_column(bit);
        nq_d4_expand_rows(e, y + 1, (left | bit) << 1, down | bit, (right | bit) >> 1);
    }
}

size_t nq_d4_expand(int n, int depth, nq_d4_task *out, size_t cap)
{
    nq_d4_expansion e;
    uint32_t bit;

    if (n < NQ_D4_MIN_N || n > NQ_D4_MAX_N || depth < NQ_D4_MIN_DEPTH || depth > nq_d4_max_depth(n))
        return 0;
    memset(&e, 0, sizeof e);
    e.n = n;
    e.depth = depth;
    e.mask = (1u << n) - 1u;
    e.side = (1u << (n - 1)) | 1u;
    e.out = out;
    e.cap = cap;

    /* Corner kind: queen (0, 0), row 1's queen in column BOUND1; rows below BOUND1 keep
     * out of column 1. */
    e.corner = 1;
    e.excl = 2u;
    e.b2 = -1;
    e.cols[0] = 0;
    for (e.b1 = 2; e.b1 < n - 1; e.b1++) {
        bit = 1u << e.b1;
        e.cols[1] = (uint8_t)e.b1;
        nq_d4_expand_rows(&e, 2, (2u | bit) << 1, 1u | bit, bit >> 1);
    }
    /* Non-corner kind: row 0's queen in column BOUND1 < BOUND2 = N-1-BOUND1. */
    e.corner = 0;
    e.excl = e.side;
    for (e.b1 = 1, e.b2 = n - 2; e.b1 < e.b2; e.b1++, e.b2--) {
        bit = 1u << e.b1;
        e.cols[0] = (uint8_t)e.b1;
        nq_d4_expand_rows(&e, 1, bit << 1, bit, bit >> 1);
    }
    return e.count;
}

/* ------------------------------------------------------------------------------------ */
/* The search of one task                                                                */
/* ------------------------------------------------------------------------------------ */

int nq_d4_task_valid(int n, const nq_d4_task *t)
{
    unsigned y = t->w[3] & 31u, b1 = (t->w[3] >> 5) & 31u, b2 = (t->w[3] >> 10) & 31u;
    int corner = (t->w[3] & NQ_D4_CORNER) != 0;
    uint32_t mask, down = 0;
    unsigned i;

    if (n < NQ_D4_MIN_N || n > NQ_D4_MAX_N)
        return 0;
    mask = (1u << n) - 1u;
    if (y < NQ_D4_MIN_DEPTH || (int)y > nq_d4_max_depth(n) || (t->w[3] >> 16) != 0)
        return 0;
    if (corner ? (b2 != NQ_D4_NO_BOUND2 || b1 < 2 || (int)b1 > n - 2)
               : (b1 < 1 || (int)b2 != n - 1 - (int)b1 || b1 >= b2))
        return 0;
    for (i = 0; i < y; i++) {
        unsigned c = (t->w[4 + i / 4] >> (8 * (i % 4))) & 255u;
        if ((int)c >= n || (down >> c) & 1u)
            return 0;
        down |= 1u << c;
    }
    return down == t->w[1] && (down & ~mask) == 0;
}

/* The search's view of one task. */
typedef struct {
    int n, y0, b1, b2, corner;
    uint32_t mask, side, excl, lastmask;
    uint32_t s_bm[32], s_left[32], s_right[32]; /* per row: candidates (queen = lowest), masks */
} nq_d4_search;

/* Completes the board whose row N-2 has the allowed squares `free` (masks at row N-2):
 * each square leaves at most one square in the last row. s_bm holds rows 0..N-3. */
static uint64_t nq_d4_leaves(nq_d4_search *s, uint32_t free, uint32_t left, uint32_t down, uint32_t right,
                             uint64_t *placed)
{
    uint32_t board[32];
    uint64_t count = 0;
    int i;

    while (free) {
        uint32_t bit = nq_d4_lowbit(free), last;
        free ^= bit;
        (*placed)++;
        last = ~(((left | bit) << 1) | down | bit | ((right | bit) >> 1)) & s->mask;
        if (last == 0 || (last & s->lastmask) != 0)
            continue;
        if (s->corner) {
            count += 8;
            continue;
        }
        for (i = 0; i < s->n - 2; i++)
            board[i] = nq_d4_lowbit(s->s_bm[i]);
        board[s->n - 2] = bit;
        board[s->n - 1] = last;
        count += (uint64_t)nq_d4_check(s->n, board, s->b1, s->b2);
    }
    return count;
}

/* One function (about 70 lines): serial-d4's hot loop, which kernels/fast.cu follows step
 * for step; its speed is what the CPU references measure. */
uint64_t nq_d4_solve(int n, const nq_d4_task *t, uint64_t *nodes)
{
    nq_d4_search s;
    uint32_t left = t->w[0], down = t->w[1], right = t->w[2], bm;
    uint64_t count = 0, placed = 0;
    int y, i;

    s.n = n;
    s.mask = (1u << n) - 1u;
    s.side = (1u << (n - 1)) | 1u;
    s.y0 = (int)(t->w[3] & 31u);
    s.b1 = (int)((t->w[3] >> 5) & 31u);
    s.corner = (t->w[3] & NQ_D4_CORNER) != 0;
    s.b2 = s.corner ? -1 : (int)((t->w[3] >> 10) & 31u);
    s.excl = s.corner ? 2u : s.side;
    s.lastmask = s.corner ? 0u : nq_d4_lastmask(n, s.b1);
    /* s_bm[y]: row y's candidates when the search went below it, the placed queen being
     * the lowest; for the expanded rows, the queen alone. The board is their low bits. */
    for (i = 0; i < s.y0; i++)
        s.s_bm[i] = 1u << ((t->w[4 + i / 4] >> (8 * (i % 4))) & 31u);
    y = s.y0;
    bm = nq_d4_row(y, left, down, right, s.mask, s.b1, s.b2, s.excl, s.side);
    if (y == n - 2) {
        count = nq_d4_leaves(&s, bm, left, down, right, &placed);
        bm = 0;
    }
    /* One queen per step on rows y0..N-3; row N-2 is finished by nq_d4_leaves; a child
     * whose next row has no free square (rules aside) is not entered. */
    for (;;) {
        uint32_t bit, nl, nd, nr, child;
        if (bm == 0) {
            if (y == s.y0)
                break;
            y--;
            bm = s.s_bm[y];
            bit = nq_d4_lowbit(bm);
            bm ^= bit;
            down ^= bit;
            left = s.s_left[y];
            right = s.s_right[y];
            continue;
        }
        bit = nq_d4_lowbit(bm);
        placed++;
        nl = (left | bit) << 1;
        nd = down | bit;
        nr = (right | bit) >> 1;
        child = nq_d4_row(y + 1, nl, nd, nr, s.mask, s.b1, s.b2, s.excl, s.side);
        if (y + 1 == n - 2) {
            s.s_bm[y] = bm;
            count += nq_d4_leaves(&s, child, nl, nd, nr, &placed);
            bm ^= bit;
            continue;
        }
        if (child == 0 || (~((nl << 1) | nd | (nr >> 1)) & s.mask) == 0) {
            bm ^= bit;
            continue;
        }
        s.s_bm[y] = bm;
        s.s_left[y] = left;
        s.s_right[y] = right;
        y++;
        left = nl;
        down = nd;
        right = nr;
        bm = child;
    }
    if (nodes != NULL)
        *nodes += placed;
    return count;
}

/* Plain enumeration for the boards too small for the D4 search (N < 4). */
static uint64_t nq_d4_plain(int n, int y, uint32_t left, uint32_t down, uint32_t right)
{
    uint32_t free = ~(left | down | right) & ((1u << n) - 1u);
    uint64_t count = 0;

    if (y == n)
        return 1;
    while (free) {
        uint32_t bit = nq_d4_lowbit(free);
        free ^= bit;
        count += nq_d4_plain(n, y + 1, (left | bit) << 1, down | bit, (right | bit) >> 1);
    }
    return count;
}

uint64_t nq_d4_serial(int n, uint64_t *nodes)
{
    /* Depth 2 gives fewer than N*N tasks (N-3 corner boards, then two rows). */
    nq_d4_task tasks[NQ_D4_MAX_N * NQ_D4_MAX_N];
    uint64_t total = 0;
    size_t count, i;

    if (n < 1 || n > NQ_D4_MAX_N)
        return 0;
    if (n < NQ_D4_MIN_N)
        return nq_d4_plain(n, 0, 0, 0, 0);
    count = nq_d4_expand(n, NQ_D4_MIN_DEPTH, tasks, sizeof tasks / sizeof tasks[0]);
    for (i = 0; i < count; i++)
        total += nq_d4_solve(n, &tasks[i], nodes);
    return total;
}
