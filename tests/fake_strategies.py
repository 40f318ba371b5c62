"""Test doubles: strategies that misbehave on purpose, to test the watchdog (imported by
worker processes), and strategies whose times are given, not measured (scripted, scaled)."""

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


class _Scripted(Session):
    """Counts right and reports the times a script gives, round after round (no clock):
    ``base_us`` times ``factor``/1000, times the host's drift (``drift``/1000 a round,
    compounded), times a seeded log-normal noise of ``noise``/1000."""

    def __init__(self, n, params):
        import random

        from nqprof.problem import known_count

        self.count = known_count(n)
        self.params, self.round = params, 0
        self.rng = random.Random(params["seed"])

    def run_once(self):
        import math

        p = self.params
        seconds = p["base_us"] * 1e-6 * p["factor"] / 1000 * (p["drift"] / 1000) ** self.round
        seconds *= math.exp(self.rng.gauss(0, p["noise"] / 1000))
        self.round += 1
        return Measurement(count=self.count, wall_s=seconds)


class Scripted(Strategy):
    name = "scripted"
    title = "test double: scripted times"
    params = (
        Param("base_us", "microseconds a round", default=10_000, lo=1, hi=10**9),
        Param("factor", "per mille of base", default=1000, lo=1, hi=10**6),
        Param(
            "drift", "per mille: a round's time over the one before", default=1000, lo=1, hi=2000
        ),
        Param("noise", "per mille: the log-normal noise's spread", default=0, lo=0, hi=1000),
        Param("seed", "the noise's seed", default=0, lo=0, hi=10**9),
    )

    def open(self, n, params):
        return _Scripted(n, params)


SCRIPTED = Scripted()


class _Scaled(Session):
    """Counts right and reports ``scale`` percent of 1 ms a round (no clock), give or take
    ``noise`` (a fraction of it, uniform); as the GPU's time too with ``gpu``."""

    def __init__(self, n, scale, noise, gpu):
        import random

        from nqprof.problem import known_count

        self.count, self.seconds = known_count(n), 1e-3 * scale / 100
        self.noise, self.gpu, self.rng = noise, gpu, random.Random()

    def run_once(self):
        seconds = self.seconds * (1 + self.noise * self.rng.uniform(-1, 1))
        return Measurement(count=self.count, wall_s=seconds, gpu_s=seconds if self.gpu else None)

    def info(self):
        return {"source_hash": "same"}


class Scaled(Strategy):
    """A double whose rounds take its parameter ``scale`` (percent of 1 ms)."""

    title = "test double: every round takes its scale"
    params = (Param("scale", "percent of 1 ms a round takes", default=100, lo=10, hi=1000),)

    def __init__(self, name: str, noise: float = 0.0, gpu: bool = False):
        self.name, self.noise, self.gpu = name, noise, gpu

    def open(self, n, params):
        return _Scaled(n, params["scale"], self.noise, self.gpu)
