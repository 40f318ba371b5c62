"""The plan of a CDP run (Carneiro et al.), on the CPU: the paper's bound by hand, the exact
host model never above it, chunk-size selection under small free memory, config=default,
the chunks' accounting summed, `nqprof plan` output, JSON and errors, and the new strategies'
parameters (cdp-bp, cdp-dp3, bp-dfs)."""

import json
import math
import re

import numpy as np
import pytest
from cli_process import HEAVY, command_imports

from nqprof.cli import main
from nqprof.errors import InputError
from nqprof.strategies import all_strategies, get
from nqprof.strategies.cdp import accounting as cc
from nqprof.strategies.cdp.chunks import merge_accounting
from nqprof.strategies.cdp.limits import DEFAULT_PENDING, MAX_PENDING
from nqprof.strategies.cdp.plan import (
    CHUNK_FILL,
    GIB,
    Reserve,
    chunk_share,
    growth_bound,
    make_plan,
    maxnodes,
    render,
)
from nqprof.strategies.cdp.recursions import region_boards
from nqprof.subproblems import BOARD_UPLOAD_BYTES, expand

CDP = tuple(s.name for s in all_strategies() if s.cdp)


def plan_for(name, n, given=None, free_gib=139.0, max_pending=MAX_PENDING):
    s = get(name)
    params = s.resolve(n, given or {})
    return make_plan(
        s.recursion(n, params, len(expand(n, params["depth"]))),
        int(free_gib * GIB),
        params,
        board_bytes=BOARD_UPLOAD_BYTES,
        counter_bytes=cc.WORDS * 8,
        max_pending=max_pending,
    )


# --- the paper's bound ------------------------------------------------------------------------


def test_maxnodes_by_hand():
    assert [maxnodes(8, d) for d in (1, 2, 3)] == [1, 7, 42]  # 7!/7!, 7!/6!, 7!/5!
    assert maxnodes(8, 8) == math.factorial(7)
    assert maxnodes(12, 4) == 11 * 10 * 9
    assert growth_bound(8, 2, 3) == 6 and growth_bound(18, 5, 7) == 13 * 12
    with pytest.raises(ValueError):
        maxnodes(8, 0)


@pytest.mark.parametrize("name", CDP)
def test_model_never_exceeds_the_bound(name):
    for n in range(4, 13):
        plan = plan_for(name, n)
        for g in plan.generations:
            if g.model_boards is not None:
                assert g.model_boards <= g.bound_boards, (name, n, g)
            if g.model_grids is not None:
                assert g.model_grids <= g.bound_grids, (name, n, g)


def test_region_bound_holds_for_every_block():
    """No block of the host grid reaches more boards than the region the plan gives it."""
    from nqprof.problem import full_mask
    from nqprof.subproblems import place_row

    for n, depth, depth2, block in ((9, 1, 4, 4), (10, 2, 5, 8), (11, 3, 6, 16), (12, 3, 5, 32)):
        host = expand(n, depth)
        cols, ld, rd, row = host.cols, host.ld, host.rd, host.row
        parent = np.arange(len(host)) // block
        target = row.astype(int) + (depth2 - depth)
        reached = []
        while len(cols):
            done = row >= target
            live = done & ((~(cols | ld | rd) & np.uint32(full_mask(n))) != 0) & (row < n)
            reached.append(parent[live])
            keep = ~done
            cols, ld, rd, row, parent, target = place_row(
                n, cols[keep], ld[keep], rd[keep], row[keep], parent[keep], target[keep]
            )
        per_block = np.bincount(np.concatenate(reached))
        assert per_block.max() <= region_boards(n, depth, depth2, block), (n, depth, depth2)


# --- chunks -----------------------------------------------------------------------------------


def test_whole_run_fits_in_one_chunk():
    plan = plan_for("dp2", 12)
    assert (plan.chunks, plan.chunk, plan.chunked) == (1, plan.host_boards, False)
    assert plan.chunk_ranges() == [(0, plan.host_boards)]


