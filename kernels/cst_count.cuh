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
// NQ_BLOCK, NQ_MIN_BLOCKS, NQ_UNROLL, NQ_COUNT_NODES and NQ_BLOCK_RECORDS may be defined
// before it is included; these are their defaults.
//
// NQ_BLOCK_RECORDS=1 (a measurement build: nqprof characterize blocks) has every block of a
// counting grid write one record (nq_block_record below) to the buffer the host puts in the
// module's `nq_blocks`: its SM, when it ran by the global timer and by its SM's clock, the
// tasks its lanes took, its warps' votes and the clocks they spent taking tasks (the index
// atomic, up to its result's shuffle). The same records for a grid launched from the host,
// by a device graph and by CDP2 tell where a slower grid loses its time.
#pragma once

#ifndef NQ_BLOCK
#define NQ_BLOCK 128
#endif
#ifndef NQ_MIN_BLOCKS
#define NQ_MIN_BLOCKS 1
#endif
// The launch bounds of cdp-cst's and graph-cst's counting kernels (NQ_COUNT_BOUNDS): 2, fast's,
// NQ_BLOCK threads and at least NQ_MIN_BLOCKS blocks an SM; 1, NQ_BLOCK threads only; 0,
// none. On Hopper an SM holds one block at a time of a grid that CDP2 launches from the
// device if its kernel has launch bounds, either kind, and as many as fit without them
// (docs/cdp-on-hopper.md): cdp-cst builds with 0.
#ifndef NQ_BOUNDS
#define NQ_BOUNDS 2
#endif
#if NQ_BOUNDS == 2
#define NQ_COUNT_BOUNDS __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS)
#elif NQ_BOUNDS == 1
#define NQ_COUNT_BOUNDS __launch_bounds__(NQ_BLOCK)
#else
#define NQ_COUNT_BOUNDS
#endif
#ifndef NQ_UNROLL
#define NQ_UNROLL 4
#endif
#ifndef NQ_COUNT_NODES
#define NQ_COUNT_NODES 0
#endif
#ifndef NQ_BLOCK_RECORDS
#define NQ_BLOCK_RECORDS 0
#endif

#include "cpu/constellations.h"
#include "globaltimer.cuh"

#define CST_FULL 0xffffffffu

#if NQ_BLOCK_RECORDS
// One block's record (64 bytes; nqprof.strategies.block_records.RECORD_FIELDS). Record i is
// block i's; a block past the buffer's capacity counts as dropped.
struct nq_block_record {
    unsigned block, sm;            // blockIdx.x, %smid
    unsigned tasks, warps;         // tasks its lanes took, warps that finished
    unsigned long long start, end;    // %globaltimer ns: thread 0 on entry, the last warp's exit
    unsigned long long clock0, clock1;  // clock64 of its SM: thread 0 on entry, the last warp's exit
    unsigned long long fetch;      // clocks its warps spent taking tasks (summed over warps)
    unsigned long long votes;      // turns of the loop (votes), summed over its warps
};
struct nq_block_buffer {  // the header of cdp.cuh's record buffers: next, capacity, dropped
    unsigned next, capacity, dropped, unused;
    nq_block_record blocks[1];  // `capacity` records
};
__device__ nq_block_buffer* nq_blocks;  // set by the host before the round

// The block's record, or null where the buffer has no room for it.
__device__ __forceinline__ nq_block_record* nq_block_rec() {
    return blockIdx.x < nq_blocks->capacity ? &nq_blocks->blocks[blockIdx.x] : nullptr;
}

__device__ __forceinline__ void nq_block_begin() {
    if (threadIdx.x) return;
    nq_block_record* r = nq_block_rec();
    if (!r) {
        atomicAdd(&nq_blocks->dropped, 1u);
        return;
    }
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    r->block = blockIdx.x;
    r->sm = sm;
    r->start = nq_globaltimer();
    r->clock0 = (unsigned long long)clock64();
    atomicMax(&nq_blocks->next, blockIdx.x + 1);
}

// Lane 0 of each warp at its exit (every lane passes its own counts; the warp's are summed).
__device__ __forceinline__ void nq_block_end(unsigned took, unsigned long long fetch, unsigned long long votes) {
    unsigned tasks = took;
    for (int d = 16; d; d >>= 1) tasks += __shfl_xor_sync(CST_FULL, tasks, d);
    if ((threadIdx.x & 31u) == 0) {
        nq_block_record* r = nq_block_rec();
        if (!r) return;
        atomicMax(&r->end, nq_globaltimer());
        atomicMax(&r->clock1, (unsigned long long)clock64());
        atomicAdd(&r->tasks, tasks);
        atomicAdd(&r->warps, 1u);
        atomicAdd(&r->fetch, fetch);
        atomicAdd(&r->votes, votes);
    }
}
#endif

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
#if NQ_BLOCK_RECORDS
    nq_block_begin();
    unsigned took = 0;
    unsigned long long fetch = 0, votes = 0;
#endif

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
#if NQ_BLOCK_RECORDS
        votes++;
#endif
        if (want) {
            const int leader = __ffs(want) - 1;
            unsigned base = 0;
#if NQ_BLOCK_RECORDS
            const long long fetch0 = clock64();
#endif
            if (lane == (unsigned)leader) base = atomicAdd(next, (unsigned)__popc(want));
            base = __shfl_sync(CST_FULL, base, leader);
#if NQ_BLOCK_RECORDS
            fetch += (unsigned long long)(clock64() - fetch0);
#endif
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
#if NQ_BLOCK_RECORDS
                    took++;
#endif
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
#if NQ_BLOCK_RECORDS
    nq_block_end(took, fetch, votes);
#endif
}
