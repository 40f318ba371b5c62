"""The queue strategy and the queue microbenchmark on the host side (no GPU): parameters,
the device accounting layouts against the kernels' defines, occupancy, failure messages,
and tables and figures from a benchmark measured on an H200 host (tests/data)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gpu_checks import HOPPER_SM

from nqprof import queuebench
from nqprof.catalog import catalog
from nqprof.cuda.sources import read_source
from nqprof.errors import DeviceFailureError, InputError
from nqprof.papers import kerbl as papers_kerbl
from nqprof.strategies import get, names
from nqprof.strategies import queue as qs
from nqprof.strategies.gpu_common import blocks_per_sm

FIXTURE = Path(__file__).parent / "data" / "queue-bench-h200.json"


def _defines(file: str, prefix: str) -> dict[str, int]:
    return {
        m[0]: int(m[1])
        for m in re.findall(rf"^#define ({prefix}\w+) (\d+)\s*$", read_source(file), re.M)
    }


def test_strategy_accounting_names_are_the_layout_s():
    """The module's counter names are its layout's (which tests/test_sizes.py checks against
    queue.cu's defines)."""
    for name, index in qs.ACCOUNTING.fields.items():
        assert getattr(qs, name) == index, name
    assert qs.WORDS == qs.ACCOUNTING.words


def test_bench_stats_layout_matches_kernel():
    d = _defines("queue_bench.cu", "QB_")
    for name in ("ENQ_OK", "DEQ_OK", "FULL", "EMPTY", "STUCK", "CORRUPT", "ID_SUM", "GAVE_UP"):
        assert d[f"QB_{name}"] == getattr(queuebench, name), name
    assert d["QB_WORDS"] == queuebench.WORDS


def test_queue_header_matches_kernel():
    text = read_source("queue_common.cuh")
    assert re.search(rf"HEADER_BYTES = {qs.QUEUE_HEADER_BYTES};", text)
    # queue_bytes: header + 4 bytes of ticket per slot, 16-byte aligned, then the ring
    assert qs.queue_bytes(1024) == 512 + 4096 + 16 * 1024
    assert qs.queue_bytes(1) == 528 + 16


def test_catalog_lists_the_queue_kernels():
    assert catalog()["queue.cu"].kernels == ("queue_seed", "queue_search_bq", "queue_search_bwd")
    bench = catalog()["queue_bench.cu"].kernels
    assert (
        len(bench) == 4 * 3 * 5 and "qb_balanced_bq_16" in bench and "qb_unbalanced_ring_4" in bench
    )
    assert not catalog()["queue.cu"].cdp and not catalog()["queue_bench.cu"].cdp


def test_strategy_registered_with_defaults():
    assert "queue" in names()
    s = get("queue")
    assert s.needs_gpu and not s.cdp and [src.file for src in s.sources] == ["queue.cu"]
    p = s.resolve(19)
    assert p == {
        "queue": "bwd",
        "depth": 6,
        "block": 128,
        "blocks_per_sm": 0,
        "threshold": 4096,
        "split_rows": 6,
        "capacity": 0,
    }
    small = s.resolve(4)
    assert small["depth"] == 2 and small["split_rows"] == 1
    assert s.resolve(12, {"queue": "bq", "capacity": 1 << 20})["queue"] == "bq"


@pytest.mark.parametrize(
    "given,match",
    [
        ({"queue": "lcrq"}, "queue must be one of bq, bwd"),
        ({"capacity": 1000}, "power of two"),
        ({"block": 1024, "depth": 1}, "use block <="),
        ({"split_rows": 0}, "split_rows must be in 1..18"),
        ({"blocks_per_sm": 33}, "blocks_per_sm must be in 0..32"),
        (
            {"depth": 4, "capacity": 1024},
            "23,866 seeded boards do not fit a queue of 1,024 slots: use capacity=65536",
        ),
    ],
)
def test_bad_parameters_are_one_line_errors(given, match):
    with pytest.raises(InputError, match=match) as info:
        get("queue").resolve(19, given)
    assert "\n" not in str(info.value)


def test_auto_capacity():
    assert qs.auto_capacity(10) == 1 << 16
    assert qs.auto_capacity(1_916_187) == 1 << 22  # N=19, depth 6
    assert qs.auto_capacity(2_967_560) == 1 << 23  # N=20, depth 6


def test_blocks_per_sm_follows_the_occupancy_rules():
    # 48 registers, 128 threads, N=19 depth 6 stacks (13 levels): shared memory binds (8), as on the
    # H200
    assert blocks_per_sm(128, 48, qs.stack_bytes(13, 128), 256, HOPPER_SM) == 8
    assert blocks_per_sm(64, 48, qs.stack_bytes(13, 64), 256, HOPPER_SM) == 16
    assert blocks_per_sm(1024, 32, 0, 0, HOPPER_SM) == 2  # threads
    assert blocks_per_sm(32, 16, 0, 0, HOPPER_SM) == 32  # the block limit
    assert blocks_per_sm(256, 128, 0, 0, HOPPER_SM) == 2  # registers: 128 x 256 = 32K per block
    assert blocks_per_sm(128, 32, 300 * 1024, 0, HOPPER_SM) == 0
    # registers come from a sub-partition's quarter of the SM: 34 registers (1280 a warp) leave
    # 12 warps in each quarter, so 24 blocks of 2 warps, not 65536 // (2 * 1280) = 25
    assert blocks_per_sm(64, 34, 0, 0, HOPPER_SM) == 24
    assert blocks_per_sm(96, 34, 0, 0, HOPPER_SM) == 16
    # another device's limits give another answer: an SM of 1536 threads and 100 KiB (sm_86)
    ampere = {**HOPPER_SM, "threads": 1536, "blocks": 16, "shared": 102400}
    assert blocks_per_sm(128, 32, 0, 0, ampere) == 12
    assert blocks_per_sm(128, 32, 20 * 1024, 0, ampere) == 4


def _words(**kw):
    w = np.zeros(qs.WORDS, dtype=np.uint64)
    for k, v in kw.items():
        w[getattr(qs, k.upper())] = v
    return w


def test_accounting_of_a_sound_run():
    acct = qs.QueueAccounting.decode(
        _words(solutions=7, seeded=10, dequeued=25, enqueued=15, splits=4, empty=3, busy=2)
    )
    assert acct.failure() is None
    qs.raise_on_failure(acct, "queue N=9")
    f = acct.stats()["failures"]
    assert f == {
        "seeded": 10,
        "dequeued": 25,
        "enqueued": 15,
        "split_events": 4,
        "full": 0,
        "empty": 3,
        "busy": 2,
        "stuck": 0,
        "outstanding": 0,
    }


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(seeded=10, dequeued=9, stuck=1, abort=1), "1 queue operations hit their spin cap"),
        (dict(seeded=10, dequeued=9, pending=1), "1 boards were still outstanding"),
        (dict(seeded=10, dequeued=11, enqueued=0), "a board was lost or taken twice"),
    ],
)
def test_device_failures_are_errors_never_counts(kw, match):
    acct = qs.QueueAccounting.decode(_words(solutions=92, **kw))
    with pytest.raises(DeviceFailureError, match=match) as info:
        qs.raise_on_failure(acct, "queue N=8")
    assert str(info.value).startswith("queue N=8: ") and str(info.value).endswith(
        "the count is discarded"
    )


