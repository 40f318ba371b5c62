"""CdpStrategy: a CDP strategy declares what its paper says; the rest comes from the base."""

from pathlib import Path

import pytest

from nqprof.strategies import all_strategies, get
from nqprof.strategies.base import Param
from nqprof.strategies.cdp.accounting import LAYOUT
from nqprof.strategies.cdp.recursions import condensed_recursion
from nqprof.strategies.cdp.session import CdpSession
from nqprof.strategies.cdp.strategy import RUNTIME_PARAMS, CdpStrategy

SIX = ("dp1", "dp2", "dp3", "dpswap", "cdp-bp", "cdp-dp3")


class _Session(CdpSession):
    source = "toy.cu"
    root_kernel = "toy_root"
    child_kernels = ("toy_child",)

    def launch_root(self):
        pass


class _Toy(CdpStrategy):
    name = "toy"
    title = "a CDP strategy in a few lines"
    session = _Session
    paper_params = (Param("search", "rows searched", default=2, lo=1, hi=8),)
    runtime = ("pending", "launch", "chunk")

    def recursion(self, n, params, host_boards):
        return condensed_recursion(
            self.name, n, {**params, "depth": 1}, host_boards, False, params["search"]
        )


def test_a_new_cdp_strategy_declares_only_its_own():
    toy = _Toy()
    assert [p.name for p in toy.params] == ["search", "pending", "launch", "chunk"]
    assert toy.sources[0].file == "toy.cu" and toy.sources[0].cdp
    assert toy.sources[0].kernels == ("toy_root", "toy_child") and toy.child_kernel == "toy_child"
    assert (toy.device, toy.cdp, toy.min_n, toy.counters) == ("gpu", True, 2, LAYOUT)
    assert toy.resolve(8) == {"search": 2, "pending": 0, "launch": "real", "chunk": 0}
    assert toy.measurement_build({"launch": "none"}).startswith("measurement build launch=none")
    assert toy.measurement_build({"launch": "real"}) is None


def test_runtime_names_are_checked():
    with pytest.raises(TypeError, match="unknown parameters"):
        type("Bad", (CdpStrategy,), {"runtime": ("pending", "heap_size")})


@pytest.mark.parametrize("name", SIX)
def test_the_six_take_the_shared_parts_from_the_base(name):
    s = get(name)
    assert isinstance(s, CdpStrategy) and issubclass(s.session, CdpSession)
    shared = [p.name for p in s.params if p.name in {f().name for f in RUNTIME_PARAMS.values()}]
    assert shared == [RUNTIME_PARAMS[key]().name for key in s.runtime]
    text = Path(__import__(type(s).__module__, fromlist=["x"]).__file__).read_text()
    for declared_once in (
        "pending_param",
        "launch_param",
        "heap_param",
        "chunk_param",
        "config_param",
        "timeline_param",
        "KernelSource(",
        "cdp = True",
        "def open(",
    ):
        assert declared_once not in text, (name, declared_once)


def test_every_cdp_strategy_is_a_cdp_strategy():
    assert {s.name for s in all_strategies() if s.cdp} >= set(SIX)
    assert all(isinstance(s, CdpStrategy) for s in all_strategies() if s.cdp)
