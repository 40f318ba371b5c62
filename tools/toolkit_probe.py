"""What this machine's CUDA driver does with code built by older and newer toolkits.

    python3 tools/toolkit_probe.py [FOLDER]       # default .gpuhost/probe

FOLDER holds the artifacts tools/build_probe_artifacts.sh builds (no compiler is needed
here). Each is loaded the way PyCUDA loads nqprof's kernels, in a fresh context, then its
kernel is launched and the result checked. One line per artifact: name, the toolkit that
built it, kind, result (or the CUDA error's name and message, and where it occurred).
After them, what nqprof's build says for each toolkit release against this driver, and
whether that agrees with what happened to the artifacts nqprof's build would make.
Exit code 0 when it agrees (or there is nothing to compare), 1 otherwise, 2 on no artifacts.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    from nqprof.cuda.compat import (
        check_toolkit_against_driver,
        driver_can_load,
        driver_cuda_version,
        parse_release,
    )
except ImportError:  # run from a checkout without nqprof installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from nqprof.cuda.compat import (
        check_toolkit_against_driver,
        driver_can_load,
        driver_cuda_version,
        parse_release,
    )

#: Artifact kinds, as printed.
CUBIN = "cubin"
PTX = "ptx (driver JIT)"
RDC_PTX_LINK = "rdc-ptx+cudadevrt link"
RDC_CUBIN_LINK = "rdc-cubin+cudadevrt link"
LINKED_CUBIN = "nvlink-linked cubin"

FEINBUBE_N, FEINBUBE_DEPTH, FEINBUBE_BLOCK, FEINBUBE_COUNT = 12, 4, 64, 14200

_NAME = re.compile(r"^(plain|cdp|feinbube|cudadevrt)\.(\d+\.\d+)\.")


@dataclass(frozen=True)
class Case:
    name: str
    toolkit: str  # release of the toolkit that built the device code, e.g. "13.5"
    kind: str
    program: str  # "plain", "cdp" or "feinbube": which launch check applies
    code: Path
    library: Path | None = None  # libcudadevrt.a, for the driver-linked kinds
    library_toolkit: str | None = None
    nqprof_build: bool = (
        False  # what nqprof's build makes of a plain source (a cubin) or a CDP one (linked ahead)
    )

    @property
    def cdp(self) -> bool:
        return self.program == "cdp"

    @property
    def built_by(self) -> str:
        if self.library_toolkit and self.library_toolkit != self.toolkit:
            return f"{self.toolkit} (cudadevrt {self.library_toolkit})"
        return self.toolkit


@dataclass
class Outcome:
    case: Case
    ok: bool  # loaded, launched and the result checked
    loaded: bool
    stage: str | None = None  # the step that failed
    error: str | None = None  # CUDA error name, e.g. CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    detail: str = ""

    def line(self) -> str:
        c = self.case
        if self.ok:
            result = f"OK: {self.detail}"
        else:
            result = f"FAILED at {self.stage}: {self.error or '?'}: {self.detail}"
        return f"{c.name:<42} {c.built_by:<22} {c.kind:<25} {result}"


def release_key(release: str) -> tuple[int, int]:
    return parse_release(release)


def discover(folder: Path) -> list[Case]:
    """The cases the artifacts in ``folder`` make, oldest toolkit first, then cross-links
    of the oldest toolkit's code with a newer toolkit's libcudadevrt.a and back."""
    folder = Path(folder)
    releases = sorted(
        {m.group(2) for p in folder.iterdir() if (m := _NAME.match(p.name))}, key=release_key
    )
    cases: list[Case] = []

    def add(
        name: str,
        file: str,
        release: str,
        kind: str,
        program: str,
        lib_release: str | None = None,
        nqprof=False,
    ):
        code = folder / file
        lib = folder / f"cudadevrt.{lib_release}.a" if lib_release else None
        if code.is_file() and (lib is None or lib.is_file()):
            cases.append(Case(name, release, kind, program, code, lib, lib_release, nqprof))

    for r in releases:
        add(f"plain.{r}.cubin", f"plain.{r}.cubin", r, CUBIN, "plain", nqprof=True)
        add(f"plain.{r}.ptx", f"plain.{r}.ptx", r, PTX, "plain")
        add(f"cdp.{r}.rdc.ptx + cudadevrt.{r}.a", f"cdp.{r}.rdc.ptx", r, RDC_PTX_LINK, "cdp", r)
        add(
            f"cdp.{r}.rdc.cubin + cudadevrt.{r}.a",
            f"cdp.{r}.rdc.cubin",
            r,
            RDC_CUBIN_LINK,
            "cdp",
            r,
        )
        add(f"cdp.{r}.linked.cubin", f"cdp.{r}.linked.cubin", r, LINKED_CUBIN, "cdp", nqprof=True)
        add(f"feinbube.{r}.cubin", f"feinbube.{r}.cubin", r, CUBIN, "feinbube", nqprof=True)
    old = releases[0] if releases else None
    for new in releases[1:]:
        add(
            f"cdp.{old}.rdc.ptx + cudadevrt.{new}.a",
            f"cdp.{old}.rdc.ptx",
            old,
            RDC_PTX_LINK,
            "cdp",
            new,
        )
        add(
            f"cdp.{new}.rdc.cubin + cudadevrt.{old}.a",
            f"cdp.{new}.rdc.cubin",
            new,
            RDC_CUBIN_LINK,
            "cdp",
            old,
        )
    return cases


def cubin_notes(path: Path) -> str:
    """What a cubin says about its toolkit: the CUDA version in ``.note.nv.cuinfo`` (e.g.
    135 for 13.5) and the raw ``.nv.compat`` attributes, which a driver may check."""
    data = Path(path).read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = data[headers[shstrndx][4] :]
    sections = {
        names[h[0] : names.index(b"\0", h[0])].decode(): data[h[4] : h[4] + h[5]] for h in headers
    }
    parts = [
        f"ELF ABI {data[8]}, type {'exec' if struct.unpack_from('<H', data, 16)[0] == 2 else 'rel'}"
    ]
    note = sections.get(".note.nv.cuinfo", b"")
    if len(note) >= 32:
        _, arch, cuda = struct.unpack_from("<HHI", note, 24)
        parts.append(f"cuinfo sm_{arch} CUDA {cuda}")
    if ".nv.compat" in sections:
        parts.append(f".nv.compat {sections['.nv.compat'].hex()}")
    return ", ".join(parts)


# --- CUDA errors by name ---------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _error_table() -> list[tuple[str, str]]:
    """(message, name) of every CUresult the driver knows, longest message first."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return []
    table = []
    for code in range(1, 1000):
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if (
            lib.cuGetErrorName(code, ctypes.byref(name)) == 0
            and lib.cuGetErrorString(code, ctypes.byref(text)) == 0
        ):
            table.append((text.value.decode(), name.value.decode()))
    return sorted(table, key=lambda item: -len(item[0]))


