/*
 * Start constellations for N-Queens (the method of Preusser's Q27 and of NQueensFAF):
 * the task layout and the per-task search, shared by the C extension nqprof._cpu
 * (constellations.c: the host generator, the CPU strategy serial-d4) and the GPU kernel
 * kernels/constellation.cu (strategy fast), which runs these very functions. Plain C;
 * under nvcc every function is __host__ __device__.
 *
 * The frame of a solution is its queens on the outer lines: (0, a) in the first row,
 * (N-1, b) in the last row, (c, 0) in the first column and (d, N-1) in the last column (a
 * corner queen is two of them: a = 0 means c = 0, a = N-1 means d = 0, b = 0 means
 * c = N-1, b = N-1 means d = N-1). Every solution has exactly one frame and the dihedral
 * group D4 maps the frames of solutions onto each other, so the solutions split by frame
 * and the total is the sum over the D4 classes of frames of (orbit size, 1 to 8) x (the
 * solutions with the class's representative frame). The host enumerates the valid frames
 * (their queens pairwise non-attacking), keeps the smallest of each class (by the key
 * a + N (b + N (c + N d))) with its orbit size as weight, and places `depth` more queens
 * on the free rows (rows 1..N-2 other than c and d) to make tasks.
 *
 * A task is 4 little-endian uint32 words (one 16-byte load on the GPU):
 *   w0 ld    left-diagonal attacks of the queens placed on free rows, at row `start`
 *            (shifted left one bit per row; bits at or above N allowed)
 *   w1 rd    right-diagonal attacks of those queens at row `start` (shifted right)
 *   w2 col   occupied columns: the frame's (0, N-1, a, b) and the placed queens' (only
 *            bits below N)
 *   w3 info  bits 0-4 start (the first free row left to search; N-1 when the frame has
 *            no free row: the frame alone is a solution), 5-9 a, 10-14 b, 15-19 c,
 *            20-24 d, 25-28 weight (the orbit size, 1..8)
 * Bit j of a task's mask is column j. The frame queens' attacks are not in ld/rd: the
 * search recomputes them per row (nq_cst_frame_at) when it starts a task.
 *
 * The search of one task is a plain bitmask DFS over the free rows from `start` on,
 * with no symmetry test: level k is the k-th free row. Its masks hold column j at bit
 * j + NQ_CST_OFF (= 5; nq_cst_begin shifts a task's words in, nq_cst_spill out): bits 0-4
 * are always taken (set in the columns word, as are the bits of columns N and up). Level
 * k's word P[k] holds the frame's attacks on its row (column j at bit j + 5) and, in bits
 * 0-4, the distance to the next free row (1 to 3: a frame row or two between them are
 * skipped by shifting the diagonals further). P[k] is itself the shift amount of the
 * diagonals on the GPU: a funnel shift takes its count mod 32, which is the distance.
 * The last free row is never entered: the step on the row before it adds popc(its free
 * squares). Masks are 32-bit (so N <= 27), counts 64-bit. The per-thread storage is 5
 * words per level, reached through a base pointer and a stride (1 on the CPU; the block
 * size on the GPU, where the words of consecutive threads lie in consecutive banks):
 *   stack[(5 k + 0) stride]  P[k]
 *   stack[(5 k + 1) stride]  the candidates of level k left when the search went below
 *                            it (stored only if some are left)
 *   stack[(5 k + 2) stride]  ld at level k        stack[(5 k + 3) stride]  rd at level k
 *   stack[(5 k + 4) stride]  the occupied columns at level k
 * and one word more: P[last + 1] = all ones (no free square), which ends every search
 * path at the last level without a test and marks the row before the last (its bit 2, 0
 * in every level's word: nq_cst_marker); nq_cst_stack_words() gives the size.
 */
