"""Every published history reads back with the verdicts it had: each pair of saved runs in
docs/results and tests/data compared as ``tests/data/history-verdicts.json`` records
(verdict, change and floor per case, as compare gave them when that file was written). A
change to the reader, the record or the statistics that moves a verdict of a published
history fails here; rewrite the file only for a change that means to move them, and say so.

The suite pair (tests/data/histories, eight cases of two default suites on an H200 with
their rounds' processes and conditions) also reads back through NVBench's JSON format."""

import json
from pathlib import Path

import pytest

from nqprof.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("pytest_benchmark")

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ROOT / "tests" / "data" / "history-verdicts.json"
#: Each published history: its storage folder (from the repository root) and the runs
#: compared, as compare takes them.
PAIRS = {
    "h200-published": ("docs/results/benchmarks", "h200-cuda13.0-0001", "h200-cuda13.0-0002"),
    "cpu-committed": ("tests/data/benchmarks", "0001", "0002"),
    "traced": ("tests/data/traces-history", "0001", "0002"),
    "h200-suite": ("tests/data/histories", "h200-suite-1", "h200-suite-2"),
}
#: The published histories kept compressed: two files (a run each, gzipped JSON or a tar.gz
#: of a storage folder holding one run), compared as runs ``a`` and ``b``.
RESULTS = "docs/results"
PACKED = {
    "trust-first": (
        f"{RESULTS}/trust-h200/aa-run-a.json.gz",
        f"{RESULTS}/trust-h200/aa-run-b.json.gz",
    ),
    "trust-final": (
        f"{RESULTS}/trust-h200/final/aa-run-0001.json.gz",
        f"{RESULTS}/trust-h200/final/aa-run-0002.json.gz",
    ),
    "trace-1-2": (
        f"{RESULTS}/trace-h200/run-0001.json.gz",
        f"{RESULTS}/trace-h200/run-0002.json.gz",
    ),
    "trace-2-3": (
        f"{RESULTS}/trace-h200/run-0002.json.gz",
        f"{RESULTS}/trace-h200/run-0003.json.gz",
    ),
    "fast-vs-24-25": (
        f"{RESULTS}/fast24/fast-vs-run-0001.json.gz",
        f"{RESULTS}/fast25/fast-vs-run-0001.json.gz",
    ),
    "matrix-h200-12.4-13.0": (
        f"{RESULTS}/matrix/history-h200-cuda12.4.tar.gz",
        f"{RESULTS}/matrix/history-h200-cuda13.0.tar.gz",
    ),
    "matrix-h200-12.2-12.5": (
        f"{RESULTS}/matrix/history-h200-cuda12.2.tar.gz",
        f"{RESULTS}/matrix/history-h200-cuda12.5.tar.gz",
    ),
    "sessions-2x2": (
        f"{RESULTS}/sessions-h200/run-2x2-0001.json.gz",
        f"{RESULTS}/sessions-h200/run-2x2-0002.json.gz",
    ),
    "verdicts-aa-auto": (
        f"{RESULTS}/verdicts-h200/aa-auto-run-1.json.gz",
        f"{RESULTS}/verdicts-h200/aa-auto-run-2.json.gz",
    ),
    "verdicts-aa-default": (
        f"{RESULTS}/verdicts-h200/aa-default-run-1.json.gz",
        f"{RESULTS}/verdicts-h200/aa-default-run-2.json.gz",
    ),
    "rotation-aa": (
        f"{RESULTS}/rotation-h200/rot-aa-run-1.json.gz",
        f"{RESULTS}/rotation-h200/rot-aa-run-2.json.gz",
    ),
    "core-old-new": (
        f"{RESULTS}/core-h200/run-old.json.gz",
        f"{RESULTS}/core-h200/run-new1.json.gz",
    ),
    "core-new-new": (
        f"{RESULTS}/core-h200/run-new1.json.gz",
        f"{RESULTS}/core-h200/run-new2.json.gz",
    ),
    "core-same-old-new1": (
        f"{RESULTS}/core-h200/same-baseline/run-old.json.gz",
        f"{RESULTS}/core-h200/same-baseline/run-new1.json.gz",
    ),
    "core-same-old-new2": (
        f"{RESULTS}/core-h200/same-baseline/run-old.json.gz",
        f"{RESULTS}/core-h200/same-baseline/run-new2.json.gz",
    ),
    "core-same-new-new": (
        f"{RESULTS}/core-h200/same-baseline/run-new1.json.gz",
        f"{RESULTS}/core-h200/same-baseline/run-new2.json.gz",
    ),
    "core-pad-old1-new1": (
        f"{RESULTS}/core-h200/pad-baseline/run-old1.json.gz",
        f"{RESULTS}/core-h200/pad-baseline/run-new1.json.gz",
    ),
    "core-pad-old2-new2": (
        f"{RESULTS}/core-h200/pad-baseline/run-old2.json.gz",
        f"{RESULTS}/core-h200/pad-baseline/run-new2.json.gz",
    ),
    "core-pad-new1-new2": (
        f"{RESULTS}/core-h200/pad-baseline/run-new1.json.gz",
        f"{RESULTS}/core-h200/pad-baseline/run-new2.json.gz",
    ),
    "core-pad-old3-new3": (
        f"{RESULTS}/core-h200/pad-baseline/run-old3.json.gz",
        f"{RESULTS}/core-h200/pad-baseline/run-new3.json.gz",
    ),
    "core-pad-new2-new3": (
        f"{RESULTS}/core-h200/pad-baseline/run-new2.json.gz",
        f"{RESULTS}/core-h200/pad-baseline/run-new3.json.gz",
    ),
    "scatter-h100-1-2": (
        f"{RESULTS}/cpu-scatter/h100-run-0001.json.gz",
        f"{RESULTS}/cpu-scatter/h100-run-0002.json.gz",
    ),
    "scatter-h100-2-3": (
        f"{RESULTS}/cpu-scatter/h100-run-0002.json.gz",
        f"{RESULTS}/cpu-scatter/h100-run-0003.json.gz",
    ),
    "matrix-h100-12.0-13.0": (
        f"{RESULTS}/matrix/history-h100-80gb-hbm3-cuda12.0.tar.gz",
        f"{RESULTS}/matrix/history-h100-80gb-hbm3-cuda13.0.tar.gz",
    ),
}


