// CDP-BP of Carneiro et al.: block-parallel child launches with no device allocation at all.
//
// The host grid (one thread per host-expanded board at `depth`) searches down to the second
// depth (`search` rows), each block writing the boards it reaches into its region of a buffer
// the host preallocated (sized by the plan: the paper's bound per block); after a barrier the
// block's thread 0 launches ONE child grid over them (generation 1, the block's NULL stream).
// A child thread finishes its board with the iterative bitmask DFS (common.cuh), its stack in
// shared memory. Two generations.
//
// Kernels: cdp_bp_root (host-launched) and cdp_bp_child (device-launched).
#include "block_launch.cuh"

// A child grid: thread i counts the completions of boards[i]; `levels` rows of stack.
extern "C" __global__ void cdp_bp_child(const nq_board* boards, unsigned nboards, int n, int levels, cdp_word* acct) {
    extern __shared__ mask_t child_stacks[];
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    count_t count = 0;
    if (i < nboards) {
        const nq_board b = boards[i];
        auto f = nq_strided(child_stacks, levels, 0);
        auto c = nq_strided(child_stacks, levels, 1);
        auto l = nq_strided(child_stacks, levels, 2);
        auto r = nq_strided(child_stacks, levels, 3);
        count = nq_dfs(f, c, l, r, b.cols, b.ld, b.rd, n - (int)b.row, NQ_FULL(n));
    }
    nq_block_add(acct + CDP_SOLUTIONS, count);
}

// The dynamic shared memory of a child block: four masks per level per thread.
__host__ __device__ __forceinline__ unsigned cdp_bp_child_shared(int levels, int threads) {
    return 4u * sizeof(mask_t) * (unsigned)(levels > 0 ? levels : 1) * (unsigned)threads;
}

extern "C" __global__ void cdp_bp_root(BLOCK_ROOT_PARAMS, int levels) {
    auto launch = [&](nq_board* boards, unsigned count) {
        const unsigned grid = (count + child_block - 1) / child_block;
        return cdp_launch(acct, 1, count, cdp_bp_child, dim3(grid), dim3(child_block),
                          cdp_bp_child_shared(levels, child_block), (cudaStream_t)0, (const nq_board*)boards, count, n,
                          levels, acct);
    };
    block_root(cols, ld, rd, row, nboards, n, search, regions, region, child_block, acct, launch);
}
