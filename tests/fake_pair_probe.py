"""A paired probe on the CPU (imported by workers): characterize launch's session shape, its
t1 and t2 made up. Round k's t1 - t2 is 1 ms times (1 + $NQPROF_TEST_PAIR_NOISE * (k % 3 - 1)),
its launches COUNT each, the third round's failing one; a round's host time is about 10 ms."""

import os
import time

from nqprof.characterize.probe import Probe, paired_round


class _PairSession:
    mode = "default"

    def __init__(self, params):
        self.params = params
        self.noise = float(os.environ.get("NQPROF_TEST_PAIR_NOISE", "0"))

    def ran(self):
        pass

    def info(self):
        device = {"name": "fake GPU", "driver": "0", "pci_bus_id": None}
        limits = {"pending_launches": 64}
        return {"device": device, "toolkit": {"version": "0"}, "memory": {"limits": limits}}

    def run_once(self):
        k = getattr(self, "pair_rounds", 0)
        count = self.params["count"]

        def timed(func, label):
            time.sleep(0.005)
            if label.endswith("t2"):
                return 0.002, 0, 0, 0, 0
            cost = 0.001 * (1 + self.noise * (k % 3 - 1))
            return 0.002 + cost, count, int(k == 2), 0, 0

        return paired_round(self, "with", "without", timed)

    def close(self):
        pass


class PairProbe(Probe):
    name = "fake-pair"
    device = "cpu"

    @property
    def needs_gpu(self):
        return False

    def open(self, n, params):
        return _PairSession(params)


PROBE = PairProbe()
