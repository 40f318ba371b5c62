// Shared device code of nqprof's CUDA Dynamic Parallelism (CDP) kernels (dp1, dp2, dp3, dpswap):
//
//   * the accounting every CDP kernel keeps in global memory: solutions, device launches
//     attempted and failed, device mallocs that returned NULL, device stream creations that
//     failed, the deepest generation reached, and per generation the grids launched and the
//     boards handed to them (sum, min, max);
//   * helpers that launch a child grid, check the launch's return code and account for it,
//     so that a kernel's launch site is one line (cdp_launch);
//   * checked device malloc and stream creation;
//   * the bounded, step-wise DFS of the condensed kernels (dp2, dp3, dpswap).
//
// On CDP2 (the only CDP on sm_90) a device launch past the pending-launch limit fails and
// the child never runs; unless the launch's return code is read the count is silently
// wrong. Every launch here goes through cdp_launch, which reads it.
//
// The accounting is an array of 64-bit words, zeroed by the host before each round. The
// host decodes it with the same layout (src/nqprof/strategies/cdp/accounting.py; a test checks
// that the two agree). Per generation, the minimum is kept as its bitwise complement so that
// atomicMax on a zeroed word computes it.
#pragma once

#include <cstring>

#include "common.cuh"
#include "globaltimer.cuh"

#define CDP_SOLUTIONS 0        // solutions counted on the device (before the mirror factor)
#define CDP_LAUNCHES 1         // device launches attempted
#define CDP_LAUNCH_FAILURES 2  // device launches whose return code was not cudaSuccess
#define CDP_MALLOC_FAILURES 3  // device mallocs that returned NULL
#define CDP_STREAM_FAILURES 4  // device stream creations that failed
#define CDP_MAX_GENERATION 5   // deepest generation a grid was launched into (host grid: 0)
#define CDP_FIRST_ERROR 6      // cudaError_t of the first failed launch (0: none)
#define CDP_UNTRACKED 7        // grids launched into generations >= CDP_MAX_GEN (not in the table)
#define CDP_OVERFLOWS 8        // block-buffer overflows (dpswap): a bug if ever non-zero
#define CDP_GEN_BASE 16        // first word of the per-generation table
#define CDP_GEN_WORDS 4        // per generation: grids, boards, ~min boards, max boards
#define CDP_GEN_GRIDS 0
#define CDP_GEN_BOARDS 1
#define CDP_GEN_MIN_COMPLEMENT 2
#define CDP_GEN_MAX 3
#define CDP_MAX_GEN 32
#define CDP_WORDS (CDP_GEN_BASE + CDP_GEN_WORDS * CDP_MAX_GEN)

// The stream a thread launches its child into (the kernels' `stream` argument).
#define CDP_STREAM_DEFAULT 0  // the block's NULL stream: launches of one block serialize
#define CDP_STREAM_OWN 1      // a non-blocking stream created by the thread, destroyed after the launch
#define CDP_STREAM_FIRE_AND_FORGET 2  // cudaStreamFireAndForget

typedef count_t cdp_word;

// What a launch site does (a build variant, -DCDP_LAUNCH_MODE=...): the child grid itself
// (the real build), an empty grid of the same shape in its place (t1 of Wang and
// Yalamanchili's launch-overhead method), or nothing (t2). In the two variants the child's
// work does not run: cdp_launch returns false, so the caller frees what it handed over (as
// after a failed launch), and the launch is accounted as in the real build, so that the
// host can check that the parent did the same work. nqprof characterize ideal uses them.
//
// The fourth variant, CDP_LAUNCH_RECORD, records instead of launching (below: "Records of
// generation 1's launches"), so that the host can launch generation 1's grids itself, over
// the same inputs, where Nsight Compute sees them (nqprof characterize efficiency).
#define CDP_LAUNCH_REAL 0
#define CDP_LAUNCH_EMPTY 1
#define CDP_LAUNCH_NONE 2
#define CDP_LAUNCH_RECORD 3
#ifndef CDP_LAUNCH_MODE
#define CDP_LAUNCH_MODE CDP_LAUNCH_REAL
#endif

