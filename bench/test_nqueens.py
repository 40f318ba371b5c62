"""The nqprof benchmark suite.

    pytest bench/ --benchmark-autosave          every strategy over its default N range
    pytest bench/ --benchmark-compare           ... against the last saved run
    pytest bench/ --nq-strategy=serial,multicore --nq-n=8:11
    pytest bench/ --nq-param feinbube.depth=4,5,6 --nq-param feinbube.block=64,128

`pytest --help` lists the --nq-* options (group "nqprof"). GPU strategies are skipped with
the reason on a machine without a GPU or PyCUDA; `-rs` shows the reasons.
"""

import math

from nqprof.rounds import median


def test_nqueens(nqbench):
    """One strategy, one N, one parameter combination (see the test id): verified, and the
    time pytest-benchmark keeps is the round statistic nqprof measured (CUDA events for a
    GPU case, the worker's compute time for a CPU case), round for round; with
    --nq-cpu-metric=instructions a CPU case's is its instructions, 1 ns each."""
    record = nqbench.run()
    assert record.verified
    stats = nqbench.benchmark.stats
    if stats is None:  # benchmarks disabled (--benchmark-disable, xdist): one verified round
        return
    kept = stats.stats
    assert kept.rounds == len(record.samples) >= 1
    if record.instructions:  # --nq-cpu-metric=instructions: one round's count, 1 ns each
        from nqprof.instructions import SECONDS_PER_INSTRUCTION

        assert kept.min == kept.max == record.instructions["count"] * SECONDS_PER_INSTRUCTION
        return
    assert math.isclose(kept.median, median(record.samples), rel_tol=1e-9)
    if record.timer == "compute":
        own = record.gpu_times if nqbench.strategy.needs_gpu else record.wall_times
        assert math.isclose(kept.median, median(own), rel_tol=1e-9), (
            f"{nqbench.label}: pytest-benchmark median {kept.median} vs the run's own {median(own)}"
        )
    for t, trip in zip(record.samples, record.round_trips, strict=True):
        assert 0 < t <= trip * (1 + 1e-9), (
            f"{nqbench.label}: a round's time {t} is not within its round trip {trip}"
        )
