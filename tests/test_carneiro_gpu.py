"""Carneiro et al. on a real GPU: CDP-BP and CDP-DP3 verified with clean accounting and their
first child generation equal to the host model, chunked runs (forced with chunk=) counting
right with the chunks in the record, config=default failing loudly, and BP-DFS. Skipped with
the reason where no GPU run can happen (tests/conftest.py)."""

import pytest
from gpu_checks import clean, ns_up_to

from nqprof.errors import DeviceFailureError
from nqprof.runner import solve
from nqprof.strategies.cdp.model import block_first_generation, condensed_generations
from nqprof.strategies.dp3 import depth_max

pytestmark = pytest.mark.gpu
TIMEOUT = 120


@pytest.mark.parametrize("name", ["cdp-bp", "cdp-dp3"])
def test_verified_n4_to_n13(name):
    for n in ns_up_to(13):
        record = clean(solve(name, n, {}, repeats=1, warmup=0, timeout=TIMEOUT))
        assert record.plan["chunks"] == 1 and record.plan["strategy"] == name


@pytest.mark.parametrize(
    "name,params",
    [
        ("cdp-bp", {}),
        ("cdp-bp", {"depth": 1, "depth2": 4, "block": 4, "child_block": 3}),
        ("cdp-dp3", {}),
        ("cdp-dp3", {"depth": 1, "search": 1, "block": 8, "child_block": 5}),
    ],
)
def test_accounting_equals_the_block_model(name, params):
    for n in (9, 12):
        record = clean(solve(name, n, params, repeats=1, warmup=0, timeout=TIMEOUT))
        p = record.params
        search = p["depth2"] - p["depth"] if name == "cdp-bp" else p["search"]
        first = block_first_generation(n, p["depth"], search, p["block"])
        assert record.generations[1] == first.as_dict()
        if name == "cdp-dp3":  # later generations: the same boards as DP-3's (grouped per block)
            model = condensed_generations(
                n, p["depth"], search, True, depth_max(p["smem_kib"], p["child_block"])
            )
            assert [g["boards"] for g in record.generations] == [
                g.boards for g in model.generations
            ]


@pytest.mark.parametrize(
    "name,params",
    [
        ("dp2", {"chunk": 7}),
        ("dp3", {"chunk": 50}),
        ("dp1", {"z": 2, "chunk": 3}),
        ("dpswap", {"chunk": 16}),
        ("cdp-bp", {"chunk": 100}),
        ("cdp-dp3", {"chunk": 33}),
    ],
)
def test_forced_chunks_count_right(name, params):
    record = clean(solve(name, 12, params, repeats=2, warmup=0, timeout=TIMEOUT))
    plan = record.plan
    assert (
        plan["chunk_forced"]
        and plan["chunks"] > 1
        and plan["boards_per_chunk"]["max"] == params["chunk"]
    )
    g0 = record.generations[0]
    assert g0["grids"] == plan["chunks"] and g0["boards"] == plan["host_boards"]
    assert g0["max"] == params["chunk"]


def test_config_default_fails_loudly_at_n13():
    """DP2 with the paper's parameters (depths 4 and 7 = search 3, child block 32) runs out of the
    default 2,048 pending launches at N=13 (measured on an H200: 3,395 of 78,330 launches
    failed). dp3 and cdp-dp3 at their defaults ran through there."""
    with pytest.raises(DeviceFailureError, match=r"count is discarded.*config=default"):
        solve(
            "dp2",
            13,
            {"config": "default", "depth": 4, "search": 3, "child_block": 32},
            repeats=1,
            warmup=0,
            timeout=TIMEOUT,
        )


def test_bp_dfs():
    record = solve("bp-dfs", 14, {}, repeats=1, warmup=0, timeout=TIMEOUT)
    assert record.verified and record.params == {"depth": 7, "block": 128}
