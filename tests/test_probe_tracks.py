"""tools/probe_tracks.py: each CPU case's change between consecutive runs beside the
changes of the two CPU speed probes, and how well each probe tracks the cases."""

import json
import math
from pathlib import Path

import pytest


@pytest.fixture
def tool(load_tool):
    return load_tool("probe_tracks")


def _run(folder: Path, index: int, cases: dict[int, tuple[float, float, float]]) -> None:
    """Run ``index`` of serial at each N: (median seconds, probe_s, worker_probe_s)."""
    benches = [
        {
            "extra_info": {
                "strategy": "serial",
                "n": n,
                "device_kind": "cpu",
                "samples_compute": [t, t, t],
                "conditions": {"cpu": {"probe_s": p, "worker_probe_s": w}},
            }
        }
        for n, (t, p, w) in cases.items()
    ]
    benches.append({"extra_info": {"strategy": "fast", "n": 8, "device_kind": "gpu"}})
    path = folder / "machine" / f"{index:04d}_run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmarks": benches}))


def test_the_workers_probe_that_follows_the_cases_takes_their_spread_out(tool, tmp_path, capsys):
    """Cases moved +10%, -20%, +30%, -5%; the workers' probe moved exactly as each case, the
    pytest process's probe not at all: correlation +1 and no spread left for the workers',
    the cases' whole spread left for the other."""
    moves = [0.10, -0.20, 0.30, -0.05]
    _run(tmp_path, 1, {8 + i: (1.0, 1.0, 1.0) for i in range(4)})
    _run(tmp_path, 2, {8 + i: (1 + m, 1.0 + 0.01 * i, 1 + m) for i, m in enumerate(moves)})
    a, b = (tool.cpu_cases(str(p)) for p in sorted(tmp_path.glob("*/*.json")))
    rows = tool.pair_rows(a, b)
    assert [r[0] for r in rows] == [("serial", n) for n in range(8, 12)]
    assert [round(math.expm1(r[1]), 6) for r in rows] == moves
    assert tool.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "serial     N=9   case  -20.0%  probe   +1.0%  workers' probe  -20.0%" in out
    assert "the workers' probe:         correlation +1.00" in out
    assert "0.0% with the probe's change taken out (4 cases)" in out
    spread = 100 * tool.statistics.pstdev([math.log1p(m) for m in moves])
    assert f"cases' spread {spread:.1f}%" in out


def test_one_run_is_refused(tool, tmp_path):
    _run(tmp_path, 1, {8: (1.0, 1.0, 1.0)})
    with pytest.raises(SystemExit):
        tool.main([str(tmp_path)])
