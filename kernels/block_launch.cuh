// Block-level child launches of Carneiro et al. (CDP-BP, cdp_bp.cu; CDP-DP3, cdp_dp3.cu).
//
// A block's threads each search `search` rows below their board (the bounded DFS of cdp.cuh,
// stacks in dynamic shared memory) and write every board they reach there whose next row has
// a free square into ONE region for the whole block, at a block-wide atomic index in shared
// memory; after a barrier thread 0 launches ONE child grid over the region. The host grid's
// regions are preallocated by the host, sized by the plan (the paper's bound per block):
// nothing is allocated on the device for them. A board past a region's end is never written:
// it is counted as an overflow (CDP_OVERFLOWS), the thread stops, and the run fails loudly.
//
// Shared-memory discipline (compute-sanitizer racecheck): thread 0 initialises the block's
// shared words, then a barrier; threads only add to them atomically; after the next barrier
// they are only read. No shared word is written again after a barrier that others read it
// behind.
#pragma once

#include "cdp.cuh"

// The host grid's threads: one host-expanded board each (structure of arrays).
#define BLOCK_ROOT_PARAMS                                                                           \
    const mask_t *__restrict__ cols, const mask_t *__restrict__ ld, const mask_t *__restrict__ rd, \
        const unsigned char *__restrict__ row, unsigned nboards, int n, int search, nq_board *regions, \
        unsigned region, int child_block, cdp_word *acct

__device__ __forceinline__ nq_board block_root_board(const mask_t* __restrict__ cols, const mask_t* __restrict__ ld,
                                                     const mask_t* __restrict__ rd,
                                                     const unsigned char* __restrict__ row, unsigned i) {
    return nq_board{cols[i], ld[i], rd[i], (unsigned)row[i]};
}

// Search `search` rows below `b` (if `valid`), writing the boards reached into `out` (at most
// `capacity`, index `*fill` shared by the block); returns the solutions counted on the way.
// `out` NULL with room for boards (its device allocation failed, counted as a malloc failure)
// stops at the first board to write.
__device__ __forceinline__ count_t block_search_into(bool valid, nq_board b, int n, int search, nq_board* out,
                                                     unsigned capacity, unsigned* fill, cdp_word* acct) {
    extern __shared__ mask_t stacks[];
    count_t count = 0;
    if (!valid) return 0;
    auto dfs = cdp_shared_dfs(stacks, search + 1);
    dfs.start(b.cols, b.ld, b.rd, (int)b.row, nq_free(b.cols, b.ld, b.rd, NQ_FULL(n)), search, n);
    auto save = [&](mask_t c, mask_t l, mask_t r, int w, mask_t) {
        if (out == nullptr && capacity > 0) return false;  // its allocation failed: counted there, the run fails
        const unsigned k = atomicAdd(fill, 1u);
        if (k >= capacity) {  // never with the plan's bound: accounted, never dropped silently
            cdp_count(acct, CDP_OVERFLOWS);
            return false;
        }
        out[k] = nq_board{c, l, r, (unsigned)w};
        return true;
    };
    while (dfs.active()) dfs.step(count, save);
    return count;
}

// Count (without writing them) the boards `search` rows below `b`.
__device__ __forceinline__ unsigned block_count_leaves(bool valid, nq_board b, int n, int search) {
    extern __shared__ mask_t stacks[];
    if (!valid) return 0;
    auto dfs = cdp_shared_dfs(stacks, search + 1);
    dfs.start(b.cols, b.ld, b.rd, (int)b.row, nq_free(b.cols, b.ld, b.rd, NQ_FULL(n)), search, n);
    unsigned leaves = 0;
    count_t ignored = 0;
    auto tally = [&](mask_t, mask_t, mask_t, int, mask_t) {
        ++leaves;
        return true;
    };
    while (dfs.active()) dfs.step(ignored, tally);
    return leaves;
}

// The host grid of CDP-BP and CDP-DP3: block b writes into regions[b * region ...] and its
// thread 0 launches one child grid over what the block found, through `launch(boards, count)`
// (which returns whether the launch succeeded). Every thread of the block must call it.
template <class Launch>
__device__ __forceinline__ void block_root(BLOCK_ROOT_PARAMS, Launch launch) {
    __shared__ unsigned fill;
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = i < nboards;
    const nq_board b = valid ? block_root_board(cols, ld, rd, row, i) : nq_board{0, 0, 0, 0};
    nq_board* mine = regions + (size_t)blockIdx.x * region;
    if (threadIdx.x == 0) fill = 0;
    __syncthreads();
    const count_t count = block_search_into(valid, b, n, search, mine, region, &fill, acct);
    __threadfence();  // the boards written are visible to the child grid
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned total = min(fill, region);
        if (total > 0) launch(mine, total);
    }
    nq_block_add(acct + CDP_SOLUTIONS, count);
}
