"""What a GPU record says of its stream holds (nqprof.cuda.device.StreamHold): how many
timed regions ran behind one, how many gave up waiting for the host (their GPU time then
holds host latency), and how many were timed without one; a CPU record says nothing."""

import pytest

from nqprof.result import Measurement, RunRecord, hold_text
from nqprof.strategies.base import RETIME_TRIES, Session


def _record(holds: dict | None) -> RunRecord:
    info = {"device": {"name": "fake GPU"}, **({"holds": holds} if holds is not None else {})}
    ms = [Measurement(count=92, wall_s=1e-3, gpu_s=5e-4) for _ in range(3)]
    return RunRecord.from_measurements("fake", 8, {}, 92, ms, info)


@pytest.mark.parametrize(
    "holds, text",
    [
        ({"held": 13, "gave_up": 0, "none": 0}, "0 of 13 gave up"),
        (
            {"held": 11, "gave_up": 2, "none": 0},
            "2 of 13 gave up (2 kept: their GPU time includes the host's launch latency)",
        ),
        (
            {"held": 11, "gave_up": 3, "none": 0, "retimed": 2},
            "3 of 14 gave up (2 of those rounds run again) (1 kept: their GPU time includes the "
            "host's launch latency)",
        ),
        (
            {"held": 12, "gave_up": 1, "none": 0, "retimed": 1},
            "1 of 13 gave up (1 of those rounds run again)",
        ),
        (
            {"held": 0, "gave_up": 0, "none": 4},
            "4 region(s) timed without one (they wait for the GPU inside)",
        ),
        (
            {"held": 1, "gave_up": 0, "none": 1},
            "0 of 1 gave up; 1 region(s) timed without one (they wait for the GPU inside)",
        ),
        ({"held": 0, "gave_up": 0, "none": 0}, "-"),
    ],
)
def test_hold_text(holds, text):
    assert hold_text(holds) == text


def test_a_gpu_record_carries_and_prints_its_holds():
    record = _record({"held": 12, "gave_up": 1, "none": 0})
    assert record.holds == {"held": 12, "gave_up": 1, "none": 0}
    assert record.to_dict()["holds"] == record.holds
    lines = record.summary().splitlines()
    assert "holds      1 of 13 gave up (1 kept: their GPU time includes the host's launch " in (
        "\n".join(lines)
    )


def test_a_record_without_holds_prints_no_hold_line():
    record = _record(None)
    assert record.holds == {} and "holds" not in record.summary()


class _Flaky(Session):
    """A session whose first ``gives_up`` rounds each have a hold that gave up."""

    def __init__(self, gives_up: int):
        self.holds = {"held": 0, "gave_up": 0, "none": 0, "retimed": 0}
        self.left, self.rounds = gives_up, 0

    def run_once(self) -> Measurement:
        self.rounds += 1
        key = "gave_up" if self.left else "held"
        self.left = max(0, self.left - 1)
        self.holds[key] += 1
        return Measurement(count=92, wall_s=1e-3, gpu_s=self.rounds * 1e-3)


@pytest.mark.parametrize("gives_up", [0, 1, RETIME_TRIES])
def test_a_round_whose_hold_gave_up_is_run_again(gives_up):
    session = _Flaky(gives_up)
    m = session.run_round()
    assert session.rounds == gives_up + 1 and m.gpu_s == session.rounds * 1e-3
    assert session.holds == {"held": 1, "gave_up": gives_up, "none": 0, "retimed": gives_up}


def test_a_round_that_gives_up_every_time_is_kept_and_counted():
    session = _Flaky(RETIME_TRIES + 5)
    session.run_round()
    assert session.rounds == RETIME_TRIES + 1
    assert session.holds["gave_up"] - session.holds["retimed"] == 1, session.holds


def test_a_session_without_holds_runs_once():
    class Plain(Session):
        calls = 0

        def run_once(self):
            Plain.calls += 1
            return Measurement(count=92, wall_s=1e-3)

    Plain().run_round()
    assert Plain.calls == 1
