"""What a GPU record says of its stream holds (nqprof.cuda.device.StreamHold): how many
timed regions ran behind one, how many gave up waiting for the host (their GPU time then
holds host latency), and how many were timed without one; a CPU record says nothing."""

import pytest

from nqprof.result import Measurement, RunRecord, hold_text


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
            "2 of 13 gave up (those rounds' GPU time includes the host's launch latency)",
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
    assert "holds      1 of 13 gave up (those rounds' GPU time includes the host's launch " in (
        "\n".join(lines)
    )


def test_a_record_without_holds_prints_no_hold_line():
    record = _record(None)
    assert record.holds == {} and "holds" not in record.summary()
