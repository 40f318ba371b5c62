"""A CUDA toolkit from NVIDIA's PyPI wheels (CUDA 13) or Debian's and Ubuntu's packages (CUDA 12),
and the GPU gate of the tox CUDA environments.

``nvidia-cuda-nvcc`` ships nvcc, ptxas, nvlink and friends; ``nvidia-cuda-runtime`` the
headers (cuda_runtime.h ...) and ``libcudadevrt.a``; ``nvidia-cuda-crt`` the crt/
headers; ``nvidia-nvvm`` cicc and libdevice; ``nvidia-cuda-cccl`` libcu++ (``nv/target``).
All of them install into ``site-packages/nvidia/cu13``. nvcc's dependencies on the other
three are unpinned, so each is pinned here to the same release. Some releases'
``nvcc.profile`` expects the headers under ``targets/<arch>-linux/``, which the wheels lack,
so :func:`make_root` builds a toolkit root of symlinks with both layouts. nvcc takes its root
from the path it was started by (symlinks are not resolved), so ``bin/`` holds one link per
file.

CUDA 12 has no such wheels: ``nvidia-cuda-nvcc-cu12`` (12.0 to 12.9) carries ptxas and
libnvvm only (no nvcc, cicc, nvlink, cudafe++, crt/ headers), and ``nvidia-cuda-runtime-cu12``
carries ``libcudadevrt.a`` only from 12.9 on. A CUDA 12 toolkit (:data:`DEB_RELEASES`) is made
instead from the Debian or Ubuntu packages of that release (``nvidia-cuda-toolkit``: nvcc,
cicc, ptxas, nvlink; ``nvidia-cuda-dev``: headers and ``libcudadevrt.a``), fetched with
``apt-get download`` from a private package list (nothing is installed on the system) whose
Release file apt verifies with the archive's keyring, plus libcu++ (the
``nvidia-cuda-cccl-cu12`` wheel of the release, or the suite's ``libcu++-dev``); the root holds
copies, with an ``nvcc.profile`` of its own (the packages' names absolute /usr paths). Where
the system has no Ubuntu keyring, Debian's ``ubuntu-keyring`` package (itself verified by
Debian's keyring) provides it.

    python -m nqprof.cuda.wheel_toolkit install cuda13.0 DIR   # pip install + make DIR
    python -m nqprof.cuda.wheel_toolkit install cuda12.4 DIR   # Debian's packages + make DIR
    python -m nqprof.cuda.wheel_toolkit install cuda12.0 DIR   # Ubuntu's packages + make DIR
    python -m nqprof.cuda.wheel_toolkit pack cuda12.4 FILE.tar.xz   # what nvcc needs, packed
    python -m nqprof.cuda.wheel_toolkit if-gpu -- CMD ...      # run CMD only on a GPU machine

``install`` unpacks the archive that ``NQPROF_TOOLKIT_ARCHIVE`` names (made by ``pack``)
instead of downloading: how a machine without a package index gets a toolkit. Both
``install`` and ``if-gpu`` print a ``skipped: ...`` line and exit 0 when the toolkit or the
GPU is missing.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError, NqprofError, UnavailableError
from .deb_toolkit import DEB_RELEASES, deb_root, run_quiet
from .toolkit import find_toolkit, toolkit_version
from .toolkit_root import finish_root, make_root, remove

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


#: The variable naming a toolkit archive (made by ``pack``) that ``install`` unpacks.
ARCHIVE_VARIABLE = "NQPROF_TOOLKIT_ARCHIVE"


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


#: What ``pack`` leaves out of a root: nothing nvcc, nvlink or the lookup reads for nqprof's
#: kernels (libraries other than libcudadevrt.a, CCCL's thrust and cub, tools beside nvcc).
PACK_EXCLUDE = re.compile(
    r"^(lib/(?!libcudadevrt\.a$).*|include/(cccl/)?(thrust|cub)/.*|include/(cublas|cufft|curand"
    r"|cusolver|cusparse|npp|nvjpeg|cudnn|nvtx3|cuda-gdb).*|bin/(nvdisasm|cuobjdump|nvprune|cu\+\+filt"
    r"|compute-sanitizer|__nvcc_device_query).*|nvvm/lib64/.*|.*/__pycache__/.*|.*__init__\.py)$"
)


def _packed_files(root: Path) -> list[Path]:
    """The files of ``root`` that ``pack`` keeps: links to folders followed (a 13.x root links
    include, lib and nvvm), lib64 and targets/ left out (links that install makes again)."""
    out = []
    for folder, subs, names in os.walk(root, followlinks=True):
        if Path(folder) == root:
            subs[:] = [d for d in subs if d not in ("lib64", "targets")]
        for name in names:
            path = Path(folder, name)
            if not PACK_EXCLUDE.match(path.relative_to(root).as_posix()):
                out.append(path)
    return sorted(out)


def pack(version: str, out: Path) -> int:
    """Make the ``version`` toolkit (as ``install`` would, into a temporary folder) and pack
    what nvcc needs for nqprof's kernels into ``out`` (.tar.xz), links resolved: the archive
    ``install`` unpacks where ``NQPROF_TOOLKIT_ARCHIVE`` names it."""
    with tempfile.TemporaryDirectory(prefix="nqprof-pack-") as tmp:
        work = Path(tmp)
        root = work / "cuda"
        if version in DEB_RELEASES:
            deb_root(version, root, work)
        else:
            site = work / "site"
            run_quiet(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--target",
                    str(site),
                    *wheel_specs(version),
                ],
                f"the CUDA {version} compiler wheels cannot be installed",
            )
            cu = sorted(site.glob("nvidia/cu*"))
            if not cu:
                raise UnavailableError(f"the CUDA {version} wheels hold no nvidia/cu*")
            make_root(cu[-1], root)
        got = toolkit_version(root / "bin" / "nvcc")
        if got != version:
            raise UnavailableError(f"{root}/bin/nvcc is CUDA {got}, not {version}")
        files = _packed_files(root)
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        # xz with the x86 filter and a dictionary that spans ptxas, nvlink and cicc, which
        # share much code: 8% smaller than xz -9 (CUDA 13.0: 34.8 MiB, not 37.8), decoded in 256 MiB
        filters = [
            {"id": lzma.FILTER_X86},
            {"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "dict_size": 256 << 20},
        ]
        with (
            lzma.open(partial, "wb", format=lzma.FORMAT_XZ, filters=filters) as xz,
            tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for path in files:
                rel = path.relative_to(root).as_posix()
                info = tar.gettarinfo(path.resolve(), arcname=f"cuda/{rel}")
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with open(path, "rb") as data:
                    tar.addfile(info, data)
        partial.replace(out)
    print(
        f"CUDA {version}: {len(files)} files packed into {out} "
        f"({out.stat().st_size / 2**20:.1f} MiB)"
    )
    return 0


def unpack(archive: Path, dest: Path) -> Path:
    """The root at ``dest`` from an archive ``pack`` made."""
    remove(dest)
    with tempfile.TemporaryDirectory(prefix="nqprof-unpack-", dir=dest.parent) as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        (Path(tmp) / "cuda").rename(dest)
    finish_root(dest)
    return dest


def install(version: str, dest: Path) -> int:
    """Make the ``version`` toolkit root at ``dest``: from the archive NQPROF_TOOLKIT_ARCHIVE
    names, from Debian's or Ubuntu's packages (a CUDA 12 release of :data:`DEB_RELEASES`), else
    from pip-installed
    wheels (unless present)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove(dest)  # a failed install must not leave an older root behind
    archive = os.environ.get(ARCHIVE_VARIABLE, "").strip()
    if archive:
        root, names = unpack(Path(archive), dest), f"from {archive}"
    elif version in DEB_RELEASES:
        release = DEB_RELEASES[version]
        try:
            with tempfile.TemporaryDirectory(prefix="nqprof-deb-") as tmp:
                root = deb_root(version, dest, Path(tmp))
        except UnavailableError as exc:
            remove(dest)
            print(
                f"skipped: the CUDA {version} toolkit cannot be made from "
                f"{release.archive.name}'s packages: {exc}"
            )
            return 0
        names = release.describe()
    elif version.startswith("12."):
        print(
            f"skipped: no CUDA {version} compiler to install: PyPI's nvidia-cuda-nvcc-cu12 wheels "
            f"carry ptxas and libnvvm only (no nvcc, cicc, nvlink) and Debian and Ubuntu package "
            f"CUDA {', '.join(DEB_RELEASES)} only; give a toolkit archive ({ARCHIVE_VARIABLE}) or "
            "use cuda-system"
        )
        return 0
    else:
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
        names = ", ".join(f"{n} {importlib.metadata.version(n)}" for n in WHEELS)
    got = toolkit_version(root / "bin" / "nvcc")
    if got != version:
        raise UnavailableError(f"{root}/bin/nvcc is CUDA {got}, not {version}")
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
        "pack", help="make one release's toolkit and pack what nvcc needs into FILE.tar.xz"
    )
    p.add_argument("version", help="e.g. cuda12.4 or 13.0")
    p.add_argument("out", type=Path, help="the archive to write (.tar.xz)")
    p = sub.add_parser(
        "if-gpu", help="run a command only where a GPU, the toolkit and PyCUDA are present"
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command and arguments")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            return install(parse_version(args.version), args.dest)
        if args.command == "pack":
            return pack(parse_version(args.version), args.out)
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            parser.error("if-gpu needs a command")
        return if_gpu(cmd)
    except NqprofError as exc:
        print(f"nqprof: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
