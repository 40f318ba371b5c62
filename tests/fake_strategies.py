"""Strategies that misbehave on purpose, to test the watchdog (imported by worker processes)."""

import os
import time

from nqprof.result import Measurement
from nqprof.strategies.base import Param, Session, Strategy


class _Behaviour(Session):
    def __init__(self, how, n):
        self.how, self.n = how, n

    def run_once(self):
        if self.how == "hang":
            time.sleep(3600)
        if self.how == "die":
            os._exit(3)
        if self.how == "wrong":
            return Measurement(count=12345, wall_s=0.0)
        raise RuntimeError("boom")


class Misbehaving(Strategy):
    name = "misbehaving"
    title = "test double"
    params = (
        Param("how", "what goes wrong", default="hang", choices=("hang", "die", "wrong", "raise")),
    )

    def open(self, n, params):
        return _Behaviour(params["how"], n)


STRATEGY = Misbehaving()