def error_name(message: str) -> str | None:
    """The CUresult name whose message PyCUDA's error text quotes."""
    lowered = message.lower()
    return next((name for text, name in _error_table() if text.lower() in lowered), None)


def _one_line(text: str, limit: int = 400) -> str:
    text = " | ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- loading and checking ----------------------------------------------------------------


class _Failed(Exception):
    def __init__(self, stage: str, exc: BaseException, log: str = ""):
        self.stage, self.exc, self.log = stage, exc, log


def _step(stage: str, fn, *args, log: list[str] | None = None):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - every failure is a result here
        raise _Failed(stage, exc, " ".join(log or [])) from None


def _load(drv, case: Case):
    data = case.code.read_bytes()
    if case.library is None:
        if case.kind == PTX:
            data += b"\0"
        return _step("cuModuleLoadDataEx", drv.module_from_buffer, data)
    log: list[str] = []

    def handler(success, info, error):
        if error and error.strip():
            log.append(_one_line(error, 300))

    # As PyCUDA's DynamicModule: Linker(message_handler, link_options, log_verbose).
    linker = _step("Linker", drv.Linker, handler, None, False)
    input_type = drv.jit_input_type.PTX if case.code.suffix == ".ptx" else drv.jit_input_type.CUBIN
    _step("cuLinkAddData", linker.add_data, data, input_type, case.code.name, log=log)
    _step(
        "cuLinkAddFile(libcudadevrt.a)",
        linker.add_file,
        str(case.library),
        drv.jit_input_type.LIBRARY,
        log=log,
    )
    return _step("cuLinkComplete", linker.link_module, log=log)


def _check_plain(drv, module) -> str:
    func = module.get_function("probe_plain")
    out = np.zeros(32, dtype=np.int32)
    func(drv.Out(out), np.int32(1000), block=(32, 1, 1), grid=(1, 1))
    want = 1000 + np.arange(32, dtype=np.int32)
    if not np.array_equal(out, want):
        raise ValueError(f"out = {out[:4].tolist()}..., want {want[:4].tolist()}...")
    return "loaded; out[i] = 1000 + i as expected"


def _check_cdp(drv, module) -> str:
    func = module.get_function("probe_parent")
    out = np.full(33, -1, dtype=np.int32)
    func(drv.InOut(out), np.int32(1000), block=(32, 1, 1), grid=(1, 1))
    drv.Context.synchronize()
    want = 2000 + np.arange(32, dtype=np.int32)
    if out[32] != 0:
        raise ValueError(f"the device-side launch returned cudaError {out[32]}")
    if not np.array_equal(out[:32], want):
        raise ValueError(f"child wrote {out[:4].tolist()}..., want {want[:4].tolist()}...")
    return "loaded; the device-launched child wrote out[i] = 2000 + i"


