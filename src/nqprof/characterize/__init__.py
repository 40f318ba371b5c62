"""What CUDA Dynamic Parallelism costs on this GPU and toolkit, measured the way Wang and
Yalamanchili (2014) measured it on Kepler (nqprof.papers.wang holds their numbers):

* :mod:`.launch`: device launch time vs launch count, per launch mode (their Fig. 5);
* :mod:`.reserve`: device memory the runtime reserves vs the pending-launch and heap
  limits (their Fig. 6(a)), and the sync-depth limit CDP2 refuses (their Fig. 6(b));
* :mod:`.ideal`: each CDP strategy's time without launch overhead, and the speedups over
  the best non-CDP strategy, measured and ideal (their Fig. 4);
* :mod:`.efficiency`: warp execution efficiency, memory irregularity and L2 hit rate
  read with Nsight Compute, and their WEEI;
* :mod:`.residency` (nqprof's own): the blocks an SM holds at once of a grid launched from
  the host and of the same grid launched from the device, by dynamic shared memory.

Each module separates the GPU part (a session in a watchdog worker, :mod:`.probe`) from
pure functions that turn recorded results (JSON) into tables and figures, so that
everything but the measurement is tested without a GPU. `nqprof characterize`
(nqprof.cli.characterize) runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..cuda.sources import KernelSource
from ..errors import InputError

#: The kernels of the suite (kernels/characterize.cu), compiled and device-linked with the
#: strategies' by the build catalog (nqprof.catalog).
SOURCES = (
    KernelSource(
        "characterize.cu",
        cdp=True,
        kernels=(
            "char_launch",
            "char_empty",
            "char_resident",
            "char_resident_launch",
            "lat_child",
            "lat_host_parent",
            "lat_cdp_parent",
        ),
    ),
)


#: What a probe's reading says of its machine (:func:`machine_of`).
MACHINE_KEYS = ("device", "driver", "toolkit")


def check_listed(paths: Sequence[str], known: Sequence[str]) -> list[str]:
    """``paths`` (--paths) if each is one of ``known`` and there is one, else a one-line
    InputError listing them."""
    if not paths or any(p not in known for p in paths):
        raise InputError(
            f"--paths takes a comma list of {', '.join(known)}, got {','.join(paths)!r}"
        )
    return list(paths)


def machine_of(session) -> dict[str, Any]:
    """A GPU session's device, driver and toolkit, as a probe's readings carry them."""
    info = session.gpu.facts
    return {
        "device": info["name"],
        "driver": info["driver"],
        "toolkit": session.modules[0].toolkit_version,
    }


def record_machine(rec) -> dict[str, Any]:
    """A run record's device, driver and toolkit, as a measurement document keeps them."""
    return {
        "device": rec.device.get("name"),
        "driver": rec.device.get("driver"),
        "toolkit": rec.toolkit.get("version"),
    }


def split_machine(readings: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[dict]]:
    """(the machine the readings were taken on, the readings without it)."""
    machine = {k: readings[0][k] for k in MACHINE_KEYS} if readings else {}
    return machine, [{k: v for k, v in r.items() if k not in MACHINE_KEYS} for r in readings]


def check_kind(doc: dict[str, Any], kind: str, what: str) -> None:
    """A kept measurement of the expected kind, else a one-line :class:`InputError`."""
    if doc.get("kind") != kind:
        raise InputError(f"not an nqprof {what} (kind {doc.get('kind')!r}, expected {kind!r})")


def load_points(
    doc: dict[str, Any], kind: str, what: str, from_dict: Callable[[dict], Any]
) -> list:
    """The points of a kept measurement (``doc["points"]``), each through ``from_dict``."""
    check_kind(doc, kind, what)
    try:
        return [from_dict(p) for p in doc["points"]]
    except (KeyError, TypeError) as exc:
        raise InputError(f"malformed {what}: {exc}") from None
