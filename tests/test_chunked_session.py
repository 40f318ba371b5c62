"""The CDP session's host side on the CPU, with a fake CUDA driver: the plan made from the
measured free memory, chunk buffers refilled per chunk, the root launched once per chunk
over that chunk's boards, the chunks' accounting summed, generation 0 listing the chunks,
the plan in the record, and config=default leaving the limits alone. The fake root kernel
counts its boards' completions on the host (subproblems.count_subtree_py)."""

import numpy as np
import pytest

from nqprof.problem import KNOWN_COUNTS
from nqprof.strategies import get
from nqprof.strategies.cdp import accounting as cc
from nqprof.subproblems import count_subtree_py

GIB = 1024**3


class Buffer:
    def __init__(self, nbytes):
        self.data = bytearray(max(1, nbytes))


class FakeDriver:
    class Error(Exception):
        pass

    def __init__(self, free):
        self.free = free

    def mem_get_info(self):
        return self.free, 140 * GIB

    def mem_alloc(self, nbytes):
        return Buffer(nbytes)

    def to_device(self, array):
        buf = Buffer(array.nbytes)
        self.memcpy_htod(buf, array)
        return buf

    def memcpy_htod(self, buf, array):
        raw = np.ascontiguousarray(array).tobytes()
        buf.data[: len(raw)] = raw

    def memcpy_dtoh(self, array, buf):
        array[...] = np.frombuffer(bytes(buf.data[: array.nbytes]), dtype=array.dtype).reshape(
            array.shape
        )

    def memset_d32(self, buf, value, count):
        buf.data[: 4 * count] = np.full(count, value, dtype=np.uint32).tobytes()


class FakeLedger:
    def __init__(self):
        self.marks = []

    def mark(self, label):
        self.marks.append((label, 100 * GIB - 200 * 1024**2 * len(self.marks)))

    def as_dict(self):
        return {"marks": self.marks}


class FakeContext:
    def __init__(self, free=139 * GIB):
        self.drv = FakeDriver(free)
        self.ledger = FakeLedger()
        self.ledger.mark("context")
        self.facts = {"name": "fake"}
        self.set = None

    #: what the fake runtime takes at most (a real one reads back less than asked past its cap)
    max_pending = 10**9

    def set_limits(self, pending_launches=None, heap_bytes=None):
        self.set = (pending_launches, heap_bytes)
        self.ledger.mark("limits")

    def read_limits(self):
        pending = self.set[0] if getattr(self, "set", None) and self.set[0] is not None else 2048
        return {"pending_launches": min(pending, self.max_pending)}

    def close(self):
        pass


class Timer:
    seconds = wall_seconds = 0.001

    def __init__(self, hold: bool = True):
        self.hold_gave_up = False if hold else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class FakeRoot:
    """Counts the completions of the boards it is launched over; records each launch."""

    shared_size_bytes = 0

    def __init__(self, n, launches):
        self.n, self.launches = n, launches

    def __call__(self, cols, ld, rd, row, count, *args, **kw):
        count = int(count)
        c, dl, dr = (
            np.frombuffer(bytes(b.data[: 4 * count]), dtype=np.uint32) for b in (cols, ld, rd)
        )
        w = np.frombuffer(bytes(row.data[:count]), dtype=np.uint8)
        acct = [a for a in args if isinstance(a, Buffer) and len(a.data) == cc.WORDS * 8][-1]
        words = np.frombuffer(bytes(acct.data), dtype=np.uint64).copy()
        words[cc.SOLUTIONS] += sum(
            count_subtree_py(self.n, int(a), int(b), int(d), int(e))
            for a, b, d, e in zip(c, dl, dr, w, strict=True)
        )
        g1 = cc.GEN_BASE + cc.GEN_WORDS
        words[g1 + cc.GEN_GRIDS] += 1
        words[g1 + cc.GEN_BOARDS] += count
        words[g1 + cc.GEN_MIN_COMPLEMENT] = max(
            words[g1 + cc.GEN_MIN_COMPLEMENT], ~np.uint64(count)
        )
        words[g1 + cc.GEN_MAX] = max(words[g1 + cc.GEN_MAX], count)
        words[cc.LAUNCHES] += 1
        words[cc.MAX_GENERATION] = 1
        acct.data[:] = words.tobytes()
        self.launches.append(count)


@pytest.fixture
def fake_gpu(monkeypatch):
    import nqprof.cuda.build as build
    import nqprof.cuda.device as device
    from nqprof.strategies import gpu_common

    state = {"free": 139 * GIB, "launches": [], "contexts": []}

    def context():
        ctx = FakeContext(state["free"])
        state["contexts"].append(ctx)
        return ctx

    class Module:
        def __init__(self, n):
            self.kernels, self.notes, self.n = {}, [], n

        def function(self, name):
            self.kernels[name] = {"name": name}
            return FakeRoot(self.n, state["launches"])

    monkeypatch.setattr(device, "GpuContext", context)
    monkeypatch.setattr(device, "EventTimer", lambda drv, hold=True, stream=None: Timer(hold))
    monkeypatch.setattr(build, "build", lambda file, defines=None: Module(state["n"]))
    monkeypatch.setattr(gpu_common.GpuSession, "info", lambda self: {"notes": list(self.notes)})
    return state