def _check_feinbube(drv, module) -> str:
    from nqprof.subproblems import expand

    boards = expand(FEINBUBE_N, FEINBUBE_DEPTH)
    func = module.get_function("feinbube_dynamic")
    levels = FEINBUBE_N - boards.min_row
    total = np.zeros(1, dtype=np.uint64)
    func(
        drv.In(boards.cols),
        drv.In(boards.ld),
        drv.In(boards.rd),
        drv.In(boards.row),
        np.uint32(len(boards)),
        np.int32(FEINBUBE_N),
        np.int32(levels),
        drv.InOut(total),
        block=(FEINBUBE_BLOCK, 1, 1),
        grid=(-(-len(boards) // FEINBUBE_BLOCK), 1),
        shared=4 * 4 * levels * FEINBUBE_BLOCK,
    )
    count = int(total[0]) * boards.multiplier
    if count != FEINBUBE_COUNT:
        raise ValueError(f"N={FEINBUBE_N} counted {count}, want {FEINBUBE_COUNT}")
    return f"loaded; feinbube_dynamic counted N={FEINBUBE_N}: {count} solutions"


_CHECKS = {"plain": _check_plain, "cdp": _check_cdp, "feinbube": _check_feinbube}


def run_case(drv, case: Case, device: int = 0) -> Outcome:
    """Load and check one case in a fresh context (a failure cannot spoil the next case)."""
    ctx = drv.Device(device).make_context()
    try:
        try:
            module = _load(drv, case)
        except _Failed as failed:
            text = _one_line(f"{failed.exc}")
            detail = f"{text} [{type(failed.exc).__name__}]" + (
                f"; linker log: {failed.log}" if failed.log else ""
            )
            return Outcome(
                case,
                ok=False,
                loaded=False,
                stage=failed.stage,
                error=error_name(text),
                detail=detail,
            )
        try:
            return Outcome(case, ok=True, loaded=True, detail=_CHECKS[case.program](drv, module))
        except Exception as exc:  # noqa: BLE001
            text = _one_line(str(exc))
            return Outcome(
                case,
                ok=False,
                loaded=True,
                stage="launch/check",
                error=error_name(text),
                detail=f"{text} [{type(exc).__name__}]",
            )
    finally:
        ctx.pop()
        ctx.detach()


def probe(folder: Path) -> tuple[str, list[Outcome]]:
    """(the driver's CUDA release, the outcome of every case in ``folder``)."""
    import pycuda.driver as drv

    drv.init()
    return driver_cuda_version(drv), [run_case(drv, case) for case in discover(folder)]


def nqprof_verdicts(driver: str, outcomes: list[Outcome]) -> list[tuple[Outcome, bool, str | None]]:
    """For each case nqprof's build would make: (outcome, whether nqprof expects it to
    load, nqprof's message)."""
    rows = []
    for o in outcomes:
        if o.case.nqprof_build:
            c = o.case
            rows.append(
                (
                    o,
                    driver_can_load(c.toolkit, driver, c.cdp),
                    check_toolkit_against_driver(c.toolkit, driver, c.cdp),
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=".gpuhost/probe", type=Path)
    args = parser.parse_args(argv)
    if not args.folder.is_dir() or not discover(args.folder):
        print(
            f"no probe artifacts in {args.folder}: run "
            "tools/build_probe_artifacts.sh where the toolkits are"
        )
        return 2
    import pycuda
    import pycuda.driver as drv

    drv.init()
    dev = drv.Device(0)
    driver = driver_cuda_version(drv)
    print(
        f"driver: CUDA {driver} (cuDriverGetVersion {drv.get_driver_version()}); device: "
        f"{dev.name()} sm_{''.join(map(str, dev.compute_capability()))}; "
        f"PyCUDA {pycuda.VERSION_TEXT}"
    )
    listing = args.folder / "toolkits.txt"
    if listing.is_file():
        for line in listing.read_text().splitlines():
            print(f"built with: {line}")
    for ptx in sorted(args.folder.glob("*.ptx")):
        m = re.search(r"^\.version\s+(\S+)", ptx.read_text(), re.M)
        print(f"PTX ISA of {ptx.name}: {m.group(1) if m else '?'}")
    for cubin in sorted(args.folder.glob("*.cubin")):
        try:
            print(f"{cubin.name}: {cubin_notes(cubin)}")
        except (struct.error, ValueError, IndexError) as exc:
            print(f"{cubin.name}: unreadable ELF ({exc})")
    print()
    _, outcomes = probe(args.folder)
    for o in outcomes:
        print(o.line())
    print()
    agree = True
    print(f"what nqprof's build says against this driver (CUDA {driver}):")
    for o, expects, message in nqprof_verdicts(driver, outcomes):
        same = expects == o.ok
        agree &= same
        action = "builds" if expects else "refuses (UnavailableError, a skip)"
        note = f": {message}" if message else ""
        print(
            f"  {o.case.name:<42} nqprof {action}{note} -> {'agrees' if same else 'DISAGREES'} "
            f"(observed {'OK' if o.ok else 'FAILED'})"
        )
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
