"""cdp-cst and graph-cst without a GPU: the refinement's host model (a task past its budget
hands the rest of its subtree over, nq_cst_spill in kernels/cpu/constellations.h, the code
the kernels run) keeps every count, the control words and parameter block agree with
kernels/cst_launch.cuh, parameters and plans, and the kernels compile and device-link."""

from __future__ import annotations

import re

import pytest

from nqprof import _cpu
from nqprof.cuda.sources import kernels_dir
from nqprof.errors import InputError
from nqprof.problem import KNOWN_COUNTS
from nqprof.strategies import cdp_cst as cc
from nqprof.strategies import cst_layout as cl
from nqprof.strategies import get

NAMES = ("cdp-cst", "graph-cst")


# --- the refinement's host model ---------------------------------------------------------------


@pytest.mark.parametrize("n", range(4, 13))
@pytest.mark.parametrize("budget", [0, 1, 2, 5, 37, 1000])
def test_budget_keeps_the_count(n, budget):
    for depth in sorted({0, min(2, n - 3), max(0, n - 5)}):
        count, spilled, gens = _cpu.cst_budget_count(n, depth, budget)
        assert count == KNOWN_COUNTS[n], (n, depth, budget)
        if budget == 0:
            assert (spilled, gens) == (0, 1)


def test_small_budgets_spill_and_take_generations():
    count, spilled, gens = _cpu.cst_budget_count(12, 0, 3)
    assert count == KNOWN_COUNTS[12] and spilled > 10_000 and gens > 3
    # the last allowed generation has no budget: the count holds at every limit
    for limit in (1, 2, 3, 5):
        count, _, gens = _cpu.cst_budget_count(12, 0, 3, limit)
        assert count == KNOWN_COUNTS[12] and gens == limit


def test_budget_model_at_n14_and_bad_arguments():
    assert _cpu.cst_budget_count(14, 3, 100)[0] == KNOWN_COUNTS[14]
    with pytest.raises(ValueError):
        _cpu.cst_budget_count(10, 8, 5)
    with pytest.raises(ValueError):
        _cpu.cst_budget_count(10, 2, 5, 0)


def test_task_count_is_the_generators():
    for n, depth in ((10, 2), (14, 3), (16, 3)):
        assert _cpu.cst_task_count(n, depth) == len(_cpu.cst_tasks(n, depth)) // 16


# --- the layouts the kernels share with the host -----------------------------------------------


def header() -> str:
    return (kernels_dir() / "cst_launch.cuh").read_text()


def test_control_words_match_the_header():
    defines = dict(re.findall(r"#define CC_(\w+) (\d+)", header()))
    for name, value in {**cl.LAYOUT.fields, **cl.LAYOUT.constants}.items():
        assert int(defines[name]) == value, name
    assert int(defines["WORDS"]) == cc.WORDS
    assert cc.TL + cc.FIRST_COUNT + cc.MAX_GEN <= cc.WORDS
    assert cl.TICKET + cc.MAX_GEN <= cc.TL and cc.TASKS + cc.MAX_GEN + 1 <= cc.NEXT


def test_parameter_block_matches_the_header():
    body = header().split("struct cc_params {")[1].split("};")[0]
    fields = re.findall(r"\b(\w+);\s*//\s*(\d+)", body)
    assert [(name, int(off)) for name, off in fields] == [(f[0], f[2]) for f in cl.PARAMS_FIELDS]
    assert cc.params_dtype().itemsize == cc.PARAMS_BYTES
    assert f"sizeof(cc_params) == {cc.PARAMS_BYTES}" in header()


# --- parameters and the plan -------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_parameters(name):
    s = get(name)
    p = s.resolve(20)
    assert (p["depth"], p["block"], p["budget"], p["gens"], p["mode"]) == (4, 128, 0, 8, "tail")
    assert s.resolve(16)["depth"] == 3 and s.resolve(3)["depth"] == 0
    for bad, message in (
        ({"block": 100}, "multiple of 32"),
        ({"depth": 14}, r"depth must be in 0\.\.13"),
        ({"mode": "own"}, "must be one of fire-and-forget, tail"),
        ({"gens": 21}, r"gens must be in 1\.\.20"),
    ):
        with pytest.raises(InputError, match=message):
            s.resolve(16, bad)
    assert s.sources[0].cdp and s.sources[0].file == (
        "cdp_cst.cu" if name == "cdp-cst" else "graph_cst.cu"
    )


