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
import contextlib
import importlib.metadata
import importlib.util
import lzma
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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

#: The variable naming a toolkit archive (made by ``pack``) that ``install`` unpacks.
ARCHIVE_VARIABLE = "NQPROF_TOOLKIT_ARCHIVE"


@dataclass(frozen=True)
class Keyring:
    """Where an archive's keyring comes from when the system lacks it: a package of Debian's
    archive (``suite``, ``component``, ``package`` at ``version``), downloaded through a package
    list that Debian's keyring verifies, and the keyring file's path in it."""

    suite: str
    component: str
    package: str
    version: str
    path: str


@dataclass(frozen=True)
class Archive:
    """A package archive: its name, mirror and the keyring that verifies its Release files
    (``keyring``, a file of the system; where it is missing, taken from ``fallback``)."""

    name: str
    mirror: str
    keyring: str
    fallback: Keyring | None = None


DEBIAN = Archive(
    "Debian", "http://deb.debian.org/debian", "/usr/share/keyrings/debian-archive-keyring.gpg"
)
UBUNTU = Archive(
    "Ubuntu",
    "http://archive.ubuntu.com/ubuntu",
    "/usr/share/keyrings/ubuntu-archive-keyring.gpg",
    # Ubuntu Archive Automatic Signing Key (2018), F6ECB3762474EDA9D21B7022871920D1991BC93C,
    # signs noble's and plucky's Release files
    Keyring(
        "trixie",
        "main",
        "ubuntu-keyring",
        "2023.11.28.1-0.2",
        "usr/share/keyrings/ubuntu-archive-keyring.gpg",
    ),
)


@dataclass(frozen=True)
class DebRelease:
    """A CUDA 12 release as a Debian or Ubuntu suite packages it: the archive and the suite and
    components that have it, the pinned versions of ``nvidia-cuda-toolkit`` (nvcc, cicc,
    ptxas, nvlink) and ``nvidia-cuda-dev`` (headers, ``libcudadevrt.a``), and where libcu++
    comes from (its ``nv/target`` and ``cuda/std/``, which cooperative groups include): the
    ``nvidia-cuda-cccl-cu12`` wheel of the release (``cccl``, a version pattern) or the suite's
    ``libcu++-dev`` (``libcu``, a pinned version). ``ptxas_flags`` go into the root's
    ``nvcc.profile``: every ptxas call of that toolkit gets them."""

    archive: Archive
    suite: str
    components: str
    toolkit: str
    dev: str
    cccl: str = ""
    libcu: str = ""
    ptxas_flags: str = ""

    def source(self, keyring: str) -> str:
        """The package list's one line (amd64 only, verified by ``keyring``)."""
        return (
            f"deb [arch=amd64 signed-by={keyring}] {self.archive.mirror} {self.suite} "
            f"{self.components}\n"
        )

    def packages(self) -> dict[str, str]:
        """The packages to download, by their part of :data:`DEB_FILES`, pinned."""
        out = {
            "toolkit": f"nvidia-cuda-toolkit={self.toolkit}",
            "dev": f"nvidia-cuda-dev={self.dev}",
        }
        if self.libcu:
            out["libcu"] = f"libcu++-dev={self.libcu}"
        return out

    def describe(self) -> str:
        """Where the toolkit comes from, in one line."""
        return ", ".join(
            [
                f"{self.archive.name} {self.suite}: nvidia-cuda-toolkit {self.toolkit}",
                f"nvidia-cuda-dev {self.dev}",
                *([f"libcu++-dev {self.libcu}"] if self.libcu else []),
                *([f"nvidia-cuda-cccl-cu12 {self.cccl}"] if self.cccl else []),
                *([f"ptxas {self.ptxas_flags}"] if self.ptxas_flags else []),
            ]
        )