#ifndef NQ_CONSTELLATIONS_H
#define NQ_CONSTELLATIONS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define NQ_CST_FN static __host__ __device__ __forceinline__
#else
#define NQ_CST_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NQ_CST_MIN_N 1
#define NQ_CST_MAX_N 27 /* the search's masks keep bits 0-4 below column 0 */
#define NQ_CST_WORDS 4
#define NQ_CST_OFF 5 /* the bit of column 0 in the search's masks; P[k]'s row distance below it */
#define NQ_CST_LEVEL_WORDS 5

typedef struct {
    uint32_t w[NQ_CST_WORDS];
} nq_cst_task;

/* The info word from its fields. */
NQ_CST_FN uint32_t nq_cst_info(unsigned start, unsigned a, unsigned b, unsigned c, unsigned d, unsigned weight)
{
    return (start & 31u) | ((a & 31u) << 5) | ((b & 31u) << 10) | ((c & 31u) << 15) | ((d & 31u) << 20) |
           ((weight & 15u) << 25);
}

/* The state of one task's search (registers on the GPU). A level is reached through its
 * offset in the stack, level x NQ_CST_LEVEL_WORDS x stride (no multiply per step). The
 * masks hold column j at bit j + 5; an idle search (no candidate anywhere) has bm 0 and,
 * after its first step, col all ones. */
typedef struct {
    uint32_t ld, rd, col, bm; /* masks and candidates at the current level; col has bits 0-4 and the
                               * bits of columns N and up set */
    uint32_t p;               /* P of the current level */
    uint32_t live;            /* bit j: level j, above the current one, is stored with candidates left */
    uint32_t kbit;            /* 1 << the current level */
    int at, last;             /* offsets of the current level and of the last level (counted, never
                               * entered; -1: no level) */
    uint32_t weight;
    uint64_t cnt, nodes;      /* completions of the task so far, queens placed */
} nq_cst_state;

NQ_CST_FN uint32_t nq_cst_lowbit(uint32_t x) { return x & (0u - x); }

/* The row distance of a level's word p (bits 0-4); the shift amount of p (what nq_cst_shl
 * and nq_cst_shr take: on the GPU the word itself, whose shifts take it mod 32, on the
 * host the distance); x shifted by it (left: the left diagonals). */
NQ_CST_FN uint32_t nq_cst_dist(uint32_t p) { return p & 31u; }

NQ_CST_FN uint32_t nq_cst_shamt(uint32_t p)
{
#ifdef __CUDA_ARCH__
    return p;
#else
    return nq_cst_dist(p);
#endif
}

NQ_CST_FN uint32_t nq_cst_shl(uint32_t x, uint32_t a)
{
#ifdef __CUDA_ARCH__
    return __funnelshift_l(0u, x, a); /* x << (a & 31): one SHF */
#else
    return x << a;
#endif
}

NQ_CST_FN uint32_t nq_cst_shr(uint32_t x, uint32_t a)
{
#ifdef __CUDA_ARCH__
    return __funnelshift_r(x, 0u, a); /* x >> (a & 31) */
#else
    return x >> a;
#endif
}

/* 1 if p is the all-ones word after the last level, 0 if a level's word: its bit 2 (a
 * level's distance is at most 3). On the GPU by multiplies, which it issues to its
 * multiply-add pipe. */
NQ_CST_FN uint32_t nq_cst_marker(uint32_t p)
{
#ifdef __CUDA_ARCH__
    return __umulhi(p * (1u << 29), 2u); /* bit 2 */
#else
    return (p >> 2) & 1u;
#endif
}

NQ_CST_FN int nq_cst_popc(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return __popc(x);
#else
    return __builtin_popcount(x);
#endif
}

/* The frame's diagonals as two 64-bit masks: a queen (r, j) sets bit 32 + j - r of *lm
 * (the diagonal j - r = const) and bit j + r of *rm (j + r = const); row r's attacked
 * squares are then bits 0..N-1 of ((lm << r) >> 32) | (rm >> r) (nq_cst_frame_at). */
