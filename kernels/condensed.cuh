// The condensed kernel of Plauth et al., shared by DP-2 (static search depth, dp2.cu) and
// DP-3 (search depth doubling per generation, dp3.cu); they differ only in the `Depth`
// policy, which gives a child grid's search depth from its parent's.
//
// Each thread takes one board and runs the bitmask DFS `search` rows deeper, its stack in
// shared memory (search + 1 levels per thread). The boards it reaches at that depth whose
// next row has a free square are saved for a child grid; if the search reaches the last row
// the thread counts solutions instead. When its subtree is exhausted the thread launches one
// child grid over the boards it saved, on its own non-blocking stream.
//
// Boards reach the child through global memory allocated on the device, per block: the
// thread allocates its boards in blocks of child-blockDim entries (a new block only when the
// current one is full, so nothing is allocated until a board is found) and an array of
// pointers to those blocks, so that child thread (blockIdx, threadIdx) finds its board at
// blocks[blockIdx][threadIdx]. Child thread 0 of each block frees that block after a barrier;
// the last child block to finish (an atomic counter, itself device-allocated) frees the
// pointer array and the counter. A failed allocation or launch frees what the thread holds.
#pragma once

#include "cdp.cuh"

#define CONDENSED_ROOT_PARAMS                                                                   \
    const mask_t *__restrict__ cols, const mask_t *__restrict__ ld, const mask_t *__restrict__ rd, \
        const unsigned char *__restrict__ row, unsigned nboards, int n, int search, int child_block,  \
        int max_search, cdp_word *acct
#define CONDENSED_CHILD_PARAMS                                                                   \
    nq_board **blocks, unsigned *done, unsigned nboards, int n, int search, int child_block, int max_search, \
        int gen, cdp_word *acct

// The grid-done counter a child grid's blocks share; with -DCDP_TIMELINE a second word holds
// the child grid's timeline record (cdp.cuh).
#ifdef CDP_TIMELINE
#define CONDENSED_DONE_WORDS 2
#else
#define CONDENSED_DONE_WORDS 1
#endif

typedef void (*condensed_child_kernel)(nq_board**, unsigned*, unsigned, int, int, int, int, int, cdp_word*);

// A thread's boards for its child grid, in device-allocated blocks of `per_block` boards.
struct board_blocks {
    nq_board** blocks;  // pointer array, `cap` entries, grown by doubling
    unsigned cap, nblocks, count, per_block;
    cdp_word* acct;

    __device__ __forceinline__ board_blocks(unsigned per_block_, cdp_word* acct_)
        : blocks(nullptr), cap(0), nblocks(0), count(0), per_block(per_block_), acct(acct_) {}

    // Append one board; false if a device malloc returned NULL (counted).
    __device__ bool add(mask_t c, mask_t l, mask_t r, int row) {
        const unsigned slot = count % per_block;
        if (slot == 0) {  // the current block is full (or there is none yet)
            if (nblocks == cap) {
                const unsigned grown = cap ? 2 * cap : 8;
                nq_board** p = (nq_board**)cdp_malloc(acct, grown * sizeof(nq_board*));
                if (p == nullptr) return false;
                for (unsigned i = 0; i < nblocks; ++i) p[i] = blocks[i];
                if (blocks) free(blocks);
                blocks = p;
                cap = grown;
            }
            nq_board* b = (nq_board*)cdp_malloc(acct, per_block * sizeof(nq_board));
            if (b == nullptr) return false;
            blocks[nblocks++] = b;
        }
        blocks[nblocks - 1][slot] = nq_board{c, l, r, (unsigned)row};
        ++count;
        return true;
    }

    // Free everything (the child grid will not run).
    __device__ void release() {
        for (unsigned i = 0; i < nblocks; ++i) free(blocks[i]);
        if (blocks) free(blocks);
        blocks = nullptr;
        cap = nblocks = count = 0;
    }
};

