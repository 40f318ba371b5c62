"""Finding the CUDA toolkit that builds nqprof's kernels.

Lookup order: ``NQPROF_CUDA_HOME`` (an explicit choice: if it holds no nvcc, that is an
error, never a silent fallback), then ``CUDA_HOME``, ``CUDA_PATH``, then ``nvcc`` on PATH.
``nvcc`` on PATH may be a wrapper script rather than a link into the toolkit, so the root
comes from the ``#$ TOP=`` line that ``nvcc -dryrun`` prints, not from the file's location.

The answer costs two nvcc runs, so it is kept in nqprof's cache folder (:mod:`.cache`) for
the same variables and PATH, and taken from there while the toolkit's nvcc (and the nvcc
PATH names) are the files they were.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import UnavailableError

#: Environment variables naming a toolkit root, in lookup order.
HOME_VARIABLES = ("NQPROF_CUDA_HOME", "CUDA_HOME", "CUDA_PATH")

_RELEASE = re.compile(r"release (\d+)\.(\d+)")
_TOP = re.compile(r"^#\$ TOP=(.+?)\s*$", re.M)


@dataclass(frozen=True)
class Toolkit:
    root: Path
    nvcc: Path
    version: str  # "13.0"
    include_dir: Path
    lib_dir: Path
    cudadevrt: Path | None  # libcudadevrt.a, needed to link dynamic-parallelism kernels
    source: str  # where the lookup found it: one of HOME_VARIABLES or "PATH"

    @property
    def nvlink(self) -> Path:
        return self.nvcc.parent / "nvlink"

    def describe(self) -> str:
        return f"CUDA {self.version} at {self.root} (from {self.source})"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def toolkit_version(nvcc: str | os.PathLike) -> str:
    """The release of ``nvcc`` as "major.minor", from ``nvcc --version``."""
    try:
        out = _run([str(nvcc), "--version"])
    except (OSError, subprocess.SubprocessError) as exc:
        raise UnavailableError(f"cannot run {nvcc} --version: {exc}") from None
    m = _RELEASE.search(out.stdout + out.stderr)
    if out.returncode != 0 or m is None:
        raise UnavailableError(
            f"{nvcc} --version did not report a CUDA release (exit {out.returncode})"
        )
    return f"{m.group(1)}.{m.group(2)}"


def _root_from_path(nvcc: str, env: Mapping[str, str]) -> Path | None:
    """The toolkit root an nvcc found on PATH uses, from its ``-dryrun`` TOP line."""
    with tempfile.TemporaryDirectory(prefix="nqprof-nvcc-") as tmp:
        try:  # -dryrun prints the settings without reading the (absent) input file
            out = _run([nvcc, "-dryrun", "-c", "probe.cu"], cwd=tmp, env=dict(env))
        except (OSError, subprocess.SubprocessError):
            return None
    m = _TOP.search(out.stdout + out.stderr)
    return Path(os.path.normpath(m.group(1))) if m else None


def _first_dir(candidates: list[Path], marker: str) -> Path | None:
    found = [d for d in candidates if (d / marker).exists()]
    return found[0] if found else None


def _toolkit_at(root: Path, source: str) -> Toolkit:
    """The toolkit rooted at ``root``; raises UnavailableError if it has no nvcc."""
    nvcc = root / "bin" / "nvcc"
    if not (nvcc.is_file() and os.access(nvcc, os.X_OK)):
        raise UnavailableError(f"{source}={root} has no bin/nvcc")
    targets = sorted((root / "targets").glob("*-linux"))
    includes = [root / "include"] + [t / "include" for t in targets]
    libs = [root / "lib64", root / "lib"] + [t / "lib" for t in targets]
    lib_dir = _first_dir(libs, "libcudadevrt.a") or next(
        (d for d in libs if d.is_dir()), root / "lib64"
    )
    cudadevrt = lib_dir / "libcudadevrt.a"
    return Toolkit(
        root=root,
        nvcc=nvcc,
        version=toolkit_version(nvcc),
        include_dir=_first_dir(includes, "cuda_runtime.h") or root / "include",
        lib_dir=lib_dir,
        cudadevrt=cudadevrt if cudadevrt.is_file() else None,
        source=source,
    )


def _lookup(env: Mapping[str, str]) -> Toolkit:
    tried: list[str] = []
    for var in HOME_VARIABLES:
        value = env.get(var, "").strip()
        if not value:
            continue
        try:
            return _toolkit_at(Path(value), var)
        except UnavailableError as exc:
            if var == "NQPROF_CUDA_HOME":
                raise
            tried.append(str(exc))
    nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
    if nvcc is None:
        tried.append("no nvcc on PATH")
    else:
        root = _root_from_path(nvcc, env)
        if root is None:
            tried.append(f"{nvcc} -dryrun printed no TOP= line")
        else:
            try:
                return _toolkit_at(root, "PATH")
            except UnavailableError as exc:
                tried.append(f"nvcc on PATH ({nvcc}): {exc}")
    unset = [v for v in HOME_VARIABLES if not env.get(v, "").strip()]
    if unset:
        tried.insert(0, f"{', '.join(unset)} unset")
    raise UnavailableError("no CUDA toolkit found: " + "; ".join(tried))


_cache: dict[tuple[str, ...], Toolkit] = {}


def _stamp(path: str | os.PathLike | None) -> list | None:
    """What identifies a file's version: its real path, size and modification time."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def _memo_name(key: tuple[str, ...]) -> str:
    import hashlib

    return "toolkit-" + hashlib.sha256("\0".join(key).encode()).hexdigest()[:16] + ".json"


def _remembered(key: tuple[str, ...], env: Mapping[str, str]) -> Toolkit | None:
    """The memo's toolkit for ``key``, if its files are still the ones it was found with."""
    from .cache import read_memo

    memo = read_memo(_memo_name(key))
    if memo is None or memo.get("path_nvcc") != _stamp(
        shutil.which("nvcc", path=env.get("PATH", ""))
    ):
        return None
    try:
        found = Toolkit(
            **{
                k: (
                    Path(v)
                    if k in ("root", "nvcc", "include_dir", "lib_dir", "cudadevrt") and v
                    else v
                )
                for k, v in memo["toolkit"].items()
            }
        )
    except (KeyError, TypeError):
        return None
    return found if memo.get("nvcc") == _stamp(found.nvcc) else None


def _remember(key: tuple[str, ...], env: Mapping[str, str], found: Toolkit) -> None:
    from .cache import write_memo

    fields = {k: (str(v) if isinstance(v, Path) else v) for k, v in found.__dict__.items()}
    write_memo(
        _memo_name(key),
        {
            "toolkit": fields,
            "nvcc": _stamp(found.nvcc),
            "path_nvcc": _stamp(shutil.which("nvcc", path=env.get("PATH", ""))),
        },
    )


def find_toolkit(env: Mapping[str, str] | None = None) -> Toolkit:
    """The toolkit nqprof builds with (see the module doc for the lookup order). Kept per
    value of the variables the lookup reads, in this process and in the cache folder; a
    failed lookup is not kept."""
    env = os.environ if env is None else env
    key = tuple(env.get(v, "") for v in (*HOME_VARIABLES, "PATH"))
    if key not in _cache:
        found = _remembered(key, env)
        if found is None:
            found = _lookup(env)
            _remember(key, env, found)
        _cache[key] = found
    return _cache[key]