#if CDP_LAUNCH_MODE == CDP_LAUNCH_EMPTY
// The stand-in for every child grid of the CDP_LAUNCH_EMPTY variant.
__global__ void cdp_empty_child() {}
#endif

// ---------------------------------------------------------------------------------------
// Records of generation 1's launches (the CDP_LAUNCH_RECORD variant). On CDP2 Nsight Compute
// profiles only host-launched grids; to profile the children as Wang and Yalamanchili did,
// a launch of generation 1 (a grid the host grid launches) is not made: the launching thread
// appends a record of it -- grid and block, dynamic shared memory, the boards handed over,
// and the kernel's arguments packed as CUDA's kernel parameter buffer lays them out (each at
// its natural alignment, in order; the size is the end of the last one) -- and the host
// launches every recorded grid itself afterwards (nqprof.strategies.cdp.replay). The launch
// is accounted as launched, and cdp_launch returns true: the caller keeps what it handed over
// alive (device-allocated boards are freed by the replayed child, as in a real run; the
// host's preallocated regions stay until the session closes). A launch of generation >= 2
// (made by a replayed child) is not made and not recorded, as in CDP_LAUNCH_NONE: the replay
// measures a child's own work, without its descendants. The host allocates the records, puts
// their address in `cdp_rec` and zeroes `next` and `dropped`; a launch past `capacity` is
// counted in `dropped`, never written, and returns false (the caller frees its boards; the
// host fails the run). Every child of generation 1 of a strategy is the same kernel (the
// strategy declares it: Strategy.child_kernel), so the record does not name it.
#define CDP_REC_HEADER_BYTES 16  // next, capacity, dropped, unused (unsigned each)
#define CDP_REC_ARG_BYTES 88     // room for a kernel's packed arguments (checked at compile time)

struct cdp_rec_launch {  // 128 bytes (nqprof.strategies.cdp.replay.RECORD_DTYPE)
    unsigned grid[3], block[3];
    unsigned shared;     // dynamic shared memory (bytes)
    unsigned arg_bytes;  // bytes of `args` used: the kernel's parameter buffer
    unsigned boards;     // boards handed to the grid
    unsigned unused;
    unsigned long long args[CDP_REC_ARG_BYTES / 8];
};

struct cdp_rec_buffer {
    unsigned next, capacity, dropped, unused;
    cdp_rec_launch launches[1];  // `capacity` records
};

__host__ __device__ constexpr unsigned cdp_rec_align(unsigned offset, unsigned alignment) {
    return (offset + alignment - 1) / alignment * alignment;
}

// The size of the parameter buffer of a kernel whose parameters are P...
template <class... P>
__host__ __device__ constexpr unsigned cdp_rec_arg_bytes() {
    unsigned offset = 0;
    ((offset = cdp_rec_align(offset, (unsigned)alignof(P)) + (unsigned)sizeof(P)), ...);
    return offset;
}

template <class T>
__host__ __device__ __forceinline__ void cdp_rec_put(unsigned char* buf, unsigned& offset, T value) {
    offset = cdp_rec_align(offset, (unsigned)alignof(T));
    memcpy(buf + offset, &value, sizeof(T));
    offset += (unsigned)sizeof(T);
}

// Pack `args` as the parameters P... of a kernel (each converted to its parameter's type);
// returns the bytes written. A host function too, so that a test runs it on the CPU.
template <class... P, class... A>
__host__ __device__ __forceinline__ unsigned cdp_rec_pack(unsigned char* buf, A... args) {
    static_assert(sizeof...(P) == sizeof...(A), "one argument per kernel parameter");
    unsigned offset = 0;
    (cdp_rec_put<P>(buf, offset, static_cast<P>(args)), ...);
    return offset;
}

#if CDP_LAUNCH_MODE == CDP_LAUNCH_RECORD
__device__ cdp_rec_buffer* cdp_rec;  // set by the host before the host grid's launch

