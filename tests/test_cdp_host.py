"""The host side of the CDP strategies, on the CPU: the accounting layout and its decoding,
failures that name the limit to raise, parameter validation, sizing the runtime limits, the
generation model (against a brute force and the paper's Table 3), and the report builders."""

import re

import numpy as np
import pytest

from nqprof.analysis import figures
from nqprof.catalog import catalog
from nqprof.cli import main
from nqprof.cuda.sources import read_source
from nqprof.errors import DeviceFailureError, InputError
from nqprof.papers import measure
from nqprof.papers import plauth as reproduce
from nqprof.problem import KNOWN_COUNTS, full_mask
from nqprof.result import Measurement, RunRecord
from nqprof.strategies import all_strategies, get
from nqprof.strategies import cdp as cc
from nqprof.strategies.cdp import model as cdp_model
from nqprof.strategies.cdp.model import ROW_BOARDS, ROW_LIVE, GenerationStats, condensed_generations
from nqprof.subproblems import expand
from nqprof.textfmt import table

#: Every registered CDP strategy.
CDP = tuple(s.name for s in all_strategies() if s.cdp)
GIB = 1024**3


# --- accounting ---------------------------------------------------------------------------


def test_layout_matches_the_kernel_header():
    defines = dict(re.findall(r"^#define (CDP_\w+) (\d+)", read_source("cdp.cuh"), re.M))
    expect = {
        "CDP_SOLUTIONS": cc.SOLUTIONS,
        "CDP_LAUNCHES": cc.LAUNCHES,
        "CDP_LAUNCH_FAILURES": cc.LAUNCH_FAILURES,
        "CDP_MALLOC_FAILURES": cc.MALLOC_FAILURES,
        "CDP_STREAM_FAILURES": cc.STREAM_FAILURES,
        "CDP_MAX_GENERATION": cc.MAX_GENERATION,
        "CDP_FIRST_ERROR": cc.FIRST_ERROR,
        "CDP_UNTRACKED": cc.UNTRACKED,
        "CDP_OVERFLOWS": cc.OVERFLOWS,
        "CDP_GEN_BASE": cc.GEN_BASE,
        "CDP_GEN_WORDS": cc.GEN_WORDS,
        "CDP_GEN_GRIDS": cc.GEN_GRIDS,
        "CDP_GEN_BOARDS": cc.GEN_BOARDS,
        "CDP_GEN_MIN_COMPLEMENT": cc.GEN_MIN_COMPLEMENT,
        "CDP_GEN_MAX": cc.GEN_MAX,
        "CDP_MAX_GEN": cc.MAX_GEN,
        "CDP_STREAM_DEFAULT": cc.STREAM_KINDS["default"],
        "CDP_STREAM_OWN": cc.STREAM_KINDS["own"],
        "CDP_STREAM_FIRE_AND_FORGET": cc.STREAM_KINDS["fire-and-forget"],
    }
    assert {k: int(defines[k]) for k in expect} == expect
    assert cc.WORDS == cc.GEN_BASE + cc.GEN_WORDS * cc.MAX_GEN
    assert cc.GEN_BASE > cc.OVERFLOWS


def words(
    solutions=0,
    launches=0,
    launch_failures=0,
    malloc_failures=0,
    stream_failures=0,
    first_error=0,
    untracked=0,
    overflows=0,
    gens=(),
):
    """An accounting buffer as the device leaves it; gens: (generation, [boards per grid])."""
    w = np.zeros(cc.WORDS, dtype=np.uint64)
    w[cc.SOLUTIONS], w[cc.LAUNCHES], w[cc.LAUNCH_FAILURES] = solutions, launches, launch_failures
    w[cc.MALLOC_FAILURES], w[cc.STREAM_FAILURES], w[cc.FIRST_ERROR] = (
        malloc_failures,
        stream_failures,
        first_error,
    )
    w[cc.UNTRACKED], w[cc.OVERFLOWS] = untracked, overflows
    for g, grids in gens:
        base = cc.GEN_BASE + cc.GEN_WORDS * g
        w[cc.MAX_GENERATION] = max(int(w[cc.MAX_GENERATION]), g)
        w[base + cc.GEN_GRIDS] = len(grids)
        w[base + cc.GEN_BOARDS] = sum(grids)
        w[base + cc.GEN_MIN_COMPLEMENT] = max(
            ~np.uint64(b) for b in grids
        )  # atomicMax of complements
        w[base + cc.GEN_MAX] = max(grids)
    return w


