"""A GPU-like strategy whose close takes a second, as a context's teardown (imported by
spawned workers): the parent goes on meanwhile, the next worker waits for it to be gone. Its
session is fake_process_bound's (it notes whether the worker before it was still alive)."""

import atexit
import os
import time

from fake_process_bound import ProcessBound, _ProcessBound


class _SlowClose(_ProcessBound):
    def close(self):
        time.sleep(1.0)
        mark = os.environ.get("NQPROF_TEST_EXIT_MARK")
        if mark:  # written by the interpreter's exit only: never after os._exit
            atexit.register(lambda: open(mark, "w").write("exited normally"))


class SlowClose(ProcessBound):
    name = "slow-close"
    title = "test double: a GPU case whose close takes a second"

    def open(self, n, params):
        return _SlowClose(os.environ["NQPROF_TEST_PID_LOG"], n)


STRATEGY = SlowClose()
