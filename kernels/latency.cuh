// What the launch-latency measurement (nqprof characterize latency) records, shared by its
// kernels in characterize.cu (the host and CDP2 paths) and devgraph.cu (device graph launch
// and the WHILE node: a kernel a device-launchable graph holds may not use CDP2).
//
// One trial's words (unsigned long long; src/nqprof/characterize/latency.py mirrors them):
//   LAT_LAUNCH  the global timer in the launching thread just before its launch call (the
//               host path: the last instruction of the grid the child follows in its stream)
//   LAT_RETURN  the global timer when the launch call had returned
//   LAT_FIRST   the child grid's first block's first instruction (the host sets all ones)
//   LAT_END     the child grid's last block's last instruction
//   LAT_ERROR   a failed device graph launch's cudaError_t (0: none)
//   LAT_ITER    the WHILE node's iterations so far; from LAT_ITERS, two words an iteration:
//               its body's start and end
#pragma once

#include "globaltimer.cuh"

#define LAT_LAUNCH 0
#define LAT_RETURN 1
#define LAT_FIRST 2
#define LAT_END 3
#define LAT_ERROR 4
#define LAT_ITER 5
#define LAT_ITERS 8

// The child grid's body: thread 0 of each block marks the grid's first start and last end.
__device__ __forceinline__ void lat_child_body(unsigned long long* rec) {
    if (threadIdx.x) return;
    atomicMin(rec + LAT_FIRST, nq_globaltimer());
    __threadfence();
    atomicMax(rec + LAT_END, nq_globaltimer());
}

// The launching thread's marks around its launch call.
__device__ __forceinline__ void lat_mark(unsigned long long* rec, int word) { rec[word] = nq_globaltimer(); }
