// Shared device code for nqprof's N-Queens kernels.
//
// A board is three bit masks and the next row to fill (see src/nqprof/subproblems.py):
// cols (occupied columns), ld (diagonal attacks, shifted left each row), rd (shifted
// right each row). Placing bit b: cols |= b; ld = (ld | b) << 1; rd = (rd | b) >> 1.
#pragma once

typedef unsigned int mask_t;
typedef unsigned long long count_t;

#define NQ_FULL(n) ((n) >= 32 ? 0xffffffffu : ((1u << (n)) - 1u))

__device__ __forceinline__ mask_t nq_free(mask_t cols, mask_t ld, mask_t rd, mask_t full) {
    return ~(cols | ld | rd) & full;
}

// Per-level arrays of the iterative DFS. Where they live is the point of Feinbube's
// optimisation steps, so the search is written once over these two storage kinds.
template <int ROWS>
struct LocalLevels {  // a per-thread array: local memory once indexed at run time
    mask_t v[ROWS];
    __device__ __forceinline__ mask_t& operator[](int k) { return v[k]; }
};

struct StridedLevels {  // a column of a [level][thread] array in shared memory (no bank conflicts)
    mask_t* base;
    int stride;
    __device__ __forceinline__ mask_t& operator[](int k) { return base[k * stride]; }
};

__device__ __forceinline__ StridedLevels nq_strided(mask_t* block_base, int levels, int which) {
    // which-th array of four [levels][blockDim] arrays laid out one after the other
    return StridedLevels{block_base + (which * levels) * blockDim.x + threadIdx.x, (int)blockDim.x};
}

// Count the completions of one board with `rows_left` rows still to fill: the iterative
// bitmask DFS with an explicit stack (free, cols, ld, rd per level). The last row's free
// squares are all solutions, so they are counted with one popcount.
template <class F, class C, class L, class R>
__device__ count_t nq_dfs(F& free_, C& cols_, L& ld_, R& rd_, mask_t cols, mask_t ld, mask_t rd, int rows_left,
                          mask_t full) {
    if (rows_left <= 0) return 1;
    mask_t f0 = nq_free(cols, ld, rd, full);
    if (rows_left == 1) return __popc(f0);
    count_t count = 0;
    int k = 0;
    cols_[0] = cols;
    ld_[0] = ld;
    rd_[0] = rd;
    free_[0] = f0;
    while (k >= 0) {
        mask_t f = free_[k];
        if (f == 0) {
            --k;
            continue;
        }
        mask_t b = f & (0u - f);
        free_[k] = f ^ b;
        mask_t c = cols_[k] | b, l = (ld_[k] | b) << 1, r = (rd_[k] | b) >> 1;
        mask_t nf = nq_free(c, l, r, full);
        if (k + 2 == rows_left) {  // the next row is the last one
            count += __popc(nf);
        } else if (nf) {
            ++k;
            cols_[k] = c;
            ld_[k] = l;
            rd_[k] = r;
            free_[k] = nf;
        }
    }
    return count;
}

// Sum one value per thread over the block and add the block's sum to *total with one
// atomic. Every thread of the block must call it.
__device__ __forceinline__ void nq_block_add(count_t* total, count_t v) {
    __shared__ count_t warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    const int in_warp = min(32, (int)blockDim.x - warp * 32);
    const unsigned mask = in_warp == 32 ? 0xffffffffu : ((1u << in_warp) - 1u);
    for (int off = 16; off > 0; off >>= 1) {
        count_t other = __shfl_down_sync(mask, v, off);
        if (lane + off < in_warp) v += other;
    }
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? warp_sums[lane] : 0;
        for (int off = 16; off > 0; off >>= 1) {
            count_t other = __shfl_down_sync(mask, v, off);
            if (lane + off < in_warp) v += other;
        }
        if (lane == 0 && v) atomicAdd(total, v);
    }
}