NQ_CST_FN void nq_cst_frame_masks(int n, int a, int b, int c, int d, uint64_t *lm, uint64_t *rm)
{
    *lm = (1ull << (32 + a)) | (1ull << (32 + b - (n - 1))) | (1ull << (32 - c)) | (1ull << (32 + (n - 1) - d));
    *rm = (1ull << a) | (1ull << (b + n - 1)) | (1ull << c) | (1ull << (n - 1 + d));
}

/* Row r's squares attacked diagonally by the frame of masks lm, rm (all 32 bits; the
 * caller masks the board). */
NQ_CST_FN uint32_t nq_cst_frame_at(uint64_t lm, uint64_t rm, int r)
{
    return (uint32_t)((lm << r) >> 32) | (uint32_t)(rm >> r);
}

/* The squares of row r attacked diagonally by the frame's queens (bits below N). */
NQ_CST_FN uint32_t nq_cst_frame_row(int n, int r, int a, int b, int c, int d)
{
    uint64_t lm, rm;
    nq_cst_frame_masks(n, a, b, c, d, &lm, &rm);
    return nq_cst_frame_at(lm, rm, r) & ((n >= 32) ? 0xffffffffu : ((1u << n) - 1u));
}

/* Starts the search of `task`: shifts its words into the search's layout, fills P on the
 * stack (and the all-ones word after the last level), sets the state. Returns 1 if the
 * task has nodes left to step through, 0 if it is finished already (s->cnt holds its
 * count: a frame without free rows, or a task whose start row is the last free row). */
NQ_CST_FN int nq_cst_begin(nq_cst_state *s, const uint32_t *task, int n, uint32_t *stack, int stride)
{
    const uint32_t info = task[3];
    const int start = (int)(info & 31u), a = (int)((info >> 5) & 31u), b = (int)((info >> 10) & 31u);
    const int c = (int)((info >> 15) & 31u), d = (int)((info >> 20) & 31u);
    const uint32_t board = (n >= 32) ? 0xffffffffu : ((1u << n) - 1u);
    uint64_t lm, rm;
    int r, k = 0;
    uint32_t f;

    s->ld = task[0] << NQ_CST_OFF;
    s->rd = task[1] << NQ_CST_OFF;
    s->col = (task[2] << NQ_CST_OFF) | ~(board << NQ_CST_OFF);
    s->weight = (info >> 25) & 15u;
    s->cnt = 0;
    s->nodes = 0;
    s->at = 0;
    s->bm = 0;
    s->live = 0;
    s->kbit = 1;
    if (start > n - 2) { /* no free row: the frame (and the placed queens) is a solution */
        s->last = -1;
        s->cnt = 1;
        return 0;
    }
    nq_cst_frame_masks(n, a, b, c, d, &lm, &rm);
    /* start is a free row; each level's word: its row's frame attacks (column j at bit
     * j + 5), the distance to the next free row (past at most the two frame rows c and d)
     * in bits 0-4 */
    for (r = start; r <= n - 2; k++) {
        int next = r + 1;
        next += next == c || next == d;
        next += next == c || next == d;
        stack[(NQ_CST_LEVEL_WORDS * k) * stride] = (nq_cst_frame_at(lm, rm, r) & board) << NQ_CST_OFF | (uint32_t)(next - r);
        r = next;
    }
    stack[(NQ_CST_LEVEL_WORDS * k) * stride] = 0xffffffffu; /* past the last level: nothing free */
    s->last = (k - 1) * NQ_CST_LEVEL_WORDS * stride;
    s->p = stack[0];
    f = ~(s->ld | s->rd | s->col | s->p);
    if (k == 1) { /* the start row is the last free row */
        s->cnt = (uint64_t)nq_cst_popc(f);
        s->nodes = s->cnt;
        return 0;
    }
    s->bm = f;
    return f != 0;
}

