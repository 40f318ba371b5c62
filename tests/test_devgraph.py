"""devgraph (device graph launch beside CDP): host logic, the plan, the graph layer's lazy
import, the comparison table and the launch table's graph modes from H200 recordings, and
(marked gpu) verified counts under every driver."""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nqprof.characterize import devgraph_compare, launch
from nqprof.cli import main as nqprof_main
from nqprof.cuda.sources import kernels_dir
from nqprof.errors import InputError
from nqprof.strategies import devgraph as dg
from nqprof.strategies import get
from nqprof.strategies.cdp.model import ROW_BOARDS
from nqprof.subproblems import expand

DATA = Path(__file__).parent / "data"


def test_registered_with_its_kernels():
    s = get("devgraph")
    assert not s.cdp and s.needs_gpu and s.sources[0].cdp  # no CDP launches; linked with cudadevrt
    assert set(s.sources[0].kernels) >= {
        "dg_step",
        "dg_advance",
        "dg_advance_while",
        "dg_schedule",
        "dg_char_launch",
    }


def test_the_while_kernel_needs_cuda_12_3():
    """dg_advance_while and dg_lat_while use conditional graph nodes, which CUDA's headers
    have from 12.3 on: a 12.0 or 12.2 build lacks them (and the catalog checks expect nothing
    else), a 12.3, 12.4 or 13.0 build holds them."""
    src = get("devgraph").sources[0]
    while_kernels = {"dg_advance_while": "12.3", "dg_lat_while": "12.3"}
    assert src.since == while_kernels
    for toolkit in ("12.0", "12.2"):
        assert "dg_advance_while" not in src.kernels_for(toolkit)
        assert src.left_out(toolkit) == while_kernels
        assert set(src.kernels_for(toolkit)) == set(src.kernels) - set(while_kernels)
    for toolkit in ("12.3", "12.4", "13.0"):
        assert src.kernels_for(toolkit) == src.kernels and not src.left_out(toolkit)


def guarded_kernels(text: str) -> dict[str, int]:
    """Kernel -> N for each kernel defined inside ``#if CUDART_VERSION >= N`` ... ``#endif``."""
    out = {}
    for block in re.finditer(r"^#if CUDART_VERSION >= (\d+)\n(.*?)^#endif", text, re.M | re.S):
        for name in re.findall(r'extern "C" __global__ void (\w+)\(', block.group(2)):
            out[name] = int(block.group(1))
    return out


def test_the_sources_guard_each_kernel_as_since_says():
    """Every kernel a catalogued source declares with ``since`` is defined inside
    ``#if CUDART_VERSION >= <that release>`` (major * 1000 + minor * 10: 12.3 is 12030, as
    cuda_runtime_api.h defines it), and no other kernel is guarded so: a build by an older
    toolkit then lacks exactly the kernels the checks do not expect."""
    from nqprof.catalog import catalog
    from nqprof.cuda.compat import parse_release

    for src in catalog().values():
        want = {
            k: 1000 * parse_release(v)[0] + 10 * parse_release(v)[1] for k, v in src.since.items()
        }
        assert guarded_kernels((kernels_dir() / src.file).read_text()) == want, src.file
    assert guarded_kernels((kernels_dir() / "devgraph.cu").read_text()) == {
        "dg_advance_while": 12030,
        "dg_lat_while": 12030,
    }


class FakeModule:
    """A built module as the session sees it: its toolkit release and the kernels it holds;
    fetching one it lacks fails as PyCUDA's cuModuleGetFunction would."""

    def __init__(self, toolkit: str, kernels):
        self.toolkit_version, self.held, self.fetched = toolkit, set(kernels), []

    def function(self, name: str):
        if name not in self.held:
            raise LookupError(f"cuModuleGetFunction failed: named symbol not found ({name})")
        self.fetched.append(name)
        return name