LIMITS = cc.RuntimeLimits(
    pending=2048, heap_bytes=8 * cc.MIB, reserve_bytes=0, need_bytes=0, free_bytes=0, how=""
)


def test_clean_buffer_decodes_to_stats():
    acct = cc.decode_accounting(
        words(7100, launches=12, gens=[(1, [1196, 1597, 1400, 1500, 1315, 1400]), (2, [3, 1, 60])]),
        host_boards=6,
    )
    assert acct.solutions == 7100 and not acct.failed
    cc.raise_on_failures(acct, LIMITS, "dp2 N=12")  # nothing to raise
    stats = acct.stats()
    assert stats["generations"] == [
        {"generation": 0, "grids": 1, "boards": 6, "min": 6, "max": 6, "mean": 6.0},
        {"generation": 1, "grids": 6, "boards": 8408, "min": 1196, "max": 1597, "mean": 1401.33},
        {"generation": 2, "grids": 3, "boards": 64, "min": 1, "max": 60, "mean": 21.33},
    ]
    assert stats["failures"] == {
        "launches": 12,
        "launch_failures": 0,
        "malloc_failures": 0,
        "stream_failures": 0,
        "max_generation": 2,
        "first_error": 0,
        "untracked_grids": 0,
        "buffer_overflows": 0,
    }
    record = RunRecord.from_measurements(
        "dp2", 12, {}, 14200, [Measurement(count=14200, wall_s=1.0, stats=stats)], {}
    )
    assert record.generations[1]["mean"] == 1401.33 and record.device_failures["launches"] == 12


def test_failed_launches_name_the_pending_limit_never_a_count():
    acct = cc.decode_accounting(
        words(5000, launches=2360, launch_failures=312, first_error=69), host_boards=8
    )
    assert acct.failed
    with pytest.raises(DeviceFailureError) as exc:
        cc.raise_on_failures(acct, LIMITS, "dp1 N=12")
    text = str(exc.value)
    assert (
        "312 of 2,360 device launches failed (first: cudaErrorLaunchPendingCountExceeded (69))"
        in text
    )
    assert "raise the pending-launch limit (param pending=4096, was 2,048)" in text
    assert "count is discarded" in text and "5000" not in text


def test_failed_launches_under_a_sufficient_limit_do_not_blame_it():
    acct = cc.decode_accounting(
        words(5000, launches=1500, launch_failures=312, first_error=69), host_boards=8
    )
    with pytest.raises(DeviceFailureError) as exc:
        cc.raise_on_failures(acct, LIMITS, "dp1 N=13")  # LIMITS.pending 2,048 >= 1,500 launches
    text = str(exc.value)
    assert (
        "already exceeds the launches attempted" in text
        and "raise the pending-launch limit" not in text
    )
    assert "count is discarded" in text


def test_null_mallocs_name_the_heap():
    acct = cc.decode_accounting(words(1, malloc_failures=17), host_boards=8)
    with pytest.raises(
        DeviceFailureError,
        match=r"17 device mallocs returned NULL: raise the heap \(param heap_mib=16, was 8\)",
    ):
        cc.raise_on_failures(acct, LIMITS, "dp2 N=12")


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(launch_failures=3, first_error=65), "nest deeper than the CDP runtime allows"),
        (dict(launch_failures=3, first_error=9), "refused the launch configuration"),
        (dict(stream_failures=2), "2 device stream creations failed"),
        (dict(overflows=1), "block-buffer overflows"),
    ],
)
def test_other_failures(kw, message):
    acct = cc.decode_accounting(words(**kw), host_boards=1)
    with pytest.raises(DeviceFailureError, match=message):
        cc.raise_on_failures(acct, LIMITS, "x")


def test_decode_rejects_a_wrong_buffer():
    with pytest.raises(ValueError, match="64-bit words"):
        cc.decode_accounting(np.zeros(3, dtype=np.uint64), host_boards=1)


# --- strategies and parameters ----------------------------------------------------------------


@pytest.mark.parametrize("name", CDP)
def test_registered_as_cdp_gpu_strategies(name):
    s = get(name)
    assert s.cdp and s.device == "gpu"
    # its own source launches from the device; any after it (cdp-cst and graph-cst load
    # fast's constellation.cu to count their tasks) are catalogued as declared
    own, *extra = s.sources
    assert catalog()[own.file].cdp and catalog()[own.file].kernels
    assert all(catalog()[src.file] == src for src in extra)
    assert [src.file for src in extra] == (
        ["constellation.cu"] if name in ("cdp-cst", "graph-cst") else []
    )
    assert {"depth", "pending"} <= {p.name for p in s.params}


