// What nqprof's GPU queues share (kernels/broker_queue.cuh, kernels/baseline_queues.cuh):
// the status codes, the memory layout of a queue in global memory, acquire/release
// accesses, and the bounded spin.
//
// Memory layout of every queue (one device allocation, zeroed by the host, then the
// queue's init kernel for the queues whose zero state is not "empty"):
//   [0, 512)      header: four 128-byte lines, one counter word group each, so that the
//                 counters different operations hit do not share a cache line
//                   line 0 (byte   0): 64-bit word (head/tail, or tail alone)
//                   line 1 (byte 128): a 32-bit counter (Count, Qu, or the head)
//                   line 2 (byte 256): a 32-bit counter (Ql)
//                   line 3 (byte 384): the number of bounded spins that hit their cap
//   [512, 512+4C) one 32-bit ticket (or sequence number) per slot
//   [.., +sizeof(T)*C, 16-byte aligned) the ring of elements
// C, the capacity, is a power of two (tickets stay consistent when 32-bit positions wrap).
#pragma once

namespace nqq {

// BUSY (Broker Queue's try_dequeue only): the broker refused but the queue is not empty, an
// operation that will succeed is in flight; the caller may try again.
enum Status : int { OK = 0, FULL = 1, EMPTY = 2, STUCK = 3, BUSY = 4 };

#ifndef NQ_QUEUE_SPIN_CAP
// A spin on a slot ticket (or a retry loop) that runs this many rounds sets STUCK instead of
// hanging: with the back-off below that is well over a second, against microseconds for a
// contended but healthy wait.
#define NQ_QUEUE_SPIN_CAP (1u << 21)
#endif

constexpr unsigned HEADER_BYTES = 512;
constexpr unsigned LINE_A = 0, LINE_B = 128, LINE_C = 256, LINE_STUCK = 384;

__host__ __device__ constexpr unsigned long long align16(unsigned long long x) { return (x + 15) & ~15ull; }

// Bytes of device memory a queue of `capacity` elements of `elem_bytes` takes.
__host__ __device__ constexpr unsigned long long queue_bytes(unsigned capacity, unsigned elem_bytes) {
    return align16(HEADER_BYTES + 4ull * capacity) + (unsigned long long)elem_bytes * capacity;
}

template <class T>
struct Layout {
    unsigned long long* word_a;
    unsigned* line_b;
    unsigned* line_c;
    unsigned* stuck;
    unsigned* tickets;
    T* ring;
    unsigned cap, mask;

    __device__ Layout(unsigned char* mem, unsigned capacity)
        : word_a(reinterpret_cast<unsigned long long*>(mem + LINE_A)),
          line_b(reinterpret_cast<unsigned*>(mem + LINE_B)),
          line_c(reinterpret_cast<unsigned*>(mem + LINE_C)),
          stuck(reinterpret_cast<unsigned*>(mem + LINE_STUCK)),
          tickets(reinterpret_cast<unsigned*>(mem + HEADER_BYTES)),
          ring(reinterpret_cast<T*>(mem + align16(HEADER_BYTES + 4ull * capacity))),
          cap(capacity),
          mask(capacity - 1) {}
};

// --- ordered accesses at GPU scope (PTX memory model) ---------------------------------------
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long ld_relaxed64(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// Back off a little more each round of a spin (the waited-for thread needs issue slots).
// Only a whole warp sleeps: a lane that sleeps while its warp's other lanes search (the
// queue strategy) would hold them up.
__device__ __forceinline__ void backoff(unsigned round) {
    if (round > 8 && __activemask() == 0xffffffffu) __nanosleep(round < 64 ? 32 : (round < 1024 ? 128 : 512));
}

// Wait until *ticket == want (acquire). False, with the queue's stuck counter bumped, when
// the cap is reached: the caller reports STUCK and the run is an error, never a hang.
__device__ __forceinline__ bool wait_ticket(const unsigned* ticket, unsigned want, unsigned* stuck) {
    for (unsigned round = 0;; ++round) {
        if (ld_acquire(ticket) == want) return true;
        if (round >= NQ_QUEUE_SPIN_CAP) {
            atomicAdd(stuck, 1u);
            return false;
        }
        backoff(round);
    }
}

// Bump the stuck counter when a retry loop reaches the cap; true if it did.
__device__ __forceinline__ bool capped(unsigned round, unsigned* stuck) {
    if (round < NQ_QUEUE_SPIN_CAP) return false;
    atomicAdd(stuck, 1u);
    return true;
}

}  // namespace nqq
