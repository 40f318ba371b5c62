"""Toolkit and GPU model as named dimensions: `nqprof compare` across the histories of
several toolkits and GPUs names them as it names a changed parameter, and `nqprof matrix
--history` sets strategy x toolkit x GPU in one table and one figure. The histories are small
synthetic pytest-benchmark runs written here."""

import json
import random
import re
import zlib
from pathlib import Path

import pytest

from nqprof.analysis.comparing import change_counts, compare, dimension_changes
from nqprof.analysis.history import gpu_model, load_history
from nqprof.analysis.matrix import matrix_times
from nqprof.cli import main

H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"


def _samples(center: float, seed: int, count: int = 12) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + 0.01 * rng.uniform(-1, 1)) for _ in range(count)]


def _bench(strategy: str, n: int, center: float, seed: int, kind="gpu", params=None) -> dict:
    times = _samples(center, seed)
    ordered = sorted(times)
    median = ordered[len(ordered) // 2]
    return {
        "name": f"test_case[{strategy}-{n}]",
        "fullname": f"bench/test_suite.py::test_case[{strategy}-{n}]",
        "group": None,
        "options": {"timer": "nqprof.cuda_events"},
        "stats": {
            "min": ordered[0],
            "max": ordered[-1],
            "mean": sum(times) / len(times),
            "stddev": 0.0,
            "median": median,
            "iqr": 0.0,
            "rounds": len(times),
        },
        "extra_info": {
            "strategy": strategy,
            "n": n,
            "params": dict(params or {}),
            "case": {"given": {}},
            "device_kind": kind,
            "source_hash": "same",
            "count": 1,
            "verified": True,
            "samples_compute": times,
            "samples_wall": [t * 1.1 for t in times],
        },
    }


def write_run(
    root: Path, folder: str, name: str, when: str, gpu, toolkit, cases, kind="gpu", params=None
) -> Path:
    """A pytest-benchmark run saved under ``root/folder/Linux-CPython-3.12-64bit/name.json``;
    ``cases`` maps (strategy, N) to a median."""
    data = {
        "datetime": when,
        "commit_info": {"id": "abc", "dirty": False, "branch": "main"},
        "machine_info": {
            "node": "host",
            "cpu": {"brand_raw": "a CPU"},
            "nqprof": {"version": "0.1.0", "gpu": gpu, "cuda_toolkit": toolkit, "driver": "13.0"},
        },
        "benchmarks": [
            _bench(
                s,
                n,
                t,
                seed=zlib.crc32(f"{folder}/{name}/{s}/{n}".encode()),
                kind=kind,
                params=params,
            )
            for (s, n), t in cases.items()
        ],
        "version": "5.1.0",
    }
    path = root / folder / "Linux-CPython-3.12-64bit" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


CASES = {("feinbube", 12): 1e-3, ("fast", 12): 2e-4}


def test_gpu_model_names():
    assert gpu_model(H100) == "H100"
    assert gpu_model(H200) == "H200"
    assert gpu_model("NVIDIA H100 PCIe") == "H100 PCIe"
    assert gpu_model("NVIDIA GeForce RTX 4090") == "GeForce RTX 4090"
    a, b = {"toolkit": "12.6", "gpu": H100}, {"toolkit": "13.0", "gpu": H200}
    assert dimension_changes(a, b) == ["toolkit 12.6 -> 13.0", "GPU H100 -> H200"]
    assert dimension_changes(a, dict(a)) == []
    # short names alike: the full names
    assert dimension_changes({"gpu": H100}, {"gpu": "NVIDIA H100 94GB HBM2e"}) == [
        f"GPU {H100} -> NVIDIA H100 94GB HBM2e"
    ]
    # a run that did not record one is no change of it
    assert dimension_changes({"toolkit": None, "gpu": H100}, {"toolkit": "13.0", "gpu": H100}) == []


def test_compare_across_histories_names_toolkit_and_gpu(tmp_path, capsys):
    root = tmp_path / "matrix"
    write_run(root, "cuda12.6", "0001_a", "2026-11-01T00:00:00+00:00", H100, "12.6", CASES)
    slower = {k: v * 1.5 if k[0] == "feinbube" else v for k, v in CASES.items()}
    write_run(root, "cuda13.0", "0001_b", "2026-11-02T00:00:00+00:00", H200, "13.0", slower)
    df = load_history(root)
    result = compare(df, "cuda12.6/", "cuda13.0/").set_index(["strategy", "n"])
    for case in CASES:
        assert result.loc[case, "changed"] == "toolkit 12.6 -> 13.0; GPU H100 -> H200"
        assert result.loc[case, "floor_pct"] == pytest.approx(5.0)  # the GPU floor, as usual
    assert result.loc[("feinbube", 12), "verdict"] == "slower"
    assert result.loc[("fast", 12), "verdict"] == "same"
    counts = change_counts(result.reset_index())
    assert counts == {
        "changed-params": 0,
        "changed-source": 0,
        "changed-toolkit": 2,
        "changed-gpu": 2,
    }

    assert main(["compare", "cuda12.6/", "cuda13.0/", "--storage", str(root)]) == 0
    captured = capsys.readouterr()
    assert re.search(
        r"feinbube\s+12\s.*slower\s+toolkit 12\.6 -> 13\.0; GPU H100 -> H200", captured.out
    )
    assert "1 same, 1 slower; 2 changed-toolkit, 2 changed-gpu" in captured.out
    assert "the runs differ in gpu" in captured.err
    assert (
        main(
            [
                "compare",
                "cuda12.6/",
                "cuda13.0/",
                "--storage",
                str(root),
                "--fail-on",
                "changed-gpu",
            ]
        )
        == 1
    )
    assert "2 changed-gpu" in capsys.readouterr().err


def test_a_toolkit_change_beside_a_parameter_change(tmp_path):
    root = tmp_path / "matrix"
    write_run(
        root, "a", "0001_a", "2026-11-01T00:00:00+00:00", H200, "12.4", CASES, params={"depth": 4}
    )
    write_run(
        root, "b", "0001_b", "2026-11-02T00:00:00+00:00", H200, "13.0", CASES, params={"depth": 5}
    )
    result = compare(load_history(root), "a/", "b/")
    assert set(result["changed"]) == {"toolkit 12.4 -> 13.0; depth 4 -> 5"}
    assert change_counts(result) == {
        "changed-params": 2,
        "changed-source": 0,
        "changed-toolkit": 2,
        "changed-gpu": 0,
    }


def test_cpu_cases_name_no_toolkit_or_gpu(tmp_path):
    root = tmp_path / "matrix"
    cases = {("serial", 10): 1e-3}
    write_run(root, "a", "0001_a", "2026-11-01T00:00:00+00:00", H100, "12.6", cases, kind="cpu")
    write_run(root, "b", "0001_b", "2026-11-02T00:00:00+00:00", H200, "13.0", cases, kind="cpu")
    result = compare(load_history(root), "a/", "b/")
    assert list(result["changed"]) == [""]


def _matrix_history(root: Path) -> None:
    write_run(root, "h100-cuda12.6", "0001_x", "2026-11-01T00:00:00+00:00", H100, "12.6", CASES)
    # an older H200 13.0 run the newer one replaces
    old = {k: v * 10 for k, v in CASES.items()}
    write_run(root, "h200-cuda13.0", "0001_y", "2026-11-02T00:00:00+00:00", H200, "13.0", old)
    write_run(root, "h200-cuda13.0", "0002_y", "2026-11-04T00:00:00+00:00", H200, "13.0", CASES)
    only_fast = {("fast", 12): 3e-4, ("fast", 13): 1e-3}
    write_run(root, "h200-cuda12.4", "0001_z", "2026-11-03T00:00:00+00:00", H200, "12.4", only_fast)


def test_matrix_table_is_strategy_by_toolkit_by_gpu(tmp_path):
    root = tmp_path / "matrix"
    _matrix_history(root)
    table, columns = matrix_times(load_history(root))
    assert list(columns) == ["H100 CUDA 12.6", "H200 CUDA 12.4", "H200 CUDA 13.0"]
    assert columns["H200 CUDA 13.0"]["runs"] == ["h200-cuda13.0/Linux-CPython-3.12-64bit/0002_y"]
    cells = table.set_index(["strategy", "n"])
    assert cells.loc[("feinbube", 12), "H200 CUDA 13.0"] == pytest.approx(1e-3, rel=0.02)
    assert cells.loc[("fast", 12), "H200 CUDA 12.4"] == pytest.approx(3e-4, rel=0.02)
    assert (
        cells.loc[("feinbube", 12), "H200 CUDA 12.4"]
        != cells.loc[("feinbube", 12), "H200 CUDA 12.4"]
    )
    assert list(zip(table["strategy"], table["n"], strict=True)) == [
        ("feinbube", 12),
        ("fast", 12),
        ("fast", 13),
    ]


def test_matrix_command_prints_the_table_and_draws_the_figure(tmp_path, capsys):
    root = tmp_path / "matrix"
    _matrix_history(root)
    figure, out = tmp_path / "matrix.png", tmp_path / "matrix.txt"
    assert main(["matrix", "--history", str(root), "--figure", str(figure), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("strategy"))
    assert re.search(r"H100 CUDA 12\.6\s+H200 CUDA 12\.4\s+H200 CUDA 13\.0\s+spread", header)
    # 200 us, 300 us and 200 us, each within 1% (the synthetic rounds' spread)
    assert re.search(r"fast\s+12\s+-\s+\S+ us\s+\S+ us\s+\S+ us\s+1\.(4[89]|5[0-2])x", text)
    assert "H200 CUDA 12.4: NVIDIA H200, runs h200-cuda12.4/" in text
    assert figure.read_bytes()[:4] == b"\x89PNG" and out.read_text().strip() == text.strip()
    # --figure draws times: without --history it is a usage error
    assert main(["matrix", "--figure", str(figure)]) == 2
    assert "--figure draws the times of --history" in capsys.readouterr().err