@pytest.mark.parametrize("name", CDP)
def test_defaults_valid_for_every_n(name):
    for n in range(2, 28):
        get(name).resolve(n, {})


@pytest.mark.parametrize(
    "name,n,given,message",
    [
        ("dp1", 27, {"z": 7}, r"z must be in 1\.\.6 for N=27"),
        ("dp1", 27, {"z": 1, "depth": 1}, r"nests 26 generations.*use z >= 2 or depth >= 4"),
        ("dp1", 10, {"stream": "blocking"}, "must be one of default, own, fire-and-forget"),
        ("dp1", 10, {"depth": 10}, r"depth must be in 1\.\.9"),
        ("dp2", 12, {"search": 12}, r"search must be in 1\.\.11"),
        ("dp2", 20, {"search": 14, "block": 1024}, r"shared memory.*use search <= 13"),
        ("dp2", 27, {"depth": 1, "search": 1}, r"nests 25 generations.*use search >= 2"),
        ("dp2", 12, {"pending": -1}, r"pending must be in 0\.\.100000000"),
        ("dp2", 12, {"heap_mib": "lots"}, "heap_mib must be an integer"),
        ("dp3", 12, {"block": 1024, "search": 3}, r"search must be in 1\.\.2"),
        (
            "dp3",
            12,
            {"smem_kib": 1, "child_block": 64, "search": 1, "block": 16},
            r"child_block must be in 1\.\.32",
        ),
        ("dp3", 12, {"smem_kib": 300}, r"smem_kib must be in 1\.\.225"),
        ("dpswap", 12, {"capacity": 100}, r"capacity must be >= 769"),
        ("dpswap", 16, {"capacity": 11000}, r"capacity must be in 897\.\.10803"),
        ("dpswap", 12, {"colour": 1}, "no parameter 'colour'"),
    ],
)
def test_validation_names_the_allowed_range(name, n, given, message):
    with pytest.raises(InputError, match=message):
        get(name).resolve(n, given)


def test_dp3_depth_cap_is_the_papers_formula():
    from nqprof.strategies.dp3 import depth_max

    assert depth_max(48, 256) == 11  # 16-byte states; the paper's 8 came from larger ones
    assert depth_max(48, 32) == 95


def test_dp2_defaults_follow_the_given_depth():
    dp2 = get("dp2")
    assert (dp2.resolve(16, {})["depth"], dp2.resolve(16, {})["search"]) == (4, 6)
    assert dp2.resolve(16, {"depth": 3})["search"] == 7  # two generations from the given depth
    assert dp2.resolve(13, {})["depth"] == 3
    assert dp2.resolve(16, {"depth": 4, "search": 7})["search"] == 7
    assert dp2.resolve(16, {"child_block": 32})["child_block"] == 32


def test_dp2_child_block_is_the_mean_boards_per_child_grid():
    # N=12, depth 3, search 5: 76,302 boards at row 8 over 378 child grids, 201.9 each
    assert cdp_model.condensed_child_block(12, 3, 5) == 256
    assert cdp_model.condensed_child_block(10, 3, 4) == 32  # 3,179 / 182 = 17.5: the floor
    assert cdp_model.condensed_child_block(16, 3, 7) == 1024  # 44,365 each: the ceiling
    assert cdp_model.condensed_child_block(16, 3, 7, hi=512) == 512
    assert cdp_model.condensed_child_block(20, 3, 9) == 1024  # beyond the tables
    assert get("dp2").resolve(12, {})["child_block"] == 256
    # search 14: 1,024 threads' stacks (240 KiB) do not fit in shared memory, 512 do
    assert get("dp2").resolve(20, {"depth": 1, "search": 14})["child_block"] == 512


# --- sizing the runtime -----------------------------------------------------------------------


def demand(pending=1000, heap=100 * cc.MIB):
    return cdp_model.Demand(
        pending=pending, heap_bytes=heap, launches=5000, basis="test basis", advice="use more z"
    )


