// Device graph launch beside CDP: N-Queens generations driven by CUDA graphs.
//
// A generation takes every board of the current frontier (a structure of arrays in one of
// two device buffers) and either expands it by `step` rows into the other buffer (a
// breadth-first step; boards that become complete are counted) or, once the frontier has
// reached `final_row`, finishes it with common.cuh's iterative DFS (the last generation).
// What generation comes next, which buffer is current and how many boards it holds live in
// a device state array (DG_* words below, mirrored in src/nqprof/strategies/devgraph.py),
// so that every kernel's parameters are fixed device pointers: a graph's kernel nodes
// capture their parameters once, and device code cannot edit a graph.
//
// The same generation kernel (dg_step, grid-stride over the frontier) runs under three
// drivers, so that they differ only in how generations are launched:
//   host    the host launches dg_step then dg_advance for each generation and reads the
//           state back to size the next grid (a synchronisation per generation);
//   while   one host-launched graph whose WHILE conditional node runs [dg_step, dg_advance_while]
//           until dg_advance_while sets the condition to 0 (CUDA 12.3+: see dg_advance_while);
//   device  a host-launched graph of one dg_schedule thread, which advances the state, picks
//           the pre-instantiated device-launchable graph of dg_step whose grid fits the
//           frontier (grids of 1, 2, 4, ... blocks), launches it fire-and-forget and
//           tail-launches its own graph, until no generation is left (CUDA 12.0+).
// Every device graph launch's return code is accounted (DG_LAUNCHES, DG_LAUNCH_FAILURES,
// DG_FIRST_ERROR): a failed launch stops the run and the host reports it, never a count.
//
// dg_char_launch is the graph modes of the launch-cost microbenchmark (nqprof characterize
// launch): a parent kernel, itself launched from a graph, whose first `count` threads each
// launch one device-launchable graph (an empty kernel) fire-and-forget or as a tail launch;
// mode DG_CHAR_NONE is the same parent without the launch (t2).
#include <cooperative_groups.h>

#include "common.cuh"
#include "latency.cuh"

namespace cg = cooperative_groups;

#define DG_SOLUTIONS 0        // solutions counted (before the mirror factor)
#define DG_COUNT0 1           // boards in buffer 0
#define DG_COUNT1 2           // boards in buffer 1
#define DG_PARITY 3           // the buffer holding the current frontier
#define DG_ROW 4              // rows placed on the current frontier's boards
#define DG_GEN 5              // generations completed
#define DG_DONE 6             // 1 once the last generation has run (or the run stopped)
#define DG_OVERFLOW 7         // boards that did not fit in a frontier buffer (the run fails)
#define DG_LAUNCHES 8         // device graph launches attempted
#define DG_LAUNCH_FAILURES 9  // device graph launches whose return code was not cudaSuccess
#define DG_FIRST_ERROR 10     // cudaError_t of the first failed launch
#define DG_SCHED_RUNS 11      // runs of dg_schedule
#define DG_GEN_BASE 16        // per generation: boards in its frontier, blocks of its grid
#define DG_GEN_WORDS 2
#define DG_MAX_GEN 48
#define DG_WORDS (DG_GEN_BASE + DG_GEN_WORDS * DG_MAX_GEN)
#define DG_MAX_STEP 8  // rows one expansion generation may place

#define DG_CHAR_NONE 0            // t2: no launch
#define DG_CHAR_FIRE_AND_FORGET 1  // cudaStreamGraphFireAndForget
#define DG_CHAR_TAIL 2             // cudaStreamGraphTailLaunch

// The index of a new board in the next frontier: one atomic per group of converged lanes.
__device__ __forceinline__ unsigned long long dg_append_index(count_t* next) {
    cg::coalesced_group g = cg::coalesced_threads();
    unsigned long long base = 0;
    if (g.thread_rank() == 0) base = atomicAdd(next, (unsigned long long)g.size());
    base = g.shfl(base, 0);
    return base + g.thread_rank();
}

