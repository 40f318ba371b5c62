// constellation: the N-Queens count over start constellations (strategy fast's default
// kernel).
//
// The host (kernels/cpu/constellations.c, the code the CPU strategy serial-d4 runs) makes
// the tasks: one representative frame per D4 class of outer-line queens, its weight (the
// orbit size), extended by `depth` queens on free rows; 4 words per task (the layout of
// cpu/constellations.h). The per-task search is that header's nq_cst_begin/nq_cst_step,
// the very functions the CPU tests run: a plain bitmask DFS over the free rows, no
// symmetry test per node, frame rows skipped by the per-level shift, the last free row
// counted by popc, 32-bit masks and 64-bit counts. Each step places one queen: a search
// whose level has no candidate left goes back to the nearest level that has (a bit mask
// of the stored levels), levels are reached by offsets, and every change is predicated
// but a pop's loads, so a warp runs one instruction stream (on an H200 23% faster at N=20
// than the flat step it replaced, which spent a quarter of its steps on exhausted levels;
// the ladder is in docs/results/fast-ladder.md).
//
// A persistent grid: a lane whose task is finished takes the next one from a global
// index, one atomic per warp for all of its lanes that need one (warp-aggregated), so no
// lane waits for the slowest subtree of a static assignment. Between two votes each lane
// takes NQ_UNROLL steps (a lane whose task is done steps in place until the vote). The
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
#include "cpu/constellations.h"

#ifndef NQ_BLOCK
#define NQ_BLOCK 128
#endif
#ifndef NQ_MIN_BLOCKS
#define NQ_MIN_BLOCKS 1
#endif
#ifndef NQ_UNROLL
#define NQ_UNROLL 4
#endif
#ifndef NQ_COUNT_NODES
#define NQ_COUNT_NODES 0
#endif

#define CST_FULL 0xffffffffu

extern "C" __global__ void __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS)
constellation(const uint4 *__restrict__ tasks, unsigned ntasks, int n, unsigned *next, unsigned long long *out) {
    extern __shared__ uint32_t cst_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    uint32_t *const stack = cst_levels + threadIdx.x;
    const unsigned lane = threadIdx.x & 31u;

    nq_cst_state s;
    s.ld = s.rd = s.col = s.bm = s.p = s.live = 0;
    s.kbit = 1;
    s.at = 0;
    s.last = -1;
    s.weight = 0;
    s.cnt = s.nodes = 0;
    unsigned long long total = 0, nodes = 0;
    bool done = false;

    for (;;) {
        // Refill the lanes whose task is finished (warp-uniform branch).
        const bool need = !done && !nq_cst_busy(&s);
        const unsigned want = __ballot_sync(CST_FULL, need);
        if (want) {
            const int leader = __ffs(want) - 1;
            unsigned base = 0;
            if (lane == (unsigned)leader) base = atomicAdd(next, (unsigned)__popc(want));
            base = __shfl_sync(CST_FULL, base, leader);
            if (need) {
                const unsigned idx = base + __popc(want & ((1u << lane) - 1u));
                total += (unsigned long long)s.weight * s.cnt;  // the task just finished
                nodes += s.nodes;
                s.weight = 0;
                s.cnt = s.nodes = 0;
                if (idx < ntasks) {
                    const uint4 t = tasks[idx];
                    const uint32_t w[4] = {t.x, t.y, t.z, t.w};
                    nq_cst_begin(&s, w, n, stack, NQ_BLOCK);
                } else {
                    done = true;
                }
            }
            if (__all_sync(CST_FULL, done)) break;
        }
#pragma unroll
        for (int u = 0; u < NQ_UNROLL; u++) {
            nq_cst_step(&s, stack, NQ_BLOCK, NQ_COUNT_NODES);  // an idle lane's step changes nothing
        }
    }
    total += (unsigned long long)s.weight * s.cnt;
    nodes += s.nodes;
    if (total) atomicAdd(&out[0], total);
    if (NQ_COUNT_NODES && nodes) atomicAdd(&out[1], nodes);
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
