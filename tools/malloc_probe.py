"""Measure the CUDA device allocator (in-kernel malloc/free) the way the condensed CDP kernels
use it.

    python tools/malloc_probe.py [--heap-mib 2048] [--bytes 512]

A grid of T threads each allocates K blocks of B bytes. "hold" keeps every block until all
threads are done (as a DP-2 root thread keeps its boards until its subtree is exhausted);
"churn" frees each block right after allocating it. Times are CUDA events over the whole
grid, and the mean cycles a thread spent per malloc (clock64). Every pointer is checked:
a NULL result is counted and printed, never hidden.
"""

from __future__ import annotations

import argparse

import numpy as np

SOURCE = r"""
extern "C" __global__ void alloc(int per_thread, int bytes, int hold, void **slots,
                                 unsigned long long *cycles, unsigned long long *nulls) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    long long spent = 0;
    for (int k = 0; k < per_thread; ++k) {
        const long long t0 = clock64();
        void *p = malloc(bytes);
        spent += clock64() - t0;
        if (p == nullptr) { atomicAdd(nulls, 1ull); continue; }
        ((char *)p)[0] = (char)k;
        if (hold) slots[(size_t)t * per_thread + k] = p; else free(p);
    }
    atomicAdd(cycles, (unsigned long long)spent);
}
extern "C" __global__ void release(int per_thread, void **slots) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < per_thread; ++k) {
        void *p = slots[(size_t)t * per_thread + k];
        if (p) free(p);
        slots[(size_t)t * per_thread + k] = nullptr;
    }
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--heap-mib", type=int, default=2048)
    ap.add_argument("--bytes", type=int, default=512)
    ap.add_argument("--threads", default="1024")
    ap.add_argument("--per-thread", default="4,16,64,128")
    ap.add_argument(
        "--budget-s", type=float, default=60.0, help="skip larger cases once one takes longer"
    )
    args = ap.parse_args()

    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    drv.Context.set_limit(drv.limit.MALLOC_HEAP_SIZE, args.heap_mib << 20)
    mod = SourceModule(SOURCE, no_extern_c=True)
    alloc, release = mod.get_function("alloc"), mod.get_function("release")
    clock_khz = drv.Context.get_device().get_attribute(drv.device_attribute.CLOCK_RATE)
    print(
        f"heap {args.heap_mib} MiB, {args.bytes} B per malloc, SM clock {clock_khz / 1e3:.0f} MHz",
        flush=True,
    )
    print(
        f"{'mode':<6} {'threads':>8} {'per_thr':>8} {'mallocs':>9} {'alloc_ms':>10} {'free_ms':>9} "
        f"{'us/malloc/thr':>14} {'nulls':>6}",
        flush=True,
    )
    start, end = drv.Event(), drv.Event()
    for threads in (int(x) for x in args.threads.split(",")):
        for per in (int(x) for x in args.per_thread.split(",")):
            for mode in ("hold", "churn"):
                total = threads * per
                slots = drv.mem_alloc(max(8, 8 * total))
                drv.memset_d8(slots, 0, 8 * total)
                cycles = drv.mem_alloc(8)
                nulls = drv.mem_alloc(8)
                drv.memset_d8(cycles, 0, 8)
                drv.memset_d8(nulls, 0, 8)
                block = min(128, threads)
                grid = (threads // block, 1)
                start.record()
                alloc(
                    np.int32(per),
                    np.int32(args.bytes),
                    np.int32(mode == "hold"),
                    slots,
                    cycles,
                    nulls,
                    block=(block, 1, 1),
                    grid=grid,
                )
                end.record()
                end.synchronize()
                alloc_ms = end.time_since(start)
                start.record()
                release(np.int32(per), slots, block=(block, 1, 1), grid=grid)
                end.record()
                end.synchronize()
                free_ms = end.time_since(start)
                c, z = np.zeros(1, np.uint64), np.zeros(1, np.uint64)
                drv.memcpy_dtoh(c, cycles)
                drv.memcpy_dtoh(z, nulls)
                us = float(c[0]) / total / (clock_khz / 1e3)
                print(
                    f"{mode:<6} {threads:>8} {per:>8} {total:>9} "
                    f"{alloc_ms:>10.2f} {free_ms:>9.2f} {us:>14.2f} {int(z[0]):>6}",
                    flush=True,
                )
                for b in (slots, cycles, nulls):
                    b.free()
                if alloc_ms / 1e3 > args.budget_s:
                    print("(budget reached: larger cases skipped)")
                    return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