def test_the_while_driver_refuses_a_build_without_its_kernel():
    from nqprof.errors import UnavailableError

    src = get("devgraph").sources[0]
    for toolkit in ("12.0", "12.2"):
        module = FakeModule(toolkit, src.kernels_for(toolkit))
        reason = f"devgraph driver=while needs CUDA 12.3+ (this build: {toolkit})"
        assert dg.driver_unavailable("while", toolkit) == reason
        with pytest.raises(UnavailableError) as info:
            dg.driver_functions(module, "while")
        assert str(info.value) == reason and module.fetched == []
        for driver in ("host", "device"):  # the other drivers run on such a build
            assert dg.driver_unavailable(driver, toolkit) is None
            assert list(dg.driver_functions(module, driver)) == list(dg.DRIVER_KERNELS[driver])
            assert "dg_advance_while" not in module.fetched
    module = FakeModule("12.3", src.kernels)
    assert dg.driver_unavailable("while", "12.3") is None
    assert list(dg.driver_functions(module, "while")) == ["dg_step", "dg_advance_while"]


def test_each_driver_fetches_the_kernels_it_launches():
    src = get("devgraph").sources[0]
    assert set(dg.DRIVER_KERNELS) == set(dg.DRIVERS)
    launched = {k for kernels in dg.DRIVER_KERNELS.values() for k in kernels}
    # the rest are characterize's (launch, latency)
    characterize = {"dg_char_empty", "dg_char_launch", "dg_lat_child", "dg_lat_launch"}
    assert launched == set(src.kernels) - characterize - {"dg_lat_while"}
    for driver in dg.DRIVERS:
        module = FakeModule("13.0", src.kernels)
        dg.driver_functions(module, driver)
        assert module.fetched == list(dg.DRIVER_KERNELS[driver])


def test_defaults_and_checks():
    s = get("devgraph")
    p = s.resolve(18)
    assert (p["driver"], p["depth"], p["step"], p["final"], p["grid"]) == ("device", 2, 1, 7, 4096)
    assert s.resolve(4)["final"] == 3
    with pytest.raises(InputError, match="final .* must be >= depth"):
        s.resolve(12, {"depth": 5, "final": 4})
    with pytest.raises(InputError, match="depth must be in 2..11"):
        s.resolve(12, {"depth": 1})
    with pytest.raises(InputError, match="one of host, while, device"):
        s.resolve(12, {"driver": "cdp"})


def test_schedule_and_capacity():
    assert dg.schedule(12, 2, 1, 7) == [(2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 5)]
    assert dg.schedule(12, 2, 2, 7) == [(2, 2), (4, 2), (6, 1), (7, 5)]
    assert dg.schedule(8, 4, 3, 4) == [(4, 4)]  # no expansion: one DFS generation
    assert dg.capacity(12, 2, 1, 7) == ROW_BOARDS[12][6] == 60052
    # the model's rows are what the host expansion makes (the kernel checks the device's against
    # them)
    for n, row in ((9, 4), (10, 5), (11, 3)):
        assert dg.boards_at(n, row) == len(expand(n, row))


