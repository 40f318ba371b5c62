"""Work a second in the record: solutions a second for every verified run, nodes (queens
placed) and nodes a second where the session states its nodes (the constellation
strategies, by the CPU twin's step search, kept in the cache folder)."""

import pytest

from nqprof.result import work_rates, work_text


def test_work_rates_from_the_count_the_nodes_and_the_median_time():
    assert work_rates(92, 0.5, {}) == {"solutions_per_s": 184.0}
    stated = {"nodes": 2000, "nodes_source": "a test"}
    assert work_rates(92, 0.5, stated) == {
        "solutions_per_s": 184.0,
        "nodes": 2000,
        "nodes_source": "a test",
        "nodes_per_s": 4000.0,
    }
    assert work_rates(None, 0.5, stated) == {**stated, "nodes_per_s": 4000.0}  # unverified build
    assert work_rates(92, 0.0, stated) == {} and work_rates(92, None, stated) == {}


def test_work_text():
    work = work_rates(14_772_512, 1.25, {"nodes": 2_500_000_000, "nodes_source": "the twin"})
    assert work_text(work) == (
        "11.8 M solutions/s, 2 G nodes/s (2,500,000,000 nodes: queens placed, the twin)"
    )
    assert work_text(work_rates(92, 1.0, {})) == "92 solutions/s"
    assert work_text(work_rates(92, 1e-4, {})) == "920 k solutions/s"


@pytest.mark.parametrize("strategy,depth", [("serial-d4", 0), ("multicore", 2)])
def test_a_constellation_run_states_its_nodes_as_the_twin_counts_them(
    strategy, depth, tmp_path, monkeypatch
):
    from nqprof import _cpu
    from nqprof.runner import solve
    from nqprof.strategies.cpu_common import CST_NODES_SOURCE

    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path))
    params = {"depth": depth, "threads": 2} if strategy == "multicore" else {}
    record = solve(strategy, 10, params, repeats=3, warmup=0)
    tasks = _cpu.cst_tasks(10, depth)
    count, nodes = _cpu.cst_count(10, tasks, 1, True)
    assert count == 724 and record.work["nodes"] == nodes > count
    assert record.work["nodes_source"] == CST_NODES_SOURCE
    median = sorted(record.wall_times)[1]
    assert record.work["nodes_per_s"] == pytest.approx(nodes / median)
    assert record.work["solutions_per_s"] == pytest.approx(724 / median)
    assert "nodes/s" in record.summary()
    memo = list(tmp_path.glob(f"nodes-cst-10-{depth}-*.json"))
    assert len(memo) == 1  # counted once per machine and C source


def test_the_node_count_is_read_back_from_the_cache(tmp_path, monkeypatch):
    from nqprof import _cpu
    from nqprof.strategies import cpu_common

    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path))
    tasks = _cpu.cst_tasks(9, 0)
    first = cpu_common.constellation_nodes(9, 0, 1, tasks=tasks)

    class NoTwin:
        def cst_count(self, *args):
            raise AssertionError("counted again")

    monkeypatch.setattr(cpu_common, "cpu_module", lambda: NoTwin())
    assert cpu_common.constellation_nodes(9, 0, 1, tasks=tasks) == first
    assert cpu_common.constellation_nodes(9, 0, 1) == first  # kept: no tasks made either
    assert first["nodes"] == _cpu.cst_count(9, tasks, 1, True)[1]


def test_a_run_without_stated_nodes_has_solutions_a_second_only():
    from nqprof.runner import solve

    record = solve("serial", 9, repeats=3, warmup=0)
    assert set(record.work) == {"solutions_per_s"}


def test_nodes_that_would_take_too_long_are_not_counted_and_the_record_says_why(
    tmp_path, monkeypatch
):
    from nqprof import _cpu
    from nqprof.result import work_rates
    from nqprof.strategies import cpu_common

    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path))
    tasks = _cpu.cst_tasks(9, 0)
    slow = cpu_common.NODES_BUDGET_S / 2 + 0.1  # a round this long: the twin over the budget
    skipped = cpu_common.constellation_nodes(9, 0, 1, round_s=slow, tasks=tasks)
    assert "nodes" not in skipped and "nodes not counted" in skipped["nodes_note"]
    assert not list(tmp_path.glob("nodes-*"))
    work = work_rates(352, slow, skipped)
    assert "nodes_per_s" not in work and work_text(work).endswith(skipped["nodes_note"])
    fast = cpu_common.constellation_nodes(9, 0, 1, round_s=0.001, tasks=tasks)
    assert fast["nodes"] == _cpu.cst_count(9, tasks, 1, True)[1]
    # once counted, a slow round reads the count back
    assert cpu_common.constellation_nodes(9, 0, 1, round_s=slow, tasks=tasks) == fast


def test_fast_states_the_nodes_of_its_tasks_as_the_twin_counts_them(tmp_path, monkeypatch):
    """fast's record: the nodes below its tasks at its depth (the tree its kernel walks),
    counted by the CPU twin up to FAST_TWIN_MAX_N, a note past it (no GPU needed: the
    session's work() reads only n and depth)."""
    from types import SimpleNamespace

    from nqprof import _cpu
    from nqprof.strategies.fast import FAST_TWIN_MAX_N, FastSession

    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path))
    work = FastSession.work(SimpleNamespace(n=11, depth=2))
    assert work["nodes"] == _cpu.cst_count(11, _cpu.cst_tasks(11, 2), 1, True)[1]
    assert work["nodes"] != FastSession.work(SimpleNamespace(n=11, depth=0))["nodes"]
    past = FastSession.work(SimpleNamespace(n=FAST_TWIN_MAX_N + 1, depth=2))
    assert "nodes" not in past and f"past N={FAST_TWIN_MAX_N}" in past["nodes_note"]
