// The Broker Queue (BQ) of Kerbl et al. (ICS 2018) and its lighter, non-linearizable
// variant, the Broker Work Distributor (BWD), over any trivially copyable element type.
//
// A ring buffer of C slots with a ticket per slot, head and tail positions (one 64-bit word,
// tail in the low half, head in the high half, so both can be read at once), and Count,
// the broker. A thread moves head or tail only once Count guarantees that its operation
// will succeed, so head and tail never roll back and nothing spins on a full or empty queue:
//
//   enqueue: EnsureEnqueue (Count < C reserved with atomicAdd, else undone), then PutData:
//            Pos = atomicAdd(tail, 1); wait until ticket[Pos % C] == 2*(Pos / C) (the
//            enqueue turn of that round); write; ticket = 2*(Pos / C) + 1 (release).
//   dequeue: EnsureDequeue (Count > 0 reserved with atomicSub, else undone), then ReadData:
//            Pos = atomicAdd(head, 1); wait for the odd ticket 2*(Pos / C) + 1; read;
//            ticket = 2*((Pos + C) / C), the slot's next enqueue turn.
//
// BQ (linearizable): when the broker refuses, the thread reads head and tail together and
// reports FULL only if C <= tail - head < C + T/2, EMPTY only if tail - head <= 0 (as
// tail - head - 1 >= C + T/2 in unsigned arithmetic), T being the most threads that use the
// queue at once; otherwise an operation that will succeed is in flight and it tries again.
// BWD: reports FULL or EMPTY as soon as the broker refuses (cheaper; such a report need not
// be true at any instant, e.g. while another thread's reservation is being undone).
//
// Every wait is bounded (queue_common.cuh): a cap hit is reported as STUCK.
#pragma once
#include "queue_common.cuh"

namespace nqq {

template <class T, bool LINEARIZABLE>
struct BrokerQueueT {
    Layout<T> m;
    unsigned max_threads;  // T in the full/empty test above

    __device__ BrokerQueueT(unsigned char* mem, unsigned capacity, unsigned threads)
        : m(mem, capacity), max_threads(threads) {}

    // Zero memory is an empty queue (all tickets at the first enqueue turn).
    __device__ static void init_slot(unsigned char*, unsigned, unsigned) {}

    __device__ unsigned* tail() { return reinterpret_cast<unsigned*>(m.word_a); }
    __device__ unsigned* head() { return reinterpret_cast<unsigned*>(m.word_a) + 1; }
    __device__ int* count() { return reinterpret_cast<int*>(m.line_b); }

    // Elements in the queue or reserved, as the broker sees it (a relaxed read).
    __device__ int size_hint() { return (int)ld_relaxed(m.line_b); }

    __device__ bool ensure_enqueue(unsigned& round) {
        int num = (int)ld_relaxed(m.line_b);
        while (num < (int)m.cap) {
            if (atomicAdd(count(), 1) < (int)m.cap) return true;
            num = atomicSub(count(), 1) - 1;
            if (capped(++round, m.stuck)) return false;
        }
        return false;
    }

    __device__ bool ensure_dequeue(unsigned& round) {
        int num = (int)ld_relaxed(m.line_b);
        while (num > 0) {
            if (atomicSub(count(), 1) > 0) return true;
            num = atomicAdd(count(), 1) + 1;
            if (capped(++round, m.stuck)) return false;
        }
        return false;
    }

    __device__ void head_tail(unsigned& h, unsigned& t) {
        unsigned long long ht = ld_relaxed64(m.word_a);
        t = (unsigned)ht;
        h = (unsigned)(ht >> 32);
    }

    __device__ Status enqueue(const T& v) {
        unsigned round = 0;
        while (!ensure_enqueue(round)) {
            if (round >= NQ_QUEUE_SPIN_CAP) return STUCK;
            if (!LINEARIZABLE) return FULL;
            unsigned h, t;
            head_tail(h, t);
            const unsigned d = t - h;
            if (m.cap <= d && d < m.cap + max_threads / 2) return FULL;
            if (capped(++round, m.stuck)) return STUCK;
            backoff(round);
        }
        const unsigned pos = atomicAdd(tail(), 1u);
        const unsigned p = pos & m.mask, turn = 2u * (pos / m.cap);
        if (!wait_ticket(m.tickets + p, turn, m.stuck)) return STUCK;
        m.ring[p] = v;
        st_release(m.tickets + p, turn + 1u);
        return OK;
    }

    // One round of dequeue: OK, EMPTY (BQ: the queue was empty when head and tail were
    // read), or BUSY (BQ: the broker refused while an operation that will succeed is in
    // flight). A persistent thread that has other work uses this rather than waiting.
    __device__ Status try_dequeue(T& v) {
        unsigned round = 0;
        if (!ensure_dequeue(round)) {
            if (round >= NQ_QUEUE_SPIN_CAP) return STUCK;
            if (!LINEARIZABLE) return EMPTY;
            unsigned h, t;
            head_tail(h, t);
            return t - h - 1u >= m.cap + max_threads / 2 ? EMPTY : BUSY;
        }
        return read_data(v);
    }

    __device__ Status dequeue(T& v) {
        for (unsigned round = 0;; ++round) {
            const Status s = try_dequeue(v);
            if (s != BUSY) return s;
            if (capped(round, m.stuck)) return STUCK;
            backoff(round);
        }
    }

    __device__ Status read_data(T& v) {
        const unsigned pos = atomicAdd(head(), 1u);
        const unsigned p = pos & m.mask;
        if (!wait_ticket(m.tickets + p, 2u * (pos / m.cap) + 1u, m.stuck)) return STUCK;
        v = m.ring[p];
        st_release(m.tickets + p, 2u * ((pos + m.cap) / m.cap));
        return OK;
    }

    // Fill the first `n` slots before any other thread uses the queue (n <= capacity):
    // each thread i < n writes slot i; thread 0 also sets tail and Count.
    __device__ void seed(unsigned i, unsigned n, const T& v) {
        if (i < n) {
            m.ring[i] = v;
            m.tickets[i] = 1u;  // dequeue turn of round 0
        }
        if (i == 0) {
            *m.word_a = (unsigned long long)n;  // head 0, tail n
            *count() = (int)n;
        }
    }
};

template <class T>
using BrokerQueue = BrokerQueueT<T, true>;
template <class T>
using BrokerWorkDistributor = BrokerQueueT<T, false>;

}  // namespace nqq
