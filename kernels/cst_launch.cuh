// What cdp-cst (cdp_cst.cu, CDP2 launches) and graph-cst (graph_cst.cu, device graph
// launch) share: fast's constellation tasks made and counted entirely on the device.
//
// The host uploads the frames (one task of depth 0 per D4 class of outer-line queens, as
// strategy fast) and one parameter block (cc_params, in device memory, so that every
// kernel takes the same two arguments and a graph's kernel nodes, whose arguments are
// fixed, need nothing else). Then the generations, each a grid (global generation index):
//   0  cc split-count  one thread a frame: its number of tasks `depth` queens deeper
//                      (the header's nq_cst_split, as fast's cst_split_count);
//   1  cc scan         one block: exclusive prefix sums of those counts into 64-bit
//                      offsets, the total checked against the task buffer (past it: an
//                      overflow, the run fails and nothing more is launched);
//   2  cc split-write  one thread a frame: its tasks, from its offset on (as fast's
//                      cst_split_write: the tasks are the host generator's, in order);
//   3+g counting generation g: fast's persistent counting loop (cst_count.cuh) over the
//                      generation's tasks. Without refinement (gens == 1) generation 0 is
//                      the kernel cc_count0: fast's constellation kernel, the same code
//                      and arguments (tasks, ntasks, n, next, out) and fast's grid (the
//                      device's resident blocks of it, no more than the tasks fill), with
//                      the parameter block as a last argument that only the timeline
//                      build reads. With a budget (the kernel cc_count) a lane whose task
//                      has taken more than `budget` steps hands the rest of its subtree
//                      over as new tasks (nq_cst_spill) to a spill buffer; the grid's last
//                      block (an atomic ticket) launches generation g+1 over them. The last
//                      generation (`gens`) has no budget, so the recursion ends.
// Who launches what is the two files' own (cdp_cst.cu: each grid's last block launches the
// next; graph_cst.cu: graphs); they implement cc_next_* below.
//
// Every budgeted count generation reads its task count from the control words
// (ctl[CC_TASKS + g]) rather than from a kernel argument; cc_count0 takes it as fast's
// kernel does (its launch reads it from the control words, graph-cst's graph has the host's
// count, which the host checks against the device's after the round). Counts go to acct[CDP_SOLUTIONS] (kernels/cdp.cuh's
// accounting: launches and failures, per generation grids and tasks handed over).
#pragma once

#if defined(NQ_COUNT_NODES) && NQ_COUNT_NODES
#error "cdp-cst and graph-cst count into the CDP accounting, whose word 1 is not a node count"
#endif
#undef NQ_COUNT_NODES
#define NQ_COUNT_NODES 0

#include "cdp.cuh"
#include "cst_count.cuh"

// The control words (unsigned; src/nqprof/strategies/cdp_cst.py mirrors them, a test
// compares). The host sets them before each round: zero, and CC_TL + 0 = 0 (the host's
// grid is timeline record 0), the other CC_TL words CDP_TL_NONE.
#define CC_OVERFLOW 0      // tasks made past the task buffer (the run fails)
#define CC_REFUSED 1       // spills refused for want of room in the spill buffer (the lane went on)
#define CC_SPILLS 2        // lanes that handed the rest of their task over
#define CC_GENS 3          // counting generations run
#define CC_SPLIT_TICKET 4  // blocks of the split-count grid finished
#define CC_WRITE_TICKET 5  // blocks of the split-write grid finished
#define CC_TASKS 8         // + g: tasks of counting generation g (g >= 1: those generation g-1 spilled)
#define CC_NEXT 32         // + g: the next task index of counting generation g
#define CC_TICKET 56       // + g: blocks of counting generation g finished
#define CC_TL 80           // + global generation: its grid's timeline record (CDP_TL_NONE: none)
#define CC_MAX_GEN 20      // counting generations at most (3 + 20 grids nested: CDP2 allows 24)
#define CC_WORDS 104
#define CC_FIRST_COUNT 3   // the global generation of counting generation 0
#define CC_SCAN_BLOCK 1024 // threads of the scan's one block
#define CC_SPLIT_BLOCK 128 // threads per block of the split grids (one thread a frame)
#define CC_NO_BUDGET 0xffffffffu

#define CC_MODE_FIRE_AND_FORGET 0
#define CC_MODE_TAIL 1
#define CC_MODE_HOST 2  // cdp-cst: the host launches counting generation 0 after the chain

