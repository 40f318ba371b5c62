"""Toolkit lookup (nqprof.cuda.toolkit) and the wheel toolkit root, with fake nvcc scripts."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nqprof.cuda import toolkit as tk
from nqprof.cuda.wheel_toolkit import make_root, parse_version, wheel_specs
from nqprof.errors import InputError, UnavailableError


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_nvcc(path: Path, release: str = "13.0", build: str = "88") -> Path:
    """An nvcc that answers --version and -dryrun (TOP is the folder above its own)."""
    return _script(
        path,
        f"""case "$1" in
  --version) echo "Cuda compilation tools, release {release}, V{release}.{build}"; exit 0;;
  -dryrun) echo '#$ _HERE_='"${{0%/*}}" >&2; echo '#$ TOP='"${{0%/*}}/.." >&2; exit 0;;
esac
exit 1
""",
    )


def fake_toolkit(
    root: Path, release: str = "13.0", layout: str = "flat", cudadevrt: bool = True
) -> Path:
    """A toolkit root: headers and libs under include/ and lib64/ ("flat") or only under
    targets/x86_64-linux/ ("targets")."""
    fake_nvcc(root / "bin" / "nvcc", release)
    base = root if layout == "flat" else root / "targets" / "x86_64-linux"
    (base / "include").mkdir(parents=True)
    (base / "include" / "cuda_runtime.h").write_text("")
    lib = base / ("lib64" if layout == "flat" else "lib")
    lib.mkdir(parents=True)
    if cudadevrt:
        (lib / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    return root


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    """Each test looks its toolkit up afresh: no answer kept in this process, and a cache
    folder of its own (the lookup's memo lives there)."""
    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path / "cache"))
    tk._cache.clear()
    yield
    tk._cache.clear()


@pytest.fixture
def roots(tmp_path):
    """Three toolkits with different releases, and an empty PATH."""
    empty = tmp_path / "empty"
    empty.mkdir()
    return {
        "nq": fake_toolkit(tmp_path / "nq", "13.5"),
        "home": fake_toolkit(tmp_path / "home", "13.2"),
        "path": fake_toolkit(tmp_path / "cudapath", "13.1"),
        "PATH": str(empty),
    }


def test_lookup_order(roots):
    env = {
        "NQPROF_CUDA_HOME": str(roots["nq"]),
        "CUDA_HOME": str(roots["home"]),
        "CUDA_PATH": str(roots["path"]),
        "PATH": roots["PATH"],
    }
    found = tk.find_toolkit(env)
    assert (found.source, found.root, found.version) == ("NQPROF_CUDA_HOME", roots["nq"], "13.5")
    del env["NQPROF_CUDA_HOME"]
    assert (tk.find_toolkit(env).source, tk.find_toolkit(env).version) == ("CUDA_HOME", "13.2")
    del env["CUDA_HOME"]
    assert (tk.find_toolkit(env).source, tk.find_toolkit(env).version) == ("CUDA_PATH", "13.1")


def test_toolkit_fields(roots):
    found = tk.find_toolkit({"CUDA_HOME": str(roots["home"]), "PATH": roots["PATH"]})
    root = roots["home"]
    assert found.nvcc == root / "bin" / "nvcc"
    assert found.nvlink == root / "bin" / "nvlink"
    assert found.include_dir == root / "include"
    assert found.lib_dir == root / "lib64"
    assert found.cudadevrt == root / "lib64" / "libcudadevrt.a"
    assert "13.2" in found.describe() and "CUDA_HOME" in found.describe()


def test_targets_layout_and_missing_cudadevrt(tmp_path):
    root = fake_toolkit(tmp_path / "t", layout="targets", cudadevrt=False)
    found = tk.find_toolkit({"CUDA_HOME": str(root), "PATH": ""})
    assert found.include_dir == root / "targets" / "x86_64-linux" / "include"
    assert found.lib_dir == root / "targets" / "x86_64-linux" / "lib"
    assert found.cudadevrt is None