def test_limits_from_the_estimate():
    lim = cc.configure_runtime("dp2 N=12", demand(pending=4000), free_bytes=100 * GIB)
    assert lim.pending == 5000  # estimate x 1.25
    assert lim.heap_bytes == 150 * cc.MIB  # estimate x 1.5, whole MiB
    assert lim.reserve_bytes == 5000 * cc.PENDING_SLOT_BYTES
    assert lim.need_bytes == lim.reserve_bytes + lim.heap_bytes + cc.HEADROOM
    assert "estimated from test basis" in lim.describe()


def test_limits_never_below_the_runtime_defaults():
    lim = cc.configure_runtime("x", demand(pending=10, heap=1000), free_bytes=100 * GIB)
    assert (lim.pending, lim.heap_bytes) == (cc.DEFAULT_PENDING, cc.DEFAULT_HEAP)


def test_given_limits_win_and_no_heap_for_strategies_without_malloc():
    lim = cc.configure_runtime("x", demand(), free_bytes=100 * GIB, pending=16, heap_mib=1)
    assert (lim.pending, lim.heap_bytes) == (16, cc.MIB) and lim.how == "pending=16, heap_mib=1"
    lim = cc.configure_runtime("dp1 N=10", demand(), free_bytes=100 * GIB, heap_mib=None)
    assert lim.heap_bytes is None


def test_a_run_that_does_not_fit_is_refused_before_launch():
    with pytest.raises(InputError) as exc:
        cc.configure_runtime(
            "dp1 N=15", demand(pending=34_000_000), free_bytes=139 * GIB, heap_mib=None
        )
    text = str(exc.value)
    assert text.startswith(
        "dp1 N=15: does not fit in device memory: pending-launch limit 42,500,000"
    )
    assert (
        "only 139.0 GiB is free" in text and "Use more z, or set smaller limits explicitly" in text
    )
    with pytest.raises(InputError, match="does not fit"):
        cc.configure_runtime("x", demand(), free_bytes=100 * GIB, pending=50_000_000)


def test_a_limit_above_what_the_runtime_takes_is_refused():
    # the H200's runtime set 599,186 when asked for more (cc.MAX_PENDING); the plan then chunks
    with pytest.raises(
        InputError,
        match=r"needs a pending-launch limit of 1,250,000 .* the runtime takes at most 599,186",
    ):
        cc.configure_runtime("dp3 N=18", demand(pending=1_000_000), free_bytes=139 * GIB)
    assert (
        cc.configure_runtime("x", demand(pending=400_000), free_bytes=139 * GIB).pending == 500_000
    )
    lim = cc.configure_runtime(
        "x", demand(pending=1_000_000), free_bytes=139 * GIB, max_pending=2_000_000
    )
    assert lim.pending == 1_250_000


def test_no_estimate_beyond_the_table_needs_explicit_limits():
    with pytest.raises(
        InputError, match=r"no estimate of what the run needs for N > 18.*pending=.*heap_mib="
    ):
        cc.configure_runtime("dp3 N=19", None, free_bytes=100 * GIB)
    lim = cc.configure_runtime("dp3 N=19", None, free_bytes=100 * GIB, pending=4096, heap_mib=512)
    assert lim.pending == 4096 and lim.heap_bytes == 512 * cc.MIB


def test_demand_estimates():
    d = cdp_model.dp1_demand(12, host_boards=6, depth=1, z=1)
    launches = [6] + [ROW_BOARDS[12][r - 1] for r in range(2, 12)]
    assert d.launches == sum(launches) and d.heap_bytes is None
    assert d.pending == sum(launches)  # every launch may wait at once: the only bound
    own = cdp_model.dp1_demand(12, host_boards=6, depth=1, z=1, slots_per_launch=2)
    assert own.pending == 2 * sum(launches) and "2 slots each" in own.basis
    d = cdp_model.condensed_demand(12, 6, 1, 4, False, 4, 32)  # rows 1 -> 5 -> 9
    assert d.launches == 6 + ROW_LIVE[12][4] and d.pending == 6 + ROW_LIVE[12][4]
    assert d.heap_bytes > 16 * (ROW_LIVE[12][4] + ROW_LIVE[12][8])
    assert cdp_model.dpswap_demand(16, 9844, 4, 6, 2200, 128, 32).pending > 0
    assert (
        cdp_model.dp1_demand(19, 10, 1, 3) is None
        and cdp_model.condensed_demand(19, 1, 1, 1, 0, 1, 32) is None
    )