def test_small_free_memory_shrinks_the_chunk():
    unbounded = 10**9  # memory alone decides here, not the runtime's pending-launch cap
    big = plan_for("dp1", 13, {"z": 2, "depth": 3}, max_pending=unbounded)
    small = plan_for("dp1", 13, {"z": 2, "depth": 3}, free_gib=2.0, max_pending=unbounded)
    assert big.chunks == 1 and small.chunks > 1 and small.chunk < small.host_boards
    assert small.limits.need_bytes <= CHUNK_FILL * 2 * GIB < small.limits.need_bytes * small.chunks
    assert small.limits.pending < big.limits.pending
    ranges = small.chunk_ranges()
    assert ranges[0][0] == 0 and ranges[-1][1] == small.host_boards and len(ranges) == small.chunks
    assert max(small.boards_per_chunk()) == small.chunk
    # the largest chunk that fits in CHUNK_FILL of the free memory: one more board per chunk does
    # not
    plan_for(
        "dp1",
        13,
        {"z": 2, "depth": 3, "chunk": small.chunk},
        free_gib=2.0 * CHUNK_FILL,
        max_pending=unbounded,
    )
    with pytest.raises(InputError, match="does not fit"):
        plan_for(
            "dp1",
            13,
            {"z": 2, "depth": 3, "chunk": small.chunk + 1},
            free_gib=2.0 * CHUNK_FILL,
            max_pending=unbounded,
        )


def test_the_runtimes_pending_launch_cap_shrinks_the_chunk():
    capped = plan_for(
        "dp1", 13, {"z": 2, "depth": 3}
    )  # ~1.5M launches in one chunk; the H200 takes 599,186
    assert capped.chunks > 1 and capped.limits.pending <= MAX_PENDING
    assert plan_for("dp1", 13, {"z": 2, "depth": 3}, max_pending=10**9).chunks == 1


def test_chunk_param_forces_the_chunk():
    plan = plan_for("dp3", 12, {"chunk": 100})
    assert (
        plan.chunk == 100 and plan.chunks == math.ceil(plan.host_boards / 100) and plan.chunk_forced
    )
    assert plan_for("dp3", 12, {"chunk": 10**6}).chunks == 1


def test_no_fit_even_one_board_per_chunk_is_refused_with_the_reason():
    with pytest.raises(
        InputError,
        match=r"dp1 N=15: does not fit in device memory.*only 1.0 GiB is free.*"
        r"larger z or a larger host depth.*That is with one host board per chunk \(of "
        r"13\): the smallest chunk does not fit either",
    ):
        plan_for("dp1", 15, {"z": 3, "depth": 1}, free_gib=1)


def test_the_chunk_search_looks_for_does_not_fit_by_its_type(monkeypatch):
    """A refusal for want of room is a DoesNotFitError (an InputError): the chunk search
    shrinks the chunk on it, and passes any other refusal on untouched, whatever it says."""
    from nqprof.strategies.cdp import plan as plan_module
    from nqprof.strategies.cdp.limits import DoesNotFitError

    with pytest.raises(DoesNotFitError, match="does not fit in device memory"):
        plan_for("dp1", 13, {"z": 2, "depth": 3, "chunk": 10**6}, free_gib=1.0, max_pending=10**9)
    assert issubclass(DoesNotFitError, InputError)

    def refuse(label, *args, **kwargs):
        raise InputError(f"{label}: does not fit, but for a reason no smaller chunk changes")

    monkeypatch.setattr(plan_module, "configure_runtime", refuse)
    with pytest.raises(InputError) as info:
        plan_for("dp2", 12)
    assert not isinstance(info.value, DoesNotFitError) and "one host board per chunk" not in str(
        info.value
    )


def test_chunk_share():
    n, depth = 12, 3
    host = len(expand(n, depth))
    assert chunk_share(n, depth, host, host) == 1.0
    shares = [chunk_share(n, depth, host, c) for c in (1, 10, 100, 300)]
    assert shares == sorted(shares) and all(
        s >= c / host for s, c in zip(shares, (1, 10, 100, 300), strict=True)
    )


def test_cdp_bp_chunk_scales_its_preallocated_boards():
    whole = plan_for("cdp-bp", 16)
    small = plan_for("cdp-bp", 16, free_gib=1.2)
    assert whole.chunks == 1 and small.chunks > 1
    assert small.host_bytes < whole.host_bytes
    assert small.limits.heap_bytes is None  # CDP-BP never mallocs on the device


