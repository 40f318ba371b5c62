// The GPU's global timer (%globaltimer, nanoseconds, one clock for every SM): what nqprof's
// device-side records (the CDP timeline, characterize's probes, the counting grid's block
// records) and the stream hold read their times from.
#pragma once

__device__ __forceinline__ unsigned long long nq_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
