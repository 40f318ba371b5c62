// fast_tight_u4: the previous default kernel of strategy fast (opt=tight-u4), kept as the
// reference the constellation kernel (constellation.cu) is measured against; the ladder
// that led to it is docs/results/fast-ladder.md.
//
// The host expands the boards of Takaken's two kinds (corner queen / not) to row `depth`
// (kernels/cpu/d4.c); each task is 8 words (d4.h: left, down, right, info, the columns of
// the expanded rows). A persistent grid of warps works through the tasks: a lane whose
// task is finished takes the next one from a global index, one atomic per warp for all
// its lanes that need one (warp-aggregated). The search is d4.c's nq_d4_solve with
// BOUND1/BOUND2/SIDEMASK/LASTMASK rules per row and a rotation check at the leaves.
//
// -D defines: NQ_BLOCK (threads per block, the launch must use it), NQ_MIN_BLOCKS (blocks
// per multiprocessor the register allocation must allow; 1: no limit), NQ_COUNT_NODES (1:
// also count queens placed in out[1]).
// Arguments: tasks (2 x uint4 per task), ntasks, n, levels (stack rows: N-2-depth; the
// dynamic shared memory is 3 * levels * NQ_BLOCK * 4 bytes), next (zeroed task index), out
// (two zeroed 64-bit counters: the weighted count, the queens placed).
#include "cpu/d4.h"

#ifndef NQ_BLOCK
#define NQ_BLOCK 128
#endif
#ifndef NQ_MIN_BLOCKS
#define NQ_MIN_BLOCKS 1
#endif
#ifndef NQ_COUNT_NODES
#define NQ_COUNT_NODES 0
#endif

#define FAST_FULL 0xffffffffu

// ---------------------------------------------------------------------------------------
// The tight loop (fast_tight*): d4.c's nq_d4_solve step for step.
//   - the stack is [level][3][NQ_BLOCK] (candidates, left, right), addressed through one
//     index `sp` (the current level's slot): a push or pop moves it by one level and the
//     three words sit at fixed offsets from it; the level tests compare sp with per-task
//     limits, so there is no level counter;
//   - `down` carries the columns outside the board as occupied, so a free set is one
//     LOP3 (~(left | down | right)) without the board mask;
//   - a child is entered only if the row after it has a free square (rules aside);
//   - rows N-2 and N-1 are finished in place (fast_leaves), without a push;
//   - a warp votes on refills every U steps (U unrolled steps between votes; a lane whose
//     task ends inside them idles until the vote).
// ---------------------------------------------------------------------------------------
struct FastLeafCtx {
    int n, y0, b1, b2;
    uint4 prefix;
    unsigned lastmask, corner;
};

// Board row i at a leaf of the tight loop: rows < y0 from the task, rows y0..N-3 from the
// stack (slot (i - y0) * 3 * NQ_BLOCK from the lane's level-0 slot), N-2 and N-1 given.
__device__ __forceinline__ unsigned tight_board(int i, const FastLeafCtx& c, const unsigned* s0, unsigned b,
                                                unsigned last) {
    if (i < c.y0) {
        unsigned w = i < 4 ? c.prefix.x : i < 8 ? c.prefix.y : i < 12 ? c.prefix.z : c.prefix.w;
        return 1u << ((w >> (8 * (i & 3))) & 31u);
    }
    if (i == c.n - 1) return last;
    if (i == c.n - 2) return b;
    unsigned v = s0[(i - c.y0) * 3 * NQ_BLOCK];
    return v & (0u - v);
}