def test_config_default_sets_nothing_and_does_not_chunk():
    plan = plan_for("dp2", 13, {"config": "default"})
    assert plan.config == "default" and plan.chunks == 1
    assert plan.limits.pending == DEFAULT_PENDING and plan.limits.heap_bytes is None
    assert "not sized" in plan.limits.how
    plan = plan_for("dp3", 13, {"config": "default"})
    assert any(
        "past the defaults launches and mallocs fail on the device" in note for note in plan.notes
    )
    with pytest.raises(InputError, match="config must be one of carneiro, default"):
        get("dp2").resolve(13, {"config": "paper"})
    assert "config" not in {p.name for p in get("dp1").params}  # dp1 and dpswap: only chunk
    assert "chunk" in {p.name for p in get("dp1").params}


def test_plan_record_and_text():
    plan = plan_for("dp3", 12, {"chunk": 50})
    d = plan.as_dict()
    assert d["chunks"] == plan.chunks and d["boards_per_chunk"] == {
        "min": plan.host_boards - 50 * (plan.chunks - 1),
        "max": 50,
    }
    assert (
        d["generations"][0]["generation"] == 0
        and d["limits"]["pending_launches"] == plan.limits.pending
    )
    assert d["reserve"]["slot_bytes"] == Reserve().slot_bytes
    json.dumps(d)
    text = render(plan)
    assert (
        "maxnodes(d) = (N-1)!/(N-d)!" in text
        and f"host boards per launch, {plan.chunks:,} chunks" in text
        and "(forced with chunk=)" in text
    )


# --- summing the chunks' accounting -----------------------------------------------------------


def chunk_words(solutions, launches, gens, first_error=0):
    w = np.zeros(cc.WORDS, dtype=np.uint64)
    w[cc.SOLUTIONS], w[cc.LAUNCHES], w[cc.FIRST_ERROR] = solutions, launches, first_error
    for g, grids in gens:
        base = cc.GEN_BASE + cc.GEN_WORDS * g
        w[cc.MAX_GENERATION] = max(int(w[cc.MAX_GENERATION]), g)
        w[base + cc.GEN_GRIDS], w[base + cc.GEN_BOARDS] = len(grids), sum(grids)
        w[base + cc.GEN_MIN_COMPLEMENT] = max(~np.uint64(b) for b in grids)
        w[base + cc.GEN_MAX] = max(grids)
    return w


def test_merge_accounting_sums_chunks():
    a = chunk_words(10, 3, [(1, [5, 7, 9])])
    b = chunk_words(4, 2, [(1, [2, 30]), (2, [1])], first_error=69)
    total = merge_accounting(merge_accounting(None, a), b)
    acct = cc.decode_accounting(total, host_boards=20)
    assert (acct.solutions, acct.launches, acct.max_generation, acct.first_error) == (14, 5, 2, 69)
    g1 = acct.generations[1]
    assert (g1.grids, g1.boards, g1.min, g1.max) == (5, 53, 2, 30)
    assert (acct.generations[2].grids, acct.generations[2].min) == (1, 1)
    assert merge_accounting(chunk_words(0, 0, [], first_error=2), b)[cc.FIRST_ERROR] == 2
    with pytest.raises(ValueError):
        merge_accounting(None, np.zeros(3, dtype=np.uint64))


# --- the new strategies -------------------------------------------------------------------------


def test_new_strategies_are_registered():
    assert {"cdp-bp", "cdp-dp3"} <= set(CDP)
    bp = get("bp-dfs")
    assert not bp.cdp and bp.sources == get("feinbube").sources  # the same kernel, declared once
    assert bp.resolve(18, {}) == {"depth": 7, "block": 128}
    assert get("cdp-bp").resolve(18, {}) == {
        "depth": 5,
        "depth2": 7,
        "block": 128,
        "child_block": 64,
        "pending": 0,
        "launch": "real",
        "chunk": 0,
        "config": "carneiro",
    }
    assert get("cdp-dp3").resolve(16, {})["child_block"] == 64


@pytest.mark.parametrize(
    "name,n,given,message",
    [
        ("cdp-bp", 12, {"depth": 6, "depth2": 5}, r"depth2 must be in 7\.\.12"),
        ("cdp-bp", 12, {"depth2": 13}, r"depth2 must be in 2\.\.12"),
        (
            "cdp-bp",
            18,
            {"depth": 1, "depth2": 17, "block": 1024},
            "shared memory for the DFS stacks",
        ),
        ("cdp-dp3", 12, {"block": 1024, "search": 3}, r"search must be in 1\.\.2"),
        ("cdp-dp3", 12, {"config": "x"}, "config must be one of"),
        ("bp-dfs", 18, {"block": 1024, "depth": 2}, "shared memory"),
    ],
)
def test_new_strategies_validate(name, n, given, message):
    with pytest.raises(InputError, match=message):
        get(name).resolve(n, given)