# --- the model ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(2, 12))
def test_row_tables_match_the_expansion(n):
    full = full_mask(n)
    for r in range(2, n + 1):
        boards = expand(n, r)
        assert len(boards) == ROW_BOARDS[n][r - 1], (n, r)
        live = int(((~(boards.cols | boards.ld | boards.rd) & full) != 0).sum()) if r < n else 0
        assert live == ROW_LIVE[n][r - 1], (n, r)
    assert ROW_BOARDS[n][-1] * 2 == KNOWN_COUNTS[n]


def _reached(n, c, dl, dr, row, target):
    """Boards at row `target` below (c, dl, dr) whose next row has a free square (brute force)."""
    full = full_mask(n)
    if row == target:
        return [(c, dl, dr, row)] if ~(c | dl | dr) & full else []
    out, free = [], ~(c | dl | dr) & full
    while free:
        b = free & -free
        free ^= b
        out += _reached(n, c | b, ((dl | b) << 1) & full, (dr | b) >> 1, row + 1, target)
    return out


def _brute_generations(n, depth, search, doubling, cap=None):
    from nqprof.subproblems import count_subtree_py

    host = expand(n, depth)
    boards = [
        (int(c), int(dl), int(dr), int(w))
        for c, dl, dr, w in zip(host.cols, host.ld, host.rd, host.row, strict=True)
    ]
    gens = [(1, len(boards), len(boards), len(boards))]
    count, s = 0, search
    while boards:
        per_grid, nxt = [], []
        for c, dl, dr, w in boards:
            if w + s >= n:
                count += count_subtree_py(n, c, dl, dr, w)
                continue
            got = _reached(n, c, dl, dr, w, w + s)
            if got:
                per_grid.append(len(got))
                nxt += got
        if per_grid:
            gens.append((len(per_grid), sum(per_grid), min(per_grid), max(per_grid)))
        boards = nxt
        s = min(2 * s, cap) if doubling and cap else 2 * s if doubling else s
    return gens, count * host.multiplier


@pytest.mark.parametrize(
    "n,depth,search,doubling,cap",
    [
        (8, 1, 2, False, None),
        (9, 1, 2, False, None),
        (10, 2, 1, True, None),
        (11, 1, 1, True, 3),
        (7, 3, 3, False, None),
    ],
)
def test_model_matches_brute_force(n, depth, search, doubling, cap):
    model = condensed_generations(n, depth, search, doubling, cap)
    gens, count = _brute_generations(n, depth, search, doubling, cap)
    assert [(g.grids, g.boards, g.min, g.max) for g in model.generations] == gens
    assert model.count == count == KNOWN_COUNTS[n]
    assert model.launches == sum(g[0] for g in gens[1:])


@pytest.mark.parametrize("n", [*range(2, 12), pytest.param(12, marks=pytest.mark.slow)])
def test_model_leaves_sum_to_the_known_count(n):
    for depth in range(1, n):
        for search, doubling in ((1, False), (2, False), (1, True), (3, True)):
            assert condensed_generations(n, depth, search, doubling, 8).count == KNOWN_COUNTS[n]


def test_model_reproduces_the_papers_table3():
    model = reproduce.table3_model()
    for row in reproduce.PAPER_TABLE3:
        g = model[row.key]
        assert (g.min, g.max, round(g.mean, 2)) == (row.min, row.max, row.mean), row


def test_schedules():
    assert cdp_model.condensed_schedule(12, 1, 4, False, None) == [(1, 4), (5, 4), (9, 4)]
    assert cdp_model.condensed_schedule(18, 1, 2, True, 8) == [(1, 2), (3, 4), (7, 8), (15, 8)]
    assert cdp_model.dp1_deepest_generation(15, 1, 3) == 5


# --- reports ------------------------------------------------------------------------------------


def ok(strategy, n, params, seconds, record=None):
    return measure.Outcome(strategy, n, params, seconds=seconds, record=record)


def test_table2_builder():
    outcomes = [
        ok("dp1", 8, {"stream": "default"}, 0.0123),
        ok("dp1", 8, {"stream": "own"}, 0.0041),
        measure.Outcome(
            "dp1", 15, {"stream": "default"}, error="does not fit", detail="needs 313 GiB"
        ),
        measure.Outcome(
            "dp1", 15, {"stream": "own"}, error="timeout", detail="no answer within 600 s"
        ),
    ]
    header, rows, notes = reproduce.table2(outcomes, [8, 15])
    assert header[0] == "N" and len(header) == 6
    assert rows[0] == ["8", "17", "12.30", "5", "4.10", "3.00"]
    assert rows[1] == ["15", "46111", "does not fit [1]", "39163", "timeout [2]", "-"]
    assert notes[0].startswith("[1] dp1 N=15") and "needs 313 GiB" in notes[0]
    assert "no answer within 600 s" in notes[1]