/* 1 while the task has work left (a candidate at the current level or a stored one). */
NQ_CST_FN int nq_cst_busy(const nq_cst_state *s) { return (s->bm | s->live) != 0; }

/* The highest set bit of x != 0 (one FLO on the GPU). */
NQ_CST_FN int nq_cst_highbit(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return 31 - __clz(x);
#else
    return 31 - __builtin_clz(x);
#endif
}

/* One step, one queen placed. If the level has no candidate left, the search goes back to
 * the nearest level that has (the highest bit of `live`): no step is spent on a level with
 * nothing left, and a level is stored (its remaining candidates, ld, rd and columns) only
 * when the search goes below it with candidates left. A search with no candidate anywhere
 * (idle) takes every column instead, so that its placement (of no candidate) finds no
 * free square: nothing tests for a candidate. Then the lowest candidate is placed; its bit
 * is free in ld, rd and the columns, so placing it is an add, as are taking it from the
 * candidates (a subtract) and marking a level in `live` (the GPU issues adds to its
 * multiply-add pipe, beside the logic ops' busy one). The search enters the next row if
 * the row after it has a free square given the placement (the look-ahead); the next row's
 * own free squares are not tested: a placement that leaves none is entered all the same,
 * and the next step pops straight back past the empty level, as it pops past any. The last
 * row is never entered: every step adds popc(the next row's free squares) x the marker of
 * the look-ahead's word (nq_cst_marker: 1 only for the all-ones word after the last level,
 * so only on the row before the last, where that word also fails the look-ahead; an idle
 * search has no free square). Levels are reached by their offsets, so a step has no
 * multiply but a pop's; every change is predicated but a pop's loads (one instruction
 * stream per warp). The steps it replaced are in docs/results/fast-ladder.md. An idle
 * search is left as it is (but its columns), so a caller may step without asking
 * nq_cst_busy. count_nodes (a constant): also count the queens placed. */
NQ_CST_FN void nq_cst_step(nq_cst_state *s, uint32_t *stack, int stride, const int count_nodes)
{
    const int lw = NQ_CST_LEVEL_WORDS * stride; /* one level's words */
    uint32_t bm = s->bm, ld = s->ld, rd = s->rd, col = s->col, p = s->p, live = s->live, kbit = s->kbit;
    int at = s->at;
    if (bm == 0 && live != 0) { /* back to the nearest stored level, its words as stored */
        const int k = nq_cst_highbit(live);
        kbit = 1u << k;
        live = live - kbit;
        at = k * lw;
        p = stack[at];
        bm = stack[at + stride];
        ld = stack[at + 2 * stride];
        rd = stack[at + 3 * stride];
        col = stack[at + 4 * stride];
    } else if (bm == 0) {
        col = 0xffffffffu; /* idle: no square free */
    }
    {
        const int any = bm != 0; /* none: an idle search, nothing is placed or counted */
        const uint32_t bit = nq_cst_lowbit(bm), rest = bm - bit, sh = nq_cst_shamt(p);
        const uint32_t nl = nq_cst_shl(ld + bit, sh), nr = nq_cst_shr(rd + bit, sh), nc = col + bit;
        const uint32_t np = stack[at + lw], np2 = stack[at + 2 * lw];
        const uint32_t f = ~(nl | nr | nc | np), sh1 = nq_cst_shamt(np);
        const int push = (nq_cst_shl(nl, sh1) | nq_cst_shr(nr, sh1) | nc | np2) != 0xffffffffu;
        const uint32_t m = (uint32_t)nq_cst_popc(f) * nq_cst_marker(np2); /* the last row */
        s->cnt += (uint64_t)m;
        if (count_nodes)
            s->nodes += (uint64_t)m + (uint64_t)any;
        if (push) {
            if (rest != 0) { /* the level's words, read back when the search returns */
                stack[at + stride] = rest;
                stack[at + 2 * stride] = ld;
                stack[at + 3 * stride] = rd;
                stack[at + 4 * stride] = col;
                live = live + kbit;
            }
            at += lw;
            kbit <<= 1;
            bm = f;
            ld = nl;
            rd = nr;
            col = nc;
            p = np;
        } else {
            bm = rest;
        }
        s->live = live;
        s->kbit = kbit;
        s->at = at;
        s->bm = bm;
        s->ld = ld;
        s->rd = rd;
        s->col = col;
        s->p = p;
    }
}

