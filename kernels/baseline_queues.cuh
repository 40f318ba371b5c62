// The queues Kerbl et al. compare the Broker Queue against, over the same memory layout
// (queue_common.cuh) and element types.
//
// GottliebQueue: the fetch-and-add queue of Gottlieb, Lubachevsky and Rudolph (1983). Two
//   bounds instead of one broker: Qu counts slots reserved by inserts and not yet freed by
//   deletes, Ql counts elements completely inserted and not yet reserved by deletes. Insert:
//   test-increment-retest on Qu (FULL if it would pass C), I = fetch-and-add(tail), wait for
//   the slot's insert turn, write, pass the turn on, Ql += 1. Delete mirrors it on Ql and the
//   head, then Qu -= 1. Four atomics an operation; FULL and EMPTY are conservative.
// AtomicRing: a plain lock-free ring buffer with compare-and-swap (per-slot sequence
//   numbers, as in Vyukov's bounded MPMC queue): a thread reads tail, checks that slot's
//   sequence, and claims the position with atomicCAS(tail, pos, pos + 1); a failed CAS
//   retries. FULL/EMPTY when the slot's sequence says so. Lock-free, not wait-free: under
//   contention most CASes fail, which is what the paper measured.
// LCRQ (Morrison and Afek) is left out: its ring cells are updated with a double-width
//   compare-and-swap (x86 CMPXCHG16B) over a value and its index together. CUDA has 128-bit
//   atomicCAS only from sm_90 (and only for 16-byte aligned data); a faithful port would
//   need that plus the list of rings and its hazard-free reclamation, a queue in itself.
//   The AtomicRing stands for the lock-free ring family.
#pragma once
#include "queue_common.cuh"

namespace nqq {

template <class T>
struct GottliebQueue {
    Layout<T> m;

    __device__ GottliebQueue(unsigned char* mem, unsigned capacity, unsigned)
        : m(mem, capacity) {}
    __device__ static void init_slot(unsigned char*, unsigned, unsigned) {}

    __device__ unsigned* tail() { return reinterpret_cast<unsigned*>(m.word_a); }
    __device__ unsigned* head() { return reinterpret_cast<unsigned*>(m.word_a) + 1; }
    __device__ int* qu() { return reinterpret_cast<int*>(m.line_b); }
    __device__ int* ql() { return reinterpret_cast<int*>(m.line_c); }
    __device__ int size_hint() { return (int)ld_relaxed(m.line_c); }

    // test-increment-retest: reserve one unit of *s below `bound`
    __device__ static bool tir(int* s, const unsigned* raw, int bound) {
        if ((int)ld_relaxed(raw) + 1 > bound) return false;
        if (atomicAdd(s, 1) + 1 <= bound) return true;
        atomicSub(s, 1);
        return false;
    }
    // test-decrement-retest: take one unit of *s above 0
    __device__ static bool tdr(int* s, const unsigned* raw) {
        if ((int)ld_relaxed(raw) - 1 < 0) return false;
        if (atomicSub(s, 1) - 1 >= 0) return true;
        atomicAdd(s, 1);
        return false;
    }

    __device__ Status enqueue(const T& v) {
        if (!tir(qu(), m.line_b, (int)m.cap)) return FULL;
        const unsigned pos = atomicAdd(tail(), 1u);
        const unsigned p = pos & m.mask, turn = 2u * (pos / m.cap);
        if (!wait_ticket(m.tickets + p, turn, m.stuck)) return STUCK;
        m.ring[p] = v;
        st_release(m.tickets + p, turn + 1u);
        atomicAdd(ql(), 1);
        return OK;
    }

    __device__ Status dequeue(T& v) {
        if (!tdr(ql(), m.line_c)) return EMPTY;
        const unsigned pos = atomicAdd(head(), 1u);
        const unsigned p = pos & m.mask;
        if (!wait_ticket(m.tickets + p, 2u * (pos / m.cap) + 1u, m.stuck)) return STUCK;
        v = m.ring[p];
        st_release(m.tickets + p, 2u * ((pos + m.cap) / m.cap));
        atomicSub(qu(), 1);
        return OK;
    }
};

template <class T>
struct AtomicRing {
    Layout<T> m;

    __device__ AtomicRing(unsigned char* mem, unsigned capacity, unsigned) : m(mem, capacity) {}
    // Slot i starts with sequence number i: free for the enqueue at position i.
    __device__ static void init_slot(unsigned char* mem, unsigned capacity, unsigned i) {
        Layout<T> l(mem, capacity);
        l.tickets[i] = i;
    }

    __device__ unsigned* tail() { return reinterpret_cast<unsigned*>(m.word_a); }
    __device__ unsigned* head() { return m.line_b; }
    __device__ int size_hint() { return (int)(ld_relaxed(tail()) - ld_relaxed(head())); }

    __device__ Status enqueue(const T& v) {
        unsigned pos = ld_relaxed(tail());
        for (unsigned round = 0;; ++round) {
            const unsigned seq = ld_acquire(m.tickets + (pos & m.mask));
            const int dif = (int)(seq - pos);
            if (dif == 0) {
                const unsigned seen = atomicCAS(tail(), pos, pos + 1u);
                if (seen == pos) break;
                pos = seen;
            } else if (dif < 0) {
                return FULL;
            } else {
                pos = ld_relaxed(tail());
            }
            if (capped(round, m.stuck)) return STUCK;
            backoff(round);
        }
        m.ring[pos & m.mask] = v;
        st_release(m.tickets + (pos & m.mask), pos + 1u);
        return OK;
    }

    __device__ Status dequeue(T& v) {
        unsigned pos = ld_relaxed(head());
        for (unsigned round = 0;; ++round) {
            const unsigned seq = ld_acquire(m.tickets + (pos & m.mask));
            const int dif = (int)(seq - (pos + 1u));
            if (dif == 0) {
                const unsigned seen = atomicCAS(head(), pos, pos + 1u);
                if (seen == pos) break;
                pos = seen;
            } else if (dif < 0) {
                return EMPTY;
            } else {
                pos = ld_relaxed(head());
            }
            if (capped(round, m.stuck)) return STUCK;
            backoff(round);
        }
        v = m.ring[pos & m.mask];
        st_release(m.tickets + (pos & m.mask), pos + m.cap);
        return OK;
    }
};

}  // namespace nqq