__device__ __forceinline__ unsigned tight_check(int n, int y0, int b1, int b2, uint4 prefix, const unsigned* s0,
                                             unsigned b, unsigned last) {
    FastLeafCtx c{n, y0, b1, b2, prefix, 0u, 0u};
#define B(i) tight_board((i), c, s0, b, last)
    const int lastrow = n - 1;
    const unsigned top = 1u << lastrow, endbit = top >> b1;
    unsigned bt, ptn;
    int own, you;
    if (B(b2) == 1u) {
        for (ptn = 2u, own = 1; own <= lastrow; own++, ptn <<= 1) {
            bt = 1u;
            for (you = lastrow; B(you) != ptn && B(own) >= bt; you--) bt <<= 1;
            if (B(own) > bt) return 0;
            if (B(own) < bt) break;
        }
        if (own > lastrow) return 2;
    }
    if (last == endbit) {
        for (you = lastrow - 1, own = 1; own <= lastrow; own++, you--) {
            bt = 1u;
            for (ptn = top; ptn != B(you) && B(own) >= bt; ptn >>= 1) bt <<= 1;
            if (B(own) > bt) return 0;
            if (B(own) < bt) break;
        }
        if (own > lastrow) return 4;
    }
    if (B(b1) == top) {
        for (ptn = top >> 1, own = 1; own <= lastrow; own++, ptn >>= 1) {
            bt = 1u;
            for (you = 0; B(you) != ptn && B(own) >= bt; you++) bt <<= 1;
            if (B(own) > bt) return 0;
            if (B(own) < bt) break;
        }
    }
    return 8;
#undef B
}

// Rows N-2 and N-1 of a board whose row N-2 has the allowed squares `f` (masks l, d, r of
// row N-2; d has the columns outside the board set). Returns the weighted count.
__device__ __forceinline__ unsigned tight_leaves(unsigned f, unsigned l, unsigned d, unsigned r, int n, int y0,
                                                 int b1, int b2, uint4 prefix, unsigned lastmask, bool corner,
                                                 const unsigned* s0) {
    unsigned cnt = 0;
    while (f) {
        const unsigned b = f & (0u - f);
        f ^= b;
        const unsigned last = ~(((l | b) << 1) | d | b | ((r | b) >> 1));
        if (last != 0 && (last & lastmask) == 0) cnt += corner ? 8u : tight_check(n, y0, b1, b2, prefix, s0, b, last);
    }
    return cnt;
}