/* Completions of one task (unweighted); adds the queens placed to *nodes if not NULL.
 * `stack` holds nq_cst_stack_words(n, depth) words at stride 1. */
NQ_CST_FN uint64_t nq_cst_solve(const uint32_t *task, int n, uint32_t *stack, uint64_t *nodes)
{
    nq_cst_state s;
    if (nq_cst_begin(&s, task, n, stack, 1)) {
        if (nodes != NULL) {
            while (nq_cst_busy(&s))
                nq_cst_step(&s, stack, 1, 1);
        } else {
            while (nq_cst_busy(&s))
                nq_cst_step(&s, stack, 1, 0);
        }
    }
    if (nodes != NULL)
        *nodes += s.nodes;
    return s.cnt;
}

/* Task i of out[0..cap) (4 words each, one 16-byte store on the GPU); nothing past cap. */
NQ_CST_FN void nq_cst_put(uint32_t *out, uint64_t i, uint64_t cap, uint32_t ld, uint32_t rd, uint32_t col, uint32_t info)
{
    if (out == NULL || i >= cap)
        return;
#ifdef __CUDA_ARCH__
    ((uint4 *)out)[i] = make_uint4(ld, rd, col, info);
#else
    out[4 * i] = ld;
    out[4 * i + 1] = rd;
    out[4 * i + 2] = col;
    out[4 * i + 3] = info;
#endif
}

/* The tasks `depth` more queens below `task` (one queen on each of the next free rows,
 * as far as the row before the last free row), written to out[0..cap) in the order of a
 * depth-first placement, lowest column first; returns how many there are, also past cap.
 * A placement whose next row has no free square is dropped, and so is a task whose start
 * row has none. A frame's task (depth 0, nq_cst_tasks(n, 0)) expanded by `depth` gives
 * exactly its part of nq_cst_tasks(n, depth), in the same order: the host's generator
 * and the GPU's (kernels/constellation.cu, one thread a frame) both run this; one function
 * so that both compile the same loop. */
NQ_CST_FN uint64_t nq_cst_split(const uint32_t *task, int n, int depth, uint32_t *out, uint64_t cap)
{
    const uint32_t info = task[3], board = (n >= 32) ? 0xffffffffu : ((1u << n) - 1u);
    const int start = (int)(info & 31u), a = (int)((info >> 5) & 31u), b = (int)((info >> 10) & 31u);
    const int c = (int)((info >> 15) & 31u), d = (int)((info >> 20) & 31u);
    int rows[NQ_CST_MAX_N];
    uint32_t fr[NQ_CST_MAX_N], cand[NQ_CST_MAX_N], ld[NQ_CST_MAX_N], rd[NQ_CST_MAX_N], col[NQ_CST_MAX_N];
    uint64_t lm, rm, count = 0;
    int nrows = 0, place, i = 0, r;

    if (start > n - 2) { /* no free row: the task is a solution as it stands */
        nq_cst_put(out, 0, cap, task[0], task[1], task[2], info);
        return 1;
    }
    nq_cst_frame_masks(n, a, b, c, d, &lm, &rm);
    for (r = start; r <= n - 2; nrows++) { /* the free rows from start on (as nq_cst_begin) */
        int next = r + 1;
        next += next == c || next == d;
        next += next == c || next == d;
        rows[nrows] = r;
        fr[nrows] = nq_cst_frame_at(lm, rm, r) & board;
        r = next;
    }
    place = depth < nrows - 1 ? depth : nrows - 1;
    ld[0] = task[0];
    rd[0] = task[1];
    col[0] = task[2];
    cand[0] = ~(ld[0] | rd[0] | col[0] | fr[0]) & board;
    if (cand[0] == 0)
        return 0;
    if (place == 0) {
        nq_cst_put(out, 0, cap, task[0], task[1], task[2], info);
        return 1;
    }
    for (;;) {
        uint32_t bit, nl, nr, nc, nf;
        int sh;
        if (cand[i] == 0) {
            if (i == 0)
                break;
            i--;
            continue;
        }
        bit = nq_cst_lowbit(cand[i]);
        cand[i] ^= bit;
        sh = rows[i + 1] - rows[i];
        nl = (ld[i] | bit) << sh;
        nr = (rd[i] | bit) >> sh;
        nc = col[i] | bit;
        nf = ~(nl | nr | nc | fr[i + 1]) & board;
        if (nf == 0)
            continue;
        if (i + 1 == place) {
            nq_cst_put(out, count++, cap, nl, nr, nc, (info & ~31u) | (uint32_t)rows[place]);
            continue;
        }
        i++;
        ld[i] = nl;
        rd[i] = nr;
        col[i] = nc;
        cand[i] = nf;
    }
    return count;
}

