// The queue microbenchmark of Kerbl et al. (their Fig. 1) and the queues' correctness
// checks, for every queue (bq, bwd, gottlieb, ring) and element size (4, 8, 16 bytes).
//
// Kernels, each named <kind>_<queue>_<bytes>:
//   qb_init          slot initialisation after the host zeroed the queue's memory
//   qb_balanced      each thread: `iters` times enqueue then dequeue (the paper's setup)
//   qb_unbalanced    even warps only enqueue, odd warps only dequeue, `iters` each; with a
//                    small capacity FULL and EMPTY really happen (threads % 64 == 0, and all
//                    threads resident: a consumer waits for producers that must be running)
//   qb_enqueue_only  each thread enqueues its id once (FULL once the queue is full)
//   qb_dequeue_only  each thread dequeues once (EMPTY once the queue is empty)
// An element carries its id (thread * iters + iteration) and, for 8 and 16 bytes, words
// derived from it, so a torn or stale read is caught. With `check` set, every dequeued id
// is counted in seen[id] (exactly-once check on the host) and summed; without it the
// kernels do only the queue operations (timed runs). A retry loop (FULL in a producer,
// EMPTY in a consumer) is bounded: a thread that gives up is counted, never hangs.
#include "baseline_queues.cuh"
#include "broker_queue.cuh"

// Statistics words (64-bit), the same numbers as src/nqprof/queuebench.py.
#define QB_ENQ_OK 0
#define QB_DEQ_OK 1
#define QB_FULL 2
#define QB_EMPTY 3
#define QB_STUCK 4
#define QB_CORRUPT 5
#define QB_ID_SUM 6
#define QB_GAVE_UP 7
#define QB_WORDS 8

#ifndef QB_RETRY_CAP
#define QB_RETRY_CAP (1u << 22)
#endif

namespace qb {

template <class T>
__device__ __forceinline__ T make(unsigned id);
template <>
__device__ __forceinline__ unsigned make<unsigned>(unsigned id) { return id; }
template <>
__device__ __forceinline__ unsigned long long make<unsigned long long>(unsigned id) {
    return ((unsigned long long)(~id) << 32) | id;
}
template <>
__device__ __forceinline__ uint4 make<uint4>(unsigned id) {
    return make_uint4(id, ~id, id * 2654435761u, id ^ 0x5bd1e995u);
}

// The id, or 0xffffffff when the element is not one that make() wrote.
__device__ __forceinline__ unsigned id_of(unsigned v) { return v; }
__device__ __forceinline__ unsigned id_of(unsigned long long v) {
    unsigned id = (unsigned)v;
    return (unsigned)(v >> 32) == ~id ? id : 0xffffffffu;
}
__device__ __forceinline__ unsigned id_of(uint4 v) {
    unsigned id = v.x;
    return (v.y == ~id && v.z == id * 2654435761u && v.w == (id ^ 0x5bd1e995u)) ? id : 0xffffffffu;
}

struct Tally {
    unsigned long long enq = 0, deq = 0, full = 0, empty = 0, stuck = 0, corrupt = 0, sum = 0, gave_up = 0;

    __device__ void flush(unsigned long long* stats) {
        if (enq) atomicAdd(stats + QB_ENQ_OK, enq);
        if (deq) atomicAdd(stats + QB_DEQ_OK, deq);
        if (full) atomicAdd(stats + QB_FULL, full);
        if (empty) atomicAdd(stats + QB_EMPTY, empty);
        if (stuck) atomicAdd(stats + QB_STUCK, stuck);
        if (corrupt) atomicAdd(stats + QB_CORRUPT, corrupt);
        if (sum) atomicAdd(stats + QB_ID_SUM, sum);
        if (gave_up) atomicAdd(stats + QB_GAVE_UP, gave_up);
    }
};

// Enqueue until it succeeds; false on STUCK or after the retry cap.
template <class Q, class T>
__device__ bool put(Q& q, const T& v, Tally& t) {
    for (unsigned round = 0;; ++round) {
        const nqq::Status s = q.enqueue(v);
        if (s == nqq::OK) {
            ++t.enq;
            return true;
        }
        if (s == nqq::STUCK) {
            ++t.stuck;
            return false;
        }
        ++t.full;
        if (round >= QB_RETRY_CAP) {
            ++t.gave_up;
            return false;
        }
        nqq::backoff(round);
    }
}

template <class Q, class T>
__device__ bool take(Q& q, T& v, Tally& t, bool check, unsigned limit, unsigned* seen) {
    for (unsigned round = 0;; ++round) {
        const nqq::Status s = q.dequeue(v);
        if (s == nqq::OK) {
            ++t.deq;
            if (check) {
                const unsigned id = id_of(v);
                if (id >= limit) {
                    ++t.corrupt;
                } else {
                    atomicAdd(seen + id, 1u);
                    t.sum += id;
                }
            }
            return true;
        }
        if (s == nqq::STUCK) {
            ++t.stuck;
            return false;
        }
        ++t.empty;
        if (round >= QB_RETRY_CAP) {
            ++t.gave_up;
            return false;
        }
        nqq::backoff(round);
    }
}

template <class Q, class T>
__device__ void balanced(unsigned char* mem, unsigned capacity, unsigned threads, unsigned iters,
                         unsigned long long* stats, unsigned* seen, int check) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= threads) return;
    Q q(mem, capacity, threads);
    Tally t;
    for (unsigned it = 0; it < iters; ++it) {
        if (!put(q, make<T>(tid * iters + it), t)) break;
        T v;
        if (!take(q, v, t, check, threads * iters, seen)) break;
    }
    t.flush(stats);
}