def test_decode_rejects_wrong_shape():
    with pytest.raises(ValueError):
        qs.QueueAccounting.decode(np.zeros(3, dtype=np.uint64))


# --- the microbenchmark's results ------------------------------------------------------------


@pytest.fixture(scope="module")
def result():
    return queuebench.load(FIXTURE)


def test_fixture_loads(result):
    assert result.device["name"] == "NVIDIA H200"
    assert {r.queue for r in result.rows} == set(queuebench.QUEUES)
    assert {r.bytes for r in result.rows} == set(queuebench.ELEMENT_BYTES)
    assert {r.variant for r in result.rows} == set(queuebench.VARIANTS)
    r = queuebench.select(result.rows, "balanced", 16, "bq")[0]
    assert r.operations == r.threads * 20 and r.ns_per_op == pytest.approx(
        r.ms * 1e6 / r.operations
    )


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"rows": [{"variant": "balanced"}]}')
    with pytest.raises(InputError, match="not an nqprof queue-bench result"):
        queuebench.load(bad)
    bad.write_text(
        '{"rows": [{"variant": "balanced", "queue": "lcrq", '
        '"bytes": 4, "threads": 1, "capacity": 1, "ms": 1}]}'
    )
    with pytest.raises(InputError, match="unknown queue 'lcrq'"):
        queuebench.load(bad)


def test_save_and_load_round_trip(result, tmp_path):
    path = tmp_path / "r.json"
    result.save(path)
    again = queuebench.load(path)
    assert again.rows == result.rows and again.device == result.device


def test_thread_counts():
    assert queuebench.thread_counts(135168, fill=4) == [
        1024 << k for k in range(0, 11)
    ]  # up to 1M >= 4 x 135K
    assert queuebench.thread_counts(1000, fill=1) == [1024]
    with pytest.raises(InputError):
        queuebench.thread_counts(0)


def test_table(result):
    text = queuebench.table(result.rows, "balanced", 16)
    lines = text.splitlines()
    assert lines[0].startswith("balanced, 16-byte elements")
    assert lines[1].split()[:3] == ["threads", "bq", "ms"]
    assert lines[3].split()[0] == "1,024"
    assert len({len(line) for line in lines[1:]}) == 1  # aligned
    assert "(no unbalanced rows for 2-byte elements)" == queuebench.table(
        result.rows, "unbalanced", 2
    )


def test_speedups(result):
    pairs = queuebench.speedups(result.rows, over="ring", of="bq")
    assert pairs and all(
        ratio > 10 for _, ratio in pairs
    )  # the CAS ring collapses under contention