// Record one launch; false (counted in `dropped`) when the records are full.
template <class... P, class... A>
__device__ bool cdp_rec_write(dim3 grid, dim3 block, unsigned shared, unsigned boards, A... args) {
    static_assert(cdp_rec_arg_bytes<P...>() <= CDP_REC_ARG_BYTES, "kernel arguments do not fit a launch record");
    const unsigned id = atomicAdd(&cdp_rec->next, 1u);
    if (id >= cdp_rec->capacity) {
        atomicAdd(&cdp_rec->dropped, 1u);
        return false;
    }
    cdp_rec_launch& r = cdp_rec->launches[id];
    r.grid[0] = grid.x;
    r.grid[1] = grid.y;
    r.grid[2] = grid.z;
    r.block[0] = block.x;
    r.block[1] = block.y;
    r.block[2] = block.z;
    r.shared = shared;
    r.boards = boards;
    r.unused = 0;
    r.arg_bytes = cdp_rec_pack<P...>(reinterpret_cast<unsigned char*>(r.args), args...);
    __threadfence();
    return true;
}
#endif

// ---------------------------------------------------------------------------------------
// Device-side timeline of the grids (opt-in build: -DCDP_TIMELINE). Nsight Systems shows no
// rows for device-launched grids on CDP2, so each grid is recorded here: its generation, the
// grid and block that launched it, the boards handed to it, the launch time and its first
// block's start and last block's end, from the GPU's global timer (ns). The host allocates
// the records (sized from the run's estimate of launches), puts their address in `cdp_tl`,
// and fills record 0 (the host grid) and `next` = 1; a launch past the capacity is counted
// in `dropped`, never written. Without -DCDP_TIMELINE every helper below is empty.
#define CDP_TL_NONE 0xffffffffu
#define CDP_TL_HEADER_BYTES 16  // next, capacity, dropped, unused (unsigned each)

struct cdp_tl_grid {             // 40 bytes (nqprof.characterize.timeline.RECORD_DTYPE)
    unsigned long long launched; // global timer when the launching thread launched it
    unsigned long long start;    // first block's start (~0 until a block started)
    unsigned long long end;      // last block's end
    unsigned gen, parent, parent_block, boards;
};

struct cdp_tl_buffer {
    unsigned next, capacity, dropped, unused;
    cdp_tl_grid grids[1];  // `capacity` records
};

#ifdef CDP_TIMELINE
__device__ cdp_tl_buffer* cdp_tl;  // set by the host before the first launch

// The launching thread's side: a record for the grid about to be launched (CDP_TL_NONE if full).
__device__ __forceinline__ unsigned cdp_tl_open(int gen, unsigned boards, unsigned parent) {
    const unsigned id = atomicAdd(&cdp_tl->next, 1u);
    if (id >= cdp_tl->capacity) {
        atomicAdd(&cdp_tl->dropped, 1u);
        return CDP_TL_NONE;
    }
    cdp_tl_grid& g = cdp_tl->grids[id];
    g.start = ~0ull;
    g.end = 0;
    g.gen = (unsigned)gen;
    g.parent = parent;
    g.parent_block = blockIdx.x;
    g.boards = boards;
    g.launched = nq_globaltimer();
    __threadfence();
    return id;
}

// A block of grid `id` starts / ends (thread 0 of the block; every thread may call).
__device__ __forceinline__ void cdp_tl_block_begin(unsigned id) {
    if (id != CDP_TL_NONE && threadIdx.x == 0) atomicMin(&cdp_tl->grids[id].start, nq_globaltimer());
}
__device__ __forceinline__ void cdp_tl_block_end(unsigned id) {
    if (id != CDP_TL_NONE && threadIdx.x == 0) atomicMax(&cdp_tl->grids[id].end, nq_globaltimer());
}

// A device-launched grid's record: word 1 of the header its launching thread allocated for it
// (word 0 counts its blocks done). Read it before the block's barrier: the grid's last block
// frees the header once every block has passed that barrier.
__device__ __forceinline__ unsigned cdp_tl_child(const unsigned* header) { return header[1]; }
#else
__device__ __forceinline__ unsigned cdp_tl_open(int, unsigned, unsigned) { return CDP_TL_NONE; }
__device__ __forceinline__ void cdp_tl_block_begin(unsigned) {}
__device__ __forceinline__ void cdp_tl_block_end(unsigned) {}
__device__ __forceinline__ unsigned cdp_tl_child(const unsigned*) { return CDP_TL_NONE; }
#endif

// ---------------------------------------------------------------------------------------
// Accounting

