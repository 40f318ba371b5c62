"""The base of the CDP strategies: what every one of them declares the same way, once.

A CDP strategy module says what its paper's paragraph says -- its own parameters
(``paper_params``: host depth, search depth, block sizes, ...), their cross-checks
(``check``), what its run needs for the plan (``recursion``) and its session (which kernel
it launches and how) -- and names the runtime parameters that apply to its kernels
(``runtime``, in the order `nqprof strategies` lists them). From this base come the rest:
a GPU strategy with device-side launches, N >= 2, the device accounting, its kernel source
(from its session's kernels), the runtime parameters themselves (pending-launch limit,
launch mode, device timeline, heap, chunk, config), ``open`` and the measurement builds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ...cuda.sources import KernelSource
from ..base import Param, Strategy
from .accounting import LAYOUT as ACCOUNTING
from .params import heap_param, launch_param, measurement_build, pending_param
from .plan import chunk_param, config_param
from .session import CdpSession
from .timeline import timeline_param

#: The parameters of the CDP runtime and of nqprof's machinery around a CDP run, by name.
RUNTIME_PARAMS: dict[str, Callable[[], Param]] = {
    "pending": pending_param,  # the pending-launch limit (every CDP kernel)
    "launch": launch_param,  # the measurement builds (every CDP kernel, kernels/cdp.cuh)
    "timeline": timeline_param,  # device-side grid records (kernels that write them)
    "heap": heap_param,  # the device malloc heap (kernels that allocate on the device)
    "chunk": chunk_param,  # host boards per root launch (the plan)
    "config": config_param,  # limits from the plan or the runtime's defaults (Carneiro et al.)
}


class CdpStrategy(Strategy):
    """Base of the strategies that launch kernels from the device. Subclasses set ``name``,
    ``order``, ``title``, ``reference``, ``paper_params``, ``runtime`` and ``session``, and
    implement ``check`` and ``recursion``."""

    device = "gpu"
    cdp = True
    min_n = 2
    counters = ACCOUNTING
    #: The parameters the strategy's paper describes, in display order.
    paper_params: ClassVar[tuple[Param, ...]] = ()
    #: The runtime parameters that apply to its kernels (keys of :data:`RUNTIME_PARAMS`),
    #: listed after its own, in this order.
    runtime: ClassVar[tuple[str, ...]] = (
        "pending",
        "launch",
        "timeline",
        "heap",
        "chunk",
        "config",
    )
    #: Its session: says which kernels it launches (``source``, ``root_kernel``,
    #: ``child_kernels``) and how (``launch_root``).
    session: ClassVar[type[CdpSession]]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unknown = [name for name in cls.runtime if name not in RUNTIME_PARAMS]
        if unknown:
            raise TypeError(
                f"{cls.__name__}.runtime names unknown parameters "
                f"{unknown} (known: {list(RUNTIME_PARAMS)})"
            )
        cls.params = (*cls.paper_params, *(RUNTIME_PARAMS[name]() for name in cls.runtime))
        session = cls.__dict__.get("session")
        if session is not None:
            cls.sources = (
                KernelSource(
                    session.source, cdp=True, kernels=(session.root_kernel, *session.child_kernels)
                ),
                *session.extra_sources,
            )
            cls.child_kernel = session.child_kernels[0]

    def recursion(self, n: int, params: dict[str, Any], host_boards: int):
        """What the plan needs (nqprof.strategies.cdp.plan): one of :mod:`.recursions`."""
        raise NotImplementedError

    def measurement_build(self, params: Mapping[str, Any]) -> str | None:
        return measurement_build(params)

    def open(self, n: int, params: dict[str, Any]) -> CdpSession:
        return self.session(self, n, params)
