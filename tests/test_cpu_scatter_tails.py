"""tools/cpu_scatter_tails.py: each CPU case's move about the common one, in robust spreads,
over every pair of runs in a folder."""

import json
import math
from pathlib import Path

import pytest


@pytest.fixture
def tool(load_tool):
    return load_tool("cpu_scatter_tails")


def _run(path: Path, medians: dict[int, float]) -> None:
    benches = [
        {
            "extra_info": {
                "strategy": "serial",
                "n": n,
                "params": {},
                "device_kind": "cpu",
                "samples_compute": [t, t, t],
            }
        }
        for n, t in medians.items()
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmarks": benches}))


def test_a_case_ten_spreads_out_is_counted_past_every_level(tool, tmp_path, capsys):
    """Ten cases moved by log changes 0.2 + (0, +-0.01, +-0.02, +-0.02, +-0.03, -0.04) and
    one by 0.2 + 10 robust spreads: the common move is 0.2 (the median), the median absolute
    deviation 0.02, a robust spread 0.029652; the eleventh is past 3, 4, 6 and 8 spreads, as
    no other is."""
    spread = 1.4826 * 0.02
    logs = [0.2] + [0.2 + s * d for d in (0.01, 0.02, 0.02, 0.03) for s in (1, -1)]
    logs += [0.2 - 0.04, 0.2 + 10 * spread]
    _run(tmp_path / "a.json", {8 + i: 1.0 for i in range(len(logs))})
    _run(tmp_path / "b.json", {8 + i: math.exp(v) for i, v in enumerate(logs)})
    r = tool.ratios(*(tool.cpu_medians(tmp_path / f) for f in ("a.json", "b.json")))
    assert max(r) == pytest.approx(10.0, rel=1e-6)
    assert sorted(r)[-2] == pytest.approx(0.04 / spread, rel=1e-6)
    assert tool.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 pairs of runs, 11 CPU cases" in out
    assert "past 8 robust spreads: 9.09% of cases" in out
    assert "past 3 robust spreads: 9.09% of cases (normal 0.270%" in out


def test_a_t_with_two_degrees_of_freedom_at_one_robust_spread(tool):
    """At the same median absolute deviation, one robust spread (1.4826 MAD) is 1.2106 of
    t's scale (MAD / sqrt(2/3)): half of |t| lies below sqrt(2/3)."""
    assert tool.T2_PER_SPREAD == pytest.approx(1.4826 * math.sqrt(2 / 3), rel=1e-4)
    assert 2 * (1 - tool.t_cdf(math.sqrt(2 / 3), 2)) == pytest.approx(0.5, abs=1e-9)


def test_fewer_than_eight_cases_are_no_pair(tool, tmp_path):
    _run(tmp_path / "a.json", {n: 1.0 for n in range(8, 15)})
    _run(tmp_path / "b.json", {n: 1.1 for n in range(8, 15)})
    with pytest.raises(SystemExit):
        tool.main([str(tmp_path)])