__device__ __forceinline__ void cdp_count(cdp_word* acct, int word, cdp_word v = 1) {
    atomicAdd(acct + word, v);
}

// A grid of `boards` boards was launched into generation `gen`.
__device__ __forceinline__ void cdp_grid_launched(cdp_word* acct, int gen, unsigned boards) {
    atomicMax(acct + CDP_MAX_GENERATION, (cdp_word)gen);
    if (gen < 0 || gen >= CDP_MAX_GEN) {
        cdp_count(acct, CDP_UNTRACKED);
        return;
    }
    cdp_word* g = acct + CDP_GEN_BASE + CDP_GEN_WORDS * gen;
    atomicAdd(g + CDP_GEN_GRIDS, (cdp_word)1);
    atomicAdd(g + CDP_GEN_BOARDS, (cdp_word)boards);
    atomicMax(g + CDP_GEN_MIN_COMPLEMENT, ~(cdp_word)boards);
    atomicMax(g + CDP_GEN_MAX, (cdp_word)boards);
}

// Read the return code of the launch just made by this thread and account for it.
// Returns true if the child grid will run.
__device__ __forceinline__ bool cdp_check_launch(cdp_word* acct, int gen, unsigned boards) {
    const cudaError_t err = cudaGetLastError();
    cdp_count(acct, CDP_LAUNCHES);
    if (err != cudaSuccess) {
        cdp_count(acct, CDP_LAUNCH_FAILURES);
        atomicCAS(acct + CDP_FIRST_ERROR, (cdp_word)0, (cdp_word)err);
        return false;
    }
    cdp_grid_launched(acct, gen, boards);
    return true;
}

// Launch `kernel` as a grid of generation `gen` handed `boards` boards, check the launch's
// return code and account for it: the one line every CDP launch site uses. Returns true if
// the child grid will run (never in the CDP_LAUNCH_EMPTY and CDP_LAUNCH_NONE variants; in
// CDP_LAUNCH_RECORD, for generation 1 when it was recorded: the host will run it).
template <class... P, class... A>
__device__ __forceinline__ bool cdp_launch(cdp_word* acct, int gen, unsigned boards, void (*kernel)(P...), dim3 grid,
                                           dim3 block, unsigned shared, cudaStream_t stream, A... args) {
    cudaGetLastError();  // clear an earlier error so that the check below sees this launch's
#if CDP_LAUNCH_MODE == CDP_LAUNCH_REAL
    kernel<<<grid, block, shared, stream>>>(args...);
    return cdp_check_launch(acct, gen, boards);
#elif CDP_LAUNCH_MODE == CDP_LAUNCH_EMPTY
    cdp_empty_child<<<grid, block, 0, stream>>>();  // same shape, no work, no dynamic shared memory
    cdp_check_launch(acct, gen, boards);
    return false;
#elif CDP_LAUNCH_MODE == CDP_LAUNCH_RECORD
    (void)kernel;
    (void)stream;
    cdp_count(acct, CDP_LAUNCHES);  // accounted as a launch that succeeded, none made
    cdp_grid_launched(acct, gen, boards);
    if (gen != 1) return false;  // a replayed child's own launch: none (as CDP_LAUNCH_NONE)
    return cdp_rec_write<P...>(grid, block, shared, boards, args...);
#else
    cdp_count(acct, CDP_LAUNCHES);  // accounted as a launch that succeeded, none made
    cdp_grid_launched(acct, gen, boards);
    return false;
#endif
}

// Device malloc that counts a NULL result.
__device__ __forceinline__ void* cdp_malloc(cdp_word* acct, size_t bytes) {
    void* p = malloc(bytes);
    if (p == nullptr) cdp_count(acct, CDP_MALLOC_FAILURES);
    return p;
}

// ---------------------------------------------------------------------------------------
// Streams: where a thread launches its child (CDP_STREAM_*).

struct cdp_stream {
    cudaStream_t stream;
    bool created;
};

// Returns false (and counts a stream failure) if the thread's own stream cannot be created.
__device__ __forceinline__ bool cdp_stream_open(cdp_word* acct, int kind, cdp_stream& s) {
    s.created = false;
    if (kind == CDP_STREAM_OWN) {
        if (cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess) {
            cdp_count(acct, CDP_STREAM_FAILURES);
            return false;
        }
        s.created = true;
    } else if (kind == CDP_STREAM_FIRE_AND_FORGET) {
        s.stream = cudaStreamFireAndForget;
    } else {
        s.stream = 0;
    }
    return true;
}

