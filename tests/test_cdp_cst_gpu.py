"""cdp-cst and graph-cst on a GPU: counts verified N=4..16 with the defaults (fast's kernel
as the one counting generation), with a small budget in both launch modes (tasks that the
host model says must spill: spilled tasks, several generations), the device's tasks equal to
the host's count, and a task buffer forced too small fails loudly, saying what to set (the
device's scan refuses the tasks; the run is an error, never a count). Skipped with the
reason where no GPU run can happen (tests/conftest.py)."""

import pytest
from gpu_checks import checked, ns_up_to

from nqprof import _cpu
from nqprof.errors import DeviceFailureError
from nqprof.runner import solve
from nqprof.strategies.cdp_cst import task_count

pytestmark = pytest.mark.gpu

NAMES = ("cdp-cst", "graph-cst")
TIMEOUT = 120


def clean(record):
    f = record.device_failures
    assert f["launch_failures"] == f["buffer_overflows"] == 0, f
    return checked(record)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_count_n4_to_n16(name):
    for n in (*ns_up_to(12), 14, 16):
        record = clean(solve(name, n, {}, repeats=1, warmup=0, timeout=TIMEOUT))
        assert record.tasks["tasks"] == record.tasks["task_buffer"] > 0
        # counted on the GPU when the session opened: the host's count
        assert record.tasks["tasks"] == task_count(n, record.params["depth"])
        assert record.tasks["generations"] == 1 and record.tasks["spills"] == 0
        assert any("count0) of up to" in note for note in record.notes), record.notes


@pytest.mark.parametrize("count0", ["fast", "own"])
def test_graph_cst_counts_with_either_generation_0_kernel(count0):
    want = "fast's cubin" if count0 == "fast" else "this module's (-rdc)"
    for n in (12, 15):
        record = clean(
            solve("graph-cst", n, {"count0": count0}, repeats=1, warmup=0, timeout=TIMEOUT)
        )
        assert any(want in note for note in record.notes), record.notes


@pytest.mark.parametrize("name", NAMES)
def test_a_carveout_preference_keeps_the_count(name):
    clean(solve(name, 14, {"carveout": 100}, repeats=1, warmup=0, timeout=TIMEOUT))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", ["tail", "fire-and-forget"])
def test_a_small_budget_spills_and_keeps_the_count(name, mode):
    # shallow tasks and a budget of a few votes (NQ_UNROLL steps each): the host model
    # spills thousands of tasks, so a device run that spills none is a broken refinement
    for n, depth, budget in ((11, 1, 8), (13, 2, 16)):
        assert _cpu.cst_budget_count(n, depth, budget, 6)[1] > 1000
        params = {"budget": budget, "gens": 6, "mode": mode, "depth": depth}
        record = clean(solve(name, n, params, repeats=2, warmup=0, timeout=TIMEOUT))
        t = record.tasks
        assert (
            t["spills"] > 0 and t["generations"] > 1 and len(t["spilled"]) == t["generations"] - 1
        )
        grids = {g["generation"]: g for g in record.generations}
        assert grids[3]["boards"] == t["tasks"]  # counting generation 0 over every task
        for g, spilled in enumerate(t["spilled"], start=1):
            assert grids[3 + g]["boards"] == spilled > 0


@pytest.mark.parametrize("name", NAMES)
def test_a_spill_buffer_too_small_only_slows(name):
    record = clean(
        solve(
            name, 13, {"budget": 8, "spill": 64, "depth": 2}, repeats=1, warmup=0, timeout=TIMEOUT
        )
    )
    assert record.tasks["refused"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_a_task_buffer_too_small_fails_loudly(name):
    with pytest.raises(DeviceFailureError) as failed:
        solve(name, 12, {"task_buffer": 100}, repeats=1, warmup=0, timeout=TIMEOUT)
    text = str(failed.value)
    assert "more tasks than the task buffer of 100 holds" in text, text
    assert "set task_buffer=0" in text and "nqprof bug" not in text, text


@pytest.mark.parametrize("budget", [0, 16])
def test_the_timeline_records_every_grid(budget):
    params = {"budget": budget, "depth": 2, "timeline": 1}
    record = clean(solve("cdp-cst", 12, params, repeats=1, warmup=0, timeout=TIMEOUT))
    grids = record.timeline["grids"]
    assert record.timeline["dropped"] == 0
    assert sorted(set(grids["gen"]))[:4] == [0, 1, 2, 3]
    assert len(grids["gen"]) == 3 + record.tasks["generations"]
    assert (record.tasks["generations"] > 1) == (budget > 0)
    # every grid recorded its blocks (cc_count0's record is the timeline build's only work)
    spans = zip(grids["start"], grids["end"], strict=True)
    assert all(end >= start > 0 for start, end in spans), grids


@pytest.mark.parametrize("path", ["host", "graph", "graph-own", "cdp-tail", "cdp-ff", "cdp-host"])
def test_the_block_records_account_for_every_task(path):
    # the records build of each launch path counts right, every block of its grid records
    # once, and the blocks' tasks add up to the grid's
    from nqprof.characterize.blocks import PATHS, summarize

    strategy, params = PATHS[path]
    for n in (11, 14):
        record = checked(
            solve(strategy, n, {**params, "blocks": 1}, repeats=1, warmup=0, timeout=TIMEOUT)
        )
        blocks = record.blocks["blocks"]
        assert blocks["block"] == list(range(len(blocks["block"]))), blocks["block"]
        assert record.blocks["dropped"] == 0
        s = summarize(record.blocks, record.tasks["tasks"])
        assert s["tasks"] == record.tasks["tasks"] > 0
        assert 0 < s["sm_mhz_median"] < 5000 and s["clocks_per_vote"] > 0
        assert 0 < s["fetch_share"] < 1


def test_mode_host_counts_with_the_host_launching_generation_0():
    for n in (8, 13, 16):
        record = clean(solve("cdp-cst", n, {"mode": "host"}, repeats=2, warmup=1, timeout=TIMEOUT))
        assert record.tasks["generations"] == 1
