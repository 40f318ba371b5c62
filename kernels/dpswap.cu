// DP-SWAP of Plauth et al.: DP-3's idea with shared memory as a block-wide buffer for the
// boards handed to children, and one child grid per block (not per thread).
//
// Each thread takes one state (a board, its row and `avail`, the squares of its next row
// still to explore) and runs the bounded DFS `search` rows deeper, its stack in shared memory
// (search + 1 levels per thread). The boards it reaches at that depth are appended to the
// block's buffer in shared memory (an atomic index; a structure of arrays). The block's
// threads step in lock-step; once the buffer holds `threshold` states (its capacity minus the
// worst case of every thread appending one more and then dumping its whole stack) every
// thread stops and dumps the states left on its stack, each with the squares not yet visited
// as its `avail`, so no work is repeated. The block then copies the buffer to one device
// allocation and launches ONE child grid over it (one thread per state). A block whose
// threads finish without reaching the threshold hands over what the buffer holds. Children
// start at mixed rows, so the depth cannot adapt, and the nesting depth is not bounded by the
// algorithm (the runtime's limit is; a launch past it fails and is accounted).
//
// A child grid's allocation: a 16-byte header (word 0: the counter of finished blocks; the
// last block frees the allocation; word 1, with -DCDP_TIMELINE: the grid's timeline record) followed by the arrays cols, ld, rd, avail, row of
// `nstates` words each.
//
// Kernels: dpswap_root (host-launched, one thread per host-expanded board), dpswap_child.
#include "cdp.cuh"

#define DPSWAP_FIELDS 5  // cols, ld, rd, avail, row
#define DPSWAP_HEADER_WORDS 4

__host__ __device__ __forceinline__ unsigned dpswap_shared_bytes(int search, int capacity, int threads) {
    return cdp_stack_bytes(search, threads) + DPSWAP_FIELDS * sizeof(mask_t) * (unsigned)capacity;
}

extern "C" __global__ void dpswap_child(const unsigned* states, unsigned nstates, int n, int search, int capacity,
                                        int child_block, int gen, cdp_word* acct);

// The work of one block of generation `gen`; every thread of the block calls it. `self`:
// the grid's timeline record (cdp.cuh). One function (about 75 lines): the block's
// barriers order its phases (search, swap, launch), which a split would hide.
__device__ void dpswap_block(bool valid, mask_t cols, mask_t ld, mask_t rd, int row, mask_t avail, int n, int search,
                             int capacity, int child_block, int gen, cdp_word* acct, unsigned self) {
    extern __shared__ mask_t smem[];
    __shared__ unsigned fill;
    __shared__ unsigned* out;
    const int levels = search + 1;
    const unsigned cap = (unsigned)capacity;
    mask_t* buf = smem + 4 * levels * blockDim.x;  // [field][capacity]
    const unsigned threshold = cap - blockDim.x * levels;  // the host checks that this is >= 1

    if (threadIdx.x == 0) fill = 0;
    auto dfs = cdp_shared_dfs(smem, levels);
    if (valid) dfs.start(cols, ld, rd, row, avail, search, n);
    count_t count = 0;
    auto append = [&](mask_t c, mask_t l, mask_t r, int w, mask_t f) {
        const unsigned i = atomicAdd(&fill, 1u);
        if (i >= cap) {  // cannot happen with the threshold above; accounted so a bug cannot hide
            cdp_count(acct, CDP_OVERFLOWS);
            return false;
        }
        buf[i] = c;
        buf[cap + i] = l;
        buf[2 * cap + i] = r;
        buf[3 * cap + i] = f;
        buf[4 * cap + i] = (mask_t)w;
        return true;
    };
    __syncthreads();

    bool swap = false;
    while (__syncthreads_or(dfs.active())) {
        if (dfs.active()) dfs.step(count, append);
        __syncthreads();
        if (fill >= threshold) {  // the same value in every thread: nobody appends until the next barrier
            swap = true;
            break;
        }
    }
    // Every thread has read `fill` for the last time in the loop before anyone appends again
    // (the dump below): without this barrier a thread still reading it races with another's
    // atomicAdd (benign -- the value only grows past the threshold -- but a racecheck hazard).
    __syncthreads();
    if (swap) {  // dump what is left on the stack: level k with the squares not yet visited
        for (int k = 0; k <= dfs.k; ++k)
            if (dfs.f[k] && !append(dfs.c[k], dfs.l[k], dfs.r[k], dfs.row0 + k, dfs.f[k])) break;
    }
    __syncthreads();

    const unsigned total = min(fill, cap);
    if (total > 0) {
        if (threadIdx.x == 0) out = (unsigned*)cdp_malloc(acct, sizeof(unsigned) * (DPSWAP_HEADER_WORDS + DPSWAP_FIELDS * total));
        __syncthreads();
        unsigned* dst = out;
        if (dst != nullptr) {
            for (unsigned i = threadIdx.x; i < total; i += blockDim.x)
                for (int f = 0; f < DPSWAP_FIELDS; ++f) dst[DPSWAP_HEADER_WORDS + f * total + i] = buf[f * cap + i];
            if (threadIdx.x == 0) dst[0] = 0;  // finished-blocks counter of the child grid
#ifdef CDP_TIMELINE
            if (threadIdx.x == 0) dst[1] = cdp_tl_open(gen + 1, total, self);
#endif
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) {
                const unsigned grid = (total + child_block - 1) / child_block;
                if (!cdp_launch(acct, gen + 1, total, dpswap_child, dim3(grid), dim3(child_block),
                                dpswap_shared_bytes(search, capacity, child_block), (cudaStream_t)0, dst, total, n,
                                search, capacity, child_block, gen + 1, acct))
                    free(dst);
            }
        }
    }
    nq_block_add(acct + CDP_SOLUTIONS, count);
    cdp_tl_block_end(self);
}

extern "C" __global__ void dpswap_root(const mask_t* __restrict__ cols, const mask_t* __restrict__ ld,
                                       const mask_t* __restrict__ rd, const unsigned char* __restrict__ row,
                                       unsigned nboards, int n, int search, int capacity, int child_block,
                                       cdp_word* acct) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = i < nboards;
    mask_t c = 0, l = 0, r = 0;
    int w = 0;
    if (valid) {
        c = cols[i];
        l = ld[i];
        r = rd[i];
        w = row[i];
    }
    cdp_tl_block_begin(0);  // record 0: the host grid
    dpswap_block(valid, c, l, r, w, nq_free(c, l, r, NQ_FULL(n)), n, search, capacity, child_block, 0, acct, 0);
}

extern "C" __global__ void dpswap_child(const unsigned* states, unsigned nstates, int n, int search, int capacity,
                                        int child_block, int gen, cdp_word* acct) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = i < nstates;
    const unsigned* s = states + DPSWAP_HEADER_WORDS;
    mask_t c = 0, l = 0, r = 0, a = 0;
    int w = 0;
    if (valid) {
        c = s[i];
        l = s[nstates + i];
        r = s[2 * nstates + i];
        a = s[3 * nstates + i];
        w = (int)s[4 * nstates + i];
    }
    const unsigned self = cdp_tl_child(states);  // before the barrier: the last block frees `states`
    cdp_tl_block_begin(self);
    __syncthreads();  // every thread of the block has its state
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd((unsigned*)states, 1u) == gridDim.x - 1) free((void*)states);  // the last block
    }
    dpswap_block(valid, c, l, r, w, a, n, search, capacity, child_block, gen, acct, self);
}
