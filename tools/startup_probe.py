"""The fixed cost of a GPU run, step by step: interpreter start, imports, CUDA driver
initialisation, context, module load, NVML, and a context made in a forked child of a
parent that imported PyCUDA without initialising CUDA.

    python3 tools/startup_probe.py [--repeats 5]

Every step is timed on the host clock (medians of --repeats where a step is a whole
process). Run it on the GPU host; it prints one line per step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def whole(code: str, repeats: int) -> float:
    """Median seconds of ``python3 -c code`` as a whole process."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


STEPS = r"""
import time, sys
t = [time.perf_counter()]
def mark(name):
    t.append(time.perf_counter())
    print(f"  {name:<34} {1e3 * (t[-1] - t[-2]):8.1f} ms", flush=True)
import numpy; mark("import numpy")
import pycuda.driver as drv; mark("import pycuda.driver")
drv.init(); mark("cuInit")
dev = drv.Device(0); mark("Device(0)")
ctx = dev.make_context(); mark("make_context")
drv.mem_get_info(); mark("mem_get_info")
from nqprof.strategies import get; mark("import nqprof.strategies")
from nqprof.strategies.fast import STRATEGY; mark("import nqprof.strategies.fast")
from nqprof.cuda.build import build; mark("import nqprof.cuda.build")
m = build(STRATEGY.sources[0], {"NQ_BLOCK": 128}); mark("build constellation.cu (cache)")
m2 = build(STRATEGY.sources[0], {"NQ_BLOCK": 128}); mark("build again (same process)")
from nqprof.cuda.device import device_facts; f = device_facts(drv, dev); mark("device_facts")
from nqprof.cuda.device import stream_hold; stream_hold(drv); mark("stream hold built")
import pynvml; pynvml.nvmlInit(); mark("nvmlInit")
h = pynvml.nvmlDeviceGetHandleByIndex(0)
p = pynvml.nvmlDeviceGetComputeRunningProcesses(h); mark("nvml processes")
print("  nvml sees", [(x.pid, x.usedGpuMemory) for x in p], "own pid", __import__("os").getpid())
ctx.pop(); ctx.detach(); mark("context destroyed")
ctx = dev.make_context(); mark("second make_context")
ctx.pop(); ctx.detach(); mark("second destroyed")
"""

FORKED = r"""
import os, time, sys
import numpy, pycuda.driver as drv
import nqprof.strategies.fast
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    t1 = time.perf_counter()
    drv.init(); ctx = drv.Device(0).make_context()
    t2 = time.perf_counter()
    fork_ms, context_ms = 1e3 * (t1 - t0), 1e3 * (t2 - t1)
    print(f"  forked child: fork {fork_ms:.1f} ms, init+context {context_ms:.1f} ms", flush=True)
    ctx.pop(); ctx.detach()
    os._exit(0)
os.waitpid(pid, 0)
"""


def open_session(name: str, n: int) -> None:
    """One session opened and run in this process, its slowest calls listed."""
    import cProfile
    import pstats

    from nqprof.strategies import get

    strategy = get(name)
    params = strategy.resolve(n, {})
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    session = strategy.open(n, params)
    t1 = time.perf_counter()
    m = session.run_once()
    t2 = time.perf_counter()
    session.close()
    prof.disable()
    t3 = time.perf_counter()
    print(
        f"{name} N={n}: open {t1 - t0:.3f} s, round {t2 - t1:.3f} "
        f"s (GPU {m.gpu_s}), close {t3 - t2:.3f} s; count {m.count}"
    )
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--open",
        nargs=2,
        metavar=("STRATEGY", "N"),
        help="instead: open STRATEGY's session at N in "
        "this process and run one round, under cProfile",
    )
    args = ap.parse_args()
    if args.open:
        return open_session(args.open[0], int(args.open[1]))
    r = args.repeats
    print(f"whole processes (median of {r}):")
    for label, code in (
        ("python -c pass", "pass"),
        ("import numpy", "import numpy"),
        ("import nqprof.cli", "import nqprof.cli"),
        ("import pycuda.driver", "import pycuda.driver"),
        ("import pycuda.autoinit", "import pycuda.autoinit"),
    ):
        print(f"  {label:<34} {1e3 * whole(code, r):8.1f} ms", flush=True)
    print("steps of one process:")
    subprocess.run([sys.executable, "-c", STEPS], check=True)
    print("a context in a forked child:")
    subprocess.run([sys.executable, "-c", FORKED], check=True)
    print(f"  (pid {os.getpid()})")


if __name__ == "__main__":
    main()
