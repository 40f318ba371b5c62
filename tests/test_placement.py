"""Counters placed where a short round runs fastest (nqprof.strategies.placement), on
synthetic round times: no GPU, no clock."""

from __future__ import annotations

import pytest

from nqprof.result import Measurement, RunRecord
from nqprof.strategies import placement


class FakeDevice:
    """Placements are numbers; a round's time is the placement's, from ``times``."""

    def __init__(self, times: list[float]):
        self.times, self.made, self.freed, self.used, self.rounds = times, 0, [], None, []

    def make(self) -> int:
        self.made += 1
        return self.made

    def use(self, p: int) -> None:
        self.used = p

    def measure(self) -> float:
        self.rounds.append(self.used)
        return self.times[self.used]

    def place(self, **kw):
        self.used = 0
        return placement.place(0, self.make, self.use, self.measure, self.freed.append, **kw)


def test_the_fastest_placement_is_kept_and_the_others_freed():
    dev = FakeDevice([4.30e-6, 4.29e-6, 4.13e-6, 4.32e-6])
    summary = dev.place(trials=4, rounds=3)
    assert dev.used == 2  # the session goes on with the fastest
    assert sorted(dev.freed) == [0, 1, 3]
    assert summary == {"tried": 4, "kept": 2, "medians_us": [4.3, 4.29, 4.13, 4.32]}
    assert dev.rounds == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3


def test_the_first_of_equal_placements_is_kept():
    dev = FakeDevice([4.1e-6, 4.2e-6, 4.1e-6])
    assert dev.place(trials=3, rounds=1)["kept"] == 0
    assert dev.freed == [1, 2]


def test_a_round_longer_than_placement_matters_is_not_placed():
    dev = FakeDevice([placement.LONGEST_PLACED_S * 1.01, 1e-6])
    summary = dev.place(trials=2, rounds=3)
    assert summary["tried"] == 1 and dev.made == 0 and dev.freed == []
    # one round told it: a long round is not timed again (fast N=20: 3 x 1.25 s a session)
    assert dev.rounds == [0]
    assert "not placed" in placement.note(summary, "counters")
    at_limit = FakeDevice([placement.LONGEST_PLACED_S, 1e-6])
    assert at_limit.place(trials=2, rounds=1)["kept"] == 1


def test_a_placement_is_judged_by_its_median_round():
    times = iter([9e-6, 4e-6, 4e-6, 5e-6, 5e-6, 1e-6])  # 0: one slow round; 1: one fast one
    dev = FakeDevice([0, 0])
    dev.measure = lambda: next(times)
    summary = dev.place(trials=2, rounds=3)
    assert summary["medians_us"] == [4.0, 5.0] and summary["kept"] == 0


@pytest.mark.parametrize("trials,rounds", [(0, 3), (3, 0)])
def test_placement_needs_a_trial_and_a_round(trials, rounds):
    with pytest.raises(ValueError):
        FakeDevice([1e-6]).place(trials=trials, rounds=rounds)


def test_the_note_states_the_spread():
    text = placement.note({"tried": 8, "kept": 2, "medians_us": [4.3, 4.13, 4.32]}, "counters")
    assert "fastest of 8" in text and "4.13-4.32 us" in text


def test_the_record_keeps_the_placement():
    summary = {"tried": 8, "kept": 3, "medians_us": [4.3] * 8}
    info = {"device": {"name": "fake GPU"}, "placement": summary}
    ms = [Measurement(count=92, wall_s=1e-3, gpu_s=4.3e-6)]
    record = RunRecord.from_measurements("fast", 8, {}, 92, ms, info)
    assert record.placement == summary and record.to_dict()["placement"] == summary
    assert RunRecord.from_measurements("fast", 8, {}, 92, ms, {}).placement == {}


def test_unset_trials_follow_the_module_as_it_is_now(monkeypatch):
    monkeypatch.setattr(placement, "TRIALS", 2)
    monkeypatch.setattr(placement, "ROUNDS", 1)
    dev = FakeDevice([2e-6, 1e-6])
    dev.used = 0
    summary = placement.place(0, dev.make, dev.use, dev.measure, dev.freed.append)
    assert summary["tried"] == 2 and dev.rounds == [0, 1]


def test_the_layout_pad_is_drawn_within_its_granules():
    assert placement.pad_granules(lambda k: 0) == 0
    assert placement.pad_granules(lambda k: k - 1) == placement.PAD_GRANULES - 1
    for bad in (-1, placement.PAD_GRANULES):
        with pytest.raises(ValueError):
            placement.pad_granules(lambda k, bad=bad: bad)
    drawn = {placement.pad_granules() for _ in range(400)}  # the system's random source
    assert drawn <= set(range(placement.PAD_GRANULES)) and len(drawn) > 1


def test_the_layout_pad_allocates_whole_granules():
    class Drv:
        def __init__(self):
            self.sizes = []

        def mem_alloc(self, size):
            self.sizes.append(size)
            return size

    drv = Drv()
    assert placement.pad_layout(drv, 0) is None and drv.sizes == []
    assert placement.pad_layout(drv, 3) == 3 * placement.GRANULE_BYTES == 6 * 2**20


def test_past_the_largest_n_the_note_says_why_nothing_was_placed():
    """fast N=20 opens without the one round that would decide (1.25 s on an H200): a board
    past LARGEST_N is not placed, and its note says so."""
    assert placement.LARGEST_N == 16
    text = placement.note_too_large(20, "counters")
    assert text == (
        "counters not placed: N=20 counts for far longer than placement matters (placed up to N=16)"
    )


def test_only_rounds_of_microseconds_are_placed():
    """A placement's level is a fraction of a microsecond: fast N=12's round (a few us) is
    placed, N=13's (tens of us) is not, and no round that rotation leaves alone is placed."""
    from nqprof.strategies import rotation

    assert placement.LONGEST_PLACED_S < rotation.LONGEST_ROUND_S
    for seconds, tried in ((7e-6, 2), (placement.LONGEST_PLACED_S, 2), (20e-6, 1)):
        assert FakeDevice([seconds, 1e-6]).place(trials=2, rounds=1)["tried"] == tried
