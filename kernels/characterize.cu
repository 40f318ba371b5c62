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