# --- nqprof plan --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CDP)
def test_plan_command_for_every_cdp_strategy(name, capsys):
    assert main(["plan", "12", "-s", name]) == 0
    out = capsys.readouterr().out
    assert f"plan for {name} N=12" in out and "boards: bound" in out and "chunks       c = " in out
    assert main(["plan", "12", "-s", name, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n"] == 12 and d["chunks"] >= 1 and d["generations"] and d["params"]["depth"] >= 1


def test_plan_command_for_devgraph(capsys):
    """devgraph launches from the device too (graphs, not CDP): it has a plan, with the
    limits planned as for the CDP strategies."""
    assert main(["plan", "12", "-s", "devgraph"]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("plan for devgraph N=12 (config=carneiro): nothing is launched")
        and "boards: bound" in out
    )


def test_plan_command_chunks_with_little_free_memory(capsys):
    assert (
        main(["plan", "13", "-s", "dp1", "-p", "z=2", "-p", "depth=3", "--free-gib", "2", "--json"])
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    assert d["chunks"] > 1 and d["free_bytes"] == 2 * GIB and d["free_source"] == "--free-gib"


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["plan", "12", "-s", "serial"],
            r"plans are for the strategies that do \(dp1, .*cdp-bp, cdp-cst, cdp-dp3, graph-cst, "
            r"devgraph\)$",
        ),
        (["plan", "12", "-s", "dp2", "--free-gib", "0"], "--free-gib must be a positive number"),
        (
            ["plan", "12", "-s", "dp2", "--free-gib", "lots"],
            "--free-gib must be a positive number of GiB, got 'lots'",
        ),
        (["plan", "x", "-s", "dp2"], "N must be an integer"),
        (["plan", "12", "-s", "dp2", "-p", "depth=40"], r"depth must be in 1\.\.11"),
        (["plan", "12", "-s", "nope"], "unknown strategy"),
        (["plan", "15", "-s", "dp1", "-p", "z=3", "--free-gib", "1"], "one host board per chunk"),
    ],
)
def test_plan_command_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and re.search(message, err), err
    assert err.count("\n") == 1


def test_plan_command_imports_nothing_heavy():
    assert not command_imports(["plan", "12", "-s", "dp3"]) & HEAVY


def test_config_default_refuses_explicit_limits():
    with pytest.raises(
        InputError,
        match=r"config=default launches with the runtime's default limits, so pending=64 "
        r"would be ignored",
    ):
        plan_for("dp3", 13, {"config": "default", "pending": 64})


def _leaves(n, c, dl, dr, row, target):
    """Boards at row `target` below (c, dl, dr) whose next row has a free square (brute force)."""
    from nqprof.problem import full_mask

    full = full_mask(n)
    if row == n:
        return 0
    if row == target:
        return 1 if ~(c | dl | dr) & full else 0
    total, free = 0, ~(c | dl | dr) & full
    while free:
        b = free & -free
        free ^= b
        total += _leaves(n, c | b, ((dl | b) << 1) & full, (dr | b) >> 1, row + 1, target)
    return total


@pytest.mark.parametrize(
    "n,depth,search,block", [(8, 2, 2, 4), (9, 1, 3, 4), (10, 3, 2, 16), (11, 1, 4, 2)]
)
def test_block_first_generation(n, depth, search, block):
    from nqprof.strategies.cdp.model import block_first_generation, condensed_generations

    host = expand(n, depth)
    per_thread = [
        _leaves(n, int(c), int(dl), int(dr), int(w), int(w) + search)
        for c, dl, dr, w in zip(host.cols, host.ld, host.rd, host.row, strict=True)
    ]
    per_block = [sum(per_thread[i : i + block]) for i in range(0, len(per_thread), block)]
    per_block = [v for v in per_block if v]
    g = block_first_generation(n, depth, search, block)
    assert (g.grids, g.boards, g.min, g.max) == (
        len(per_block),
        sum(per_block),
        min(per_block),
        max(per_block),
    )
    assert g.boards == condensed_generations(n, depth, search).generations[1].boards
    assert g.max <= region_boards(n, depth, depth + search, block)
