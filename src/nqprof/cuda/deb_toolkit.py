"""A CUDA 12 toolkit root from Debian's or Ubuntu's packages of that release
(:data:`DEB_RELEASES`: ``nvidia-cuda-toolkit`` for nvcc, cicc, ptxas and nvlink,
``nvidia-cuda-dev`` for the headers and ``libcudadevrt.a``), fetched with ``apt-get download``
from a private package list whose Release file apt verifies with the archive's keyring (nothing
is installed on the system), plus libcu++; :func:`deb_root` makes it
(:mod:`nqprof.cuda.wheel_toolkit` says when)."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UnavailableError
from .toolkit_root import finish_root, link, remove


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
                remove(out)
                link(out, member.linkname)
            elif member.isfile():
                out.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as data, open(out, "wb") as sink:
                    shutil.copyfileobj(data, sink)
                out.chmod(0o755 if member.mode & 0o111 else 0o644)
    return [src for src, _ in files if src not in found]


def run_quiet(cmd: list[str], what: str, **kw) -> None:
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
    run_quiet(["apt-get", *opts, "-q", "update"], f"apt-get update ({what})")
    into.mkdir(parents=True, exist_ok=True)
    run_quiet(["apt-get", *opts, "-q", "download", *specs], f"apt-get download ({what})", cwd=into)


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
    run_quiet(
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
    remove(dest)
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
    finish_root(dest)
    return dest
