// The `queue` strategy: N-Queens balanced through a Broker Queue (Kerbl et al. 2018), the
// non-CDP answer to the load imbalance of the host-seeded kernel.
//
// Persistent threads (a grid sized to the GPU) share one queue of boards (16 bytes: the
// three masks and the row). The host's boards are seeded into the queue (queue_seed). Each
// thread loops: with no board, it dequeues one; with a board, it runs the iterative bitmask
// DFS (stacks in shared memory, rows-left sized; each step branch-free, see below). Every QUEUE_CHECK_STEPS steps a busy
// thread looks at the queue's Count; when it is below `threshold`, the thread hands out the
// untried squares of its shallowest level whose children still have `split_rows` rows or
// more, one board each, instead of searching them itself (a FULL queue stops the hand-out:
// the thread keeps the rest). Termination: `pending` counts boards in the queue or held by
// a thread (incremented before an enqueue, decremented when a board's subtree is done); a
// thread whose dequeue finds nothing (EMPTY, or BUSY: the Broker Queue's broker refused while
// another dequeue is in flight) exits once pending is 0; otherwise it backs off and retries.
//
// Kernels:
//   queue_seed        boards -> queue slots, tail, Count, pending (after the host zeroed it)
//   queue_search_bq   the search over the Broker Queue
//   queue_search_bwd  the search over the Broker Work Distributor
// Accounting: 64-bit words at `acct`, the same numbers as src/nqprof/strategies/queue.py.
// A STUCK queue operation (a bounded spin hit its cap) sets ABORT; every thread then stops
// and the host reports the run as failed, never its count.
#include "broker_queue.cuh"
#include "common.cuh"

#define QA_SOLUTIONS 0
#define QA_SEEDED 1
#define QA_DEQUEUED 2
#define QA_ENQUEUED 3
#define QA_SPLITS 4
#define QA_FULL 5
#define QA_EMPTY 6
#define QA_STUCK 7
#define QA_PENDING 8
#define QA_ABORT 9
#define QA_BUSY 10
#define QA_WORDS 16

#ifndef QUEUE_CHECK_STEPS
#define QUEUE_CHECK_STEPS 512
#endif
#ifndef QUEUE_IDLE_BACKOFF_MAX
#define QUEUE_IDLE_BACKOFF_MAX 64
#endif

typedef uint4 board_t;  // x cols, y ld, z rd, w row

extern "C" __global__ void queue_seed(unsigned char* qmem, unsigned capacity, const mask_t* __restrict__ cols,
                                      const mask_t* __restrict__ ld, const mask_t* __restrict__ rd,
                                      const unsigned char* __restrict__ row, unsigned nboards,
                                      unsigned long long* acct) {
    nqq::BrokerQueue<board_t> q(qmem, capacity, 1);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < max(nboards, 1u); i += gridDim.x * blockDim.x) {
        board_t b = i < nboards ? make_uint4(cols[i], ld[i], rd[i], row[i]) : make_uint4(0, 0, 0, 0);
        q.seed(i, nboards, b);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        acct[QA_PENDING] = nboards;
        acct[QA_SEEDED] = nboards;
    }
}

__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p) {
    return nqq::ld_relaxed64(p);
}