// A stream may be destroyed right after the launch: its work still runs to completion.
__device__ __forceinline__ void cdp_stream_close(cdp_stream& s) {
    if (s.created) cudaStreamDestroy(s.stream);
    s.created = false;
}

// ---------------------------------------------------------------------------------------
// Boards handed to child grids through global memory (dp2, dp3).

struct nq_board {
    mask_t cols, ld, rd;
    unsigned row;  // rows already filled
};

// Shared memory of a condensed kernel's per-thread DFS stacks: four masks per level
// (free squares, columns, two diagonals), `search + 1` levels per thread (as in the paper).
#define CDP_STATE_BYTES (4 * (int)sizeof(mask_t))

__host__ __device__ __forceinline__ unsigned cdp_stack_bytes(int search, int threads) {
    return (unsigned)(CDP_STATE_BYTES * (search + 1) * threads);
}

// ---------------------------------------------------------------------------------------
// The bounded DFS of the condensed kernels, one step at a time.
//
// A thread starts from one board at row `row0` (with `avail`, the squares of its next row
// still to try: all free squares for a fresh board, fewer for a state dumped by dpswap) and
// searches `search` rows deeper. Level k of the stack holds the board k rows below the start
// and the squares of its next row not yet tried. Each step tries one square:
//   * a complete board is a solution (counted);
//   * a board at the target row (row0 + search < N) whose next row has a free square is a
//     leaf handed to `leaf` (for a child grid); one with no free square is dropped;
//   * a board one row above the last is finished by counting its free squares;
//   * otherwise the board is pushed.
// The stack never holds more than `search` levels (the kernels reserve search + 1).
template <class S>
struct nq_bounded_dfs {
    S f, c, l, r;  // the four per-level arrays
    int k;         // top level; -1 once the subtree is exhausted
    int row0, target, n;
    mask_t full;

    __device__ __forceinline__ nq_bounded_dfs(S f_, S c_, S l_, S r_) : f(f_), c(c_), l(l_), r(r_), k(-1) {}

    __device__ __forceinline__ void start(mask_t cols, mask_t ld, mask_t rd, int row, mask_t avail, int search,
                                          int n_) {
        n = n_;
        full = NQ_FULL(n_);
        row0 = row;
        target = row + search;
        c[0] = cols;
        l[0] = ld;
        r[0] = rd;
        f[0] = avail & full;
        k = f[0] ? 0 : -1;
    }

    __device__ __forceinline__ bool active() const { return k >= 0; }

    // One step. `leaf(cols, ld, rd, row, free)` returns false to abort the search.
    template <class Leaf>
    __device__ __forceinline__ void step(count_t& count, Leaf& leaf) {
        const mask_t fr = f[k];
        if (fr == 0) {
            --k;
            return;
        }
        const mask_t b = fr & (0u - fr);
        f[k] = fr ^ b;
        const mask_t nc = c[k] | b, nl = (l[k] | b) << 1, nr = (r[k] | b) >> 1;
        const int row = row0 + k + 1;
        if (row == n) {
            ++count;
            return;
        }
        const mask_t nf = nq_free(nc, nl, nr, full);
        if (nf == 0) return;
        if (row == target) {
            if (!leaf(nc, nl, nr, row, nf)) k = -1;
            return;
        }
        if (row + 1 == n) {
            count += __popc(nf);
            return;
        }
        ++k;
        c[k] = nc;
        l[k] = nl;
        r[k] = nr;
        f[k] = nf;
    }
};

// The thread's four stack arrays in the block's dynamic shared memory ([level][thread]).
__device__ __forceinline__ nq_bounded_dfs<StridedLevels> cdp_shared_dfs(mask_t* smem, int levels) {
    return nq_bounded_dfs<StridedLevels>(nq_strided(smem, levels, 0), nq_strided(smem, levels, 1),
                                         nq_strided(smem, levels, 2), nq_strided(smem, levels, 3));
}