#: CUDA 12 releases from Ubuntu's multiverse and Debian's non-free sections (amd64). 12.6 to
#: 12.9 are packaged nowhere this reaches (Debian stops at 12.5; PyPI's cu12 wheels lack the
#: compiler, see the module doc). The cccl wheels of 12.0 to 12.2 lack libcu++'s headers
#: without a suffix (``nv/target``, ``cuda/std/type_traits``), so 12.0 and 12.2 take the
#: ``libcu++-dev`` that their ``nvidia-cuda-dev`` depends on (noble's is CUDA 12.0's libcu++
#: 1.9.0; plucky's is CCCL 2.2.0, CUDA 12.3's, where CUDA 12.2 shipped 2.1.0). CUDA 12.0's
#: ptxas (12.0.76 and 12.0.140 alike; 12.1.105's does not) segfaults on the line table of some
#: atomics for sm_90 (one ``atomicAdd`` in a kernel built with ``-lineinfo`` is enough), so its
#: root tells ptxas to drop the line table (``-suppress-debug-info``): no line numbers in
#: Nsight's source view for its cubins, the code the same.
DEB_RELEASES = {
    "12.0": DebRelease(
        UBUNTU,
        "noble",
        "multiverse universe",
        toolkit="12.0.140~12.0.1-4build4",
        dev="12.0.146~12.0.1-4build4",
        libcu="1.9.0-3",
        ptxas_flags="-suppress-debug-info",
    ),
    "12.2": DebRelease(
        UBUNTU,
        "plucky",
        "multiverse universe",
        toolkit="12.2.140~12.2.2-2build1",
        dev="12.2.140~12.2.2-2build1",
        libcu="2.2.0-3",
    ),
    "12.4": DebRelease(
        DEBIAN,
        "trixie",
        "non-free",
        toolkit="12.4.131~12.4.1-2",
        dev="12.4.127~12.4.1-2",
        cccl="12.4.*",
    ),
    "12.5": DebRelease(
        DEBIAN,
        "experimental",
        "non-free",
        toolkit="12.5.40~12.5.0-2+b1",
        dev="12.5.39~12.5.0-2+b1",
        cccl="12.5.*",
    ),
}
#: What a CUDA 12 root takes from the packages: (path in the package, path in the root).
DEB_FILES = {
    "toolkit": [
        ("usr/lib/nvidia-cuda-toolkit/bin/nvcc", "bin/nvcc"),
        ("usr/lib/nvidia-cuda-toolkit/bin/crt/", "bin/crt/"),
        ("usr/lib/nvidia-cuda-toolkit/bin/cicc", "nvvm/bin/cicc"),
        ("usr/lib/nvidia-cuda-toolkit/libdevice/", "nvvm/libdevice/"),
        ("usr/bin/cudafe++", "bin/cudafe++"),
        ("usr/bin/ptxas", "bin/ptxas"),
        ("usr/bin/nvlink", "bin/nvlink"),
        ("usr/bin/fatbinary", "bin/fatbinary"),
        ("usr/bin/bin2c", "bin/bin2c"),
        # the packages' host compiler wrappers: the newest gcc-N/g++-N the release supports
        ("usr/lib/nvidia-cuda-toolkit/bin/gcc", "hostcc/gcc"),
        ("usr/lib/nvidia-cuda-toolkit/bin/g++", "hostcc/g++"),
    ],
    "dev": [
        ("usr/include/", "include/"),
        ("usr/lib/x86_64-linux-gnu/libcudadevrt.a", "lib/libcudadevrt.a"),
    ],
    "libcu": [
        ("usr/include/cuda/", "include/cuda/"),
        ("usr/include/nv/", "include/nv/"),
    ],
}
#: The nvcc.profile of a CUDA 12 root: the toolkit's own, every path under the root. ``+=``
#: prepends: nvcc finds ``gcc`` and ``g++`` in ``hostcc/`` first, the packages' wrappers that
#: run the newest gcc-N the release supports (CUDA 12.0 and 12.2 refuse gcc 13, the default
#: of Ubuntu 24.04), as the packages' own nvcc.profile arranges.
NVCC_PROFILE = "\n".join(
    [
        "",
        "TOP              = $(_HERE_)/..",
        "",
        "CICC_PATH        = $(TOP)/nvvm/bin",
        "NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice",
        "",
        "LD_LIBRARY_PATH += $(TOP)/lib:",
        "PATH            += $(TOP)/hostcc:$(CICC_PATH):$(_HERE_):",
        "",
        'INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)',
        "",
        'LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" '
        '"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"',
        "",
        "CUDAFE_FLAGS    +=",
        "PTXAS_FLAGS     +={ptxas_flags}",
        "",
    ]
)


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
    _finish_root(dest)
    return dest


def _finish_root(dest: Path) -> None:
    """The links every root has: ``lib64`` -> ``lib`` and ``targets/<arch>-linux/``."""
    if not (dest / "lib64").exists():
        _link(dest / "lib64", "lib")
    target = dest / "targets" / _TARGET_DIRS.get(platform.machine(), f"{platform.machine()}-linux")
    for name in ("include", "lib"):
        if not (target / name).exists():
            _link(target / name, Path("..", "..", name))


