"""nqprof characterize latency without a GPU: the record's words against the kernels', the
table of SYNTHETIC trials (invented numbers, not measurements), the measurement with a fake
probe, --from, and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from nqprof.characterize import latency
from nqprof.cli import main
from nqprof.errors import InputError


def point(path, first, end, call=(), error=None):
    p = {"path": path, "grid": 1, "trials": len(first)}
    if error:
        return {**p, "error": error}
    return {**p, "first_ns": list(first), "end_ns": list(end), "call_ns": list(call)}


def test_the_table_gives_medians_and_the_spread_in_microseconds():
    points = [
        point("host", [1000, 2000, 3000, 4000, 5000], [2000] * 5),
        point("cdp-ff", [10_000] * 3, [12_000] * 3, [500, 700, 900]),
        point("graph-tail", [], [], error="the device graph launch failed (1)"),
    ]
    header, rows, _ = latency.table(points)
    assert header[3] == "to first start (us)"
    # 10th and 90th percentiles of 1..5 us (inclusive: within the samples): 1.4 and 4.6
    assert rows[0][3] == "3.00 (1.40-4.60)" and rows[0][5] == ""
    assert rows[1][3] == "10.00 (10.00-10.00)" and rows[1][5] == "0.70 (0.54-0.86)"
    assert rows[2][3] == "the device graph launch failed (1)"
    assert latency.spread([7000]) == "7.00 (7.00-7.00)"


def test_measure_hands_the_probe_the_paths_and_keeps_the_machine_apart():
    seen = {}

    def probe(p, params, timeout):
        seen.update(params, timeout=timeout)
        machine = {"device": "Synthetic GPU", "driver": "0", "toolkit": "13.0"}
        readings = [{**point(path, [1000], [2000]), **machine} for path in params["paths"]]
        return readings, {"gpu": {"source": "nvml"}}

    doc = latency.measure(["while", "host"], trials=7, grid=3, timeout=9, probe=probe)
    assert seen == {"paths": ["while", "host"], "trials": 7, "grid": 3, "timeout": 9}
    assert doc["machine"]["device"] == "Synthetic GPU"
    assert doc["conditions"] == {"gpu": {"source": "nvml"}}
    assert [p["path"] for p in latency.load(doc)] == ["while", "host"]
    assert "device" not in doc["points"][0]


def test_kept_measurements_render_and_bad_input_is_one_line(tmp_path, capsys):
    doc = {
        "kind": latency.KIND,
        "machine": {"device": "Synthetic GPU", "driver": "0", "toolkit": "13.0"},
        "settings": {"paths": ["cdp-tail"], "trials": 2, "grid": 1},
        "points": [point("cdp-tail", [4000, 6000], [5000, 7000], [300, 400])],
    }
    kept = tmp_path / "lat.json"
    kept.write_text(json.dumps(doc))
    assert main(["characterize", "latency", "--from", str(kept)]) == 0
    assert "cdp-tail" in capsys.readouterr().out
    with pytest.raises(InputError, match="--paths takes a comma list of host, cdp-tail"):
        latency.check_paths(["host", "graph"])
    with pytest.raises(InputError, match="--trials takes 1..10000"):
        latency.measure(["host"], trials=0, probe=None)
    with pytest.raises(InputError, match="not an nqprof launch latency"):
        latency.load({"kind": "nqprof-characterize-blocks"})


@pytest.mark.slow
def test_the_words_match_the_kernels(tmp_path, toolkit):
    import subprocess

    from nqprof.cuda.sources import kernels_dir

    names = ["LAT_LAUNCH", "LAT_RETURN", "LAT_FIRST", "LAT_END", "LAT_ERROR", "LAT_ITER"]
    program = tmp_path / "lat.cu"
    program.write_text(
        '#include <cstdio>\n#include "latency.cuh"\nint main() {\n'
        + "".join(f'    printf("%d ", {n});\n' for n in [*names, "LAT_ITERS"])
        + "    return 0;\n}\n"
    )
    exe = tmp_path / "lat"
    subprocess.run(
        [str(toolkit.nvcc), "-I", str(kernels_dir()), str(program), "-o", str(exe)], check=True
    )
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    L = latency
    assert list(map(int, printed.split())) == [
        L.LAUNCH, L.RETURN, L.FIRST, L.END, L.ERROR, L.ITER, L.ITERS
    ]  # fmt: skip