// Kept whole (about 120 lines): it is d4.c's nq_d4_solve step for step, unrolled by U in
// registers, and opt=tight-u4 still selects it; a split must not change its generated code.
template <int U, bool LOOKAHEAD>
__device__ __forceinline__ void fast_tight_search(const uint4* __restrict__ tasks, unsigned ntasks, int n,
                                                  int levels, unsigned* next, unsigned long long* out) {
    extern __shared__ unsigned fast_stack[];  // [levels][3][NQ_BLOCK]
    unsigned* const s0 = fast_stack + threadIdx.x;
    constexpr int S = 3 * NQ_BLOCK;  // words per level
    const unsigned lane = threadIdx.x & 31u;
    const unsigned side = (1u << (n - 1)) | 1u, outside = ~((1u << n) - 1u);

    unsigned left = 0, down = 0, right = 0, bm = 0, cnt = 0, nexcl = ~0u, lastmask = 0;
    uint4 prefix = make_uint4(0, 0, 0, 0);
    int sp = 0, sp_rb1 = 0, sp_rb2 = -1, sp_n3 = -1, y0 = 0, b1 = 0, b2 = 0;
    bool corner = false, done = false;
    unsigned long long total = 0, nodes = 0;

    for (;;) {
        const bool need = bm == 0 && sp == 0 && !done;
        const unsigned want = __ballot_sync(FAST_FULL, need);
        if (want) {
            const int leader = __ffs(want) - 1;
            unsigned base = 0;
            if (lane == (unsigned)leader) base = atomicAdd(next, (unsigned)__popc(want));
            base = __shfl_sync(FAST_FULL, base, leader);
            if (need) {
                const unsigned idx = base + __popc(want & ((1u << lane) - 1u));
                total += cnt;
                cnt = 0;
                if (idx < ntasks) {
                    const uint4 a = tasks[2 * (size_t)idx];
                    prefix = tasks[2 * (size_t)idx + 1];
                    left = a.x;
                    down = a.y | outside;
                    right = a.z;
                    y0 = a.w & 31u;
                    b1 = (a.w >> 5) & 31u;
                    corner = (a.w & NQ_D4_CORNER) != 0;
                    b2 = corner ? -100 : (int)((a.w >> 10) & 31u);
                    const unsigned low = (1u << b1) - 1u;
                    nexcl = ~(corner ? 2u : side);
                    lastmask = corner ? 0u : (low | (low << (n - b1)));
                    // A step at slot sp computes row y0 + sp/S + 1: the rules hold while
                    // that row is < b1 (sp < sp_rb1), at row b2 (sp == sp_rb2); the row
                    // after is N-2 at sp == sp_n3.
                    sp_rb1 = (b1 - y0 - 1) * S;
                    sp_rb2 = (b2 - y0 - 1) * S;
                    sp_n3 = (n - 3 - y0) * S;
                    unsigned f = ~(left | down | right);
                    if (y0 < b1) f &= nexcl;
                    else if (y0 == b2) {
                        const unsigned sd = down & side;
                        f = sd == 0 ? 0u : (sd != side ? f & side : f);
                    }
                    bm = f;
                    if (y0 == n - 2) {  // the task is row N-2 itself
                        if (NQ_COUNT_NODES) nodes += __popc(f);
                        cnt += tight_leaves(f, left, down, right, n, y0, b1, b2, prefix, lastmask, corner, s0);
                        bm = 0;
                    }
                } else {
                    done = true;
                }
            }
            if (__all_sync(FAST_FULL, done)) break;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (bm != 0) {
                const unsigned bit = bm & (0u - bm);
                if (NQ_COUNT_NODES) nodes++;
                const unsigned nl = (left | bit) << 1, nd = down | bit, nr = (right | bit) >> 1;
                unsigned cf = ~(nl | nd | nr);
                if (sp < sp_rb1) cf &= nexcl;
                if (sp == sp_rb2) {
                    const unsigned sd = nd & side;
                    cf = sd == 0 ? 0u : (sd != side ? cf & side : cf);
                }
                if (sp == sp_n3) {  // the child is row N-2: finish the board here
                    if (NQ_COUNT_NODES) nodes += __popc(cf);
                    if (cf) {
                        s0[sp] = bm;  // row N-3's queen, for a rotation check
                        cnt += tight_leaves(cf, nl, nd, nr, n, y0, b1, b2, prefix, lastmask, corner, s0);
                        if (cnt & 0x80000000u) {
                            total += cnt;
                            cnt = 0;
                        }
                    }
                    bm ^= bit;
                } else {
                    bool enter = cf != 0;
                    if (LOOKAHEAD) enter = enter && (~((nl << 1) | nd | (nr >> 1)) != 0);
                    if (enter) {
                        s0[sp] = bm;
                        s0[sp + NQ_BLOCK] = left;
                        s0[sp + 2 * NQ_BLOCK] = right;
                        sp += S;
                        left = nl;
                        down = nd;
                        right = nr;
                        bm = cf;
                    } else {
                        bm ^= bit;
                    }
                }
            } else if (sp != 0) {
                sp -= S;
                bm = s0[sp];
                left = s0[sp + NQ_BLOCK];
                right = s0[sp + 2 * NQ_BLOCK];
                const unsigned bit = bm & (0u - bm);
                bm ^= bit;
                down ^= bit;
            }
        }
    }
    total += cnt;
    for (int off = 16; off > 0; off >>= 1) {
        total += __shfl_down_sync(FAST_FULL, total, off);
        nodes += __shfl_down_sync(FAST_FULL, nodes, off);
    }
    if (lane == 0) {
        atomicAdd(&out[0], total);
        if (NQ_COUNT_NODES) atomicAdd(&out[1], nodes);
    }
}

#define FAST_ARGS \
    const uint4 *__restrict__ tasks, unsigned ntasks, int n, int levels, unsigned *next, unsigned long long *out

extern "C" __global__ void __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS) fast_tight_u4(FAST_ARGS) {
    fast_tight_search<4, true>(tasks, ntasks, n, levels, next, out);
}
