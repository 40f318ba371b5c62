// graph-cst: cdp-cst's generations (kernels/cst_launch.cuh) driven by CUDA graphs, launched
// from the device (device graph launch, CUDA 12.0+) instead of CDP2 kernel launches.
//
// A graph's kernel nodes keep the arguments they were captured with, so every kernel takes
// the same parameter block and reads what varies (task counts) from the control words.
// The host instantiates, all with the device-launch flag and uploaded:
//   make     [cg_split_count -> cg_scan]          launched by the host
//   work     [cg_split_write -> cg_count(0)]      launched by cg_scan's thread 0
//   count g  [cg_count(g)], g = 1 .. gens-1       launched by the last block of cg_count(g-1)
// The handles of work and count g are cc_params.execs[0] and execs[g]. A launch goes into
// cudaStreamGraphFireAndForget or cudaStreamGraphTailLaunch (cc_params.mode); its return
// code is read and accounted as cdp.cuh's accounting counts a kernel launch (a failed launch
// is an error, never a count). One graph per counting generation: a graph may not be
// launched while an earlier launch of it runs. These kernels make no CDP kernel launch.
#include "cst_launch.cuh"

// Launch graph execs[index], which runs global generations gen .. gen + grids - 1 (their
// timeline records opened here, over `boards` items each).
__device__ __noinline__ bool cg_launch(const cc_params* P, int index, int gen, int grids, unsigned boards) {
    const unsigned parent = cc_tl_self(P, gen - 1);
    for (int k = 0; k < grids; k++) P->ctl[CC_TL + gen + k] = cdp_tl_open(gen + k, boards, parent);
    __threadfence();
    cudaGetLastError();
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
    if (fits) cg_launch(P, 0, 2, 2, P->ctl[CC_TASKS + 0]);  // split-write and counting generation 0
}

extern "C" __global__ void cg_split_write(const cc_params* P, int gen) {
    cdp_tl_block_begin(cc_tl_self(P, 2));
    cc_split_write_body(P);
    cdp_tl_block_end(cc_tl_self(P, 2));
}

extern "C" __global__ void __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS) cg_count(const cc_params* P, int g) {
    extern __shared__ uint32_t cc_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    const unsigned spilled = cc_count_body(P, g, cc_levels);
    if (spilled && g + 1 < P->gens) cg_launch(P, g + 1, CC_FIRST_COUNT + g + 1, 1, spilled);
}
