"""The watchdog worker: hangs, crashes, wrong counts and exceptions become clear errors."""

import time

import pytest

from nqprof.errors import CountMismatchError, NqprofError, WatchdogError
from nqprof.options import describe
from nqprof.runner import WorkerRunner

from fake_strategies import STRATEGY as misbehaving


def _run(how, timeout=20.0):
    params = misbehaving.resolve(8, {"how": how})
    with WorkerRunner(misbehaving, 8, params, timeout=timeout) as runner:
        return runner.run_once()


def test_hang_is_killed_and_named():
    t0 = time.perf_counter()
    with pytest.raises(WatchdogError, match=r"misbehaving N=8 \(how=hang\).*within 2 s"):
        _run("hang", timeout=2.0)
    assert time.perf_counter() - t0 < 30


def test_crash_is_reported_with_exit_code():
    with pytest.raises(WatchdogError, match=r"misbehaving N=8 \(how=die\): worker process died.*exit code 3"):
        _run("die")


def test_wrong_count_is_an_error_not_a_timing():
    with pytest.raises(CountMismatchError, match="counted 12345, expected 92"):
        _run("wrong")


def test_unexpected_exception_becomes_one_line_error():
    with pytest.raises(NqprofError, match="RuntimeError: boom"):
        _run("raise")


def test_describe():
    assert describe("dp3", 17, {"block": 128, "depth": 4}) == "dp3 N=17 (block=128, depth=4)"
    assert describe("serial", 14, {}) == "serial N=14"
