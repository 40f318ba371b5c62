// DP-2 of Plauth et al.: the condensed kernel with a static search depth. Every generation
// searches the same number of rows deeper (`search`) before handing its boards to a child
// grid; see condensed.cuh for the kernel and the per-block allocation scheme.
//
// Kernels: dp2_root (host-launched, one thread per host-expanded board) and dp2_child.
#include "condensed.cuh"

struct StaticDepth {
    static __device__ __forceinline__ int next(int search, int /*max_search*/) { return search; }
};

CONDENSED_KERNELS(dp2, StaticDepth)