def test_cdp_cst_measurement_builds():
    s = get("cdp-cst")
    assert s.resolve(12, {"launch": "none"})["launch"] == "none"
    with pytest.raises(InputError, match="launch=record is not supported"):
        s.resolve(12, {"launch": "record"})
    assert "launch" not in {p.name for p in get("graph-cst").params}


@pytest.mark.parametrize("name", NAMES)
def test_plan_generations_and_buffers(name):
    from nqprof.strategies.cdp.plan import make_plan

    s = get(name)
    params = s.resolve(16, {"budget": 500, "gens": 4})
    frames = s.host_boards(16, params)
    rec = s.recursion(16, params, frames)
    tasks = _cpu.cst_task_count(16, 3)
    assert [g.generation for g in rec.generations] == list(range(3 + 4))
    assert rec.generations[3].model_boards == tasks and rec.generations[0].bound_boards == frames
    plan = make_plan(rec, 100 * 2**30, params)
    assert not plan.chunked and plan.limits.pending == 2048 and plan.limits.heap_bytes is None
    spill = cc.spill_capacity(params, tasks)
    assert spill == cc.SPILL_MIN
    assert plan.host_bytes >= 16 * (tasks + 2 * spill)
    off = s.recursion(16, s.resolve(16), frames)
    assert len(off.generations) == 4  # no budget: one counting generation, no spill buffers


def test_plan_command(capsys):
    from nqprof.cli import main

    assert main(["plan", "18", "-s", "cdp-cst", "-p", "budget=4096"]) == 0
    out = capsys.readouterr().out
    assert "counting generation 7" in out and "3,183,905 tasks" in out
    assert main(["plan", "18", "-s", "graph-cst"]) == 0
    assert "device graph launches" in capsys.readouterr().out


def test_a_plan_that_does_not_fit_is_refused():
    from nqprof.strategies.cdp.plan import make_plan

    s = get("cdp-cst")
    params = s.resolve(20)
    rec = s.recursion(20, params, s.host_boards(20, params))
    with pytest.raises(InputError, match="does not fit"):
        make_plan(rec, 2 * 2**30, params)  # 64M tasks (1 GiB) and the runtime's headroom


# --- the kernels compile and device-link (sm_90) -----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("file", ["cdp_cst.cu", "graph_cst.cu"])
@pytest.mark.parametrize("defines", [{}, {"CDP_TIMELINE": 1}, {"NQ_BLOCK": 256}])
def test_kernels_compile_and_device_link(tmp_path, toolkit, file, defines):
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    if toolkit.cudadevrt is None:
        pytest.skip(f"{toolkit.describe()} has no libcudadevrt.a")
    src = catalog()[file]
    rows = nvcc.compile_source(src, "sm_90", defines=defines, toolkit=toolkit, workdir=tmp_path)
    assert {r.kernel for r in rows} == set(src.kernels) and all(r.cdp for r in rows)
    assert all(r.spill_stores == 0 for r in rows if r.kernel.endswith("count"))
    assert nvcc.elf_type((tmp_path / f"{file[:-3]}.sm_90.linked.cubin").read_bytes()) == 2