// The parameter block (src/nqprof/strategies/cdp_cst.py: PARAMS_DTYPE, same offsets).
struct cc_params {
    const uint4* frames;           //   0
    unsigned* counts;              //   8  tasks per frame
    unsigned long long* offsets;   //  16  nframes + 1
    uint4* tasks;                  //  24  task_cap tasks
    uint4* spill;                  //  32  two buffers of spill_cap tasks
    unsigned* ctl;                 //  40  CC_WORDS
    cdp_word* acct;                //  48  CDP_WORDS
    const unsigned long long* execs;  // 56  graph-cst: [0] split-write + count 0, [g] count g
    unsigned nframes;              //  64
    unsigned task_cap;             //  68
    unsigned spill_cap;            //  72
    unsigned budget;               //  76  steps (CC_NO_BUDGET: none)
    int n;                         //  80
    int depth;                     //  84
    int gens;                      //  88  counting generations at most (1: no refinement)
    int mode;                      //  92  CC_MODE_*
    unsigned resident;             //  96  blocks of a cc_count grid (the device's resident blocks)
    unsigned count_shared;         // 100  dynamic shared memory of a counting grid
    unsigned resident0;            // 104  blocks of a cc_count0 grid (the device's resident blocks)
    unsigned unused;               // 108
};
static_assert(sizeof(cc_params) == 112, "cc_params: 112 bytes (PARAMS_DTYPE)");

// True in thread 0 of the grid's last block to finish (every earlier block's writes visible).
__device__ __forceinline__ bool cc_last_block(unsigned* ticket) {
    __syncthreads();
    bool last = false;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
        if (last) __threadfence();
    }
    return last;
}

// The timeline record of the running grid (global generation `gen`).
__device__ __forceinline__ unsigned cc_tl_self(const cc_params* P, int gen) {
    return *(volatile unsigned*)&P->ctl[CC_TL + gen];
}

// A counting grid: the device's resident blocks (`resident`), no more than the tasks fill
// (fast's grid).
__device__ __forceinline__ unsigned cc_grid(unsigned resident, unsigned ntasks) {
    const unsigned need = (ntasks + NQ_BLOCK - 1) / NQ_BLOCK;
    return need < resident ? (need ? need : 1u) : resident;
}
__device__ __forceinline__ unsigned cc_count_grid(const cc_params* P, unsigned ntasks) {
    return cc_grid(P->resident, ntasks);
}

// --- generation 0: tasks per frame --------------------------------------------------------
__device__ __forceinline__ void cc_split_count_body(const cc_params* P) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P->nframes) return;
    const uint4 f = P->frames[i];
    const uint32_t w[4] = {f.x, f.y, f.z, f.w};
    P->counts[i] = (unsigned)nq_cst_split(w, P->n, P->depth, nullptr, 0);
}

// --- generation 1: offsets (one block of CC_SCAN_BLOCK threads) ---------------------------
// Returns, in thread 0, whether the tasks fit the task buffer (their number in
// ctl[CC_TASKS + 0]); a task buffer too small sets CC_OVERFLOW (a parameter's fault, not
// the accounting's block-buffer overflow, which would be nqprof's).
__device__ __forceinline__ bool cc_scan_body(const cc_params* P) {
    __shared__ unsigned long long warp_sums[CC_SCAN_BLOCK / 32];
    __shared__ unsigned long long carry;
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    if (tid == 0) carry = 0;
    __syncthreads();
    for (unsigned base = 0; base < P->nframes; base += CC_SCAN_BLOCK) {
        const unsigned i = base + tid;
        const unsigned long long v = i < P->nframes ? P->counts[i] : 0ull;
        unsigned long long x = v;  // inclusive scan within the warp
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned long long y = __shfl_up_sync(CST_FULL, x, o);
            if (lane >= (unsigned)o) x += y;
        }
        if (lane == 31) warp_sums[warp] = x;
        __syncthreads();
        if (warp == 0) {
            unsigned long long w = warp_sums[lane];
            for (int o = 1; o < 32; o <<= 1) {
                const unsigned long long y = __shfl_up_sync(CST_FULL, w, o);
                if (lane >= (unsigned)o) w += y;
            }
            warp_sums[lane] = w;
        }
        __syncthreads();
        const unsigned long long before = carry + (warp ? warp_sums[warp - 1] : 0ull) + x - v;
        if (i < P->nframes) P->offsets[i] = before;
        __syncthreads();
        if (tid == CC_SCAN_BLOCK - 1) carry = before + v;
        __syncthreads();
    }
    if (tid != 0) return false;
    const unsigned long long total = carry;
    P->offsets[P->nframes] = total;
    if (total > P->task_cap) {
        P->ctl[CC_OVERFLOW] = 1;  // the host says so, and what the task buffer must hold
        return false;
    }
    P->ctl[CC_TASKS + 0] = (unsigned)total;
    __threadfence();
    return true;
}

