"""The nqprof benchmark suite.

    pytest bench/ --benchmark-autosave          every strategy over its default N range
    pytest bench/ --benchmark-compare           ... against the last saved run
    pytest bench/ --nq-strategy=serial,multicore --nq-n=8:11
    pytest bench/ --nq-param feinbube.depth=4,5,6 --nq-param feinbube.block=64,128

`pytest --help` lists the --nq-* options (group "nqprof"). GPU strategies are skipped with
the reason on a machine without a GPU or PyCUDA; `-rs` shows the reasons.
"""

import pytest

from nqprof.machine import gpu_status
from nqprof.plugin import Case, NQBench, settings_of
from nqprof.runner import solve
from nqprof.strategies import get

#: The harness-overhead check: a GPU run at least this long (CUDA-event time) ...
OVERHEAD_MIN_GPU_S = 0.1
#: ... whose pytest-benchmark median lies within this fraction of its CUDA-event median.
OVERHEAD_TOLERANCE = 0.01
#: N values tried, in order, until a run is long enough.
OVERHEAD_N = range(16, 22)


def test_nqueens(nqbench):
    """One strategy, one N, one parameter combination (see the test id)."""
    record = nqbench.run()
    assert record.verified


def _overhead_strategy(selected) -> str | None:
    """The first selected GPU strategy, preferring one without device-side launches (its
    CUDA events time exactly the work pytest-benchmark times from the host)."""
    gpu = []
    for name in selected:
        try:
            strategy = get(name)
        except ImportError:
            continue
        if strategy.needs_gpu:
            gpu.append(strategy)
    gpu.sort(key=lambda s: s.cdp)
    return gpu[0].name if gpu else None


@pytest.mark.gpu
def test_harness_overhead(benchmark, pytestconfig):
    """For a GPU run of >= 100 ms, the plugin's median (host clock around each round,
    worker round trip included) is within 1% of the CUDA-event median of the same rounds."""
    ok, why = gpu_status()
    if not ok:
        pytest.skip(f"the harness-overhead check needs a GPU: {why}")
    settings = settings_of(pytestconfig)
    name = _overhead_strategy(settings.strategies)
    if name is None:
        pytest.skip("no GPU strategy selected (--nq-strategy)")
    for n in OVERHEAD_N:
        probe = solve(name, n, warmup=1, timeout=settings.timeout)
        if (probe.gpu_s or 0) >= OVERHEAD_MIN_GPU_S:
            break
    else:
        pytest.skip(f"{name} takes under {OVERHEAD_MIN_GPU_S} s even at N={n}")
    benchmark.group = "harness overhead"
    with NQBench(benchmark, settings, Case(name, n)) as bench:
        record = bench.run()
    if benchmark.stats is None:
        pytest.skip("benchmarks are disabled (--benchmark-disable)")
    plugin_median = benchmark.stats.stats.median
    overhead = plugin_median / record.gpu_s - 1
    benchmark.extra_info["harness_overhead"] = overhead
    assert abs(overhead) <= OVERHEAD_TOLERANCE, (
        f"{bench.label}: plugin median {plugin_median:.6f} s vs CUDA-event median {record.gpu_s:.6f} s "
        f"({overhead:+.2%}, allowed +-{OVERHEAD_TOLERANCE:.0%})"
    )
