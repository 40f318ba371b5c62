"""NVBench's JSON result format both ways (nqprof.analysis.nvbench): a saved run exported
reads back in NVBench's own reader (cuda-bench) with the same rounds, compares in
``nqprof compare`` with the verdicts of the saved runs it came from, and an NVBench result
nqprof did not write compares too."""

import array
import json
import shutil
from pathlib import Path

import pytest

from nqprof.analysis import nvbench
from nqprof.cli import main
from nqprof.errors import InputError

pytest.importorskip("pandas")
pytest.importorskip("pytest_benchmark")

PUBLISHED = Path(__file__).resolve().parents[1] / "docs" / "results" / "benchmarks"
RUNS = ("h200-cuda13.0-0001", "h200-cuda13.0-0002")


@pytest.fixture
def storage(tmp_path):
    """The two published H200 runs as a storage folder."""
    folder = tmp_path / "storage" / "machine"
    folder.mkdir(parents=True)
    for run in RUNS:
        shutil.copy(PUBLISHED / f"{run}.json", folder / f"{run}.json")
    return tmp_path / "storage"


def exported(storage, tmp_path, run) -> Path:
    out = tmp_path / f"{run}.json"
    assert main(["export", run, "--storage", str(storage), "-o", str(out)]) == 0
    return out


def verdict_lines(text: str) -> list[str]:
    """The compare table's rows and its counts (not the A:/B: lines, which name the files)."""
    return text[text.index("strategy") :].splitlines()


def test_an_exported_run_compares_with_the_saved_runs_verdicts(storage, tmp_path, capsys):
    a, b = (exported(storage, tmp_path, run) for run in RUNS)
    capsys.readouterr()
    assert main(["compare", *RUNS, "--storage", str(storage)]) == 0
    saved = verdict_lines(capsys.readouterr().out)
    assert main(["compare", str(a), str(b)]) == 0
    read = verdict_lines(capsys.readouterr().out)
    assert len(read) == len(saved) > 50
    verdict = [line.split()[-1] for line in read[2:57]]
    assert verdict == [line.split()[-1] for line in saved[2:57]]
    assert read[-5:] == saved[-5:]


def test_nvbench_s_reader_reads_the_export(storage, tmp_path):
    results = pytest.importorskip("cuda.bench.results")
    out = exported(storage, tmp_path, RUNS[0])
    saved = json.loads((storage / "machine" / f"{RUNS[0]}.json").read_text())
    read = results.BenchmarkResult.from_json(out)
    states = [s for bench in read.values() for s in bench]
    assert len(states) == len(saved["benchmarks"]) and read.devices[0].name
    by_case = {(s.point["strategy"], int(s.point["N"])): s for s in states}
    assert len(by_case) == len(states)  # one case per strategy and N in this run
    for bench in saved["benchmarks"]:
        extra = bench["extra_info"]
        times = extra.get("gpu_times") or extra.get("wall_times")
        state = by_case[extra["strategy"], extra["n"]]
        gpu = extra["device_kind"] == "gpu"
        # the reader takes the cold (GPU) rounds' file; a CPU case's rounds are CPU-only ones
        assert list(state.samples) == pytest.approx(times, rel=1e-6) if gpu else not state.samples
        kind = "cold/time/gpu" if gpu else "cpu_only/time/cpu"
        mean = float(state.summaries[f"nv/{kind}/mean"].value)
        assert mean == pytest.approx(sum(times) / len(times))


def _foreign(path: Path, scale: float) -> Path:
    """A two-state NVBench result of another program (axis Elements), 40 rounds a state."""
    states = []
    for i, elements in enumerate((1024, 4096)):
        times = array.array("f", [(1 + i) * scale * (1 + 0.001 * (k % 7)) for k in range(40)])
        (path.parent / f"{path.stem}-{i}.bin").write_bytes(times.tobytes())
        summary = {
            "tag": "nv/json/bin:nv/cold/sample_times",
            "data": [
                {"name": "filename", "type": "string", "value": f"{path.stem}-{i}.bin"},
                {"name": "size", "type": "int64", "value": "40"},
            ],
        }
        states.append(
            {
                "name": f"Device=0 Elements={elements}",
                "device": 0,
                "axis_values": [{"name": "Elements", "type": "int64", "value": str(elements)}],
                "summaries": [summary],
                "is_skipped": False,
            }
        )
    doc = {
        "devices": [{"id": 0, "name": "NVIDIA H200"}],
        "benchmarks": [{"name": "copy", "axes": [], "states": states}],
    }
    path.write_text(json.dumps(doc))
    return path


def test_an_nvbench_result_of_another_program_compares(tmp_path, capsys):
    a = _foreign(tmp_path / "base.json", 1e-5)
    b = _foreign(tmp_path / "slow.json", 1.2e-5)
    assert main(["compare", str(a), str(b), "--fail-on", "slower"]) == 1
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("copy")]
    assert len(rows) == 2 and all("Elements=" in r and r.endswith("slower") for r in rows), out


def test_export_refuses_to_replace_and_compare_refuses_a_mix(storage, tmp_path, capsys):
    out = exported(storage, tmp_path, RUNS[0])
    assert main(["export", RUNS[0], "--storage", str(storage), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["export", RUNS[0], "--storage", str(storage), "-o", str(out), "--force"]) == 0
    code = main(["compare", str(out), RUNS[1], "--storage", str(storage)])
    assert code == 2 and "two NVBench result files" in capsys.readouterr().err


def test_reading_a_file_that_is_not_nvbench_s_says_so(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"benchmarks": [{"name": "t", "stats": {}}]}))
    with pytest.raises(InputError, match="not an NVBench result"):
        nvbench.read_rows(path, "x")
