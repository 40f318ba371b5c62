/*
 * Full D4 symmetry for N-Queens (Takaken's BOUND1/BOUND2/SIDEMASK/LASTMASK algorithm):
 * the host expansion shared by the CPU strategy serial-d4 and the GPU strategy fast, and
 * the search that finishes one expanded board. Plain C, no Python: the extension
 * nqprof._cpu compiles it (d4.c).
 *
 * Every solution is one of the 8 images of a board under the dihedral group D4. The
 * search visits boards of two kinds and counts each class of equivalent boards once,
 * weighted by the size of its class (2, 4 or 8):
 *   corner:     the row-0 queen in column 0. No solution is its own image under the
 *               reflection on the main diagonal and at most one corner holds a queen, so a
 *               class with a corner queen has 8 boards, two of them with the queen in
 *               square (0, 0): the one whose row-1 queen sits in column BOUND1 (2..N-2)
 *               and whose column-1 queen sits below row BOUND1 is counted, 8 times.
 *   non-corner: the row-0 queen in column BOUND1 (1 <= BOUND1 < N-1-BOUND1 = BOUND2).
 *               Rows y < BOUND1 avoid columns 0 and N-1 (SIDEMASK); row BOUND2 needs a
 *               queen in a side column already placed or places it there; the last row
 *               avoids the LASTMASK columns; the complete board is compared with its
 *               rotations (nq_d4_check) and counts 2, 4, 8 or 0 (not canonical).
 *
 * A task (one expanded board) is 8 little-endian uint32 words, the layout the GPU kernel
 * reads with two 16-byte loads:
 *   w0 left   diagonal attacks shifted left each row (bits above N allowed)
 *   w1 down   occupied columns
 *   w2 right  diagonal attacks shifted right each row
 *   w3 info   bits 0-4: y, the next row to fill; bits 5-9: BOUND1; bits 10-14: BOUND2
 *             (31: none, the corner kind); bit 15: corner kind
 *   w4..w7    the columns of the queens of rows 0..y-1, one byte per row (row i in byte
 *             i % 4 of word 4 + i / 4), for the rotation check at the leaves
 * Bit c of a mask is column c.
 */
#ifndef NQ_D4_H
#define NQ_D4_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NQ_D4_MIN_N 4      /* smaller boards have no D4 structure worth the name */
#define NQ_D4_MAX_N 27
#define NQ_D4_MIN_DEPTH 2
#define NQ_D4_MAX_DEPTH 16 /* prefix columns: 16 bytes per task */
#define NQ_D4_WORDS 8
#define NQ_D4_NO_BOUND2 31u
#define NQ_D4_CORNER (1u << 15)

typedef struct {
    uint32_t w[NQ_D4_WORDS];
} nq_d4_task;

static inline uint32_t nq_d4_info(unsigned y, unsigned bound1, unsigned bound2, int corner)
{
    return (y & 31u) | ((bound1 & 31u) << 5) | ((bound2 & 31u) << 10) | (corner ? NQ_D4_CORNER : 0u);
}

/* The deepest expansion allowed for n: rows 2..N-2 (the search needs the last row). */
int nq_d4_max_depth(int n);

/* Expands every board of both kinds to row `depth` (NQ_D4_MIN_DEPTH..nq_d4_max_depth(n)),
 * writing at most `cap` tasks to `out` (out may be NULL with cap 0). Returns the number of
 * tasks (boards whose row `depth` has an allowed square), also when it exceeds cap. */
size_t nq_d4_expand(int n, int depth, nq_d4_task *out, size_t cap);

/* Weighted count (2/4/8 per canonical board) of the completions of one task. Adds the
 * queens placed by the search to *nodes when nodes is not NULL. The task must come from
 * nq_d4_expand for this n (checked by nq_d4_task_valid). */
uint64_t nq_d4_solve(int n, const nq_d4_task *task, uint64_t *nodes);

/* 1 if the task's fields are consistent with n (rows, bounds, prefix), else 0. */
int nq_d4_task_valid(int n, const nq_d4_task *task);

/* Number of solutions of N-Queens for 1 <= n <= NQ_D4_MAX_N through the D4 search on
 * one thread (boards below NQ_D4_MIN_N by plain enumeration). */
uint64_t nq_d4_serial(int n, uint64_t *nodes);

#ifdef __cplusplus
}
#endif

#endif
