// The stream hold of nqprof's timing (nqprof.cuda.device.StreamHold), NVBench's blocking
// kernel: launched before a timed region's start event, it keeps the stream busy until the
// host has queued the whole region (start event, the strategy's launches, stop event) and
// sets the flag, so that the events time the GPU's work and not the host's launch latency.
// It gives up after max_ns (a region that synchronises inside itself), counting that.

extern "C" __global__ void nq_hold(const volatile int *flag, unsigned long long max_ns, unsigned int *timed_out)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        if (*flag) return;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < max_ns);
    *(volatile unsigned int *)timed_out += 1u;  // one thread; mapped host memory
}