def test_nvcc_on_path_is_a_wrapper(tmp_path):
    """The root comes from nvcc -dryrun's TOP line, not from where the wrapper lies."""
    root = fake_toolkit(tmp_path / "cuda-13.0")
    bindir = tmp_path / "usr-local-bin"
    _script(bindir / "nvcc", f'exec "{root}/bin/nvcc" "$@"\n')
    found = tk.find_toolkit({"PATH": str(bindir)})
    assert (found.source, found.root, found.nvcc) == ("PATH", root, root / "bin" / "nvcc")


def test_bad_cuda_home_falls_through(roots, tmp_path):
    env = {
        "CUDA_HOME": str(tmp_path / "nowhere"),
        "CUDA_PATH": str(roots["path"]),
        "PATH": roots["PATH"],
    }
    assert tk.find_toolkit(env).source == "CUDA_PATH"


def test_bad_nqprof_cuda_home_is_an_error(roots, tmp_path):
    """An explicit choice never silently becomes another toolkit."""
    env = {
        "NQPROF_CUDA_HOME": str(tmp_path / "nowhere"),
        "CUDA_HOME": str(roots["home"]),
        "PATH": roots["PATH"],
    }
    with pytest.raises(UnavailableError, match="NQPROF_CUDA_HOME=.*nowhere has no bin/nvcc"):
        tk.find_toolkit(env)


def test_missing_toolkit_names_what_was_tried(tmp_path):
    env = {"CUDA_PATH": str(tmp_path / "gone"), "PATH": str(tmp_path)}
    with pytest.raises(UnavailableError) as info:
        tk.find_toolkit(env)
    message = str(info.value)
    assert "\n" not in message
    for part in ("NQPROF_CUDA_HOME, CUDA_HOME unset", "CUDA_PATH=", "no nvcc on PATH"):
        assert part in message


def test_cached_per_env(roots):
    env = {"CUDA_HOME": str(roots["home"]), "PATH": roots["PATH"]}
    assert tk.find_toolkit(env) is tk.find_toolkit(dict(env))
    assert tk.find_toolkit({**env, "CUDA_HOME": str(roots["path"])}).version == "13.1"


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "Cuda compilation tools, release 13.0, "
            "V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0",
            "13.0",
        ),
        ("Cuda compilation tools, release 12.4, V12.4.131", "12.4"),
        ("Cuda compilation tools, release 13.10, V13.10.1", "13.10"),
    ],
)
def test_toolkit_version(tmp_path, text, expected):
    nvcc = _script(tmp_path / "nvcc", f"printf '%s\\n' '{text}'\n")
    assert tk.toolkit_version(nvcc) == expected


def test_toolkit_version_failures(tmp_path):
    with pytest.raises(UnavailableError, match="did not report a CUDA release"):
        tk.toolkit_version(_script(tmp_path / "nvcc", "echo hello\n"))
    with pytest.raises(UnavailableError, match="cannot run"):
        tk.toolkit_version(tmp_path / "absent")


