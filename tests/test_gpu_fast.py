"""The fast strategy on a real GPU: both kernels verified over N and depths."""

import pytest
from gpu_checks import assert_verified_at, checked, ns_up_to

from nqprof.runner import solve
from nqprof.strategies.fast import KERNELS

pytestmark = pytest.mark.gpu


def test_constellations_count_n1_to_n15():
    for n in range(1, 4):
        record = solve("fast", n, {}, repeats=1, warmup=0, timeout=120)
        assert record.verified and record.count == record.expected
    for n in ns_up_to(15):
        checked(solve("fast", n, {}, repeats=1, warmup=0, timeout=120))


def test_the_gpu_makes_the_host_s_tasks():
    """The tasks the GPU splits from the frames are the host generator's, byte for byte and
    in order (every depth 0..4 at some N from 4 to 16; the header function both run is
    checked against the generator at every N and depth on the CPU), and a part session's
    slice of frames is counted with its own tasks only."""
    from nqprof import _cpu
    from nqprof.runners import WorkerRunner
    from nqprof.strategies import get

    fast = get("fast")
    for n, depth in ((4, 0), (4, 1), (7, 2), (11, 3), (13, 4), (14, 1), (16, 3)):
        with WorkerRunner(fast, n, fast.resolve(n, {"depth": depth}), 120) as runner:
            assert runner.call("task_bytes") == _cpu.cst_tasks(n, depth), (n, depth)
    import numpy as np

    frames = np.frombuffer(_cpu.cst_tasks(14, 0), np.uint32).reshape(-1, 4)
    with WorkerRunner(fast, 14, fast.resolve(14, {"depth": 2}), 120, opener="open_part") as part:
        halves = [part.call("count_part", np.ascontiguousarray(frames[i::2])) for i in (0, 1)]
    assert [m.count for m in halves] == [
        _cpu.cst_count(14, frames[i::2].tobytes())[0] for i in (0, 1)
    ]
    assert sum(m.count for m in halves) == 365596
    assert [m.stats["tasks"]["tasks"] for m in halves] == [
        len(_cpu.cst_split(14, 2, frames[i::2].tobytes())) // 16 for i in (0, 1)
    ]


@pytest.mark.parametrize("n,depth", [(8, 0), (11, 2), (13, 3)])
def test_the_kernel_places_as_many_queens_as_the_cpu_twin(n, depth):
    """The counting build of fast's kernel adds up on the GPU the queens it places: as many
    as the CPU twin's step search places below the same tasks, which is what fast's record
    states as its nodes (FastSession.work)."""
    from nqprof import _cpu
    from nqprof.problem import known_count
    from nqprof.runners import WorkerRunner
    from nqprof.strategies import get

    fast = get("fast")
    with WorkerRunner(fast, n, fast.resolve(n, {"depth": depth}), 120) as runner:
        count, nodes = runner.call("count_nodes")
    assert count == known_count(n)
    assert nodes == _cpu.cst_count(n, _cpu.cst_tasks(n, depth), 1, True)[1] > 0


@pytest.mark.parametrize("opt", list(KERNELS))
def test_every_kernel_counts_n4_to_n13(opt):
    for n in ns_up_to(13):
        params = {"opt": opt} if opt == "cst" else {"opt": opt, "depth": min(n - 2, 3)}
        checked(solve("fast", n, params, repeats=1, warmup=0, timeout=120))


@pytest.mark.parametrize("depth,block", [(0, 32), (1, 64), (4, 256), (9, 128)])
def test_odd_shapes(depth, block):
    assert_verified_at("fast", (12, 13), {"depth": depth, "block": block})


def test_n17_default():
    record = checked(solve("fast", 17, {}, repeats=3, warmup=1, timeout=120))
    assert record.gpu_s is not None and record.rounds == 3


def gpu_median(strategy, n: int, params: dict, rounds: int = 5) -> float:
    """The median CUDA-event time of ``rounds`` rounds of one session in one worker process,
    after one untimed round; every round's count verified (:meth:`WorkerRunner.run_once`).
    No record is made, so no work rate is counted: a depth's node count would cost the
    test seconds at N=16 on the host."""
    from statistics import median

    from nqprof.runners import WorkerRunner

    with WorkerRunner(strategy, n, strategy.resolve(n, params), 120) as runner:
        runner.run_once()
        return median(runner.run_once().gpu_s for _ in range(rounds))


@pytest.mark.parametrize("n", [16, 18])
def test_the_default_depth_is_within_10_percent_of_the_best(n):
    """The default depth against a small sweep around it, medians of 5 rounds (GPU time)."""
    from nqprof.strategies import get

    fast = get("fast")
    default = fast.resolve(n, {})["depth"]
    depths = sorted({max(0, default - 1), default, default + 1, default + 2})
    times = {d: gpu_median(fast, n, {"depth": d}) for d in depths}
    assert times[default] <= 1.10 * min(times.values()), times


