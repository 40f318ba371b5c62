"""The host-seeded kernel on a real GPU: every optimisation step verified, the run record
filled in, bad launches reported. Skipped with the reason where no GPU run can happen."""

import pytest
from gpu_checks import assert_verified_at, checked, ns_up_to

from nqprof.runner import solve
from nqprof.strategies.feinbube import STEPS

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("opt", list(STEPS))
def test_every_step_counts_n4_to_n14(opt):
    for n in ns_up_to(14):
        record = checked(
            solve(
                "feinbube",
                n,
                {"opt": opt, "depth": min(4, n - 1)},
                repeats=1,
                warmup=0,
                timeout=120,
            )
        )
        assert record.verified and record.count == record.expected


@pytest.mark.parametrize("depth,block", [(1, 32), (2, 1), (3, 33), (5, 1024)])
def test_odd_shapes(depth, block):
    """Depth 1 (odd N: middle column expanded to row 2), a one-thread block, partial warps."""
    assert_verified_at("feinbube", (9, 12), {"depth": depth, "block": block})


def test_run_record_has_gpu_facts():
    record = checked(solve("feinbube", 15, {}, repeats=3, warmup=1, timeout=120))
    assert record.gpu_s is not None and 0 < record.gpu_s <= record.wall_s
    assert len(record.gpu_times) == 3
    assert record.device["sm_count"] > 0 and record.device["arch"].startswith("sm_")
    assert record.toolkit["version"] and record.toolkit["pycuda"]
    (kernel,) = record.kernels
    assert kernel["name"] == "feinbube_dynamic" and kernel["registers"] > 0
    depth, block = record.params["depth"], record.params["block"]
    assert kernel["dynamic_shared_bytes"] == 4 * 4 * (15 - depth) * block
    assert list(record.memory["free_mib"]) == ["context", "layout", "module", "run"]
    assert record.source_hash and len(record.source_hash) == 16


def test_local_step_uses_local_memory():
    record = solve("feinbube", 10, {"opt": "local"}, repeats=1, warmup=0, timeout=120)
    assert record.kernels[0]["local_bytes"] > 0
