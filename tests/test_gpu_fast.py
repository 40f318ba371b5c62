"""The fast strategy on a real GPU: both kernels verified over N and depths."""

import pytest

from nqprof.runner import solve
from nqprof.strategies.fast import KERNELS

from gpu_checks import checked, ns_up_to

pytestmark = pytest.mark.gpu


def test_constellations_count_n1_to_n15():
    for n in range(1, 4):
        record = solve("fast", n, {}, repeats=1, warmup=0, timeout=120)
        assert record.verified and record.count == record.expected
    for n in ns_up_to(15):
        checked(solve("fast", n, {}, repeats=1, warmup=0, timeout=120))


@pytest.mark.parametrize("opt", list(KERNELS))
def test_every_kernel_counts_n4_to_n13(opt):
    for n in range(4, 14):
        params = {"opt": opt} if opt == "cst" else {"opt": opt, "depth": min(n - 2, 3)}
        checked(solve("fast", n, params, repeats=1, warmup=0, timeout=120))


@pytest.mark.parametrize("depth,block", [(0, 32), (1, 64), (4, 256), (9, 128)])
def test_odd_shapes(depth, block):
    for n in (12, 13):
        assert solve("fast", n, {"depth": depth, "block": block}, repeats=1, warmup=0, timeout=120).verified


def test_n17_default():
    record = checked(solve("fast", 17, {}, repeats=3, warmup=1, timeout=120))
    assert record.gpu_s is not None and record.rounds == 3


@pytest.mark.parametrize("n", [16, 18])
def test_the_default_depth_is_within_10_percent_of_the_best(n):
    """The default depth against a small sweep around it, medians of 3 rounds (GPU time)."""
    from nqprof.strategies import get

    default = get("fast").resolve(n, {})["depth"]
    depths = sorted({max(0, default - 1), default, default + 1, default + 2})
    times = {d: checked(solve("fast", n, {"depth": d}, repeats=3, warmup=1, timeout=120)).gpu_s for d in depths}
    assert times[default] <= 1.10 * min(times.values()), times
