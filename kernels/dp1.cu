// DP-1 of Plauth et al.: thread swarming, a very fine-grained breadth-first expansion.
//
// A swarm grid gets one board by value and covers its next k = min(z, N - row) rows with
// N^k threads: thread t reads its index in base N as the columns of those rows (digit 0 for
// the first row). A thread whose k placements are all valid either completes the board (a
// solution, counted) or launches a new swarm grid for the board it reached. z = 1 is the
// paper's first version (a grid per row, one thread per column); z >= 2 its improved one.
// Where fewer than z rows remain the grid covers only those rows, so each solution is found
// by exactly one thread, at the end of the grid's rows.
//
// The child is launched into the default (per-block NULL) stream, into a non-blocking
// stream the thread creates and destroys, or fire-and-forget (`stream`, CDP_STREAM_*).
//
// Kernels: dp1_root (host-launched: one thread per host-expanded board, each launching that
// board's first swarm grid) and dp1_swarm (device-launched).
#include "cdp.cuh"

#define DP1_SWARM_PARAMS \
    mask_t cols, mask_t ld, mask_t rd, int row, int n, int z, int block, int stream, int gen, cdp_word *acct

extern "C" __global__ void dp1_swarm(DP1_SWARM_PARAMS);

// N^k: the threads of a swarm grid covering k rows (the host checks that N^z fits in 31 bits).
__device__ __forceinline__ unsigned dp1_threads(int n, int k) {
    unsigned t = 1;
    for (int i = 0; i < k; ++i) t *= (unsigned)n;
    return t;
}

// Launch the swarm grid of one board (generation `gen`), accounted.
__device__ void dp1_spawn(mask_t cols, mask_t ld, mask_t rd, int row, int n, int z, int block, int stream, int gen,
                          cdp_word* acct) {
    const unsigned threads = dp1_threads(n, min(z, n - row));
    const unsigned per_block = min(threads, (unsigned)block);
    const unsigned grid = (threads + per_block - 1) / per_block;
    cdp_stream s;
    if (!cdp_stream_open(acct, stream, s)) return;
    cdp_launch(acct, gen, 1, dp1_swarm, dim3(grid), dim3(per_block), 0, s.stream, cols, ld, rd, row, n, z, block,
               stream, gen, acct);
    cdp_stream_close(s);
}

extern "C" __global__ void dp1_swarm(DP1_SWARM_PARAMS) {
    const int k = min(z, n - row);
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    count_t found = 0;
    bool spawn = false;
    if (t < dp1_threads(n, k)) {
        bool valid = true;
        for (int i = 0; i < k && valid; ++i) {
            const mask_t b = 1u << (t % (unsigned)n);
            t /= (unsigned)n;
            if (b & (cols | ld | rd)) {
                valid = false;
            } else {
                cols |= b;
                ld = (ld | b) << 1;
                rd = (rd | b) >> 1;
            }
        }
        if (valid) {
            if (row + k == n)
                found = 1;
            else
                spawn = true;
        }
    }
    if (spawn) dp1_spawn(cols, ld, rd, row + k, n, z, block, stream, gen + 1, acct);
    nq_block_add(acct + CDP_SOLUTIONS, found);
}

extern "C" __global__ void dp1_root(const mask_t* __restrict__ cols, const mask_t* __restrict__ ld,
                                    const mask_t* __restrict__ rd, const unsigned char* __restrict__ row,
                                    unsigned nboards, int n, int z, int block, int stream, cdp_word* acct) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nboards) dp1_spawn(cols[i], ld[i], rd[i], (int)row[i], n, z, block, stream, 1, acct);
}
