"""A CUDA toolkit made of NVIDIA's PyPI wheels, and the GPU gate of the tox CUDA environments.

``nvidia-cuda-nvcc`` ships nvcc, ptxas, nvlink and friends; ``nvidia-cuda-runtime`` the
headers (cuda_runtime.h ...) and ``libcudadevrt.a``; ``nvidia-cuda-crt`` the crt/
headers; ``nvidia-nvvm`` cicc and libdevice; ``nvidia-cuda-cccl`` libcu++ (``nv/target``).
All of them install into ``site-packages/nvidia/cu13``. nvcc's dependencies on the other
three are unpinned, so each is pinned here to the same release. Some releases'
``nvcc.profile`` expects the headers under ``targets/<arch>-linux/``, which the wheels lack,
so :func:`make_root` builds a toolkit root of symlinks with both layouts. nvcc takes its root
from the path it was started by (symlinks are not resolved), so ``bin/`` holds one link per
file.

    python -m nqprof.cuda.wheel_toolkit install cuda13.0 DIR   # pip install + make DIR
    python -m nqprof.cuda.wheel_toolkit if-gpu -- CMD ...      # run CMD only on a GPU machine

Both print a ``skipped: ...`` line and exit 0 when the toolkit or the GPU is missing.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError, NqprofError, UnavailableError
from .toolkit import find_toolkit, toolkit_version

#: The wheels that together make a toolkit able to compile and device-link nqprof's kernels
#: (``nvidia-cuda-cccl``: libcu++'s headers, ``nv/target``, which cooperative groups include).
WHEELS = (
    "nvidia-cuda-nvcc",
    "nvidia-cuda-runtime",
    "nvidia-cuda-crt",
    "nvidia-nvvm",
    "nvidia-cuda-cccl",
)

#: The nqprof extras the GPU tests and benchmarks need.
GPU_EXTRAS = ("cuda", "test")

_TARGET_DIRS = {"x86_64": "x86_64-linux", "aarch64": "sbsa-linux"}


def parse_version(text: str) -> str:
    """ "cuda13.0" or "13.0" -> "13.0"."""
    m = re.fullmatch(r"(?:cuda)?(\d+\.\d+)", text.strip())
    if not m:
        raise InputError(f"{text!r} names no CUDA release (expected e.g. cuda13.0)")
    return m.group(1)


def wheel_specs(version: str) -> list[str]:
    return [f"{name}=={version}.*" for name in WHEELS]


def installed(version: str) -> bool:
    """Whether every wheel of ``version`` is installed in this interpreter's environment."""
    try:
        return all(importlib.metadata.version(name).startswith(f"{version}.") for name in WHEELS)
    except importlib.metadata.PackageNotFoundError:
        return False


def wheel_root() -> Path:
    """``site-packages/nvidia/cuNN``: the installed wheels' common folder."""
    spec = importlib.util.find_spec("nvidia")
    places = list(spec.submodule_search_locations or ()) if spec else []
    found = sorted(
        (p for place in places for p in Path(place).glob("cu*") if (p / "bin" / "nvcc").is_file()),
        reverse=True,
    )
    if not found:
        raise UnavailableError(
            f"no nvidia/cu*/bin/nvcc in this environment: pip install {' '.join(WHEELS)}"
        )
    return found[0]


