// The host-seeded GPU kernel of Feinbube et al. (2010), "BP-DFS" in Carneiro et al.:
// the host expands the first rows into partial boards; one thread per board finishes its
// subtree with the iterative bitmask DFS; the counts are summed on the GPU.
//
// The paper's optimisation steps differ only in where the DFS's per-level arrays (free
// squares, columns, two diagonals) live and how they are sized:
//   feinbube_local         step 0: every array in local memory, NQ_N levels
//   feinbube_shared_stack  step 1: the stack of free squares in shared memory
//   feinbube_shared_all    step 2: all four arrays in shared memory (sized at compile time)
//   feinbube_dynamic       steps 3 and 4: all four in shared memory sized at launch
//                          (`levels`: N for step 3, the rows left, N - depth, for step 4)
// NQ_N (levels for steps 0-2) and NQ_BLOCK (threads per block, steps 1-2) are -D defines.
// A step whose static shared arrays would not fit in 48 KiB is left out of the build (the
// host refuses that combination before building), so the other steps still compile.
#include "common.cuh"

#ifndef NQ_N
#define NQ_N 32
#endif
#ifndef NQ_BLOCK
#define NQ_BLOCK 128
#endif

#define FEINBUBE_ARGS                                                                            \
    const mask_t *__restrict__ cols, const mask_t *__restrict__ ld, const mask_t *__restrict__ rd, \
        const unsigned char *__restrict__ row, unsigned int nboards, int n, int levels, count_t *total

// One thread per board; threads past the last board only join the block's reduction.
template <class F, class C, class L, class R>
__device__ __forceinline__ void feinbube_thread(F& f, C& c, L& l, R& r, FEINBUBE_ARGS) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    count_t v = 0;
    if (i < nboards) v = nq_dfs(f, c, l, r, cols[i], ld[i], rd[i], n - (int)row[i], NQ_FULL(n));
    nq_block_add(total, v);
}

extern "C" __global__ void feinbube_local(FEINBUBE_ARGS) {
    LocalLevels<NQ_N> f, c, l, r;
    feinbube_thread(f, c, l, r, cols, ld, rd, row, nboards, n, levels, total);
}

#define NQ_STATIC_FITS(arrays) ((arrays) * NQ_N * NQ_BLOCK * 4 + 256 <= 48 * 1024)

#if NQ_STATIC_FITS(1)
extern "C" __global__ void __launch_bounds__(NQ_BLOCK) feinbube_shared_stack(FEINBUBE_ARGS) {
    __shared__ mask_t stack[NQ_N * NQ_BLOCK];
    StridedLevels f{stack + threadIdx.x, NQ_BLOCK};
    LocalLevels<NQ_N> c, l, r;
    feinbube_thread(f, c, l, r, cols, ld, rd, row, nboards, n, levels, total);
}
#endif

#if NQ_STATIC_FITS(4)
extern "C" __global__ void __launch_bounds__(NQ_BLOCK) feinbube_shared_all(FEINBUBE_ARGS) {
    __shared__ mask_t arrays[4 * NQ_N * NQ_BLOCK];
    StridedLevels f = nq_strided(arrays, NQ_N, 0), c = nq_strided(arrays, NQ_N, 1),
                  l = nq_strided(arrays, NQ_N, 2), r = nq_strided(arrays, NQ_N, 3);
    feinbube_thread(f, c, l, r, cols, ld, rd, row, nboards, n, levels, total);
}
#endif

extern "C" __global__ void feinbube_dynamic(FEINBUBE_ARGS) {
    extern __shared__ mask_t dyn[];
    StridedLevels f = nq_strided(dyn, levels, 0), c = nq_strided(dyn, levels, 1),
                  l = nq_strided(dyn, levels, 2), r = nq_strided(dyn, levels, 3);
    feinbube_thread(f, c, l, r, cols, ld, rd, row, nboards, n, levels, total);
}