def test_wheel_root_layout(tmp_path):
    """A root of symlinks into the wheels' nvidia/cu13 that nvcc and the lookup both accept."""
    wheels = tmp_path / "site-packages" / "nvidia" / "cu13"
    fake_nvcc(wheels / "bin" / "nvcc", "13.0")
    (wheels / "bin" / "nvcc.profile").write_text("TOP = $(_HERE_)/..\n")
    (wheels / "bin" / "crt").mkdir()
    (wheels / "include").mkdir()
    (wheels / "include" / "cuda_runtime.h").write_text("")
    (wheels / "lib").mkdir()
    (wheels / "lib" / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    (wheels / "nvvm" / "bin").mkdir(parents=True)
    dest = tmp_path / "env" / "cuda"
    dest.mkdir(parents=True)
    (dest / "stale").write_text("")
    make_root(wheels, dest)
    assert not (dest / "stale").exists()
    assert (dest / "bin").is_dir() and not (dest / "bin").is_symlink()  # nvcc's TOP must be dest
    assert (dest / "bin" / "nvcc.profile").resolve() == (wheels / "bin" / "nvcc.profile").resolve()
    assert (dest / "targets" / "x86_64-linux" / "include" / "cuda_runtime.h").exists()
    assert (dest / "lib64" / "libcudadevrt.a").exists()
    found = tk.find_toolkit({"NQPROF_CUDA_HOME": str(dest), "PATH": ""})
    assert (found.root, found.version, found.source) == (dest, "13.0", "NQPROF_CUDA_HOME")
    assert (
        found.cudadevrt is not None
        and found.cudadevrt.resolve() == (wheels / "lib" / "libcudadevrt.a").resolve()
    )


def test_wheel_versions():
    assert parse_version("cuda13.0") == parse_version("13.0") == "13.0"
    assert wheel_specs("13.5") == [
        "nvidia-cuda-nvcc==13.5.*",
        "nvidia-cuda-runtime==13.5.*",
        "nvidia-cuda-crt==13.5.*",
        "nvidia-nvvm==13.5.*",
        "nvidia-cuda-cccl==13.5.*",
    ]
    with pytest.raises(InputError):
        parse_version("cuda-system")


def test_this_machines_toolkit():
    """Whatever toolkit this machine has (skipped without one) looks like a toolkit."""
    try:
        found = tk.find_toolkit()
    except UnavailableError as exc:
        pytest.skip(str(exc))
    assert found.nvcc.is_file() and os.access(found.nvcc, os.X_OK)
    assert found.version.count(".") == 1
    assert (found.include_dir / "cuda_runtime.h").exists()


def test_the_lookup_is_kept_while_the_toolkit_is_the_same(roots, tmp_path, monkeypatch):
    """A second process (here: the in-process answer forgotten) takes the toolkit from the
    cache folder without running nvcc; a changed nvcc, or another PATH, is looked up again."""
    root = fake_toolkit(tmp_path / "kept", "12.6")
    env = {"CUDA_HOME": str(root), "PATH": roots["PATH"]}
    first = tk.find_toolkit(env)
    tk._cache.clear()
    calls = []
    real = tk._lookup
    monkeypatch.setattr(tk, "_lookup", lambda e: calls.append(1) or real(e))
    assert tk.find_toolkit(env) == first and calls == []
    tk._cache.clear()
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(nvcc.read_text().replace("12.6", "12.8") + "\n")  # the toolkit was replaced
    os.utime(nvcc, ns=(1, 1))  # another modification time, whatever the clock's resolution
    assert tk.find_toolkit(env).version == "12.8" and calls == [1]
    tk._cache.clear()
    other = {**env, "PATH": str(tmp_path)}  # other variables: another key
    assert tk.find_toolkit(other).version == "12.8" and calls == [1, 1]


def _deb(path: Path, members: dict[str, bytes]) -> Path:
    """A Debian package (an ar archive whose data.tar.xz holds ``members``)."""
    import io
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size, info.mode = len(content), 0o755
            tar.addfile(info, io.BytesIO(content))
    out = b"!<arch>\n"
    for name, content in (("debian-binary", b"2.0\n"), ("data.tar.xz", data.getvalue())):
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(content):<10}`\n".encode()
        out += content + (b"\n" if len(content) % 2 else b"")
    path.write_bytes(out)
    return path


def test_files_taken_from_a_debian_package(tmp_path):
    from nqprof.cuda.wheel_toolkit import extract_deb

    deb = _deb(
        tmp_path / "nvidia-cuda-toolkit_12.4_amd64.deb",
        {
            "usr/lib/nvidia-cuda-toolkit/bin/nvcc": b"nvcc",
            "usr/include/crt/host_config.h": b"crt",
            "usr/include/cuda_runtime.h": b"rt",
            "usr/share/doc/readme": b"doc",
        },
    )
    dest = tmp_path / "root"
    missing = extract_deb(
        deb,
        [
            ("usr/lib/nvidia-cuda-toolkit/bin/nvcc", "bin/nvcc"),
            ("usr/include/", "include/"),
            ("usr/bin/nvlink", "bin/nvlink"),
        ],
        dest,
    )
    assert missing == ["usr/bin/nvlink"]
    assert (dest / "bin" / "nvcc").read_bytes() == b"nvcc" and os.access(
        dest / "bin" / "nvcc", os.X_OK
    )
    assert (dest / "include" / "crt" / "host_config.h").read_bytes() == b"crt"
    assert not (dest / "share").exists() and not (dest / "usr").exists()


def test_a_cuda12_release_without_a_compiler_is_a_skip(tmp_path, capsys, monkeypatch):
    from nqprof.cuda import wheel_toolkit

    monkeypatch.delenv(wheel_toolkit.ARCHIVE_VARIABLE, raising=False)
    assert wheel_toolkit.install("12.6", tmp_path / "cuda") == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("skipped: no CUDA 12.6 compiler to install")
        and "ptxas and libnvvm only" in out
    )
    assert not (tmp_path / "cuda").exists()


def test_a_toolkit_archive_is_checked_for_its_release(tmp_path, monkeypatch, capsys):
    """install unpacks NQPROF_TOOLKIT_ARCHIVE into a root the lookup takes, and refuses an
    archive of another release."""
    import tarfile

    from nqprof.cuda import wheel_toolkit

    src = tmp_path / "src" / "cuda"
    fake_nvcc(src / "bin" / "nvcc", "12.4")
    (src / "include").mkdir()
    (src / "include" / "cuda_runtime.h").write_text("")
    (src / "lib").mkdir()
    (src / "lib" / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    archive = tmp_path / "cuda12.4.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(src, arcname="cuda")
    monkeypatch.setenv(wheel_toolkit.ARCHIVE_VARIABLE, str(archive))
    dest = tmp_path / "env" / "cuda"
    assert wheel_toolkit.install("12.4", dest) == 0
    assert f"CUDA 12.4 toolkit root {dest} (from {archive})" in capsys.readouterr().out
    found = tk.find_toolkit({"NQPROF_CUDA_HOME": str(dest), "PATH": ""})
    assert found.version == "12.4" and found.cudadevrt == dest / "lib64" / "libcudadevrt.a"
    with pytest.raises(UnavailableError, match="is CUDA 12.4, not 12.5"):
        wheel_toolkit.install("12.5", dest)


def test_what_a_toolkit_archive_keeps(tmp_path):
    """pack follows a 13.x root's links to whole folders, keeps what nvcc and nvlink read and
    leaves out other libraries, thrust and cub, and the links install makes again."""
    from nqprof.cuda.wheel_toolkit import _packed_files

    wheels = tmp_path / "site-packages" / "nvidia" / "cu13"
    fake_nvcc(wheels / "bin" / "nvcc", "13.0")
    (wheels / "bin" / "nvdisasm").write_text("")
    for name in ("include/cuda_runtime.h", "include/cccl/cub/cub.cuh", "include/cccl/nv/target"):
        (wheels / name).parent.mkdir(parents=True, exist_ok=True)
        (wheels / name).write_text("")
    (wheels / "lib").mkdir()
    for name in ("libcudadevrt.a", "libcudart.so.13", "libcudart_static.a"):
        (wheels / "lib" / name).write_bytes(b"")
    (wheels / "nvvm" / "bin").mkdir(parents=True)
    (wheels / "nvvm" / "bin" / "cicc").write_text("")
    root = make_root(wheels, tmp_path / "cuda")
    kept = sorted(p.relative_to(root).as_posix() for p in _packed_files(root))
    assert kept == [
        "bin/nvcc",
        "include/cccl/nv/target",
        "include/cuda_runtime.h",
        "lib/libcudadevrt.a",
        "nvvm/bin/cicc",
    ]
