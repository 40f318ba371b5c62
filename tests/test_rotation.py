"""A short round's sessions held together, its rounds in turn (nqprof.strategies.rotation),
on fake sessions: no GPU, no clock."""

from __future__ import annotations

import pytest

from nqprof.errors import CountMismatchError, InputError
from nqprof.result import Measurement
from nqprof.strategies import rotation


class FakeSession:
    """A session whose rounds take ``seconds`` and count ``count``; it logs what it did."""

    def __init__(self, log: list, index: int, seconds: float, count: int = 92, pad: int = 0):
        self.log, self.index, self.seconds, self.count = log, index, seconds, count
        self.holds = {"held": 0, "gave_up": 0, "none": 0, "retimed": 0}
        self.pad = pad

    def run_once(self) -> Measurement:
        self.log.append(("run", self.index))
        self.holds["held"] += 1
        return Measurement(count=self.count, wall_s=self.seconds * 2, gpu_s=self.seconds)

    def run_round(self) -> Measurement:
        self.log.append(("round", self.index))
        return self.run_once()

    def info(self):
        return {
            "holds": dict(self.holds),
            "placement": {"pad_mib": self.pad},
            "notes": [f"session {self.index}"],
        }

    def close(self) -> None:
        self.log.append(("close", self.index))

    def own_call(self) -> str:
        return f"own {self.index}"


def opener(log: list, seconds: float = 60e-6, counts: list[int] | None = None):
    made: list[FakeSession] = []

    def open_one() -> FakeSession:
        i = len(made)
        count = counts[i] if counts else 92
        made.append(FakeSession(log, i, seconds, count, pad=2 * i))
        log.append(("open", i))
        return made[-1]

    return open_one, made


def test_a_short_round_grows_to_the_sessions_after_its_first_round_then_takes_them_in_turn():
    log: list = []
    open_one, made = opener(log)
    rot = rotation.Rotation(open_one, 8, sessions=3)
    assert len(rot.sessions) == 1 and log == [("open", 0)]
    first = rot.run_round()
    assert first.unit == 0
    # after the first round: two more sessions, each opened and run once (untimed)
    assert log == [("open", 0), ("round", 0), ("run", 0), ("open", 1), ("run", 1)] + [
        ("open", 2),
        ("run", 2),
    ]
    log.clear()
    units = [rot.run_round().unit for _ in range(7)]
    assert units == [0, 1, 2, 0, 1, 2, 0]
    assert [i for what, i in log if what == "round"] == units  # each session's own round
    rot.close()
    assert [e for e in log if e[0] == "close"] == [("close", 2), ("close", 1), ("close", 0)]


@pytest.mark.parametrize(
    "n, seconds, sessions",
    [
        (8, rotation.LONGEST_ROUND_S * 1.01, 8),  # a round too long
        (rotation.LARGEST_N + 1, 1e-6, 8),  # a board too large: not timed to find out
        (8, 1e-6, 1),  # one session asked for
    ],
)
def test_no_rotation_for_a_long_round_a_large_board_or_one_session(n, seconds, sessions):
    log: list = []
    open_one, made = opener(log, seconds)
    rot = rotation.Rotation(open_one, n, sessions=sessions)
    units = [rot.run_once().unit for _ in range(4)]
    assert len(made) == 1 and units == [0, 0, 0, 0]
    assert "sessions" not in rot.info()["placement"]


def test_the_longest_round_rotated_is_rotated():
    log: list = []
    open_one, made = opener(log, rotation.LONGEST_ROUND_S)
    rotation.Rotation(open_one, rotation.LARGEST_N, sessions=2).run_once()
    assert len(made) == 2


def test_a_session_that_counts_otherwise_is_an_error():
    log: list = []
    open_one, made = opener(log, counts=[92, 92, 91])
    rot = rotation.Rotation(open_one, 8, sessions=3)
    with pytest.raises(CountMismatchError, match="session 3 of N=8 counted 91, the first 92"):
        rot.run_once()
    rot.close()  # every session opened is closed
    assert sorted(i for what, i in log if what == "close") == [0, 1, 2]


def test_info_names_every_session_s_pad_and_sums_their_holds():
    log: list = []
    open_one, made = opener(log)
    rot = rotation.Rotation(open_one, 8, sessions=3)
    for _ in range(4):
        rot.run_round()
    info = rot.info()
    assert info["placement"] == {"pad_mib": 0, "sessions": 3, "pads_mib": [0, 2, 4]}
    # session 0 ran the first round and its turn; 1 and 2 their untimed round and their turn
    assert [s.holds["held"] for s in made] == [2, 2, 2]
    assert info["holds"]["held"] == 6
    assert info["notes"][0] == "session 0" and "3 sessions" in info["notes"][-1]
    assert rot.own_call() == "own 0"  # a strategy's own calls go to the first session


def test_closing_goes_on_past_a_session_that_fails_and_raises_the_failure():
    log: list = []
    open_one, made = opener(log)
    rot = rotation.Rotation(open_one, 8, sessions=3)
    rot.run_once()

    def broken():
        raise RuntimeError("context gone")

    made[1].close = broken
    with pytest.raises(RuntimeError, match="context gone"):
        rot.close()
    assert [i for what, i in log if what == "close"] == [2, 0]


@pytest.mark.parametrize("text, want", [("", rotation.SESSIONS), ("1", 1), (" 16 ", 16)])
def test_the_variable_sets_the_sessions(monkeypatch, text, want):
    monkeypatch.setenv(rotation.VARIABLE, text)
    assert rotation.sessions_wanted() == want