def _link(dest: Path, target: Path | str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.symlink_to(target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def make_root(wheels: Path, dest: Path) -> Path:
    """Replace ``dest`` by a toolkit root of symlinks into ``wheels`` (nvidia/cuNN)."""
    _remove(dest)
    for entry in sorted((wheels / "bin").iterdir()):
        _link(dest / "bin" / entry.name, entry)
    for name in ("include", "lib", "nvvm"):
        if (wheels / name).exists():
            _link(dest / name, wheels / name)
    _link(dest / "lib64", "lib")
    target = dest / "targets" / _TARGET_DIRS.get(platform.machine(), f"{platform.machine()}-linux")
    for name in ("include", "lib"):
        _link(target / name, Path("..", "..", name))
    return dest


def install(version: str, dest: Path) -> int:
    """pip-install the ``version`` wheels (unless present) and build the root at ``dest``."""
    _remove(dest)  # a failed install must not leave an older root behind
    if not installed(version):
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", *wheel_specs(version)]
        print("+", " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.splitlines() if line.strip()] or ["no output"]
            print(
                f"skipped: the CUDA {version} compiler wheels "
                f"cannot be installed: {lines[-1].strip()}"
            )
            return 0
    root = make_root(wheel_root(), dest)
    got = toolkit_version(root / "bin" / "nvcc")
    if got != version:
        raise UnavailableError(f"{root}/bin/nvcc is CUDA {got}, not {version}")
    names = ", ".join(f"{n} {importlib.metadata.version(n)}" for n in WHEELS)
    print(f"CUDA {version} toolkit root {root} ({names})")
    return 0


def _extra_requirements(extras: Sequence[str]) -> list[str]:
    """The requirements nqprof's metadata lists for ``extras``."""
    names = "|".join(map(re.escape, extras))
    wanted = re.compile(rf"""extra\s*==\s*["']({names})["']""")
    reqs = importlib.metadata.requires("nqprof") or []
    return [r.split(";")[0].strip() for r in reqs if wanted.search(r)]


def _pycuda_error(env: dict[str, str]) -> str | None:
    """Why ``import pycuda.driver`` fails in a fresh interpreter, or None if it works."""
    proc = subprocess.run(
        [sys.executable, "-c", "import pycuda.driver"], capture_output=True, text=True, env=env
    )
    return None if proc.returncode == 0 else ((proc.stderr.strip().splitlines() or ["failed"])[-1])


def if_gpu(cmd: Sequence[str]) -> int:
    """Run ``cmd`` (with the toolkit's bin first on PATH) if a GPU, the toolkit and PyCUDA are
    there, installing nqprof's GPU extras first if PyCUDA is missing; else print why not."""
    smi = shutil.which("nvidia-smi")
    probe = subprocess.run([smi, "-L"], capture_output=True, text=True) if smi else None
    if probe is None or probe.returncode != 0 or "GPU" not in probe.stdout:
        print(
            "skipped: no GPU (nvidia-smi "
            f"{'missing' if smi is None else 'lists none'}): {' '.join(cmd)}"
        )
        return 0
    try:
        toolkit = find_toolkit()
    except UnavailableError as exc:
        print(f"skipped: {exc}: {' '.join(cmd)}")
        return 0
    env = {**os.environ, "PATH": f"{toolkit.nvcc.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.setdefault("CUDA_ROOT", str(toolkit.root))  # where a PyCUDA build looks for the toolkit
    if _pycuda_error(env) is not None:
        reqs = _extra_requirements(GPU_EXTRAS)
        print("+ pip install", " ".join(reqs), flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *reqs], env=env)
        error = _pycuda_error(env)
        if error is not None:
            print(
                f"skipped: a GPU is present but PyCUDA does not import ({error}): {' '.join(cmd)}"
            )
            return 0
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(list(cmd), env=env).returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nqprof.cuda.wheel_toolkit", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "install", help="pip-install one release's compiler wheels and make a toolkit root"
    )
    p.add_argument("version", help="e.g. cuda13.0 or 13.0 (a tox environment name works)")
    p.add_argument(
        "dest", type=Path, help="the toolkit root to create (point NQPROF_CUDA_HOME at it)"
    )
    p = sub.add_parser(
        "if-gpu", help="run a command only where a GPU, the toolkit and PyCUDA are present"
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command and arguments")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            return install(parse_version(args.version), args.dest)
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            parser.error("if-gpu needs a command")
        return if_gpu(cmd)
    except NqprofError as exc:
        print(f"nqprof: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