def _record(gens):
    return RunRecord("dp2", 12, {}, 14200, 14200, True, 1.0, 0.5, 1, [1.0], [0.5], generations=gens)


def test_table3_builder():
    model = reproduce.table3_model()
    rows = reproduce.PAPER_TABLE3
    g1 = model[rows[0].key]
    measured = {
        rows[0].key: ok(
            "dp2",
            12,
            {},
            0.1,
            _record(
                [
                    {"generation": 0},
                    GenerationStats(1, g1.grids, g1.boards, g1.min, g1.max).as_dict(),
                ]
            ),
        ),
        rows[1].key: ok(
            "dp2",
            12,
            {},
            0.1,
            _record([{"generation": 1, "grids": 1, "boards": 5, "min": 5, "max": 5}]),
        ),
        rows[2].key: measure.Outcome(
            "dp3", 12, {}, error="device failure", detail="312 of 400 device launches failed"
        ),
    }
    header, out, notes = reproduce.table3(measured, model)
    assert len(header) == 7
    assert out[0][3] == out[0][4] == out[0][5] == "1196 / 1597 / 1401.33" and out[0][6] == "yes"
    assert out[1][5] == "5 / 5 / 5.00" and out[1][6] == "NO"
    assert out[2][5] == "device failure [1]" and "312 of 400" in notes[0]
    assert out[3][5] == "-" and out[3][4] == "65 / 255 / 145.22"


def test_table3_runs_are_valid_parameters():
    for strategy, n, params in reproduce.table3_runs():
        get(strategy).resolve(n, params)
    assert reproduce.table3_runs()[2][2] == {
        "depth": 1,
        "search": 2,
        "block": 256,
        "child_block": 256,
        "smem_kib": 48,
    }


def test_sweep_skips_larger_n_after_a_timeout():
    calls = []

    def run(strategy, n, params):
        calls.append(n)
        if n == 10:
            return measure.Outcome(strategy, n, params, error="timeout", detail="slow")
        return ok(strategy, n, params, 0.1)

    out = measure.sweep([("dp1", n, {"z": 1}) for n in (8, 10, 12)] + [("dp2", 12, {})], run)
    assert calls == [8, 10, 12] and [o.error for o in out] == [None, "timeout", "skipped", None]


def test_measure_turns_failures_into_outcomes():
    def failing(*a, **k):
        raise DeviceFailureError("dp2 N=12: 17 device mallocs returned NULL")

    o = measure.measure("dp2", 12, {}, solve=failing)
    assert o.error == "device failure" and "17 device mallocs" in o.detail and o.seconds is None


def test_figure_series_and_png(tmp_path):
    outcomes = [
        ok("serial", 10, {}, 0.01),
        ok("serial", 8, {}, 0.001),
        ok("dp3", 8, {}, 0.002),
        measure.Outcome("dp1", 8, {}, error="timeout"),
    ]
    series = measure.figure_series(outcomes)
    assert series == {"serial": [(8, 0.001), (10, 0.01)], "dp3": [(8, 0.002)]}
    pytest.importorskip("matplotlib")
    path = figures.time_vs_n(series, str(tmp_path / "t.png"), title="t")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.endswith("t.png")


def test_render_markdown():
    text = table(["a", "b"], [["1", "22"]], markdown=True)
    assert text.splitlines() == ["| a | b |", "| --- | --- |", "| 1 | 22 |"]


def test_report_table3_model_only(capsys):
    assert main(["report", "table3", "--model-only"]) == 0
    out = capsys.readouterr().out
    assert (
        "static    1            4             1196 / 1597 / 1401.33  1196 / 1597 / 1401.33" in out
    )


def test_report_without_gpu_says_so_and_exits_2(monkeypatch, capsys):
    import nqprof.cuda.device as device

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no CUDA device found"))
    assert main(["report", "table2", "--n", "8:9"]) == 2
    assert "no GPU on this machine (no CUDA device found)" in capsys.readouterr().err


def test_report_rejects_bad_n(capsys):
    assert main(["report", "table2", "--n", "8:40"]) == 2
    assert "--n takes A:B" in capsys.readouterr().err
