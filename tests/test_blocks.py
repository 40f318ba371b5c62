"""nqprof characterize blocks without a GPU: the records' layout against the kernels', their
summary on SYNTHETIC records (invented numbers, not measurements), the measurement loop
with a fake solve, the table, --from, and the parameters' checks."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from nqprof.characterize import blocks
from nqprof.cli import main
from nqprof.errors import InputError
from nqprof.strategies import block_records as br
from nqprof.strategies import get
from nqprof.strategies.cdp import device_records as dr
from nqprof.strategies.cst_params import bounds_defines as cdp_bounds


def records(rows, dropped=0):
    """Decoded records of ``rows`` (dicts of the record's fields; the rest zero)."""
    import numpy as np

    arr = np.zeros(len(rows), dtype=br.record_dtype())
    for i, row in enumerate(rows):
        arr[i]["block"] = i
        for k, v in row.items():
            arr[i][k] = v
    header = np.array([(len(rows), len(rows) + 4, dropped, 0)], dtype=dr.header_dtype())
    return br.decode(header.tobytes(), arr.tobytes())


#: Three blocks: two on SM 0 that overlap (held 2 at once), one on SM 1 that starts 2 us later.
#: Block 0 runs 1 ms at 2,000 clocks a microsecond (2 GHz), its 4 warps 1,000 votes each
#: (2,000 clocks a vote) and 10% of their clocks taking tasks.
SYNTHETIC = [
    dict(sm=0, tasks=10, warps=4, start=1_000_000, end=2_000_000, clock0=0, clock1=2_000_000,
         fetch=800_000, votes=4000),
    dict(sm=0, tasks=20, warps=4, start=1_500_000, end=2_500_000, clock0=5, clock1=1_000_005,
         fetch=0, votes=4000),
    dict(sm=1, tasks=30, warps=4, start=1_002_000, end=3_002_000, clock0=0, clock1=4_000_000,
         fetch=0, votes=4000),
]  # fmt: skip


def test_the_summary_of_synthetic_records():
    s = blocks.summarize(records(SYNTHETIC), ntasks=60)
    assert s["blocks"] == 3 and s["sms"] == 2 and s["held_most"] == 2
    assert s["span_ms"] == pytest.approx(2.002)
    assert s["last_start_us"] == pytest.approx(500.0)
    assert s["block_ms_median"] == pytest.approx(1.0) and s["block_ms_max"] == pytest.approx(2.0)
    # block 0: 2e6 clocks in 1e6 ns = 2,000 MHz; block 1: 1,000 MHz; block 2: 2,000 MHz
    assert s["sm_mhz_median"] == pytest.approx(2000.0)
    # clocks x warps / votes: 2,000, 1,000, 4,000
    assert s["clocks_per_vote"] == pytest.approx(2000.0)
    # 800,000 of 4 x (2e6 + 1e6 + 4e6) warp clocks
    assert s["fetch_share"] == pytest.approx(800_000 / 28_000_000)
    assert (s["tasks"], s["tasks_min"], s["tasks_max"], s["votes"]) == (60, 10, 30, 12000)


def test_blocks_that_never_ran_are_left_out_and_a_task_mismatch_is_an_error():
    rows = [*SYNTHETIC, dict(sm=7)]  # a record with no warp: the block never wrote it
    assert blocks.summarize(records(rows))["sms"] == 2
    with pytest.raises(InputError, match="60 tasks were taken, the grid had 61"):
        blocks.summarize(records(SYNTHETIC), ntasks=61)
    with pytest.raises(InputError, match="no block that ran"):
        blocks.summarize(records([dict(sm=0)]))


def fake_solve(calls):
    def solve(strategy, n, params, repeats, warmup, timeout):
        calls.append((strategy, n, dict(params)))

        class Rec:
            gpu_s = 0.001 * n * (2 if params.get("blocks") else 1)
            gpu_times = [gpu_s] * repeats
            tasks = {"tasks": 60}
            device = {"name": "Synthetic GPU", "driver": "0"}
            toolkit = {"version": "13.0"}
            conditions = {"gpu": {"source": "nvml"}}

        Rec.params = params
        Rec.blocks = records(SYNTHETIC) if params.get("blocks") else {}
        return Rec

    return solve


def test_measure_runs_each_path_plain_and_with_records(tmp_path, capsys):
    calls = []
    doc = blocks.measure([9], ["host", "cdp-host"], repeats=2, solve=fake_solve(calls))
    assert calls == [
        ("fast", 9, {"blocks": 0}),
        ("fast", 9, {"blocks": 1}),
        ("cdp-cst", 9, {"mode": "host", "blocks": 0}),
        ("cdp-cst", 9, {"mode": "host", "blocks": 1}),
    ]
    points = blocks.load(json.loads(json.dumps(doc)))
    assert points[0]["plain"]["conditions"] == {"gpu": {"source": "nvml"}}
    header, rows, _ = blocks.table(points)
    assert [r[1] for r in rows] == ["host", "cdp-host"]
    assert rows[0][header.index("time (ms)")] == "9.00"
    assert rows[0][header.index("records (ms)")] == "18.00"
    assert rows[1][header.index("vs host")] == "1.00x"
    kept = tmp_path / "blocks.json"
    kept.write_text(json.dumps(doc))
    assert main(["characterize", "blocks", "--from", str(kept)]) == 0
    out = capsys.readouterr().out
    assert "cdp-host" in out and "Synthetic GPU" in out


def test_bad_paths_and_documents_are_one_line_errors():
    with pytest.raises(InputError, match="--paths takes a comma list of host, graph"):
        blocks.check_paths(["host", "cdp"])
    with pytest.raises(InputError, match="not an nqprof block records"):
        blocks.load({"kind": "nqprof-characterize-residency"})


def test_the_parameters_refuse_what_they_cannot_measure():
    get("fast").check(12, {"opt": "cst", "depth": 3, "block": 128, "blocks": 1})
    with pytest.raises(InputError, match="blocks=1 needs the constellation kernel"):
        get("fast").check(12, {"opt": "tight-u4", "depth": 3, "block": 128, "blocks": 1})
    cdp = get("cdp-cst")
    base = {p.name: p.default(12) if callable(p.default) else p.default for p in cdp.params}
    cdp.check(12, {**base, "mode": "host"})
    for what in ({"mode": "host"}, {"blocks": 1}):
        with pytest.raises(InputError, match="use budget=0"):
            cdp.check(12, {**base, **what, "budget": 64})
    graph = get("graph-cst")
    gbase = {p.name: p.default(12) if callable(p.default) else p.default for p in graph.params}
    with pytest.raises(InputError, match="mode=host is cdp-cst's"):
        graph.check(12, {**gbase, "mode": "host"})
    assert br.defines({"blocks": 1}) == {"NQ_BLOCK_RECORDS": 1} and br.defines({}) == {}


@pytest.mark.slow
def test_the_record_matches_the_kernels(tmp_path, toolkit):
    from nqprof.cuda.sources import kernels_dir

    program = tmp_path / "rec.cu"
    fields = [name for name, _ in br.RECORD_FIELDS]
    offsets = ", ".join(f"(int)offsetof(nq_block_record, {f})" for f in fields)
    program.write_text(
        "#include <cstdio>\n#include <cstddef>\n#define NQ_BLOCK_RECORDS 1\n"
        '#include "cst_count.cuh"\nint main() {\n'
        f'    int v[] = {{(int)sizeof(nq_block_record), (int)offsetof(nq_block_buffer, blocks), '
        f"{offsets}}};\n"
        '    for (int x : v) printf("%d ", x);\n    return 0;\n}\n'
    )
    exe = tmp_path / "rec"
    subprocess.run(
        [str(toolkit.nvcc), "-std=c++17", "-I", str(kernels_dir()), str(program), "-o", str(exe)],
        check=True,
        capture_output=True,
        text=True,
    )
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    dt = br.record_dtype()
    want = [dt.itemsize, dr.HEADER_BYTES, *(dt.fields[f][1] for f in fields)]
    assert list(map(int, printed)) == want


@pytest.mark.slow
@pytest.mark.parametrize("file", ["constellation.cu", "cdp_cst.cu", "graph_cst.cu"])
def test_both_builds_compile(file, toolkit):
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    src = catalog()[file]
    for on in (0, 1):
        defines = {**src.check_defines, **br.defines({"blocks": on})}
        rows = nvcc.compile_source(src, "sm_90", defines=defines, toolkit=toolkit)
        assert set(src.kernels) <= {r.kernel for r in rows}


def test_extra_parameters_go_to_the_paths_whose_strategy_has_them():
    calls = []
    blocks.measure([9], ["host", "cdp-tail"], solve=fake_solve(calls), extra={"min_blocks": "6"})
    assert [c[2] for c in calls] == [
        {"blocks": 0},
        {"blocks": 1},
        {"mode": "tail", "min_blocks": "6", "blocks": 0},
        {"mode": "tail", "min_blocks": "6", "blocks": 1},
    ]
    with pytest.raises(InputError, match="--param count0: no strategy of the paths host"):
        blocks.path_params(["host", "cdp-tail"], {"count0": "own"})
    assert cdp_bounds({"min_blocks": 6}) == {"NQ_MIN_BLOCKS": 6} and cdp_bounds({}) == {}
    assert cdp_bounds({"bounds": "threads"}) == {"NQ_BOUNDS": 1}
    assert cdp_bounds({"bounds": "none", "min_blocks": 2}) == {"NQ_BOUNDS": 0, "NQ_MIN_BLOCKS": 2}


# --- measured on an H200 host (docs/cdp-on-hopper.md, fourth run) ---------------------------

RESULTS = Path(__file__).parent.parent / "docs" / "results" / "cdp-on-hopper"


def h200(name: str) -> list[dict]:
    return blocks.load(json.loads((RESULTS / f"{name}.json").read_text()))


def test_the_h200_cdp2_grid_was_held_one_block_an_sm_before_the_fix_and_six_after():
    before = {(p["n"], p["path"]): p for p in h200("blocks-before-h200")}
    for path in ("cdp-tail", "cdp-ff"):
        p = before[19, path]
        s = p["summary"]
        assert s["held_most"] == 1 and s["blocks"] == 792
        # blocks 132.. started when the first 132 had ended, and found no task left
        b = p["blocks"]["blocks"]
        assert sum(b["tasks"][132:]) == 0 and min(b["tasks"][:132]) > 40_000
        assert s["last_start_us"] > 0.95 * s["span_ms"] * 1e3
        assert p["plain"]["gpu_s"] / before[19, "host"]["plain"]["gpu_s"] > 3.5
    assert before[19, "cdp-host"]["summary"]["held_most"] == 6  # the same kernel, host-launched
    after = {(p["n"], p["path"]): p for p in h200("blocks-h200")}
    for (n, path), p in after.items():
        assert p["summary"]["held_most"] == (7 if n == 17 else 6), (n, path)
        assert p["plain"]["gpu_s"] / after[n, "host"]["plain"]["gpu_s"] < 1.2, (n, path)


def test_the_h200_launch_latencies_order_as_published():
    from nqprof.characterize import latency

    doc = json.loads((RESULTS / "latency-h200.json").read_text())
    med = {p["path"]: statistics.median(p["first_ns"]) for p in latency.load(doc)}
    assert med["host"] < med["graph-ff"] < med["graph-tail"] < med["cdp-ff"] < med["cdp-tail"]
    header, rows, _ = latency.table(latency.load(doc))
    assert len(rows) == 6 and all(len(r) == len(header) for r in rows)


def test_the_figure_draws_a_panel_per_path(tmp_path):
    pytest.importorskip("matplotlib")
    out = blocks.figure(h200("blocks-bounds-b768-h200"), tmp_path / "b.png")
    assert out.stat().st_size > 10_000
    with pytest.raises(InputError, match="no point at N=12"):
        blocks.figure(h200("blocks-bounds-b768-h200"), tmp_path / "c.png", n=12)