template <class Depth, condensed_child_kernel Child>
struct condensed {
    // One thread's work: search from board `b`, then hand the boards reached to one child
    // grid. Returns the solutions it counted. `self`: this grid's timeline record.
    static __device__ count_t thread(bool valid, nq_board b, int n, int search, int child_block, int max_search,
                                     int gen, cdp_word* acct, unsigned self) {
        extern __shared__ mask_t stacks[];
        count_t count = 0;
        if (!valid) return 0;
        auto dfs = cdp_shared_dfs(stacks, search + 1);
        dfs.start(b.cols, b.ld, b.rd, (int)b.row, nq_free(b.cols, b.ld, b.rd, NQ_FULL(n)), search, n);
        board_blocks out(child_block, acct);
        bool ok = true;
        auto save = [&](mask_t c, mask_t l, mask_t r, int row, mask_t) { return ok = out.add(c, l, r, row); };
        while (dfs.active()) dfs.step(count, save);
        if (!ok) {  // a malloc failed: the subtree is lost, the run will be reported as failed
            out.release();
            return count;
        }
        if (out.count == 0) return count;

        const int next = Depth::next(search, max_search);
        unsigned* done = (unsigned*)cdp_malloc(acct, CONDENSED_DONE_WORDS * sizeof(unsigned));
        cdp_stream s;
        if (done == nullptr || !cdp_stream_open(acct, CDP_STREAM_OWN, s)) {
            out.release();
            if (done) free(done);
            return count;
        }
        *done = 0;
#ifdef CDP_TIMELINE
        done[1] = cdp_tl_open(gen + 1, out.count, self);
#endif
        const bool launched =
            cdp_launch(acct, gen + 1, out.count, Child, dim3(out.nblocks), dim3(child_block),
                       cdp_stack_bytes(next, child_block), s.stream, out.blocks, done, out.count, n, next,
                       child_block, max_search, gen + 1, acct);
        cdp_stream_close(s);
        if (!launched) {
            out.release();
            free(done);
        }
        return count;
    }

    // The host-launched grid: one thread per host-expanded board (structure of arrays).
    static __device__ void root(CONDENSED_ROOT_PARAMS) {
        const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        const bool valid = i < nboards;
        nq_board b{0, 0, 0, 0};
        if (valid) b = nq_board{cols[i], ld[i], rd[i], (unsigned)row[i]};
        cdp_tl_block_begin(0);  // record 0: the host grid
        const count_t v = thread(valid, b, n, search, child_block, max_search, 0, acct, 0);
        nq_block_add(acct + CDP_SOLUTIONS, v);
        cdp_tl_block_end(0);
    }

    // A device-launched grid: thread (blockIdx, threadIdx) takes blocks[blockIdx][threadIdx].
    static __device__ void child(CONDENSED_CHILD_PARAMS) {
        const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        const bool valid = i < nboards;
        nq_board b{0, 0, 0, 0};
        if (valid) b = blocks[blockIdx.x][threadIdx.x];
        const unsigned self = cdp_tl_child(done);  // before the barrier: the last block frees `done`
        cdp_tl_block_begin(self);
        __syncthreads();  // every thread of the block has its board
        if (threadIdx.x == 0) {
            free(blocks[blockIdx.x]);
            __threadfence();
            if (atomicAdd(done, 1u) == gridDim.x - 1) {  // the last block: no one reads `blocks` any more
                free(blocks);
                free(done);
            }
        }
        const count_t v = thread(valid, b, n, search, child_block, max_search, gen, acct, self);
        nq_block_add(acct + CDP_SOLUTIONS, v);
        cdp_tl_block_end(self);
    }
};

// The two kernels of a condensed strategy, named PREFIX_root (host-launched) and
// PREFIX_child (device-launched), for the search-depth policy DEPTH.
#define CONDENSED_KERNELS(PREFIX, DEPTH)                                                              \
    extern "C" __global__ void PREFIX##_child(CONDENSED_CHILD_PARAMS);                              \
    extern "C" __global__ void PREFIX##_root(CONDENSED_ROOT_PARAMS) {                               \
        condensed<DEPTH, PREFIX##_child>::root(cols, ld, rd, row, nboards, n, search, child_block, max_search, acct); \
    }                                                                                               \
    extern "C" __global__ void PREFIX##_child(CONDENSED_CHILD_PARAMS) {                             \
        condensed<DEPTH, PREFIX##_child>::child(blocks, done, nboards, n, search, child_block, max_search, gen, acct); \
    }
