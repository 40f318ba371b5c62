"""What every GPU test checks of a run record besides its count, written once: one time per
timed round, and GPU times that are positive and no longer than the wall time around them;
and one round verified at each of a few N (a launch shape's check).

Also the board sizes the GPU tests sweep: the smallest boards (where the host depth and the
symmetry cases are clamped), both parities, and the largest N each test needs, instead of
every N in a range (each run costs a worker process and a CUDA context)."""

from __future__ import annotations


def assert_timing_sane(record) -> None:
    """One wall time (and, on the GPU, one CUDA-event time) per timed round; every GPU time
    in (0, wall time of its round]; the record's medians in the same bounds."""
    rounds = record.rounds
    assert rounds >= 1 and len(record.wall_times) == rounds, (rounds, record.wall_times)
    assert all(w > 0 for w in record.wall_times), record.wall_times
    assert 0 < record.wall_s
    if record.gpu_s is None:
        assert not record.gpu_times
        return
    assert len(record.gpu_times) == rounds, (rounds, record.gpu_times)
    for gpu, wall in zip(record.gpu_times, record.wall_times, strict=True):
        assert 0 < gpu <= wall, (gpu, wall)
    assert 0 < record.gpu_s <= record.wall_s, (record.gpu_s, record.wall_s)


def checked(record):
    """``record`` after :func:`assert_timing_sane` and the count check."""
    assert record.verified and record.count == record.expected, (
        record.n,
        record.count,
        record.expected,
    )
    assert_timing_sane(record)
    return record


def no_device_failures(record) -> None:
    """No launch, device malloc or stream failure and no buffer overflow on the device."""
    f = record.device_failures
    assert (
        f["launch_failures"]
        == f["malloc_failures"]
        == f["stream_failures"]
        == f["buffer_overflows"]
        == 0
    ), f


def clean(record):
    """``record`` after :func:`no_device_failures` and :func:`assert_timing_sane` (a CDP
    run's count is checked by the run itself)."""
    no_device_failures(record)
    assert_timing_sane(record)
    return record


def assert_verified_at(strategy: str, ns, params) -> None:
    """Assert that one timed round of ``strategy`` with ``params`` verifies at each N in ``ns``."""
    from nqprof.runner import solve

    for n in ns:
        record = solve(strategy, n, params, repeats=1, warmup=0, timeout=120)
        assert record.verified, (strategy, n, params)


def ns_up_to(top: int) -> tuple[int, ...]:
    """4, 5, 6, 7 (the clamped depths and first odd middle columns), one N between, and ``top``."""
    return tuple(sorted({4, 5, 6, 7, (7 + top) // 2 + 1, top}))


#: One H100/H200 multiprocessor's limits as the device reports them (cuda.device.sm_limits:
#: MAX_THREADS/BLOCKS/REGISTERS/SHARED_MEMORY_PER_MULTIPROCESSOR, RESERVED_SHARED_MEMORY_PER_BLOCK),
#: for the occupancy arithmetic the CPU tests check.
HOPPER_SM = {
    "threads": 2048,
    "blocks": 32,
    "registers": 65536,
    "shared": 233472,
    "reserved_shared": 1024,
}