@pytest.mark.slow
def test_generation_0_without_refinement_is_fasts_kernel(tmp_path, toolkit):
    """cc_count0 and cg_count0, built as the runs build them (-rdc, cudadevrt), are fast's
    constellation kernel: no stack, no spills, and with fast's launch bounds (graph-cst's
    default) its registers or one more; without them (cdp-cst's) no more; the budgeted kernels
    spill no register."""
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc
    from nqprof.strategies import get
    from nqprof.strategies.cst_params import bounds_defines

    if toolkit.cudadevrt is None:
        pytest.skip(f"{toolkit.describe()} has no libcudadevrt.a")
    for block in (128, 256):
        defines = {"NQ_BLOCK": block}
        fast = {
            r.kernel: r
            for r in nvcc.compile_source(
                catalog()["constellation.cu"], "sm_90", defines=defines, toolkit=toolkit
            )
        }["constellation"]
        assert fast.local_bytes == 0
        for name, file, plain, budgeted in (
            ("cdp-cst", "cdp_cst.cu", "cc_count0", "cc_count"),
            ("graph-cst", "graph_cst.cu", "cg_count0", "cg_count"),
        ):
            bounds = bounds_defines(get(name).resolve(19))
            work = tmp_path / f"{file}-{block}"
            rows = {
                r.kernel: r
                for r in nvcc.compile_source(
                    catalog()[file],
                    "sm_90",
                    defines={**defines, **bounds},
                    toolkit=toolkit,
                    workdir=work,
                )
            }
            # the same loop; -rdc's allocation may take one register more (38 against 37 for
            # the step of docs/results/fast-ladder.md's issue-37 rung), never a stack; without
            # launch bounds ptxas allocates fewer (32)
            extra = rows[plain].registers - fast.registers
            assert (extra <= 1) if bounds else (0 <= extra <= 1), (file, block, extra)
            assert bounds == ({"NQ_BOUNDS": 0} if name == "cdp-cst" else {})
            assert rows[plain].local_bytes == rows[plain].spill_stores == 0, (file, block)
            assert rows[budgeted].spill_stores == rows[budgeted].spill_loads == 0


def cdp2_calls(cubin: bytes) -> set[str]:
    """The CDP2 device-runtime calls a linked cubin's kernels make (their externs' names)."""
    return {m.decode() for m in re.findall(rb"__cuda_syscall_cnpv2\w+", cubin)}


@pytest.mark.slow
def test_device_graph_kernels_make_no_cdp2_call(tmp_path, toolkit):
    """A graph instantiated for device launch may hold no kernel that uses dynamic
    parallelism (cuGraphInstantiate: CUDA_ERROR_INVALID_VALUE), and the driver counts every
    CDP2 device-runtime call as such use, cudaGetLastError() included: graph_cst.cu's
    linked cubin has none, as devgraph.cu's (whose graphs instantiate) has none, while
    cdp_cst.cu's, which launches kernels, has them."""
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    if toolkit.cudadevrt is None:
        pytest.skip(f"{toolkit.describe()} has no libcudadevrt.a")
    calls = {}
    for file, defines in (
        ("graph_cst.cu", {}),
        ("graph_cst.cu", {"CDP_TIMELINE": 1}),
        ("graph_cst.cu", {"NQ_BLOCK": 256}),
        ("devgraph.cu", {}),
        ("cdp_cst.cu", {}),
    ):
        work = tmp_path / f"{file}-{len(calls)}"
        nvcc.compile_source(
            catalog()[file], "sm_90", defines=defines, toolkit=toolkit, workdir=work
        )
        linked = (work / f"{file[:-3]}.sm_90.linked.cubin").read_bytes()
        calls[(file, tuple(defines))] = cdp2_calls(linked)
        if file != "cdp_cst.cu":
            assert b"cudaGraphLaunch" in linked, file
    assert calls.pop(("cdp_cst.cu", ())) >= {
        "__cuda_syscall_cnpv2GetLastError",
        "__cuda_syscall_cnpv2LaunchDeviceV2",
    }
    assert all(not c for c in calls.values()), calls


@pytest.mark.slow
def test_cdp_cst_measurement_build_compiles(tmp_path, toolkit):
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    if toolkit.cudadevrt is None:
        pytest.skip(f"{toolkit.describe()} has no libcudadevrt.a")
    for mode in (1, 2):  # launch=empty, none
        rows = nvcc.compile_source(
            catalog()["cdp_cst.cu"], "sm_90", defines={"CDP_LAUNCH_MODE": mode}, toolkit=toolkit
        )
        assert rows
