"""The GPU queues and the queue strategy on a real GPU: every element enqueued is dequeued
exactly once (ids counted, sums compared), FULL and EMPTY only when true (Broker Queue),
nothing hangs (every spin is bounded; a stuck operation is counted, and fails the test), and
the strategy verified with both queues. Skipped with the reason where no GPU run can happen."""

import pytest
from gpu_checks import checked, ns_up_to

from nqprof import queuebench as qb
from nqprof.runner import solve

pytestmark = pytest.mark.gpu

TIMEOUT = 120
CASES = [(q, b) for q in qb.QUEUES for b in qb.ELEMENT_BYTES]


@pytest.fixture(scope="module")
def bench():
    b = qb.QueueBench()
    yield b
    b.close()


@pytest.mark.parametrize("queue,size", CASES)
def test_full_only_when_full_and_drained_exactly_once(bench, queue, size):
    cap, threads = 1024, 3000
    s = bench.fill(queue, size, cap, threads)
    assert (s[qb.ENQ_OK], s[qb.FULL], s[qb.STUCK]) == (cap, threads - cap, 0)
    put_sum = s[qb.ID_SUM]
    s, seen = bench.drain(queue, size, cap, threads, threads)
    assert (s[qb.DEQ_OK], s[qb.EMPTY], s[qb.STUCK], s[qb.CORRUPT]) == (cap, threads - cap, 0, 0)
    assert seen.max() == 1 and int(seen.sum()) == cap and s[qb.ID_SUM] == put_sum


@pytest.mark.parametrize("queue,size", CASES)
def test_balanced_exactly_once(bench, queue, size):
    threads = 20_000 if queue == "ring" else 100_000  # the CAS ring takes seconds at 100K
    bench.run("balanced", queue, size, threads, 1 << 17, check=True)
    s, seen = bench.read_stats(), bench.read_seen(threads * qb.ITERATIONS)
    total = threads * qb.ITERATIONS
    assert s[qb.ENQ_OK] == s[qb.DEQ_OK] == total and (seen == 1).all()
    assert s[qb.ID_SUM] == total * (total - 1) // 2
    assert s[qb.STUCK] == s[qb.GAVE_UP] == s[qb.CORRUPT] == 0
    if queue == "bq":  # room for every element and each thread dequeues after its enqueue
        assert s[qb.FULL] == s[qb.EMPTY] == 0


@pytest.mark.parametrize("queue,size", CASES)
def test_unbalanced_small_queue_exactly_once(bench, queue, size):
    """Exactly once through a 32-slot queue, where producers find it full and consumers find
    it empty. Whether one run meets both depends on how the blocks are scheduled (an H200
    host once gave a ring-8 run with no full queue at all), so up to five runs each count
    exactly once and the test asks for both over them."""
    threads = min(bench.resident("unbalanced", queue, size), 65536) // 64 * 64
    produced = threads // 2 * qb.ITERATIONS
    full = empty = 0
    for _ in range(5):
        bench.run("unbalanced", queue, size, threads, 32, check=True)
        s = bench.read_stats()
        seen = bench.read_seen(threads * qb.ITERATIONS)
        assert s[qb.ENQ_OK] == s[qb.DEQ_OK] == produced
        assert int(seen.sum()) == produced and seen.max() == 1
        assert s[qb.STUCK] == s[qb.GAVE_UP] == s[qb.CORRUPT] == 0
        full, empty = full + s[qb.FULL], empty + s[qb.EMPTY]
        if full and empty:
            break
    assert full > 0 and empty > 0, (full, empty)  # both really happened


@pytest.mark.parametrize("queue", ["bq", "bwd"])
def test_strategy_counts_n4_to_n14(queue):
    for n in ns_up_to(14):
        record = checked(solve("queue", n, {"queue": queue}, repeats=1, warmup=0, timeout=TIMEOUT))
        assert record.verified and record.count == record.expected
        f = record.device_failures
        assert f["stuck"] == f["outstanding"] == 0 and f["dequeued"] == f["seeded"] + f["enqueued"]


@pytest.mark.parametrize("queue", ["bq", "bwd"])
def test_strategy_splits_when_the_queue_runs_low(queue):
    """Few seeded boards and a high threshold: busy threads hand out work, still exact."""
    record = solve(
        "queue",
        14,
        {"queue": queue, "depth": 2, "threshold": 1 << 20, "split_rows": 3},
        repeats=1,
        warmup=0,
        timeout=TIMEOUT,
    )
    assert record.verified
    f = record.device_failures
    assert (
        f["split_events"] > 0 and f["enqueued"] > 0 and f["dequeued"] == f["seeded"] + f["enqueued"]
    )


def test_tiny_queue_reports_full_and_stays_exact():
    """More boards handed out than the queue holds: once every persistent thread holds a board
    (one warp per SM here), each busy thread still hands out its shallowest level's squares every
    few hundred steps, so a queue of 128 slots seeded with 91 boards fills whatever the timing.
    (N=13 with 515 boards in 1,024 slots filled on some runs only: its subtrees end before their
    threads hand out enough.)"""
    record = solve(
        "queue",
        15,
        {
            "queue": "bq",
            "depth": 2,
            "capacity": 128,
            "threshold": 1 << 20,
            "split_rows": 2,
            "block": 32,
            "blocks_per_sm": 1,
        },
        repeats=1,
        warmup=0,
        timeout=TIMEOUT,
    )
    assert record.verified and record.device_failures["full"] > 0