/* Spilling (strategies cdp-cst and graph-cst: a search that has taken more steps than
 * its budget hands the rest of its subtree to a later grid). What is left of a search is
 * the candidates of its current level (s->bm) and those stored with each level whose bit
 * is set in s->live; each becomes one task: the node one queen deeper, starting at the
 * next free row, with the frame and weight of `info` (the info word of the task being
 * searched). Placing the candidate at level k shifts the diagonals by level k's row
 * distance (bits 0-4 of P[k]), as nq_cst_step does, and its words are shifted out to the
 * task layout (column j at bit j). Those tasks and the completions already in s->cnt
 * count exactly what the search would still have counted, each once
 * (tests/test_cdp_cst.py checks it through cst_budget_count below). */

/* The tasks nq_cst_spill would write (at least 1 for a busy search). */
NQ_CST_FN int nq_cst_spill_size(const nq_cst_state *s, const uint32_t *stack, int stride)
{
    const int lw = NQ_CST_LEVEL_WORDS * stride;
    uint32_t live = s->live;
    int total = nq_cst_popc(s->bm);
    while (live != 0) {
        const int k = nq_cst_highbit(live);
        live ^= 1u << k;
        total += nq_cst_popc(stack[k * lw + stride]);
    }
    return total;
}

/* Writes the rest of the search as nq_cst_spill_size() tasks to out[0..cap) and leaves the
 * search idle (its completions so far stay in s->cnt). Returns the tasks written. */
NQ_CST_FN int nq_cst_spill(nq_cst_state *s, const uint32_t *stack, int stride, int n, uint32_t info, uint32_t *out,
                           uint64_t cap)
{
    const int lw = NQ_CST_LEVEL_WORDS * stride, cur = nq_cst_highbit(s->kbit);
    const uint32_t board = (n >= 32) ? 0xffffffffu : ((1u << n) - 1u);
    int k, row = (int)(info & 31u), written = 0;
    for (k = 0; k <= cur; k++) {
        const int sh = (int)nq_cst_dist(stack[k * lw]);
        uint32_t cand = 0, ld = 0, rd = 0, col = 0;
        if (k == cur) {
            cand = s->bm;
            ld = s->ld;
            rd = s->rd;
            col = s->col;
        } else if ((s->live >> k) & 1u) {
            cand = stack[k * lw + stride];
            ld = stack[k * lw + 2 * stride];
            rd = stack[k * lw + 3 * stride];
            col = stack[k * lw + 4 * stride];
        }
        while (cand != 0) {
            const uint32_t bit = nq_cst_lowbit(cand);
            cand ^= bit;
            nq_cst_put(out, (uint64_t)written++, cap, ((ld | bit) << sh) >> NQ_CST_OFF, ((rd | bit) >> sh) >> NQ_CST_OFF,
                       ((col | bit) >> NQ_CST_OFF) & board,
                       (info & ~31u) | (uint32_t)(row + sh));
        }
        row += sh;
    }
    s->bm = 0;
    s->live = 0;
    return written;
}