// --- generation 2: the tasks ------------------------------------------------------------------
__device__ __forceinline__ void cc_split_write_body(const cc_params* P) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P->nframes) return;
    const uint4 f = P->frames[i];
    const uint32_t w[4] = {f.x, f.y, f.z, f.w};
    const unsigned long long at = P->offsets[i], room = P->offsets[i + 1] - at;
    nq_cst_split(w, P->n, P->depth, reinterpret_cast<uint32_t*>(P->tasks + at), room);
}

// --- generation 3 without refinement: fast's kernel --------------------------------------------
// The body of cc_count0 (cdp_cst.cu, graph_cst.cu): the constellation kernel's
// (constellation.cu), cst_no_spill and all; the timeline build adds its grid's record.
__device__ __forceinline__ void cc_count0_body(const uint4* __restrict__ tasks, unsigned ntasks, int n,
                                               unsigned* next, unsigned long long* out, const cc_params* P,
                                               uint32_t* smem) {
#ifdef CDP_TIMELINE
    const unsigned tl = cc_tl_self(P, CC_FIRST_COUNT);
    cdp_tl_block_begin(tl);
#else
    (void)P;
#endif
    cst_no_spill none;
    cst_count_tasks(tasks, ntasks, n, next, out, smem + threadIdx.x, none);
#ifdef CDP_TIMELINE
    cdp_tl_block_end(tl);
#endif
}

// --- generations 3+g: counting, with the budget --------------------------------------------
// The refinement's hand-over: the rest of a task past its budget, as tasks appended to the
// next generation's buffer (room reserved by compare-and-swap, so that a full buffer is
// never written past: the lane then goes on with its task, counted in CC_REFUSED).
struct cc_spill {
    static constexpr bool enabled = true;
    unsigned budget, cap;
    uint4* out;
    unsigned* count;  // the next generation's task count
    unsigned* ctl;
    int n;

    __device__ __forceinline__ bool over(unsigned steps) const { return steps >= budget; }

    __device__ __noinline__ bool take(nq_cst_state* s, uint32_t* stack, uint32_t info) {
        const unsigned k = (unsigned)nq_cst_spill_size(s, stack, NQ_BLOCK);
        unsigned old = *(volatile unsigned*)count;
        for (;;) {
            if (k > cap || old > cap - k) {
                atomicAdd(ctl + CC_REFUSED, 1u);
                return false;
            }
            const unsigned got = atomicCAS(count, old, old + k);
            if (got == old) break;
            old = got;
        }
        nq_cst_spill(s, stack, NQ_BLOCK, n, info, reinterpret_cast<uint32_t*>(out + old), k);
        atomicAdd(ctl + CC_SPILLS, 1u);
        return true;
    }
};

// Counting generation g over its tasks. Returns, in thread 0 of the grid's last block, the
// number of tasks it spilled (generation g+1's; 0: the run is done), else 0.
__device__ __forceinline__ unsigned cc_count_body(const cc_params* P, int g, uint32_t* smem) {
    const unsigned tl = cc_tl_self(P, CC_FIRST_COUNT + g);
    cdp_tl_block_begin(tl);
    unsigned* ctl = P->ctl;
    const unsigned ntasks = *(volatile unsigned*)&ctl[CC_TASKS + g];
    const uint4* tasks = g == 0 ? P->tasks : P->spill + (size_t)((g - 1) & 1) * P->spill_cap;
    cc_spill spill;
    spill.budget = g + 1 < P->gens ? P->budget : CC_NO_BUDGET;
    spill.cap = P->spill_cap;
    spill.out = P->spill + (size_t)(g & 1) * P->spill_cap;
    spill.count = &ctl[CC_TASKS + g + 1];
    spill.ctl = ctl;
    spill.n = P->n;
    cst_count_tasks(tasks, ntasks, P->n, &ctl[CC_NEXT + g], P->acct + CDP_SOLUTIONS, smem + threadIdx.x, spill);
    cdp_tl_block_end(tl);
    if (!cc_last_block(&ctl[CC_TICKET + g])) return 0;
    atomicMax(&ctl[CC_GENS], (unsigned)(g + 1));
    return *(volatile unsigned*)&ctl[CC_TASKS + g + 1];
}
