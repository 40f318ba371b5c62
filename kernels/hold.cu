// The stream hold of nqprof's timing (nqprof.cuda.device.StreamHold), NVBench's blocking
// kernel: launched before a timed region's start event, it keeps the stream busy until the
// host has queued the whole region (start event, the strategy's launches, stop event) and
// sets the flag, so that the events time the GPU's work and not the host's launch latency.
// It gives up after max_ns (a region that synchronises inside itself), counting that.

#include "globaltimer.cuh"

extern "C" __global__ void nq_hold(const volatile int *flag, unsigned long long max_ns, unsigned int *timed_out)
{
    const unsigned long long t0 = nq_globaltimer();
    do {
        if (*flag) return;
    } while (nq_globaltimer() - t0 < max_ns);
    *(volatile unsigned int *)timed_out += 1u;  // one thread; mapped host memory
}