/* Levels the storage of a task holds at (n, depth): N-2-depth, at least 2 (a finished
 * search still reads the P words of the two levels below its own). */
NQ_CST_FN int nq_cst_levels(int n, int depth)
{
    int l = n - 2 - depth;
    return l < 2 ? 2 : l;
}

/* Words of a task's storage at (n, depth) (at stride 1; times the stride on the GPU): its
 * levels and the all-ones word after them. */
NQ_CST_FN int nq_cst_stack_words(int n, int depth)
{
    return NQ_CST_LEVEL_WORDS * nq_cst_levels(n, depth) + 1;
}

#ifndef __CUDACC__
/* The host side (constellations.c). */

/* The deepest host placement for n: N-3 free rows (0 for N < 4). */
int nq_cst_max_depth(int n);

/* Writes the tasks of (n, depth) to out (at most cap; out may be NULL with cap 0) and
 * returns their number, also when it exceeds cap; 0 for arguments out of range. */
size_t nq_cst_tasks(int n, int depth, nq_cst_task *out, size_t cap);

/* 1 if the task's fields are consistent with n, else 0. */
int nq_cst_task_valid(int n, const nq_cst_task *task);

/* One node of the host's search: a placement down to some level, its masks at that level
 * and its candidates there (in the layout of nq_cst_begin: column j at bit j + 5). */
typedef struct {
    uint32_t ld, rd, col, free;
} nq_cst_node;

/* Nodes per level in the host search's work space, and the space a level takes: 4 nodes
 * (64 bytes) more, so that two levels' buffers never lie a multiple of 4 KiB apart (a CPU
 * then takes loads from one for stores to the other; unpadded, serial-d4's time at N=10
 * depended on where the buffer landed: docs/results/fast-ladder.md). */
#define NQ_CST_CHUNK 1024
#define NQ_CST_LEVEL_NODES (NQ_CST_CHUNK + 4)

/* Nodes of the work space nq_cst_search needs at n (NQ_CST_LEVEL_NODES per level). */
size_t nq_cst_work_nodes(int n);

/* Completions of one task (unweighted) by the host's own search, no nodes: the same tree
 * as nq_cst_solve (the steps the GPU runs) without its look-ahead, taken breadth-first in
 * chunks of at most NQ_CST_CHUNK nodes per level (the nodes of a level are expanded in
 * passes, one candidate of every node per pass, so that no branch depends on a
 * candidate; a CPU predicts those branches badly), the last two free rows counted
 * without a branch. `work` holds nq_cst_work_nodes(n) nodes. */
uint64_t nq_cst_search(const uint32_t *task, int n, nq_cst_node *work);

/* The weighted count of `count` tasks (sum of weight x completions) on one thread: with
 * nodes NULL by nq_cst_search in `work`, else by nq_cst_solve (work unused, may be NULL),
 * adding the queens placed to *nodes. */
uint64_t nq_cst_count(int n, int depth, const nq_cst_task *tasks, size_t count, uint64_t *nodes,
                      nq_cst_node *work);

/* Number of solutions of N-Queens, 1 <= n <= NQ_CST_MAX_N, one thread (depth 0:
 * one task per frame class); NQ_CST_NO_MEMORY if its memory cannot be had. */
#define NQ_CST_NO_MEMORY UINT64_MAX
uint64_t nq_cst_serial(int n, uint64_t *nodes);
#endif

#ifdef __cplusplus
}
#endif

#endif