def _occupancy_pairs(workdir: str) -> list[tuple]:
    """(block, N, ours, the driver's) for fast's kernel: the blocks per SM the session's
    rules give on the device's limits, and cuOccupancyMaxActiveBlocksPerMultiprocessor's
    answer for the same cubin (run in a process of its own: a CUDA context)."""
    from pathlib import Path

    from cuda.bindings import driver as cu

    from nqprof.cuda.device import GpuContext
    from nqprof.cuda.nvcc import compile_source
    from nqprof.strategies.fast import STRATEGY, shared_bytes
    from nqprof.strategies.gpu_common import blocks_per_sm

    def ok(result):
        assert result[0] == cu.CUresult.CUDA_SUCCESS, result[0]
        return result[1] if len(result) == 2 else result[1:]

    gpu = GpuContext()
    pairs = []
    try:
        arch = gpu.facts["arch"]
        for block in (64, 128, 256):
            work = Path(workdir) / str(block)
            (res,) = [
                r
                for r in compile_source(
                    STRATEGY.sources[0], arch, {"NQ_BLOCK": block}, workdir=work
                )
                if r.kernel == "constellation"
            ]
            module = ok(cu.cuModuleLoadData((work / f"constellation.{arch}.cubin").read_bytes()))
            func = ok(cu.cuModuleGetFunction(module, b"constellation"))
            for n, depth in ((12, 3), (16, 3), (20, 4), (22, 0)):
                dynamic = shared_bytes(n, {"depth": depth, "block": block})
                attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                ok((cu.cuFuncSetAttribute(func, attr, dynamic)[0], None))
                theirs = ok(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block, dynamic))
                ours = blocks_per_sm(
                    block, res.registers, dynamic, res.shared_bytes, gpu.facts["sm_limits"]
                )
                pairs.append((block, n, ours, theirs))
            ok((cu.cuModuleUnload(module)[0], None))
    finally:
        gpu.close()
    return pairs


def test_grid_sizing_agrees_with_the_cuda_occupancy_calculator(tmp_path):
    """fast sizes its persistent grid by the occupancy rules on the limits the device
    reports (cuda.device.sm_limits): the driver's occupancy calculator must agree."""
    import multiprocessing as mp

    pytest.importorskip("cuda.bindings.driver")
    with mp.get_context("spawn").Pool(1) as pool:
        pairs = pool.apply(_occupancy_pairs, (str(tmp_path),))
    assert len(pairs) == 12 and all(ours == theirs for *_, ours, theirs in pairs), pairs
    assert len({ours for *_, ours, _ in pairs}) > 1, pairs  # the cases bind differently


def test_a_short_round_places_its_counters_and_a_long_one_does_not():
    """fast N=8's session tries its counters at many allocations and goes on with the one
    its round ran fastest at (the record keeps every median); N=14's round is longer than
    placement.LONGEST_PLACED_S, so one round tells it to stay where it is; N=17 is past the
    boards that are placed."""
    from nqprof.strategies import placement

    short = checked(solve("fast", 8, {}, repeats=20, warmup=1, timeout=120))
    p = short.placement
    assert p["tried"] == placement.TRIALS and len(p["medians_us"]) == placement.TRIALS
    assert p["medians_us"][p["kept"]] == min(p["medians_us"])
    # the kept placement's rounds run as fast as it did when it was tried
    assert short.gpu_s * 1e6 <= min(p["medians_us"]) * 1.05
    assert any("placed where the round ran fastest" in note for note in short.notes)
    # every session draws its layout pad (whole granules, within the pad's range)
    pad = p["pad_mib"]
    assert pad % 2 == 0 and 0 <= pad < placement.PAD_GRANULES * placement.GRANULE_BYTES >> 20
    assert "layout" in short.memory["deltas_mib"]
    # N=14: one round, longer than placement matters, and no placement tried
    medium = checked(solve("fast", 14, {}, repeats=1, warmup=0, timeout=120))
    assert medium.placement["tried"] == 1 and medium.placement["kept"] == 0
    assert medium.placement["medians_us"][0] > placement.LONGEST_PLACED_S * 1e6
    assert any("not placed: a round of" in note for note in medium.notes)
    # N=17 is past placement.LARGEST_N: not placed, not even timed once to find out
    long = checked(solve("fast", 17, {}, repeats=1, warmup=0, timeout=120))
    assert "tried" not in long.placement and "pad_mib" in long.placement
    assert any("not placed: N=17" in note for note in long.notes)