@pytest.mark.slow
def test_figure(result, tmp_path):
    pytest.importorskip("matplotlib")
    for variant in queuebench.VARIANTS:
        path = queuebench.figure(result.rows, tmp_path / f"{variant}.png", variant)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError):
        queuebench.figure([], tmp_path / "none.png")


@pytest.mark.slow
def test_kerbl_report(result, tmp_path):
    pytest.importorskip("matplotlib")
    text = papers_kerbl.report(result, tmp_path)
    assert text.startswith("Kerbl et al. 2018, Fig. 1 re-run")
    assert "The paper's claims" in text and "order of magnitude" in text
    assert (tmp_path / "kerbl_fig1_balanced.png").is_file() and (
        tmp_path / "kerbl_fig1_unbalanced.png"
    ).is_file()
    checks = papers_kerbl.check_claims(result.rows)
    assert [c.claim.slower for c in checks] == ["ring", "gottlieb", "bq"]
    assert (
        checks[0].holds is True and checks[0].at_most_threads[0] == 16384
    )  # the ring stopped there
    # Measured on the H200: with room for every element, Gottlieb's queue was not slower than
    # BQ at 2M threads; with producers and consumers apart (full and empty), it was.
    assert checks[1].holds is False
    assert papers_kerbl.check_claims(result.rows, variant="unbalanced")[1].holds is True
    assert papers_kerbl.check_claims([], 16)[0].holds is None


@pytest.mark.slow
def test_queue_bench_command_renders_a_saved_run(tmp_path, capsys):
    from nqprof.cli import main

    fig = tmp_path / "fig1.png"
    assert main(["queue-bench", "--from", str(FIXTURE), "--figure", str(fig), "--bytes", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("balanced, 4-byte elements") and "unbalanced, 4-byte elements" in out
    assert fig.is_file()


def test_queue_bench_command_errors_are_one_line(tmp_path, capsys):
    from nqprof.cli import main

    assert main(["queue-bench", "--from", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("nqprof: error: ")
        and "not an nqprof queue-bench result" in err
        and err.count("\n") == 1
    )


@pytest.mark.slow
def test_kerbl_report_command(tmp_path, capsys):
    from nqprof.cli import main

    assert main(["report", "kerbl", "fig1", "--from", str(FIXTURE), "--outdir", str(tmp_path)]) == 0
    assert "The paper's claims" in capsys.readouterr().out


def _scripted_bench(times_ms, stats):
    """A QueueBench whose launches take the scripted times and leave the scripted stats
    (no GPU: run, read_stats and the device facts stand in)."""
    from nqprof import queuebench as qb

    bench = qb.QueueBench.__new__(qb.QueueBench)
    runs = iter(zip(times_ms, stats, strict=True))
    last = {}

    def run(*args):
        ms, last["stats"] = next(runs)
        return ms

    bench.run, bench.read_stats = run, lambda: last["stats"]
    bench.gpu = type("Gpu", (), {"facts": {"name": "fake", "pci_bus_id": None}})()
    return bench


def _stats(full=0, empty=0, stuck=0, gave_up=0):
    from nqprof import queuebench as qb

    s = [0] * qb.WORDS
    s[qb.FULL], s[qb.EMPTY], s[qb.STUCK], s[qb.GAVE_UP] = full, empty, stuck, gave_up
    return s


def test_a_row_is_measured_through_the_round_loop_with_its_conditions(monkeypatch):
    """One warm-up launch, then ``repeats`` timed ones: the row's time is their median (the
    warm-up's left out), its full and empty counts the last launch's, and it carries the
    conditions of its rounds and the rule that stopped them. No spare GPU worker starts
    beside its kernels, even where spares are kept (the GPU tests)."""
    from nqprof import runner

    started = []
    monkeypatch.setattr(runner.SPARE, "keep", True)
    monkeypatch.setattr(runner.SPARE, "start", lambda **kw: started.append(kw))
    bench = _scripted_bench([9.0, 2.0, 4.0, 3.0], [_stats(), _stats(1), _stats(2), _stats(5, 6)])
    row = bench.measure("balanced", "bq", 4, 1024, 64, repeats=3)
    assert started == []
    assert row.ms == 3.0 and (row.full, row.empty) == (5, 6)
    assert row.criterion == "3 rounds"
    assert set(row.conditions) >= {"cpu", "gpu"} and "steal_pct" in row.conditions["cpu"]


@pytest.mark.parametrize("stuck,gave_up", [(1, 0), (0, 2)])
def test_a_launch_with_a_stuck_operation_fails_its_row(stuck, gave_up):
    from nqprof.errors import DeviceFailureError

    bench = _scripted_bench(
        [1.0, 1.0, 1.0], [_stats(), _stats(stuck=stuck, gave_up=gave_up), _stats()]
    )
    with pytest.raises(DeviceFailureError, match="the timing is discarded"):
        bench.measure("unbalanced", "ring", 8, 2048, 32, repeats=2)


def test_a_result_saved_before_rows_had_conditions_still_loads():
    from nqprof import queuebench as qb

    old = qb.load(FIXTURE)
    assert old.rows and all(r.conditions == {} and r.criterion == "" for r in old.rows)