@pytest.mark.parametrize("text", ["0", "17", "two", "1.5", "1_6"])
def test_a_bad_variable_is_refused_in_one_line(monkeypatch, text):
    monkeypatch.setenv(rotation.VARIABLE, text)
    with pytest.raises(InputError, match=r"NQPROF_ROTATE .* must be an integer in 1\.\.16, got"):
        rotation.sessions_wanted()


def test_a_worker_takes_a_short_round_in_turn_over_its_sessions(tmp_path, monkeypatch):
    """Through real worker processes: fake_process_bound's k-th session opened times
    1 ms * (1 + step k), so each round shows which session ran it."""
    from fake_process_bound import STRATEGY as bound
    from fake_process_bound import unit_step

    from nqprof.runner import RoundLoop
    from nqprof.runners import open_runner

    monkeypatch.setenv(rotation.VARIABLE, "3")
    monkeypatch.delenv("NQPROF_GPU_SESSIONS", raising=False)
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", str(tmp_path / "pids"))
    # every session's round at most LONGEST_ROUND_S (1 ms, then 0.95 ms, ...): all rotate
    monkeypatch.setenv("NQPROF_TEST_UNIT_STEP", "-0.05")
    with open_runner(bound, 8, {}, timeout=60) as runner:
        loop = RoundLoop(runner, 12, 1)
        loop.run()
        info = runner.info()
    # the worker process stays the unit; the session within it is recorded beside
    assert loop.round_process == [0] * 6 + [1] * 6
    assert loop.round_session == [0, 1, 2] * 4
    record = loop.record(info)
    assert record.round_session == loop.round_session
    assert record.to_dict()["round_session"] == [0, 1, 2] * 4
    for m, worker, session in zip(
        loop.measurements, loop.round_process, loop.round_session, strict=True
    ):
        assert m.gpu_s == pytest.approx(1e-3 * (1 + unit_step() * (3 * worker + session)))
    assert info["placement"]["sessions"] == 3
    pids = [line.split()[0] for line in (tmp_path / "pids").read_text().splitlines()]
    assert len(pids) == 6 and len(set(pids[:3])) == 1 and len(set(pids[3:])) == 1
    assert pids[0] != pids[3]


class _Refusing:
    """A driver whose context refuses to set a limit in use (as the device runtime refuses a
    heap in use), holding what it was first set to."""

    class Error(Exception):
        pass

    class limit:  # noqa: N801 (PyCUDA's name)
        DEV_RUNTIME_PENDING_LAUNCH_COUNT, MALLOC_HEAP_SIZE = "pending", "heap"

    def __init__(self):
        values = {"pending": 2048, "heap": 8 << 20}
        error = self.Error

        class Context:
            @staticmethod
            def set_limit(limit, value):
                raise error("cuCtxSetLimit failed: invalid argument")

            @staticmethod
            def get_limit(limit):
                return values[limit]

        self.Context = Context


def _context(drv):
    from nqprof.cuda.device import GpuContext

    class Ledger:
        def mark(self, label):
            pass

    ctx = GpuContext.__new__(GpuContext)
    ctx.drv, ctx.ledger, ctx.limits = drv, Ledger(), {}
    return ctx


def test_a_second_session_in_a_context_takes_the_limits_it_wants_already_set():
    ctx = _context(_Refusing())
    assert ctx.set_limits(pending_launches=2048, heap_bytes=8 << 20) == {
        "pending_launches": 2048,
        "heap_bytes": 8 << 20,
    }


def test_a_limit_the_device_refuses_and_does_not_hold_is_an_input_error():
    ctx = _context(_Refusing())
    with pytest.raises(InputError, match="the device refused heap_bytes=4194304"):
        ctx.set_limits(heap_bytes=4 << 20)


@pytest.mark.parametrize(
    "rounds, workers, sessions, want",
    [
        (None, 2, 8, True),  # the auto rule
        (32, 2, 8, True),  # two rounds a session
        (31, 2, 8, False),
        (3, 2, 8, False),  # nqprof solve -r 3
        (None, 2, 1, False),  # one session asked for
        (4, 1, 2, True),
    ],
)
def test_rotation_is_worth_it_where_the_rounds_go_round_the_sessions_twice(
    rounds, workers, sessions, want
):
    assert rotation.worth(rounds, workers, sessions) is want


def test_a_run_of_a_few_rounds_opens_one_session_a_worker(tmp_path, monkeypatch):
    from fake_process_bound import STRATEGY as bound

    from nqprof.runners import open_runner

    monkeypatch.setenv(rotation.VARIABLE, "3")
    monkeypatch.delenv("NQPROF_GPU_SESSIONS", raising=False)
    assert {r.opener for r in open_runner(bound, 8, {}, rounds=3).runners} == {"open"}
    assert {r.opener for r in open_runner(bound, 8, {}, rounds=12).runners} == {"open_rotated"}
    assert {r.opener for r in open_runner(bound, 8, {}).runners} == {"open_rotated"}
    monkeypatch.setenv(rotation.VARIABLE, "0")
    with pytest.raises(InputError, match="NQPROF_ROTATE"):
        open_runner(bound, 8, {})


def test_a_session_that_fails_to_open_ends_the_opening_and_the_notes_say_why():
    log: list = []
    open_one, made = opener(log)

    def third_fails():
        if len(made) == 2:
            raise MemoryError("cuMemAlloc failed: out of memory")
        return open_one()

    rot = rotation.Rotation(third_fails, 8, sessions=4)
    units = [rot.run_once().unit for _ in range(5)]
    assert len(made) == 2 and units == [0, 0, 1, 0, 1]
    note = rot.info()["notes"][-1]
    assert "over 2 of 4 sessions" in note and "MemoryError: cuMemAlloc failed" in note
