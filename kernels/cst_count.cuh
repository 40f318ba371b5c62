// The counting loop of the constellation kernel (constellation.cu, strategy fast), shared
// with the device-launch strategies cdp-cst and graph-cst (cdp_cst.cu, graph_cst.cu).
//
// A persistent grid works through `ntasks` tasks: a lane whose task is finished takes the
// next one from a global index, one atomic per warp for all of its lanes that need one
// (warp-aggregated); between two votes each lane takes NQ_UNROLL steps of the header's
// search (cpu/constellations.h; a lane with no task steps idle: every column taken, so
// its steps place and count nothing, and none tests for a candidate). Each thread adds
// weight x completions of its tasks to out[0] at the end (and, with NQ_COUNT_NODES, the
// queens placed to out[1]).
//
// `Spill` is what a lane does with a task that has taken more steps than a budget: the
// constellation kernel has none (cst_no_spill: the code compiles to what it was before the
// loop moved here, SASS for SASS), the device-launch strategies hand the rest of its
// subtree to the next generation (cst_launch.cuh). A lane whose rest was handed over
// counts as finished and takes its next task at the same vote.
//
// NQ_BLOCK, NQ_MIN_BLOCKS, NQ_UNROLL and NQ_COUNT_NODES may be defined before it is
// included; these are their defaults.
#pragma once

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

#include "cpu/constellations.h"

#define CST_FULL 0xffffffffu

// No budget: every task is searched to its end by the lane that took it.
struct cst_no_spill {
    static constexpr bool enabled = false;
    __device__ __forceinline__ bool over(unsigned) const { return false; }
    __device__ __forceinline__ bool take(nq_cst_state*, uint32_t*, uint32_t) { return false; }
};

template <class Spill>
__device__ __forceinline__ void cst_count_tasks(const uint4* __restrict__ tasks, unsigned ntasks, int n,
                                                unsigned* next, unsigned long long* out, uint32_t* const stack,
                                                Spill& spill) {
    const unsigned lane = threadIdx.x & 31u;

    nq_cst_state s;
    s.ld = s.rd = s.col = s.bm = s.p = s.live = 0;  // idle: no candidate
    s.kbit = 1;
    s.at = 0;
    s.last = -1;
    s.weight = 0;
    s.cnt = s.nodes = 0;
    unsigned long long total = 0, nodes = 0;
    bool done = false;
    uint32_t info = 0;   // the task's info word (only with a budget: a spill's tasks keep its frame)
    unsigned steps = 0;  // steps since the task began (only with a budget)

    for (;;) {
        // Refill the lanes whose task is finished (warp-uniform branch).
        bool need = !done && !nq_cst_busy(&s);
        if (Spill::enabled) {
            // A task past its budget hands the rest of its subtree over (rare, divergent);
            // with no room left it goes on and asks again after another budget.
            // The hand-over works on a copy: a state whose address reaches the (not
            // inlined) hand-over would live in local memory for the whole loop, every step
            // loading and storing it; the copy is made and read back only here.
            if (!need && !done && spill.over(steps)) {
                nq_cst_state rest = s;
                need = spill.take(&rest, stack, info);
                if (need) {
                    s = rest;  // idle (nq_cst_spill), its completions so far kept
                } else {
                    steps = 0;
                }
            }
        }
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
                    if (Spill::enabled) {
                        info = t.w;
                        steps = 0;
                    }
                } else {
                    done = true;
                }
            }
            if (__all_sync(CST_FULL, done)) break;
        }
#pragma unroll
        for (int u = 0; u < NQ_UNROLL; u++) {
            nq_cst_step(&s, stack, NQ_BLOCK, NQ_COUNT_NODES);  // an idle lane's step places and counts nothing
        }
        if (Spill::enabled) steps += NQ_UNROLL;
    }
    total += (unsigned long long)s.weight * s.cnt;
    nodes += s.nodes;
    if (total) atomicAdd(&out[0], total);
    if (NQ_COUNT_NODES && nodes) atomicAdd(&out[1], nodes);
}