// Place k more rows on one board (a bounded DFS); boards that reach the k-th row are
// appended to the next frontier, or counted when that row is the last one.
__device__ count_t dg_expand(mask_t cols, mask_t ld, mask_t rd, int k, int rows_left, mask_t full, mask_t* nc,
                             mask_t* nl, mask_t* nr, unsigned cap, count_t* next, count_t* overflow) {
    mask_t fs[DG_MAX_STEP], cs[DG_MAX_STEP], ls[DG_MAX_STEP], rs[DG_MAX_STEP];
    count_t solved = 0;
    int d = 0;
    cs[0] = cols;
    ls[0] = ld;
    rs[0] = rd;
    fs[0] = nq_free(cols, ld, rd, full);
    while (d >= 0) {
        mask_t f = fs[d];
        if (f == 0) {
            --d;
            continue;
        }
        mask_t b = f & (0u - f);
        fs[d] = f ^ b;
        mask_t c = cs[d] | b, l = (ls[d] | b) << 1, r = (rs[d] | b) >> 1;
        if (d + 1 == k) {
            if (k == rows_left) {
                ++solved;
            } else {
                unsigned long long i = dg_append_index(next);
                if (i < cap) {
                    nc[i] = c;
                    nl[i] = l;
                    nr[i] = r;
                } else {
                    atomicAdd(overflow, 1ull);
                }
            }
        } else {
            ++d;
            cs[d] = c;
            ls[d] = l;
            rs[d] = r;
            fs[d] = nq_free(c, l, r, full);
        }
    }
    return solved;
}

// One generation over the current frontier. The boards live in one allocation of six arrays
// of `cap` masks: buffer p's cols, ld, rd at (3p + 0, 1, 2) * cap. `levels` sizes the DFS
// arrays in dynamic shared memory (4 x levels x blockDim masks): the rows left after final_row.
extern "C" __global__ void dg_step(count_t* st, mask_t* boards, unsigned cap, int n, int step, int final_row,
                                   int levels) {
    extern __shared__ mask_t dyn[];
    const int par = (int)st[DG_PARITY];
    const int row = (int)st[DG_ROW];
    const unsigned long long count = st[DG_COUNT0 + par];
    const mask_t full = NQ_FULL(n);
    const size_t c = cap;
    const mask_t* cols = boards + (3 * par + 0) * c;
    const mask_t* ld = boards + (3 * par + 1) * c;
    const mask_t* rd = boards + (3 * par + 2) * c;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (first == 0) {
        const int gen = (int)st[DG_GEN];
        if (gen < DG_MAX_GEN) st[DG_GEN_BASE + DG_GEN_WORDS * gen + 1] = gridDim.x;
    }
    count_t v = 0;
    if (row >= final_row) {
        StridedLevels f = nq_strided(dyn, levels, 0), cc = nq_strided(dyn, levels, 1),
                      l = nq_strided(dyn, levels, 2), r = nq_strided(dyn, levels, 3);
        for (unsigned long long i = first; i < count; i += stride) v += nq_dfs(f, cc, l, r, cols[i], ld[i], rd[i], n - row, full);
    } else {
        const int q = par ^ 1;
        const int k = min(step, final_row - row);
        mask_t* nc = boards + (3 * q + 0) * c;
        mask_t* nl = boards + (3 * q + 1) * c;
        mask_t* nr = boards + (3 * q + 2) * c;
        for (unsigned long long i = first; i < count; i += stride)
            v += dg_expand(cols[i], ld[i], rd[i], k, n - row, full, nc, nl, nr, cap, st + DG_COUNT0 + q, st + DG_OVERFLOW);
    }
    nq_block_add(st + DG_SOLUTIONS, v);
}

// After a generation (one thread): the next frontier becomes current, or the run is done.
// Returns true when another generation follows.
__device__ bool dg_advance_state(count_t* st, unsigned cap, int step, int final_row) {
    const int par = (int)st[DG_PARITY];
    const int row = (int)st[DG_ROW];
    const int gen = (int)st[DG_GEN] + 1;
    st[DG_GEN] = gen;
    if (row >= final_row || st[DG_OVERFLOW] || st[DG_LAUNCH_FAILURES] || gen >= DG_MAX_GEN) {
        st[DG_DONE] = 1;  // the DFS generation has run, or the run cannot go on (the host reports why)
        return false;
    }
    const int q = par ^ 1;
    st[DG_COUNT0 + par] = 0;  // the old frontier's buffer receives the generation after next
    st[DG_PARITY] = q;
    st[DG_ROW] = row + min(step, final_row - row);
    st[DG_GEN_BASE + DG_GEN_WORDS * gen] = st[DG_COUNT0 + q];
    return true;
}

extern "C" __global__ void dg_advance(count_t* st, unsigned cap, int step, int final_row) {
    dg_advance_state(st, cap, step, final_row);
}

// The last node of a WHILE node's body: the condition is whether another generation follows.
// Conditional nodes (cudaGraphConditionalHandle, cudaGraphSetConditional) came with CUDA 12.3;
// an older toolkit builds this file without the kernel, as the source's `since` in
// src/nqprof/strategies/devgraph.py declares (the while driver then refuses to run).
#if CUDART_VERSION >= 12030
extern "C" __global__ void dg_advance_while(count_t* st, unsigned cap, int step, int final_row,
                                            cudaGraphConditionalHandle handle) {
    cudaGraphSetConditional(handle, dg_advance_state(st, cap, step, final_row) ? 1u : 0u);
}
#endif