template <class Q, class T>
__device__ void unbalanced(unsigned char* mem, unsigned capacity, unsigned threads, unsigned iters,
                           unsigned long long* stats, unsigned* seen, int check) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= threads) return;
    Q q(mem, capacity, threads);
    Tally t;
    const bool producer = ((tid >> 5) & 1u) == 0;
    for (unsigned it = 0; it < iters; ++it) {
        if (producer) {
            if (!put(q, make<T>(tid * iters + it), t)) break;
        } else {
            T v;
            if (!take(q, v, t, check, threads * iters, seen)) break;
        }
    }
    t.flush(stats);
}

template <class Q, class T>
__device__ void enqueue_only(unsigned char* mem, unsigned capacity, unsigned threads, unsigned long long* stats) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= threads) return;
    Q q(mem, capacity, threads);
    Tally t;
    const nqq::Status s = q.enqueue(make<T>(tid));
    if (s == nqq::OK) {
        t.enq = 1;
        t.sum = tid;
    } else if (s == nqq::FULL) {
        t.full = 1;
    } else {
        t.stuck = 1;
    }
    t.flush(stats);
}

template <class Q, class T>
__device__ void dequeue_only(unsigned char* mem, unsigned capacity, unsigned threads, unsigned limit,
                             unsigned long long* stats, unsigned* seen) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= threads) return;
    Q q(mem, capacity, threads);
    Tally t;
    T v;
    const nqq::Status s = q.dequeue(v);
    if (s == nqq::OK) {
        t.deq = 1;
        const unsigned id = id_of(v);
        if (id >= limit) {
            ++t.corrupt;
        } else {
            atomicAdd(seen + id, 1u);
            t.sum = id;
        }
    } else if (s == nqq::EMPTY) {
        t.empty = 1;
    } else {
        t.stuck = 1;
    }
    t.flush(stats);
}

}  // namespace qb

#define QB_KERNELS(name, Queue, T, bytes)                                                                            \
    extern "C" __global__ void qb_init_##name##_##bytes(unsigned char* mem, unsigned capacity) {                       \
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < capacity; i += gridDim.x * blockDim.x)             \
            Queue<T>::init_slot(mem, capacity, i);                                                                     \
    }                                                                                                                  \
    extern "C" __global__ void qb_balanced_##name##_##bytes(unsigned char* mem, unsigned capacity, unsigned threads,   \
                                                            unsigned iters, unsigned long long* stats, unsigned* seen, \
                                                            int check) {                                               \
        qb::balanced<Queue<T>, T>(mem, capacity, threads, iters, stats, seen, check);                                  \
    }                                                                                                                  \
    extern "C" __global__ void qb_unbalanced_##name##_##bytes(unsigned char* mem, unsigned capacity, unsigned threads, \
                                                              unsigned iters, unsigned long long* stats,               \
                                                              unsigned* seen, int check) {                             \
        qb::unbalanced<Queue<T>, T>(mem, capacity, threads, iters, stats, seen, check);                                \
    }                                                                                                                  \
    extern "C" __global__ void qb_enqueue_only_##name##_##bytes(unsigned char* mem, unsigned capacity,                 \
                                                                unsigned threads, unsigned long long* stats) {         \
        qb::enqueue_only<Queue<T>, T>(mem, capacity, threads, stats);                                                  \
    }                                                                                                                  \
    extern "C" __global__ void qb_dequeue_only_##name##_##bytes(unsigned char* mem, unsigned capacity,                 \
                                                                unsigned threads, unsigned limit,                      \
                                                                unsigned long long* stats, unsigned* seen) {           \
        qb::dequeue_only<Queue<T>, T>(mem, capacity, threads, limit, stats, seen);                                     \
    }

#define QB_QUEUE(name, Queue)                        \
    QB_KERNELS(name, Queue, unsigned, 4)             \
    QB_KERNELS(name, Queue, unsigned long long, 8)   \
    QB_KERNELS(name, Queue, uint4, 16)

QB_QUEUE(bq, nqq::BrokerQueue)
QB_QUEUE(bwd, nqq::BrokerWorkDistributor)
QB_QUEUE(gottlieb, nqq::GottliebQueue)
QB_QUEUE(ring, nqq::AtomicRing)
