// constellation: the N-Queens count over start constellations (strategy fast's default
// kernel).
//
// The host (kernels/cpu/constellations.c, the code the CPU strategy serial-d4 runs) makes
// the tasks: one representative frame per D4 class of outer-line queens, its weight (the
// orbit size), extended by `depth` queens on free rows; 4 words per task (the layout of
// cpu/constellations.h). The per-task search is that header's nq_cst_begin/nq_cst_step,
// the very functions the CPU tests run: a plain bitmask DFS over the free rows, no
// symmetry test per node, 32-bit masks (column j at bit j + 5; begin shifts a task's words
// in) and 64-bit counts. Each step places one queen: a search whose level has no
// candidate left goes back to the nearest level that has (a bit mask of the stored
// levels), levels are reached by offsets, and every change is predicated but a pop's
// loads, so a warp runs one instruction stream. Each level's word holds its row distance
// in bits 0-4 and is itself the (wrapping) shift amount of the diagonals, so frame rows
// are skipped with no extraction; ORs of disjoint bits (a placement) are adds; an idle
// lane has every column taken, so no step tests for a candidate; a push does not test the
// next row's free squares (the next step pops straight back past an empty level); the
// last free row is counted on every step as popc x a marker bit of the look-ahead's word
// (1 only on the row before the last). The steps it replaced are in
// docs/results/fast-ladder.md.
//
// A persistent grid: a lane whose task is finished takes the next one from a global
// index, one atomic per warp for all of its lanes that need one (warp-aggregated), so no
// lane waits for the slowest subtree of a static assignment. Between two votes each lane
// takes NQ_UNROLL steps (a lane whose task is done steps idle until the vote). The
// per-thread levels (NQ_CST_LEVEL_WORDS = 5 words each: the frame's attacks and row shift,
// candidates left, ld, rd, columns) live in dynamic shared memory laid out
// [level][word][NQ_BLOCK] (consecutive threads in consecutive banks); the state is in
// registers. Each thread sums weight x completions of its tasks in 64 bits and adds
// them to out[0] with one atomic at the end.
//
// -D defines: NQ_BLOCK (threads per block, the launch must use it), NQ_MIN_BLOCKS (blocks
// per multiprocessor the register allocation must allow; 1: no limit), NQ_UNROLL (steps
// between votes, default 4), NQ_COUNT_NODES (1: also count queens placed in out[1]).
// Arguments: tasks (one uint4 per task), ntasks, n, next (zeroed task index), out (two
// zeroed 64-bit counters: the weighted count, the queens placed). Dynamic shared memory:
// 4 * nq_cst_stack_words(n, depth) * NQ_BLOCK bytes (NQ_CST_LEVEL_WORDS * levels + 1 words
// a thread, levels = nq_cst_levels(n, depth)).

#include "cst_count.cuh"  // the counting loop (shared with cdp_cst.cu and graph_cst.cu)

extern "C" __global__ void __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS)
constellation(const uint4 *__restrict__ tasks, unsigned ntasks, int n, unsigned *next, unsigned long long *out) {
    extern __shared__ uint32_t cst_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    cst_no_spill none;
    cst_count_tasks(tasks, ntasks, n, next, out, cst_levels + threadIdx.x, none);
}

// The tasks made on the GPU: each frame's task (depth 0, made on the host) split `depth`
// queens deeper by the header's nq_cst_split, one thread a frame, in two passes:
// cst_split_count writes each frame's task count, the host turns them into offsets
// (exclusive prefix sums), and cst_split_write writes each frame's tasks from its offset
// on. The tasks come out exactly as the host's generator makes them, in the same order.
extern "C" __global__ void cst_split_count(const uint4 *__restrict__ frames, unsigned nframes, int n, int depth,
                                           unsigned *counts) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nframes) return;
    const uint4 f = frames[i];
    const uint32_t w[4] = {f.x, f.y, f.z, f.w};
    counts[i] = (unsigned)nq_cst_split(w, n, depth, nullptr, 0);
}

extern "C" __global__ void cst_split_write(const uint4 *__restrict__ frames, unsigned nframes, int n, int depth,
                                           const unsigned long long *__restrict__ offsets, uint4 *tasks) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nframes) return;
    const uint4 f = frames[i];
    const uint32_t w[4] = {f.x, f.y, f.z, f.w};
    const unsigned long long at = offsets[i], room = offsets[i + 1] - at;
    nq_cst_split(w, n, depth, reinterpret_cast<uint32_t *>(tasks + at), room);
}