def test_buckets_and_grids():
    assert dg.buckets(4096) == [1 << k for k in range(13)]
    assert dg.buckets(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert dg.grid_for_driver("host", 1000, 128, 4096) == 8
    assert dg.grid_for_driver("host", 10**9, 128, 4096) == 4096
    assert dg.grid_for_driver("while", 5, 128, 4096) == 4096
    assert dg.grid_for_driver("device", 1000, 128, 4096) == 8
    assert dg.grid_for_driver("device", 1100, 128, 4096) == 16
    assert dg.grid_for_driver("device", 0, 128, 4096) == 1
    assert dg.grid_for_driver("device", 10**9, 128, 100) == 100


def test_state_words_match_the_kernel():
    text = (kernels_dir() / "devgraph.cu").read_text()
    defines = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define (DG_\w+) (\d+)\b", text)}
    for name, value in dg.LAYOUT.mirrored().items():
        if name in defines:
            assert defines[name] == value, name
    assert defines["DG_MAX_STEP"] == dg.MAX_STEP
    assert defines["DG_CHAR_FIRE_AND_FORGET"] == 1 and defines["DG_CHAR_TAIL"] == 2


def test_plan(capsys):
    assert nqprof_main(["plan", "18", "-s", "devgraph"]) == 0
    out = capsys.readouterr().out
    assert "7,409,150" in out and "DFS to the last row" in out
    assert "host boards per launch, 1 chunk\n" in out
    assert "two frontier buffers of 7,409,150 boards" in out


@pytest.mark.slow
def test_graph_layer_is_imported_lazily():
    code = (
        "import sys, nqprof.strategies.devgraph, nqprof.characterize.launch, nqprof.cuda.graphs; "
        "print(any(m.startswith('cuda.bindings') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_graph_layer_without_bindings(monkeypatch):
    from nqprof.cuda import graphs
    from nqprof.errors import UnavailableError

    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setitem(sys.modules, "cuda", None)
    ok, why = graphs.available()
    assert not ok and "nqprof[graphs]" in why
    with pytest.raises(UnavailableError, match="cuda-bindings"):
        graphs.bindings()


def test_launch_modes_include_the_graph_modes():
    assert launch.parse_modes("graph-ff,tail") == ["graph-ff", "tail"]
    assert set(launch.GRAPH_MODES) <= set(launch.MODES)


def test_h200_graph_launch_recording():
    """On the H200: fire-and-forget graph launches cost well under the CDP modes' per launch at
    small counts; 120 per parent graph run, 128 do not (8 fail per round, cudaErrorInvalidValue);
    two tail launches of graphs from one parent did not finish within the watchdog."""
    doc = json.loads((DATA / "characterize" / "h200-launch-graph.json").read_text())
    points = {(p.mode, p.count): p for p in launch.load(doc)}
    assert points[("graph-ff", 120)].ok and points[("graph-ff", 120)].launch_failures == 0
    failed = points[("graph-ff", 128)]
    assert not failed.ok and failed.launch_failures == 8 * failed.rounds and failed.first_error == 1
    assert points[("graph-ff", 32)].per_launch < points[("fire-and-forget", 32)].per_launch / 4
    assert points[("graph-tail", 1)].ok
    assert "no answer" in points[("graph-tail", 2)].error
    header, rows, notes = launch.table(list(points.values()))
    assert any("120 graphs uploaded: 12.0 MiB" in r[-1] for r in rows)
    assert set(launch.series(points.values())) >= {"graph-ff", "graph-tail", "fire-and-forget"}


def test_h200_comparison_table():
    records = devgraph_compare.load(sorted(glob.glob(str(DATA / "devgraph" / "compare-*.json"))))
    assert all(r["verified"] for r in records)
    header, rows, notes = devgraph_compare.table(records)
    assert header[1:4] == ["host loop (ms)", "host graph (WHILE) (ms)", "device graph launch (ms)"]
    by_n = {int(r[0]): r for r in rows}
    assert sorted(by_n) == list(range(12, 19))
    assert float(by_n[12][-2]) < 0.5  # device graph launch well under the host loop at N=12
    assert abs(float(by_n[18][-1]) - 1.0) < 0.03  # and no different from WHILE at N=18
    dev12 = next(r for r in records if r["n"] == 12 and r["params"].get("driver") == "device")
    assert dev12["device_failures"]["device_graph_launches"] == 12
    assert [g["boards"] for g in dev12["generations"]] == [
        ROW_BOARDS[12][r - 1] for r in (2, 3, 4, 5, 6, 7)
    ]


def test_comparison_refuses_unverified_times():
    rec = {
        "strategy": "devgraph",
        "n": 12,
        "params": {"driver": "device"},
        "verified": False,
        "gpu_times": [1e-4],
        "rounds": 1,
    }
    header, rows, notes = devgraph_compare.table([rec])
    assert rows[0][1] == "NOT VERIFIED"


@pytest.mark.gpu
@pytest.mark.parametrize("driver", dg.DRIVERS)
@pytest.mark.parametrize("n", [4, 5, 9, 12])
def test_counts_on_the_gpu(n, driver):
    from nqprof.cuda.toolkit import find_toolkit
    from nqprof.errors import UnavailableError
    from nqprof.runner import solve

    older = dg.driver_unavailable(driver, find_toolkit().version)
    if older:  # the run refuses with this reason, and the test is a skip saying it
        with pytest.raises(UnavailableError, match=re.escape(older)):
            solve("devgraph", n, {"driver": driver}, repeats=1, warmup=0, timeout=120)
        pytest.skip(older)
    record = solve("devgraph", n, {"driver": driver}, repeats=1, warmup=0, timeout=120)
    assert record.verified and record.count == record.expected
    assert record.device_failures["launch_failures"] == 0
