// CDP-DP3 of Carneiro et al.: CDP-BP combined with DP-3's depth doubling.
//
// Every generation launches ONE child grid per block (block_launch.cuh), and the search depth
// doubles with each child generation, capped by what shared memory holds for the stacks
// (`max_search`, as DP-3's). The host grid's blocks write into regions the host
// preallocated (sized by the plan), so generation 1 needs no device allocation; a child
// block counts the boards its threads will reach (a first pass over the same bounded DFS),
// makes ONE device allocation of exactly that many, writes them in a second pass and launches
// one grid over them. The allocation starts with a 16-byte header, the counter of the child
// grid's blocks that have read their boards: the last one frees it. A block whose threads
// search to the last row counts and launches nothing (no first pass).
//
// Kernels: cdp_dp3_root (host-launched) and cdp_dp3_child (device-launched).
#include "block_launch.cuh"

// A device-launched grid of generation `gen`: thread i takes boards[i]; `header` (NULL for
// the host's preallocated regions) is the allocation to free once every block has read.
extern "C" __global__ void cdp_dp3_child(const nq_board* boards, unsigned nboards, unsigned* header, int n, int search,
                                         int max_search, int child_block, int gen, cdp_word* acct) {
    __shared__ unsigned fill, leaves;
    __shared__ nq_board* out;
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = i < nboards;
    const nq_board b = valid ? boards[i] : nq_board{0, 0, 0, 0};
    if (threadIdx.x == 0) {
        fill = 0;
        leaves = 0;
        out = nullptr;
    }
    __syncthreads();  // every thread of the block has its board; the shared words are set
    if (threadIdx.x == 0 && header != nullptr) {
        __threadfence();
        if (atomicAdd(header, 1u) == gridDim.x - 1) free(header);  // the last block to read
    }
    const int next = min(2 * search, max_search);
    // First pass, only where some thread of the block hands boards on: count them, allocate.
    if (__syncthreads_or(valid && (int)b.row + search < n)) {
        const unsigned mine = block_count_leaves(valid, b, n, search);
        if (mine) atomicAdd(&leaves, mine);
        __syncthreads();
        if (threadIdx.x == 0 && leaves > 0) {
            out = (nq_board*)cdp_malloc(acct, sizeof(nq_board) * (1 + (size_t)leaves));
            if (out != nullptr) *(unsigned*)out = 0;  // the header: blocks that have read
        }
        __syncthreads();
    }
    nq_board* dst = out == nullptr ? nullptr : out + 1;
    // Second pass: count the solutions, write the boards (a NULL allocation was counted as a
    // malloc failure; a board with no room left is counted as an overflow: the run fails loudly).
    const count_t count = block_search_into(valid, b, n, search, dst, leaves, &fill, acct);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && out != nullptr) {
        const unsigned total = min(fill, leaves);
        bool launched = false;
        if (total > 0)
            launched = cdp_launch(acct, gen + 1, total, cdp_dp3_child, dim3((total + child_block - 1) / child_block),
                                  dim3(child_block), cdp_stack_bytes(next, child_block), (cudaStream_t)0,
                                  (const nq_board*)(out + 1), total, (unsigned*)out, n, next, max_search, child_block,
                                  gen + 1, acct);
        if (!launched) free(out);
    }
    nq_block_add(acct + CDP_SOLUTIONS, count);
}

extern "C" __global__ void cdp_dp3_root(BLOCK_ROOT_PARAMS, int max_search) {
    const int next = min(2 * search, max_search);
    auto launch = [&](nq_board* boards, unsigned count) {
        return cdp_launch(acct, 1, count, cdp_dp3_child, dim3((count + child_block - 1) / child_block), dim3(child_block),
                          cdp_stack_bytes(next, child_block), (cudaStream_t)0, (const nq_board*)boards, count,
                          (unsigned*)nullptr, n, next, max_search, child_block, 1, acct);
    };
    block_root(cols, ld, rd, row, nboards, n, search, regions, region, child_block, acct, launch);
}
