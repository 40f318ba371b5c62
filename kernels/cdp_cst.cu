// cdp-cst: fast's constellation tasks made and counted on the device, every grid after the
// host's first launched from the device with CDP2 (kernels/cst_launch.cuh has the
// generations). The host launches the split-count grid; each grid's last block to finish
// (an atomic ticket) launches the next: the scan (one block), whose thread 0 launches the
// split-write grid, whose last block launches counting generation 0: without refinement
// cc_count0, fast's constellation kernel with fast's grid, the chain's last grid; with a
// budget cc_count, whose last block launches generation 1 over the tasks spilled past the
// budget, and so on. Every launch
// goes into cudaStreamFireAndForget or cudaStreamTailLaunch (cc_params.mode) through
// cdp.cuh's cdp_launch: its return code read and accounted (a failed launch is an error,
// never a count), with the device timeline's records (-DCDP_TIMELINE).
//
// Kernels (all but cc_count0 take the parameter block and their generation's index):
// cc_split_count (host-launched), cc_scan, cc_split_write, cc_count0 and cc_count
// (device-launched).
#include "cst_launch.cuh"

extern "C" __global__ void cc_scan(const cc_params* P, int gen);
extern "C" __global__ void cc_split_write(const cc_params* P, int gen);
extern "C" __global__ void cc_count(const cc_params* P, int g);
extern "C" __global__ void cc_count0(const uint4* __restrict__ tasks, unsigned ntasks, int n, unsigned* next,
                                     unsigned long long* out, const cc_params* P);

// Launch `kernel(args...)` as global generation `gen` over `boards` items: its timeline
// record opened (the launching grid's is its parent), the launch checked and accounted.
template <class K, class... A>
__device__ __forceinline__ bool cc_launch(const cc_params* P, int gen, unsigned boards, K kernel, unsigned grid,
                                          unsigned block, unsigned shared, A... args) {
    const unsigned parent = cc_tl_self(P, gen - 1);
    P->ctl[CC_TL + gen] = cdp_tl_open(gen, boards, parent);
    __threadfence();
    const cudaStream_t stream = P->mode == CC_MODE_TAIL ? cudaStreamTailLaunch : cudaStreamFireAndForget;
    return cdp_launch(P->acct, gen, boards, kernel, dim3(grid), dim3(block), shared, stream, args...);
}

extern "C" __global__ void cc_split_count(const cc_params* P, int gen) {
    cdp_tl_block_begin(cc_tl_self(P, 0));
    cc_split_count_body(P);
    cdp_tl_block_end(cc_tl_self(P, 0));
    if (cc_last_block(&P->ctl[CC_SPLIT_TICKET])) cc_launch(P, 1, P->nframes, cc_scan, 1, CC_SCAN_BLOCK, 0, P, 1);
}

extern "C" __global__ void __launch_bounds__(CC_SCAN_BLOCK) cc_scan(const cc_params* P, int gen) {
    cdp_tl_block_begin(cc_tl_self(P, 1));
    const bool fits = cc_scan_body(P);
    cdp_tl_block_end(cc_tl_self(P, 1));
    if (fits) {
        const unsigned grid = (P->nframes + CC_SPLIT_BLOCK - 1) / CC_SPLIT_BLOCK;
        cc_launch(P, 2, P->nframes, cc_split_write, grid, CC_SPLIT_BLOCK, 0, P, 2);
    }
}

extern "C" __global__ void cc_split_write(const cc_params* P, int gen) {
    cdp_tl_block_begin(cc_tl_self(P, 2));
    cc_split_write_body(P);
    cdp_tl_block_end(cc_tl_self(P, 2));
    if (cc_last_block(&P->ctl[CC_WRITE_TICKET])) {
        const unsigned ntasks = *(volatile unsigned*)&P->ctl[CC_TASKS + 0];
        if (!ntasks) return;
        if (P->mode == CC_MODE_HOST) {
            // the measurement of the launch path (mode=host, no refinement): the host launches
            // cc_count0 itself, on its stream after this chain, over the same tasks
            P->ctl[CC_GENS] = 1;
            return;
        }
        if (P->gens > 1) {
            cc_launch(P, CC_FIRST_COUNT, ntasks, cc_count, cc_count_grid(P, ntasks), NQ_BLOCK, P->count_shared, P,
                      0);
        } else if (cc_launch(P, CC_FIRST_COUNT, ntasks, cc_count0, cc_grid(P->resident0, ntasks), NQ_BLOCK,
                             P->count_shared, (const uint4*)P->tasks, ntasks, P->n, &P->ctl[CC_NEXT + 0],
                             (unsigned long long*)(P->acct + CDP_SOLUTIONS), P)) {
            // cc_count0 has no ticket: its accepted launch is the generation (a grid that
            // faulted would fail the context, which the host sees)
            P->ctl[CC_GENS] = 1;
        }
    }
}

// Generation g+1 over the tasks generation g spilled (a call, not inlined: the launch's
// registers stay out of the counting loop's allocation).
__device__ __noinline__ void cc_count_next(const cc_params* P, int g, unsigned spilled) {
    cc_launch(P, CC_FIRST_COUNT + g + 1, spilled, cc_count, cc_count_grid(P, spilled), NQ_BLOCK, P->count_shared,
              P, g + 1);
}

extern "C" __global__ void NQ_COUNT_BOUNDS cc_count(const cc_params* P, int g) {
    extern __shared__ uint32_t cc_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    const unsigned spilled = cc_count_body(P, g, cc_levels);
    if (spilled && g + 1 < CC_MAX_GEN) cc_count_next(P, g, spilled);
}

// Counting generation 0 without refinement: fast's constellation kernel (constellation.cu),
// its code and arguments; P is read only by the timeline build.
extern "C" __global__ void NQ_COUNT_BOUNDS
    cc_count0(const uint4* __restrict__ tasks, unsigned ntasks, int n, unsigned* next, unsigned long long* out,
              const cc_params* P) {
    extern __shared__ uint32_t cc_levels[];  // [levels][NQ_CST_LEVEL_WORDS][NQ_BLOCK]
    cc_count0_body(tasks, ntasks, n, next, out, P, cc_levels);
}