def unpacked(files: tuple[str, str], folder: Path) -> Path:
    """A storage folder holding the two packed runs as ``a.json`` and ``b.json``."""
    import gzip
    import tarfile

    folder.mkdir(parents=True, exist_ok=True)
    for name, packed in zip("ab", files, strict=True):
        path = ROOT / packed
        if packed.endswith(".tar.gz"):
            with tarfile.open(path) as tar:
                (member,) = [m for m in tar.getmembers() if m.name.endswith(".json")]
                data = tar.extractfile(member).read()
        else:
            data = gzip.decompress(path.read_bytes())
        (folder / f"{name}.json").write_bytes(data)
    return folder


def storage_of(name: str, tmp: Path) -> tuple[Path, str, str]:
    """The storage folder and the two runs of a published history."""
    if name in PAIRS:
        folder, run_a, run_b = PAIRS[name]
        return ROOT / folder, run_a, run_b
    return unpacked(PACKED[name], tmp / name), "a", "b"


def verdicts(storage: Path, run_a: str, run_b: str) -> list[dict]:
    """compare's rows, as the expected file keeps them."""
    from nqprof.analysis.comparing import compare
    from nqprof.analysis.history import load_history

    result = compare(load_history(storage), run_a, run_b)

    def rounded(value):
        return None if pd.isna(value) else round(float(value), 1)

    return [
        {
            "case": f"{r['test']} {r['strategy']} N={r['n']} {r['params']}".strip(),
            "verdict": r["verdict"],
            "change_pct": rounded(r["change_pct"]),
            "floor_pct": rounded(r["floor_pct"]),
        }
        for r in result.to_dict("records")
    ]


@pytest.mark.parametrize("name", sorted(PAIRS) + sorted(PACKED))
def test_a_published_history_reads_back_with_its_verdicts(name, tmp_path):
    expected = json.loads(EXPECTED.read_text())[name]
    assert verdicts(*storage_of(name, tmp_path)) == expected


def test_every_published_history_is_checked():
    """A pytest-benchmark run committed under docs/results or tests/data is in PAIRS."""
    checked = {(ROOT / folder).resolve() for folder, _, _ in PAIRS.values()}
    packed = {ROOT / f for files in PACKED.values() for f in files}
    found = set()
    for base in ("docs/results", "tests/data"):
        for path in (ROOT / base).rglob("*.gz"):
            data = path.read_bytes()
            if b"machine_info" in _unpacked_text(path, data):
                assert path in packed, f"{path}: a packed history no pair reads back"
        for path in (ROOT / base).rglob("*.json"):
            try:
                doc = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict) and "machine_info" in doc and "benchmarks" in doc:
                found.add(path)
    unchecked = [p for p in found if not any(c in p.parents for c in checked)]
    published_alone = {ROOT / "docs/results/benchmarks/serial-17-18.json"}  # one run, no pair
    assert set(unchecked) <= published_alone, sorted(map(str, unchecked))
    assert len(found) >= 8


def _unpacked_text(path: Path, data: bytes) -> bytes:
    """The first bytes of a packed file's JSON (a gzipped file, or a tar.gz's first JSON)."""
    import gzip
    import io
    import tarfile

    if path.name.endswith(".tar.gz"):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            jsons = [m for m in tar.getmembers() if m.name.endswith(".json")]
            return tar.extractfile(jsons[0]).read(4096) if jsons else b""
    return gzip.decompress(data)[:4096]


def test_the_suite_pair_reads_back_through_nvbench_json(tmp_path, capsys):
    folder, run_a, run_b = PAIRS["h200-suite"]
    files = []
    for run in (run_a, run_b):
        out = tmp_path / f"{run}.json"
        assert main(["export", run, "--storage", str(ROOT / folder), "-o", str(out)]) == 0
        files.append(str(out))
    capsys.readouterr()
    assert main(["compare", *files]) == 0
    table = capsys.readouterr().out
    for row in json.loads(EXPECTED.read_text())["h200-suite"]:
        _, strategy, n = row["case"].split()[:3]
        line = next(x for x in table.splitlines() if x.split()[:2] == [strategy, n[2:]])
        assert line.split()[-1] == row["verdict"], (line, row)
        floor = float(line.split()[-3].strip("±%"))
        assert floor == pytest.approx(row["floor_pct"], abs=0.2), (line, row)
