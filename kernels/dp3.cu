// DP-3 of Plauth et al.: the condensed kernel with a dynamic search depth. The search depth
// doubles with each child generation, capped by what shared memory holds for the child's
// per-thread stacks (max_search = shared_bytes / (state_bytes * child_block) - 1, computed
// by the host); see condensed.cuh for the kernel and the per-block allocation scheme.
//
// Kernels: dp3_root (host-launched, one thread per host-expanded board) and dp3_child.
#include "condensed.cuh"

struct DoublingDepth {
    static __device__ __forceinline__ int next(int search, int max_search) { return min(2 * search, max_search); }
};

CONDENSED_KERNELS(dp3, DoublingDepth)
