// graph-cst: cdp-cst's generations (kernels/cst_launch.cuh) driven by CUDA graphs, launched
// from the device (device graph launch, CUDA 12.0+) instead of CDP2 kernel launches.
//
// A graph's kernel nodes keep the arguments they were captured with, so every kernel takes
// the same parameter block and reads what varies (task counts) from the control words.
// The host instantiates, all with the device-launch flag and uploaded:
//   make     [cg_split_count -> cg_scan]          launched by the host
//   work     [cg_split_write -> cg_count0]        launched by cg_scan's thread 0 (no refinement:
//                                                 fast's kernel and grid, the host's task count)
//         or [cg_split_write -> cg_count(0)]      (with a budget)
//   count g  [cg_count(g)], g = 1 .. gens-1       launched by the last block of cg_count(g-1)
// The handles of work and count g are cc_params.execs[0] and execs[g]. A launch goes into
// cudaStreamGraphFireAndForget or cudaStreamGraphTailLaunch (cc_params.mode); its return
// code, cudaGraphLaunch's own, is accounted as cdp.cuh's accounting counts a kernel launch
// (a failed launch is an error, never a count). One graph per counting generation: a graph
// may not be launched while an earlier launch of it runs.
//
// No kernel here may use the device runtime beyond cudaGraphLaunch: a kernel node of a
// graph instantiated for device launch must not use CUDA Dynamic Parallelism, and the
// driver counts any CDP2 device-runtime call as such use (cuGraphInstantiate fails with
// CUDA_ERROR_INVALID_VALUE). cudaGetLastError() is one: on sm_90 it is a CDP2 call
// (__cuda_syscall_cnpv2GetLastError in the cubin's externs), so this file never calls it
// (nor cdp.cuh's cdp_launch, which does); tests/test_cdp_cst.py checks the linked cubin
// for CDP2 calls, as devgraph.cu, whose device-launch graphs instantiate, has none.
#include "cst_launch.cuh"

// Launch graph execs[index], which runs global generations gen .. gen + grids - 1 (their
// timeline records opened here, over `boards` items each).
__device__ __noinline__ bool cg_launch(const cc_params* P, int index, int gen, int grids, unsigned boards) {
    const unsigned parent = cc_tl_self(P, gen - 1);
    for (int k = 0; k < grids; k++) P->ctl[CC_TL + gen + k] = cdp_tl_open(gen + k, boards, parent);
    __threadfence();
    const cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)P->execs[index], P->mode == CC_MODE_TAIL
                                                                                 ? cudaStreamGraphTailLaunch
                                                                                 : cudaStreamGraphFireAndForget);
    cdp_count(P->acct, CDP_LAUNCHES);
    if (e != cudaSuccess) {
        cdp_count(P->acct, CDP_LAUNCH_FAILURES);
        atomicCAS(P->acct + CDP_FIRST_ERROR, (cdp_word)0, (cdp_word)e);
        return false;
    }
    for (int k = 0; k < grids; k++) cdp_grid_launched(P->acct, gen + k, boards);
    return true;
}

extern "C" __global__ void cg_split_count(const cc_params* P, int gen) {
    cdp_tl_block_begin(cc_tl_self(P, 0));
    cc_split_count_body(P);
    cdp_tl_block_end(cc_tl_self(P, 0));
}

extern "C" __global__ void __launch_bounds__(CC_SCAN_BLOCK) cg_scan(const cc_params* P, int gen) {
    const bool fits = cc_scan_body(P);
    // split-write and counting generation 0; cg_count0 has no ticket: its graph's accepted
    // launch is the generation (a grid that faulted would fail the context, which the host sees)
    if (fits && cg_launch(P, 0, 2, 2, P->ctl[CC_TASKS + 0]) && P->gens == 1) P->ctl[CC_GENS] = 1;
}

extern "C" __global__ void cg_split_write(const cc_params* P, int gen) {
    cdp_tl_block_begin(cc_tl_self(P, 2));
    cc_split_write_body(P);
    cdp_tl_block_end(cc_tl_self(P, 2));
}

extern "C" __global__ void NQ_COUNT_BOUNDS cg_count(const cc_params* P, int g) {
    extern __shared__ uint32_t cc_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    const unsigned spilled = cc_count_body(P, g, cc_levels);
    if (spilled && g + 1 < P->gens) cg_launch(P, g + 1, CC_FIRST_COUNT + g + 1, 1, spilled);
}

// Counting generation 0 without refinement: fast's constellation kernel (constellation.cu),
// its code and arguments (the graph's node has the host's task count); P is read only by the
// timeline build.
extern "C" __global__ void NQ_COUNT_BOUNDS
    cg_count0(const uint4* __restrict__ tasks, unsigned ntasks, int n, unsigned* next, unsigned long long* out,
              const cc_params* P) {
    extern __shared__ uint32_t cc_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    cc_count0_body(tasks, ntasks, n, next, out, P, cc_levels);
}