__device__ __forceinline__ void dg_account(count_t* acct, cudaError_t e) {
    atomicAdd(acct + DG_LAUNCHES, 1ull);
    if (e != cudaSuccess) {
        if (atomicAdd(acct + DG_LAUNCH_FAILURES, 1ull) == 0) acct[DG_FIRST_ERROR] = (count_t)e;
    }
}

// The device driver's scheduler, one thread in a device-launchable graph of its own. Its
// first run (launched by the host) starts generation 0; each later run (its own tail launch)
// advances the state past the generation that has just completed. `execs` holds the
// device-launchable graphs of dg_step with grids of 1, 2, 4, ... blocks (the last one the
// largest grid, used for any larger frontier: dg_step strides over the rest).
extern "C" __global__ void dg_schedule(count_t* st, const unsigned long long* execs, int nexecs, unsigned block,
                                       unsigned cap, int step, int final_row) {
    const count_t runs = st[DG_SCHED_RUNS]++;
    if (runs > 0 && !dg_advance_state(st, cap, step, final_row)) return;
    const unsigned long long count = st[DG_COUNT0 + (int)st[DG_PARITY]];
    const unsigned long long blocks = (count + block - 1) / block;
    int j = 0;
    while (j + 1 < nexecs && (1ull << j) < blocks) ++j;
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)execs[j], cudaStreamGraphFireAndForget);
    dg_account(st, e);
    if (e != cudaSuccess) {
        st[DG_DONE] = 1;
        return;
    }
    // Runs when this graph, the generation launched above included, has completed.
    e = cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
    dg_account(st, e);
    if (e != cudaSuccess) st[DG_DONE] = 1;
}

// --- the launch-cost microbenchmark's graph modes ----------------------------------------

extern "C" __global__ void dg_char_empty() {}

// Each of the first `count` threads launches execs[i % nexecs] (device-launchable graphs of
// one dg_char_empty) in `mode`; accounting in acct (DG_LAUNCHES, DG_LAUNCH_FAILURES,
// DG_FIRST_ERROR). Must itself run in a graph (device graph launches are made from graphs).
extern "C" __global__ void dg_char_launch(unsigned count, int mode, const unsigned long long* execs, int nexecs,
                                          count_t* acct) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const cudaGraphExec_t g = (cudaGraphExec_t)execs[i % (unsigned)nexecs];
    if (mode == DG_CHAR_NONE) {
        if (g == 0) atomicAdd(acct + DG_OVERFLOW, 1ull);  // keeps the table read in t2
        return;
    }
    cudaError_t e = cudaGraphLaunch(g, mode == DG_CHAR_TAIL ? cudaStreamGraphTailLaunch : cudaStreamGraphFireAndForget);
    dg_account(acct, e);
}

// --- launch latency (nqprof characterize latency; latency.cuh has the record) --------------

extern "C" __global__ void dg_lat_child(unsigned long long* rec) { lat_child_body(rec); }

// One thread launches the device-launchable graph `exec` (of dg_lat_child) fire-and-forget
// or as a tail launch (DG_CHAR_FIRE_AND_FORGET, DG_CHAR_TAIL); must itself run in a graph.
extern "C" __global__ void dg_lat_launch(unsigned long long* rec, unsigned long long exec, int mode) {
    if (blockIdx.x || threadIdx.x) return;
    lat_mark(rec, LAT_LAUNCH);
    const cudaError_t e =
        cudaGraphLaunch((cudaGraphExec_t)exec, mode == DG_CHAR_TAIL ? cudaStreamGraphTailLaunch : cudaStreamGraphFireAndForget);
    lat_mark(rec, LAT_RETURN);
    if (e != cudaSuccess) rec[LAT_ERROR] = (unsigned long long)e;
}

#if CUDART_VERSION >= 12030
// The body of a WHILE node, one thread: iteration i marks its start and end and asks for
// another iteration while i + 1 < iters (the gap from one end to the next start is the
// node's relaunch).
extern "C" __global__ void dg_lat_while(unsigned long long* rec, unsigned iters, cudaGraphConditionalHandle handle) {
    const unsigned long long start = nq_globaltimer();
    const unsigned i = (unsigned)rec[LAT_ITER]++;
    rec[LAT_ITERS + 2 * i] = start;
    cudaGraphSetConditional(handle, i + 1 < iters ? 1u : 0u);
    rec[LAT_ITERS + 2 * i + 1] = nq_globaltimer();
}
#endif