// One function on purpose (about 125 lines): the persistent loop's pop, DFS, split and
// termination share the stack and counters in registers; split, it could compile apart.
template <class Q>
__device__ void queue_search(unsigned char* qmem, unsigned capacity, int n, int levels, int threshold, int split_rows,
                             unsigned long long* acct) {
    extern __shared__ mask_t queue_stacks[];
    StridedLevels F = nq_strided(queue_stacks, levels, 0), C = nq_strided(queue_stacks, levels, 1), L = nq_strided(queue_stacks, levels, 2),
                  R = nq_strided(queue_stacks, levels, 3);
    Q q(qmem, capacity, gridDim.x * blockDim.x);
    const mask_t full = NQ_FULL(n);
    unsigned long long* pending = acct + QA_PENDING;
    const unsigned long long minus_one = ~0ull;

    count_t sol = 0;
    unsigned long long deq = 0, enq = 0, splits = 0, fulls = 0, empties = 0, busy = 0, stuck = 0;
    int k = -1;       // current level; -1: no board
    int rows = 0;     // rows left of the board held
    int base = 0;     // its row
    bool held = false;
    int wait = 0, backoff = 1;
    unsigned check = QUEUE_CHECK_STEPS;

    for (;;) {
        if (k < 0) {
            if (held) {  // the board's subtree is done
                atomicAdd(pending, minus_one);
                held = false;
            }
            if (wait > 0) {
                --wait;
                continue;
            }
            board_t b;
            const nqq::Status s = q.try_dequeue(b);
            if (s == nqq::OK) {
                ++deq;
                backoff = 1;
                base = (int)b.w;
                rows = n - base;
                const mask_t f0 = nq_free(b.x, b.y, b.z, full);
                if (rows <= 1) {
                    sol += rows == 1 ? __popc(f0) : 1;
                    atomicAdd(pending, minus_one);
                    continue;
                }
                C[0] = b.x;
                L[0] = b.y;
                R[0] = b.z;
                F[0] = f0;
                k = 0;
                held = true;
                continue;
            }
            if (s == nqq::STUCK) {
                ++stuck;
                atomicExch(acct + QA_ABORT, 1ull);
                break;
            }
            if (s == nqq::BUSY) ++busy; else ++empties;
            if (ld_relaxed_u64(pending) == 0 || ld_relaxed_u64(acct + QA_ABORT)) break;
            wait = backoff;
            backoff = min(2 * backoff, QUEUE_IDLE_BACKOFF_MAX);
            if (wait >= QUEUE_IDLE_BACKOFF_MAX && __activemask() == 0xffffffffu) __nanosleep(256);
            continue;
        }
        mask_t f = F[k];
        if (--check == 0) {
            check = QUEUE_CHECK_STEPS;
            if (q.size_hint() < threshold) {
                // Hand out the untried squares of the shallowest level worth it.
                int s = 0;
                while (s <= k && (F[s] == 0 || rows - s - 1 < split_rows)) ++s;
                if (s <= k) {
                    ++splits;
                    mask_t fs = F[s];
                    while (fs) {
                        const mask_t bit = fs & (0u - fs);
                        const board_t child = make_uint4(C[s] | bit, (L[s] | bit) << 1, (R[s] | bit) >> 1,
                                                         (unsigned)(base + s + 1));
                        atomicAdd(pending, 1ull);
                        const nqq::Status st = q.enqueue(child);
                        if (st != nqq::OK) {
                            atomicAdd(pending, minus_one);
                            if (st == nqq::FULL) {
                                ++fulls;
                            } else {
                                ++stuck;
                                atomicExch(acct + QA_ABORT, 1ull);
                            }
                            break;
                        }
                        ++enq;
                        fs ^= bit;
                    }
                    F[s] = fs;
                    f = F[k];
                }
            }
            if (ld_relaxed_u64(acct + QA_ABORT)) break;
        }
        // One DFS step, written with selects rather than branches so that the lanes of a
        // warp, each deep in its own subtree, keep executing the same instructions.
        const bool has = f != 0;
        const mask_t bit = f & (0u - f);
        F[k] = f ^ bit;
        const mask_t c = C[k] | bit, l = (L[k] | bit) << 1, r = (R[k] | bit) >> 1;
        const mask_t nf = nq_free(c, l, r, full);
        const bool last = k + 2 == rows;
        sol += (has && last) ? __popc(nf) : 0;
        const bool push = has && !last && nf != 0;
        k += push ? 1 : (has ? 0 : -1);
        if (push) {
            C[k] = c;
            L[k] = l;
            R[k] = r;
            F[k] = nf;
        }
    }

    nq_block_add(acct + QA_SOLUTIONS, sol);
    if (deq) atomicAdd(acct + QA_DEQUEUED, deq);
    if (enq) atomicAdd(acct + QA_ENQUEUED, enq);
    if (splits) atomicAdd(acct + QA_SPLITS, splits);
    if (fulls) atomicAdd(acct + QA_FULL, fulls);
    if (empties) atomicAdd(acct + QA_EMPTY, empties);
    if (busy) atomicAdd(acct + QA_BUSY, busy);
    if (stuck) atomicAdd(acct + QA_STUCK, stuck);
}

#define QUEUE_SEARCH_ARGS \
    unsigned char *qmem, unsigned capacity, int n, int levels, int threshold, int split_rows, unsigned long long *acct

extern "C" __global__ void queue_search_bq(QUEUE_SEARCH_ARGS) {
    queue_search<nqq::BrokerQueue<board_t>>(qmem, capacity, n, levels, threshold, split_rows, acct);
}

extern "C" __global__ void queue_search_bwd(QUEUE_SEARCH_ARGS) {
    queue_search<nqq::BrokerWorkDistributor<board_t>>(qmem, capacity, n, levels, threshold, split_rows, acct);
}