@contextlib.contextmanager
def _deb_data(deb: Path) -> Iterator[tarfile.TarFile]:
    """The data.tar member of a .deb (an ar archive) as a streaming tarfile. Python reads
    data.tar.xz, .gz and .bz2 itself; the data.tar.zst of Ubuntu's packages goes through
    ``dpkg-deb --fsys-tarfile`` (dpkg comes with apt-get, which fetched the package)."""
    with open(deb, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise UnavailableError(f"{deb} is not a Debian package")
        while True:
            header = f.read(60)
            if len(header) < 60:
                raise UnavailableError(f"{deb} has no data.tar member")
            name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
            if name.startswith("data.tar"):
                break
            f.seek(size + size % 2, os.SEEK_CUR)
        if name in ("data.tar", "data.tar.xz", "data.tar.gz", "data.tar.bz2"):
            with tarfile.open(fileobj=f, mode="r|*") as tar:
                yield tar
            return
    tool = shutil.which("dpkg-deb")
    if tool is None:
        raise UnavailableError(f"{deb.name} holds {name}, which needs dpkg-deb, and it is missing")
    with subprocess.Popen(
        [tool, "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            tar = tarfile.open(fileobj=proc.stdout, mode="r|")
        except tarfile.ReadError:
            tar = None  # dpkg-deb wrote no archive: its message below says why
        if tar is not None:
            with tar:
                yield tar
        proc.stdout.read()  # the end of the archive, so that dpkg-deb finishes its writes
        error = proc.stderr.read().decode(errors="replace").strip()
    if proc.returncode != 0 or tar is None:
        raise UnavailableError(
            f"dpkg-deb --fsys-tarfile {deb.name}: {error or f'exit {proc.returncode}'}"
        )


def extract_deb(deb: Path, files: Sequence[tuple[str, str]], dest: Path) -> list[str]:
    """Copy the members of ``deb`` that ``files`` names (a path ending in ``/``: the folder's
    contents) to their place under ``dest``; returns the ``files`` entries found nowhere."""
    found: set[str] = set()
    with _deb_data(deb) as tar:
        for member in tar:
            path = member.name.removeprefix("./")
            for src, dst in files:
                if path == src or (src.endswith("/") and path.startswith(src)):
                    out = dest / (dst + path[len(src) :] if src.endswith("/") else dst)
                    break
            else:
                continue
            found.add(src)
            if member.isdir():
                out.mkdir(parents=True, exist_ok=True)
            elif member.issym():
                if member.linkname.startswith("/") or ".." in Path(member.linkname).parts:
                    continue  # a link out of the folder: nothing nvcc reads
                _remove(out)
                _link(out, member.linkname)
            elif member.isfile():
                out.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as data, open(out, "wb") as sink:
                    shutil.copyfileobj(data, sink)
                out.chmod(0o755 if member.mode & 0o111 else 0o644)
    return [src for src, _ in files if src not in found]


def _run_quiet(cmd: list[str], what: str, **kw) -> None:
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        raise UnavailableError(f"{what}: {(lines or ['no output'])[-1].strip()}")


def _apt_download(source: str, specs: Sequence[str], apt: Path, into: Path, what: str) -> None:
    """``apt-get download`` ``specs`` into ``into`` from the package list ``source`` alone
    (lists and cache under ``apt``; nothing is installed, the system's lists are untouched)."""
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(source)
    opts = [
        f"-oDir::Etc::sourcelist={apt / 'sources.list'}",
        "-oDir::Etc::sourceparts=-",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
        "-oDebug::NoLocking=1",
        "-oAcquire::Languages=none",
        "-oAPT::Sandbox::User=" + ("root" if os.geteuid() == 0 else os.environ.get("USER", "")),
    ]
    _run_quiet(["apt-get", *opts, "-q", "update"], f"apt-get update ({what})")
    into.mkdir(parents=True, exist_ok=True)
    _run_quiet(["apt-get", *opts, "-q", "download", *specs], f"apt-get download ({what})", cwd=into)


def archive_keyring(archive: Archive, work: Path) -> str:
    """The keyring that verifies ``archive``: the system's file, else the one in the package
    ``archive.fallback`` names, downloaded from Debian's archive (verified by Debian's
    keyring) into ``work``."""
    if Path(archive.keyring).is_file() or archive.fallback is None:
        return archive.keyring
    fb = archive.fallback
    if not Path(DEBIAN.keyring).is_file():
        raise UnavailableError(
            f"no {archive.keyring}, and no {DEBIAN.keyring} to verify the {fb.package} package "
            "that has it"
        )
    debs = work / "keyring-debs"
    _apt_download(
        f"deb [arch=amd64 signed-by={DEBIAN.keyring}] {DEBIAN.mirror} {fb.suite} {fb.component}\n",
        [f"{fb.package}={fb.version}"],
        work / "apt-keyring",
        debs,
        f"{fb.package} from Debian {fb.suite}",
    )
    keyring = work / "keyrings" / Path(fb.path).name
    missing = extract_deb(
        next(debs.glob(f"{fb.package}_*.deb")), [(fb.path, keyring.name)], keyring.parent
    )
    if missing:
        raise UnavailableError(f"{fb.package} {fb.version} lacks {fb.path}")
    return str(keyring)


def _cccl_wheel(spec: str, version: str, include: Path, wheels: Path) -> None:
    """libcu++'s headers from the ``nvidia-cuda-cccl-cu12`` wheel ``spec`` into ``include``."""
    _run_quiet(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(wheels),
            f"nvidia-cuda-cccl-cu12=={spec}",
        ],
        f"the CUDA {version} libcu++ wheel cannot be downloaded",
    )
    import zipfile

    prefix = "nvidia/cuda_cccl/include/"
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as whl:
        for info in whl.infolist():
            name = info.filename
            if name.startswith(prefix) and not name.endswith(("/", "__init__.py")):
                out = include / name[len(prefix) :]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(whl.read(info))


def deb_root(version: str, dest: Path, work: Path) -> Path:
    """Make the CUDA ``version`` (a key of :data:`DEB_RELEASES`) toolkit root at ``dest`` from
    Debian's or Ubuntu's packages, downloaded into ``work`` (nothing is installed on the
    system)."""
    release = DEB_RELEASES[version]
    archive = release.archive.name
    if shutil.which("apt-get") is None:
        raise UnavailableError(
            f"CUDA {version} comes from {archive}'s packages and apt-get is missing"
        )
    if platform.machine() != "x86_64":
        raise UnavailableError(f"nqprof takes CUDA {version} from {archive}'s amd64 packages only")
    keyring = archive_keyring(release.archive, work)
    debs = work / "debs"
    packages = release.packages()
    _apt_download(
        release.source(keyring),
        list(packages.values()),
        work / "apt",
        debs,
        f"{archive} {release.suite}",
    )
    _remove(dest)
    dest.mkdir(parents=True)
    for part, spec in packages.items():
        name = spec.split("=")[0]
        deb = next(debs.glob(f"{name}_*.deb"))
        missing = extract_deb(deb, DEB_FILES[part], dest)
        if missing:
            raise UnavailableError(f"{deb.name} lacks {', '.join(missing)}")
        deb.unlink()  # the dev package is about 1 GB
    if release.cccl:
        _cccl_wheel(release.cccl, version, dest / "include", work / "cccl")
    flags = f" {release.ptxas_flags}" if release.ptxas_flags else ""
    (dest / "bin" / "nvcc.profile").write_text(NVCC_PROFILE.format(ptxas_flags=flags))
    _finish_root(dest)
    return dest


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
            _run_quiet(
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
    _remove(dest)
    with tempfile.TemporaryDirectory(prefix="nqprof-unpack-", dir=dest.parent) as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        (Path(tmp) / "cuda").rename(dest)
    _finish_root(dest)
    return dest


def install(version: str, dest: Path) -> int:
    """Make the ``version`` toolkit root at ``dest``: from the archive NQPROF_TOOLKIT_ARCHIVE
    names, from Debian's or Ubuntu's packages (a CUDA 12 release of :data:`DEB_RELEASES`), else
    from pip-installed
    wheels (unless present)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove(dest)  # a failed install must not leave an older root behind
    archive = os.environ.get(ARCHIVE_VARIABLE, "").strip()
    if archive:
        root, names = unpack(Path(archive), dest), f"from {archive}"
    elif version in DEB_RELEASES:
        release = DEB_RELEASES[version]
        try:
            with tempfile.TemporaryDirectory(prefix="nqprof-deb-") as tmp:
                root = deb_root(version, dest, Path(tmp))
        except UnavailableError as exc:
            _remove(dest)
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
