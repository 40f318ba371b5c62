"""What the CDP strategies (dp1, dp2, dp3, dpswap, cdp-bp, cdp-dp3) share on the host,
written once:

* :mod:`.strategy`: :class:`CdpStrategy`, their base (the shared parameters, ``open``);
* :mod:`.model`: nqprof's exact host model of the generations, and the estimates that size
  the runtime;
* :mod:`.limits`: the pending-launch and heap limits, decided before the first launch;
* :mod:`.accounting`: the device-side accounting (kernels/cdp.cuh), decoded and checked;
* :mod:`.params`: the parameters they share;
* :mod:`.session`: the session every CDP strategy runs in.
"""

from .accounting import *  # noqa: F401,F403
from .limits import *  # noqa: F401,F403
from .params import *  # noqa: F401,F403
from .session import CdpSession  # noqa: F401
from .strategy import CdpStrategy  # noqa: F401