def run(state, name, n, given, free_gib=139.0):
    state["free"], state["n"], state["launches"][:] = int(free_gib * GIB), n, []
    strategy = get(name)
    session = strategy.open(n, strategy.resolve(n, given))
    try:
        m = session.run_once()
        return session, m
    finally:
        session.close()


@pytest.mark.parametrize(
    "name,n,given",
    [
        ("dp2", 11, {"chunk": 7}),
        ("cdp-bp", 12, {"chunk": 1000}),
        ("dp1", 10, {"z": 2, "chunk": 2}),
        ("cdp-dp3", 10, {"chunk": 5}),
    ],
)
def test_forced_chunks_launch_every_board_once_and_sum(fake_gpu, name, n, given):
    session, m = run(fake_gpu, name, n, given)
    host = len(session.host)
    assert session.plan.chunks == -(-host // given["chunk"]) > 1
    assert (
        fake_gpu["launches"] == session.plan.boards_per_chunk()
        and sum(fake_gpu["launches"]) == host
    )
    assert m.count == KNOWN_COUNTS[n]
    g0, g1 = m.stats["generations"][:2]
    assert (g0["grids"], g0["boards"], g0["max"]) == (session.plan.chunks, host, given["chunk"])
    assert (g1["grids"], g1["boards"], g1["max"]) == (session.plan.chunks, host, given["chunk"])
    assert m.stats["failures"]["launches"] == session.plan.chunks
    # each chunk's accounting is read inside the region: timed without the stream hold
    assert session.holds == {"held": 0, "gave_up": 0, "none": 1, "retimed": 0}
    assert any(note.startswith("plan: config=carneiro") for note in session.notes)
    info = session.info()["plan"]
    assert info["chunks"] == session.plan.chunks
    assert info["reserve_measured"]["module_load_bytes"] == 200 * 1024**2
    assert any(
        note.startswith("runtime reserve: loading the module took 200.0 MiB")
        for note in session.notes
    )


def test_unchunked_run_uploads_once(fake_gpu):
    session, m = run(fake_gpu, "dp3", 10, {})
    assert session.plan.chunks == 1 and fake_gpu["launches"] == [len(session.host)]
    assert m.count == KNOWN_COUNTS[10] and m.stats["generations"][0]["grids"] == 1


def test_little_free_memory_chunks_by_itself(fake_gpu):
    session, m = run(fake_gpu, "dp1", 11, {"z": 2, "depth": 3}, free_gib=1.25)
    assert session.plan.chunks > 1 and not session.plan.chunk_forced and m.count == KNOWN_COUNTS[11]
    assert fake_gpu["contexts"][-1].set[0] == session.plan.limits.pending


def test_a_runtime_that_takes_a_lower_limit_gets_a_plan_within_it(fake_gpu, monkeypatch):
    whole, _ = run(fake_gpu, "dp1", 11, {"z": 2, "depth": 3})
    assert whole.plan.chunks == 1
    cap = whole.plan.limits.pending // 3
    monkeypatch.setattr(FakeContext, "max_pending", cap)  # as the H200's runtime caps at 599,186
    session, m = run(fake_gpu, "dp1", 11, {"z": 2, "depth": 3})
    assert (
        session.plan.chunks > 1
        and session.plan.limits.pending <= cap
        and m.count == KNOWN_COUNTS[11]
    )
    assert fake_gpu["contexts"][-1].set[0] == session.plan.limits.pending
    assert (
        f"the runtime took a pending-launch limit of {cap:,} for {whole.plan.limits.pending:,}"
        in session.notes
    )


def test_config_default_sets_no_limit(fake_gpu):
    session, m = run(fake_gpu, "dp2", 10, {"config": "default"})
    assert fake_gpu["contexts"][-1].set is None and m.count == KNOWN_COUNTS[10]


def test_a_failed_chunk_stops_the_round_and_names_config_default(fake_gpu, monkeypatch):
    from nqprof.errors import DeviceFailureError

    original = FakeRoot.__call__

    def failing(self, *args, **kw):
        original(self, *args, **kw)
        acct = [a for a in args if isinstance(a, Buffer) and len(a.data) == cc.WORDS * 8][-1]
        words = np.frombuffer(bytes(acct.data), dtype=np.uint64).copy()
        words[cc.MALLOC_FAILURES] = 3
        acct.data[:] = words.tobytes()

    monkeypatch.setattr(FakeRoot, "__call__", failing)
    with pytest.raises(
        DeviceFailureError,
        match=r"dp3 N=10 chunk 1/\d+: 3 device mallocs returned NULL.*config=default",
    ):
        run(fake_gpu, "dp3", 10, {"config": "default", "chunk": 20})
    assert len(fake_gpu["launches"]) == 1


def test_solve_output_and_record_carry_the_plan(fake_gpu):
    from nqprof.result import RunRecord

    session, m = run(fake_gpu, "dp2", 11, {"chunk": 40})
    record = RunRecord.from_measurements(
        "dp2", 11, session.params, KNOWN_COUNTS[11], [m], session.info()
    )
    assert record.plan["chunks"] == session.plan.chunks and record.to_dict()["plan"]["chunk"] == 40
    text = record.summary()
    assert (
        f"plan       config=carneiro, {session.plan.chunks} chunks of " in text
        and "(forced)" in text
    )
    assert "plan gen   1: row " in text
