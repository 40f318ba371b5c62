"""The CDP strategies on a real GPU: every strategy verified for N=4..12, odd shapes that
force many generations, the device-side accounting equal to the model for dp2/dp3 at N=12,
and no silent failure: too few pending-launch slots or too small a heap make the run an
error that names the limit, never a count. Skipped with the reason where no GPU run can
happen (tests/conftest.py)."""

import pytest
from gpu_checks import clean, ns_up_to

from nqprof.errors import DeviceFailureError, InputError
from nqprof.papers.plauth import PAPER_TABLE3, TABLE3_PARAMS, TABLE3_SMEM_KIB, table3_params
from nqprof.runner import solve
from nqprof.strategies import all_strategies
from nqprof.strategies.cdp.model import condensed_generations
from nqprof.strategies.dp3 import depth_max

pytestmark = pytest.mark.gpu

#: Every registered CDP strategy.
CDP = tuple(s.name for s in all_strategies() if s.cdp)
TIMEOUT = 120


@pytest.mark.parametrize(
    "name", [s for s in CDP if s not in ("cdp-cst", "graph-cst")]
)  # tests/test_cdp_cst_gpu.py counts those two to N=16
def test_defaults_count_n4_to_n12(name):
    for n in ns_up_to(12):
        record = clean(solve(name, n, {}, repeats=1, warmup=0, timeout=TIMEOUT))
        assert record.verified and record.count == record.expected


@pytest.mark.parametrize(
    "name,params",
    [
        ("dp1", {"z": 1, "stream": "default"}),
        ("dp1", {"z": 1, "stream": "own", "depth": 2, "block": 7}),
        ("dp1", {"z": 2, "stream": "fire-and-forget"}),
        ("dp2", {"depth": 1, "search": 1, "child_block": 1}),
        ("dp2", {"depth": 1, "search": 2, "child_block": 33, "block": 5}),
        ("dp3", {"depth": 1, "search": 1, "child_block": 16}),
        ("dpswap", {"depth": 1, "search": 1, "capacity": 300, "block": 32, "child_block": 32}),
        ("dpswap", {"depth": 1, "search": 2, "capacity": 161, "block": 32, "child_block": 32}),
    ],
)
def test_odd_shapes_many_generations(name, params):
    """Depth 1 (odd N: middle column expanded to row 2), one-thread child blocks, partial
    warps, tiny buffers: many generations and launches, all counted."""
    for n in (5, 8, 9, 11):
        record = clean(solve(name, n, params, repeats=1, warmup=0, timeout=TIMEOUT))
        assert record.verified, (n, record.count)
        if n >= 8:
            assert len(record.generations) >= 3 and record.device_failures["launches"] > 0


@pytest.mark.parametrize(
    "row", PAPER_TABLE3, ids=lambda r: f"{r.approach}-{r.initial_row}-{r.search}"
)
def test_accounting_matches_the_model_n12(row):
    record = clean(
        solve(row.strategy, 12, table3_params(row), repeats=1, warmup=0, timeout=TIMEOUT)
    )
    cap = depth_max(TABLE3_SMEM_KIB, TABLE3_PARAMS["child_block"])
    model = condensed_generations(12, row.initial_row, row.search, row.approach == "dynamic", cap)
    assert record.generations == [g.as_dict() for g in model.generations]
    assert record.device_failures["launches"] == model.launches
    assert record.device_failures["max_generation"] == len(model.generations) - 1
    g1 = record.generations[1]
    assert (g1["min"], g1["max"], g1["mean"]) == (row.min, row.max, row.mean)  # the paper's Table 3


@pytest.mark.parametrize("name", ["dp2", "dp3"])
def test_accounting_matches_the_model_with_defaults(name):
    record = clean(solve(name, 12, {}, repeats=1, warmup=0, timeout=TIMEOUT))
    p = record.params
    cap = depth_max(p["smem_kib"], p["child_block"]) if name == "dp3" else None
    model = condensed_generations(12, p["depth"], p["search"], name == "dp3", cap)
    assert record.generations == [g.as_dict() for g in model.generations]


#: Device runtimes (the cudadevrt a CDP module is linked with) whose launches past the
#: pending-launch limit return an error. With CUDA 12.4's a parent grid past the limit never
#: finishes (docs/results/matrix: the H200 run of tox -e cuda12.4), so the same run ends
#: by nqprof's watchdog instead.
PENDING_LIMIT_ERRORS_FROM = "13.0"


def test_too_few_pending_launch_slots_fail_loudly():
    """2,040 host threads each launch a child at once against a limit of 32."""
    from nqprof.cuda.compat import parse_release
    from nqprof.cuda.toolkit import find_toolkit
    from nqprof.errors import WatchdogError

    run = dict(repeats=1, warmup=0)
    params = {"depth": 4, "search": 2, "pending": 32}
    if parse_release(find_toolkit().version) < parse_release(PENDING_LIMIT_ERRORS_FROM):
        with pytest.raises((DeviceFailureError, WatchdogError)) as exc:
            solve("dp2", 12, params, timeout=20, **run)
        assert "raise the pending-launch limit" in str(exc.value) or (
            "no answer to 'run' within 20 s; worker killed" in str(exc.value)
        )
        return
    with pytest.raises(DeviceFailureError) as exc:
        solve("dp2", 12, params, timeout=TIMEOUT, **run)
    text = str(exc.value)
    assert (
        "device launches failed" in text
        and "raise the pending-launch limit (param pending=64, was 32)" in text
    )
    assert "count is discarded" in text


def test_too_small_a_heap_fails_loudly():
    """66 host threads each hold ~75 KB of boards (rows 2 -> 8 of N=13) in a 1 MiB heap."""
    with pytest.raises(
        DeviceFailureError,
        match=r"device mallocs returned NULL: raise the heap \(param heap_mib=2, was 1\)",
    ):
        solve(
            "dp2",
            13,
            {"depth": 2, "search": 6, "heap_mib": 1},
            repeats=1,
            warmup=0,
            timeout=TIMEOUT,
        )


def test_a_run_that_cannot_fit_is_refused_before_launch():
    """dp1 N=16 with one row per grid from host depth 1: even one host board per chunk needs
    ~1.8 TB of pending-launch reserve (`nqprof plan 16 -s dp1 -p z=1 -p depth=1`), so the plan
    refuses it before anything is launched (dp1 N=16 z=1 at its default depth is chunked and
    runs)."""
    with pytest.raises(
        InputError,
        match=r"dp1 N=16: does not fit in device memory.*the smallest chunk does not fit",
    ):
        solve("dp1", 16, {"z": 1, "depth": 1}, repeats=1, warmup=0, timeout=TIMEOUT)


def test_run_record_of_a_cdp_run():
    record = clean(solve("dp3", 13, {}, repeats=2, warmup=1, timeout=TIMEOUT))
    assert record.gpu_s is not None and len(record.gpu_times) == 2
    names = [k["name"] for k in record.kernels]
    assert names == ["dp3_root", "dp3_child"] and all(k["registers"] > 0 for k in record.kernels)
    assert (
        record.kernels[0]["dynamic_shared_bytes"]
        == 16 * (record.params["search"] + 1) * record.params["block"]
    )
    assert list(record.memory["free_mib"]) == ["context", "layout", "limits", "module", "run"]
    assert record.memory["limits"]["pending_launches"] >= 2048
    assert any(note.startswith("limits: pending-launch") for note in record.notes)
    assert record.generations[0] == {
        "generation": 0,
        "grids": 1,
        "boards": 515,
        "min": 515,
        "max": 515,
        "mean": 515.0,
    }
