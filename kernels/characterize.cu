// The launch-cost microbenchmark of Wang and Yalamanchili (2014), for nqprof characterize.
//
// char_launch is a parent grid in which each of its first `count` threads launches one
// empty child grid (one block of one thread) into the stream kind `stream`: the block's
// default stream, a non-blocking stream the thread creates and destroys, fire-and-forget,
// or tail launch (CHAR_STREAM_*; the first three are cdp.cuh's CDP_STREAM_*). Every launch
// goes through cdp_launch, which reads its return code and accounts for it (launches,
// failures, first error), so a launch past the pending-launch limit is counted, never lost.
//
// The same source built with -DCDP_LAUNCH_MODE=2 (CDP_LAUNCH_NONE) is the parent with the
// launch removed and everything else kept (the stream's creation and destruction included):
// t1 - t2, the two grids' times, is the launch cost. The parent's work is the accounting.
//
// char_empty is also a host-launched kernel: nqprof characterize reserve loads this module
// to see what linking the device runtime reserves.
#include "cdp.cuh"
#include "latency.cuh"

#define CHAR_STREAM_TAIL 3  // cudaStreamTailLaunch: runs after the launching grid completes

extern "C" __global__ void char_empty() {}

extern "C" __global__ void char_launch(unsigned count, int stream, cdp_word* acct) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    cdp_stream s;
    if (stream == CHAR_STREAM_TAIL) {
        s.stream = cudaStreamTailLaunch;
        s.created = false;
    } else if (!cdp_stream_open(acct, stream, s)) {
        return;
    }
    cdp_launch(acct, 1, 1, char_empty, dim3(1), dim3(1), 0, s.stream);
    cdp_stream_close(s);
}

// char_resident: thread 0 of each block records the SM it ran on and when it started and
// ended (%globaltimer, ns), having kept the block resident for `spin_ns` with its dynamic
// shared memory in use. From the records the host counts the blocks each SM held at once
// (nqprof characterize residency). rec: 3 words a block.
extern "C" __global__ void char_resident(unsigned long long* rec, unsigned long long spin_ns) {
    extern __shared__ unsigned char_smem[];
    if (threadIdx.x) return;
    unsigned sm, dynamic;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic));
    const unsigned long long t0 = nq_globaltimer();
    volatile unsigned* mine = dynamic >= sizeof(unsigned) ? char_smem : &sm;  // none: a register
    *mine = sm;
    while (nq_globaltimer() - t0 < spin_ns) {
    }
    rec[3 * blockIdx.x] = *mine;
    rec[3 * blockIdx.x + 1] = t0;
    rec[3 * blockIdx.x + 2] = nq_globaltimer();
}

// char_resident_launch: its one thread launches char_resident(grid, block, shared) from the
// device into the stream kind `stream` (fire-and-forget, or CHAR_STREAM_TAIL), through
// cdp_launch (accounted: a failed launch is counted, never lost).
extern "C" __global__ void char_resident_launch(unsigned long long* rec, unsigned long long spin_ns, unsigned grid,
                                                unsigned block, unsigned shared, int stream, cdp_word* acct) {
    if (blockIdx.x || threadIdx.x) return;
    const cudaStream_t s = stream == CHAR_STREAM_TAIL ? cudaStreamTailLaunch : cudaStreamFireAndForget;
    cdp_launch(acct, 1, grid, char_resident, dim3(grid), dim3(block), shared, s, rec, spin_ns);
}

// --- launch latency (nqprof characterize latency; latency.cuh has the record) --------------

extern "C" __global__ void lat_child(unsigned long long* rec) { lat_child_body(rec); }

// The host path: the host launches lat_child right after this grid, into the same stream;
// this grid spins `spin_ns` first (the child is queued before it ends), then marks its end
// as the child's launch.
extern "C" __global__ void lat_host_parent(unsigned long long* rec, unsigned long long spin_ns) {
    const unsigned long long t0 = nq_globaltimer();
    while (nq_globaltimer() - t0 < spin_ns) {
    }
    lat_mark(rec, LAT_LAUNCH);
    lat_mark(rec, LAT_RETURN);
}

// The CDP2 paths: one thread launches lat_child(grid, block) into the tail or the
// fire-and-forget stream (CHAR_STREAM_TAIL or CDP_STREAM_FIRE_AND_FORGET), accounted.
extern "C" __global__ void lat_cdp_parent(unsigned long long* rec, unsigned grid, unsigned block, int stream,
                                          cdp_word* acct) {
    if (blockIdx.x || threadIdx.x) return;
    const cudaStream_t s = stream == CHAR_STREAM_TAIL ? cudaStreamTailLaunch : cudaStreamFireAndForget;
    lat_mark(rec, LAT_LAUNCH);
    cdp_launch(acct, 1, grid, lat_child, dim3(grid), dim3(block), 0, s, rec);
    lat_mark(rec, LAT_RETURN);
}
