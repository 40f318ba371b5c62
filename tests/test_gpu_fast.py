"""The fast strategy on a real GPU: every kernel verified over N and depths."""

import pytest

from nqprof.runner import solve
from nqprof.strategies.fast import KERNELS

from gpu_checks import checked, ns_up_to

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("opt", list(KERNELS))
def test_every_kernel_counts_n4_to_n15(opt):
    for n in ns_up_to(15):
        checked(solve("fast", n, {"opt": opt}, repeats=1, warmup=0, timeout=120))


@pytest.mark.parametrize("depth,block", [(2, 32), (3, 64), (10, 256)])
def test_odd_shapes(depth, block):
    for n in (12, 13):
        assert solve("fast", n, {"depth": depth, "block": block}, repeats=1, warmup=0, timeout=120).verified


def test_n17_default():
    record = checked(solve("fast", 17, {}, repeats=3, warmup=1, timeout=120))
    assert record.gpu_s is not None and record.rounds == 3


def test_plain_kernel_counts_n1_to_n3_by_default_and_any_n_when_asked():
    """Below N=4 (no D4 classes) fast runs its one-thread plain enumeration; asked for at
    N=5..11 the same kernel must count those boards too (a kernel returning the three small
    counts by luck would fail there)."""
    for n in range(1, 4):
        record = solve("fast", n, {}, repeats=1, warmup=0, timeout=120)
        assert record.params["opt"] == "plain" and record.verified and record.count == record.expected
    for n in (5, 8, 11):
        record = checked(solve("fast", n, {"opt": "plain"}, repeats=1, warmup=0, timeout=120))
        assert record.verified and record.count == record.expected
